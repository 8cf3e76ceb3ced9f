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
      '`/SurveyorAttestation` (hex string of its bytes) with `/SurveyorSignature` (base64 signature of those bytes) and',
      '`/SurveyorPublicKey`. The whole document is signed too: its last incremental update holds an object',
      '`/Type /SurveyorSignature` whose `/ByteRange [ 0 N ]` is every byte before that update and whose `/Contents` is the',
      'base64 Ed25519 signature of them; the update is fixed by those bytes and the signature, so anything else after',
      'them (an added or painted-over page) fails verification, as does any changed byte before them.',
      '`surveyor snapshots verify FILE.pdf --public-key KEY.pem [--content FILE]` checks it offline; the key is published',
      'at GET /api/v1/attestation/public-key and by `surveyor keys public`. Each request signs anew (the attestation time',
      'differs). A snapshot of another organisation is 404.',
    ].join(' '),
    tags: ['admin'],
    internal: true,
    auth: { kind: 'session', minRole: 'admin' },
    params: z.object({ id: Uuid }),
    errors: ['not_found'],
    response: { 200: null },
    produces: 'application/pdf',
  }),
  getAttestationPublicKey: route({
    method: 'GET',
    url: '/api/v1/attestation/public-key',
    operationId: 'getAttestationPublicKey',
    summary: 'The public key that verifies attestation PDFs',
    description: [
      'The deployment\'s Ed25519 public key (PEM, SubjectPublicKeyInfo) and its fingerprint (`sha256:` + hex SHA-256 of',
      'the DER SubjectPublicKeyInfo), for `surveyor snapshots verify FILE.pdf --public-key KEY.pem`. Public (no',
      'credential; rate limited per client address): a public key discloses nothing, and an auditor verifying a PDF may',
      'hold no account. The key is made on first use, as `surveyor keys public` does.',
    ].join(' '),
    tags: ['admin'],
    internal: true,
    auth: { kind: 'none' },
    response: { 200: z.object({ algorithm: z.literal('Ed25519'), publicKeyPem: z.string(), fingerprint: z.string().regex(/^sha256:[0-9a-f]{64}$/) }) },
  }),
} as const satisfies Record<string, RouteDef>;
