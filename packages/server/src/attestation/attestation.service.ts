import { type KeyObject, createHash } from 'node:crypto';
import { gunzipSync } from 'node:zlib';
import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.js';
import { AppError } from '../errors.js';
import { findSnapshot } from '../snapshots/snapshots.repo.js';
import { toSnapshot } from '../snapshots/snapshots.service.js';
import * as repo from './attestation.repo.js';
import { ATTESTATION_FORMAT, type AttestationPayload, canonicalPayload, parsePayload, signPayload, signatureMatches } from './payload.js';
import { documentSignatureUpdate, readAttestationPdf, renderAttestationPdf, splitSignedPdf } from './pdf.js';
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
  // The statement is signed, then the whole document: the page a person reads is covered too.
  const signed = await renderAttestationPdf(payload, text, signPayload(text, key.privateKey), key.publicKeyPem);
  const pdf = Buffer.concat([signed, documentSignatureUpdate(signed, signPayload(signed, key.privateKey))]);
  return { pdf, payload };
}

export type Verification =
  | { valid: true; payload: AttestationPayload; contentChecked: boolean; signedBytes: number }
  | { valid: false; reason: string; payload?: AttestationPayload; unknownKey?: true };

/**
 * Checks an attestation PDF offline against a trusted public key: the document is the one signed
 * (an Ed25519 signature over every byte before its signature's update, and nothing after that
 * update), its statement is the key's (fingerprint and statement signature), and, given the
 * snapshot's content (its gzip as stored, or the plain canonical JSON), the content is the one
 * attested (its SHA-256). `unknownKey`: signed by a key other than the trusted one.
 */
export async function verifyAttestation(pdf: Uint8Array, trusted: PublicSigningKey & { key: KeyObject }, content?: Buffer): Promise<Verification> {
  let text: string;
  let signature: string;
  let payload: AttestationPayload;
  let signed: Buffer;
  let documentSignature: string;
  try {
    if (Buffer.from(pdf.subarray(0, 5)).toString('latin1') !== '%PDF-') throw new Error('not a readable PDF (it does not start with %PDF-)');
    // The statement is read from the signed bytes alone: what follows them is checked, not read.
    ({ signed, signature: documentSignature } = splitSignedPdf(pdf));
    ({ text, signature } = await readAttestationPdf(signed));
    payload = parsePayload(text);
  } catch (e) {
    return { valid: false, reason: (e as Error).message };
  }
  if (payload.keyFingerprint !== trusted.fingerprint) {
    return { valid: false, payload, unknownKey: true, reason: `signed with the key ${payload.keyFingerprint}, not the trusted key ${trusted.fingerprint}` };
  }
  if (!signatureMatches(signed, documentSignature, trusted.key)) {
    return { valid: false, payload, reason: 'the signature does not match the signed document: the PDF was altered, or not signed by this key' };
  }
  if (!signatureMatches(text, signature, trusted.key)) {
    return { valid: false, payload, reason: 'the signature does not match the signed statement: the PDF was altered, or not signed by this key' };
  }
  if (!content) return { valid: true, payload, contentChecked: false, signedBytes: signed.length };
  if (!payload.contentSha256) return { valid: false, payload, reason: 'the attestation records no content digest (the snapshot was taken before content was kept)' };
  let plain: Buffer;
  try {
    plain = content[0] === 0x1f && content[1] === 0x8b ? gunzipSync(content) : content;
  } catch (e) {
    return { valid: false, payload, reason: `the content file is not readable gzip (${(e as Error).message})` };
  }
  const digest = createHash('sha256').update(plain).digest('hex');
  if (digest !== payload.contentSha256) return { valid: false, payload, reason: `the content's SHA-256 is ${digest}, not the attested ${payload.contentSha256}` };
  return { valid: true, payload, contentChecked: true, signedBytes: signed.length };
}
