import { type KeyObject, createHash } from 'node:crypto';
import { gunzipSync } from 'node:zlib';
import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.js';
import { AppError } from '../errors.js';
import { findSnapshot } from '../snapshots/snapshots.repo.js';
import { toSnapshot } from '../snapshots/snapshots.service.js';
import * as repo from './attestation.repo.js';
import { ATTESTATION_FORMAT, type AttestationPayload, canonicalPayload, parsePayload, signPayload, signatureMatches } from './payload.js';
import { readAttestationPdf, renderAttestationPdf } from './pdf.js';
import { type PublicSigningKey, signingKey } from './signing-key.js';

/**
 * The signed attestation PDF of one of the organisation's snapshots (spec 4.6; decisions.md):
 * 404 for a snapshot of another organisation, as for one that does not exist.
 */
export async function attestSnapshot(db: Kysely<DB>, secretKey: Buffer, organisationId: string, snapshotId: string, now = new Date()): Promise<{ pdf: Uint8Array; payload: AttestationPayload }> {
  const row = await findSnapshot(db, organisationId, snapshotId);
  if (!row) throw new AppError('not_found', `No snapshot ${snapshotId}.`);
  const snapshot = toSnapshot(row);
  const key = await signingKey(db, secretKey);
  const payload: AttestationPayload = {
    format: ATTESTATION_FORMAT,
    organisationId,
    organisationName: await repo.organisationName(db, organisationId),
    snapshotId: snapshot.id,
    siteId: snapshot.siteId,
    reason: snapshot.reason,
    capturedAt: snapshot.capturedAt,
    stats: snapshot.stats,
    contentSha256: snapshot.contentSha256,
    contentBytes: snapshot.contentBytes,
    keyFingerprint: key.fingerprint,
    issuedAt: now.toISOString(),
  };
  const text = canonicalPayload(payload);
  return { pdf: await renderAttestationPdf(payload, text, signPayload(text, key.privateKey)), payload };
}

export type Verification = { valid: true; payload: AttestationPayload; contentChecked: boolean } | { valid: false; reason: string; payload?: AttestationPayload };

/**
 * Checks an attestation PDF offline against a trusted public key: the statement is the key's
 * (fingerprint and Ed25519 signature), and, given the snapshot's content (its gzip as stored, or
 * the plain canonical JSON), that the content is the one attested (its SHA-256).
 */
export async function verifyAttestation(pdf: Uint8Array, trusted: PublicSigningKey & { key: KeyObject }, content?: Buffer): Promise<Verification> {
  let text: string;
  let signature: string;
  let payload: AttestationPayload;
  try {
    ({ text, signature } = await readAttestationPdf(pdf));
    payload = parsePayload(text);
  } catch (e) {
    return { valid: false, reason: (e as Error).message };
  }
  if (payload.keyFingerprint !== trusted.fingerprint) {
    return { valid: false, payload, reason: `signed with the key ${payload.keyFingerprint}, not the trusted key ${trusted.fingerprint}` };
  }
  if (!signatureMatches(text, signature, trusted.key)) {
    return { valid: false, payload, reason: 'the signature does not match the signed statement: the PDF was altered, or not signed by this key' };
  }
  if (!content) return { valid: true, payload, contentChecked: false };
  if (!payload.contentSha256) return { valid: false, payload, reason: 'the attestation records no content digest (the snapshot was taken before content was kept)' };
  let plain: Buffer;
  try {
    plain = content[0] === 0x1f && content[1] === 0x8b ? gunzipSync(content) : content;
  } catch (e) {
    return { valid: false, payload, reason: `the content file is not readable gzip (${(e as Error).message})` };
  }
  const digest = createHash('sha256').update(plain).digest('hex');
  if (digest !== payload.contentSha256) return { valid: false, payload, reason: `the content's SHA-256 is ${digest}, not the attested ${payload.contentSha256}` };
  return { valid: true, payload, contentChecked: true };
}
