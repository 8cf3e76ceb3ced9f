import { type KeyObject, sign, verify } from 'node:crypto';

/** The value of `format` in every attestation this version writes. */
export const ATTESTATION_FORMAT = 'surveyor-snapshot-attestation/1';

/**
 * What an attestation asserts (README, "Snapshot attestations"). Its text is canonical: this key
 * order, no whitespace, every character outside printable ASCII written as a `\uXXXX` escape, so
 * the bytes the signature covers are the same wherever they are printed or stored.
 */
export interface AttestationPayload {
  format: typeof ATTESTATION_FORMAT;
  organisationId: string;
  organisationName: string;
  snapshotId: string;
  siteId: string | null;
  reason: string;
  capturedAt: string;
  stats: Record<string, number>;
  /** SHA-256 (lowercase hex) of the snapshot's canonical content, uncompressed; null for a snapshot taken before content was kept. */
  contentSha256: string | null;
  contentBytes: number | null;
  /** The signing key's fingerprint: `sha256:` and the hex SHA-256 of its DER SubjectPublicKeyInfo. */
  keyFingerprint: string;
  issuedAt: string;
}

const KEYS: readonly (keyof AttestationPayload)[] = ['format', 'organisationId', 'organisationName', 'snapshotId', 'siteId', 'reason', 'capturedAt', 'stats', 'contentSha256', 'contentBytes', 'keyFingerprint', 'issuedAt'];

/** The canonical text of a payload (the bytes that are signed). */
export function canonicalPayload(p: AttestationPayload): string {
  const ordered = Object.fromEntries(KEYS.map((k) => [k, p[k]]));
  return JSON.stringify(ordered).replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** Ed25519 signature of the canonical text's bytes (or of a document's bytes), base64. */
export function signPayload(text: string | Uint8Array, privateKey: KeyObject): string {
  return sign(null, typeof text === 'string' ? Buffer.from(text, 'latin1') : text, privateKey).toString('base64');
}

export function signatureMatches(text: string | Uint8Array, signatureBase64: string, publicKey: KeyObject): boolean {
  const signature = Buffer.from(signatureBase64, 'base64');
  // Base64 decoding skips what it cannot read; an altered character must not slip through.
  if (signature.length !== 64 || signature.toString('base64') !== signatureBase64) return false;
  return verify(null, typeof text === 'string' ? Buffer.from(text, 'latin1') : text, publicKey, signature);
}

/** Parses an embedded payload text; throws with a reason when it is not one this version reads. */
export function parsePayload(text: string): AttestationPayload {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new Error('the embedded attestation is not JSON');
  }
  const p = value as Partial<AttestationPayload> | null;
  if (!p || typeof p !== 'object' || p.format !== ATTESTATION_FORMAT) throw new Error(`the embedded attestation is not of format ${ATTESTATION_FORMAT}`);
  if (typeof p.keyFingerprint !== 'string' || typeof p.snapshotId !== 'string') throw new Error('the embedded attestation lacks its snapshot id or key fingerprint');
  return p as AttestationPayload;
}
