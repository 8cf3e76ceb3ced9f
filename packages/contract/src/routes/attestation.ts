import { z } from 'zod';
import { Uuid } from '../common.js';
import { type RouteDef, route } from '../route-def.js';

/** Signed attestations of snapshots (spec 4.6, decisions.md "Attestation PDF"). */
export const attestationRoutes = {
  getSnapshotAttestation: route({
    method: 'GET',
    url: '/api/v1/snapshots/:id/attestation.pdf',
    operationId: 'getSnapshotAttestation',
    summary: 'A PDF attesting one snapshot, signed with the service\'s Ed25519 key',
    description: [
      'The PDF states the organisation, snapshot id, site, reason, capture time, the `stats` table, the SHA-256 of the',
      'snapshot\'s canonical content (uncompressed JSON), the time of the attestation, and the Ed25519 signature with the',
      'fingerprint of the service\'s public key (`sha256:` + hex SHA-256 of its DER SubjectPublicKeyInfo). The signed',
      'statement is a canonical JSON text (format `surveyor-snapshot-attestation/1`, fixed key order, no whitespace,',
      'ASCII with `\\uXXXX` escapes), printed on the page and embedded in the document information dictionary as',
      '`/SurveyorAttestation` (hex string of its bytes) with `/SurveyorSignature` (base64 signature of those bytes).',
      '`surveyor snapshots verify FILE.pdf --public-key KEY.pem [--content FILE]` checks it offline; `surveyor keys public`',
      'prints the key. Each request signs anew (the attestation time differs). A snapshot of another organisation is 404.',
    ].join(' '),
    tags: ['admin'],
    internal: true,
    auth: { kind: 'session', minRole: 'admin' },
    params: z.object({ id: Uuid }),
    errors: ['not_found'],
    response: { 200: null },
    produces: 'application/pdf',
  }),
} as const satisfies Record<string, RouteDef>;
