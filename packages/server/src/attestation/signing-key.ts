import { type KeyObject, createHash, createPrivateKey, createPublicKey, generateKeyPairSync } from 'node:crypto';
import type { Kysely } from 'kysely';
import { decryptSecret, encryptSecret } from '../crypto/secrets.js';
import type { DB } from '../db/schema.js';
import * as repo from './attestation.repo.js';

/** What anyone may know of the service's signing key. */
export interface PublicSigningKey {
  /** SubjectPublicKeyInfo, PEM. */
  publicKeyPem: string;
  /** `sha256:` and the lowercase hex SHA-256 of the DER SubjectPublicKeyInfo (`openssl pkey -pubin -outform DER | sha256sum`). */
  fingerprint: string;
}

export interface SigningKey extends PublicSigningKey {
  privateKey: KeyObject;
}

/** Binds the sealed private key to its row: a sealed value copied elsewhere does not open. */
const SEAL_CONTEXT = 'service_signing_keys:attestation';

/** The fingerprint of an Ed25519 public key: SHA-256 of its DER SubjectPublicKeyInfo. */
export function keyFingerprint(publicKey: KeyObject): string {
  return `sha256:${createHash('sha256').update(publicKey.export({ type: 'spki', format: 'der' })).digest('hex')}`;
}

/** Reads a PEM public key; throws a readable error when it is not an Ed25519 key. */
export function parsePublicKey(pem: string): PublicSigningKey & { key: KeyObject } {
  const key = createPublicKey(pem);
  if (key.asymmetricKeyType !== 'ed25519') throw new Error(`not an Ed25519 public key (${key.asymmetricKeyType ?? 'unknown type'})`);
  return { key, publicKeyPem: key.export({ type: 'spki', format: 'pem' }).toString(), fingerprint: keyFingerprint(key) };
}

/** The stored public key, or undefined when the service has not made its key yet. No secret needed. */
export async function storedPublicKey(db: Kysely<DB>): Promise<PublicSigningKey | undefined> {
  const row = await repo.findSigningKey(db, 'attestation');
  return row ? { publicKeyPem: row.public_key_pem, fingerprint: row.fingerprint } : undefined;
}

/**
 * The service's Ed25519 attestation key: made on first use and stored with its private half sealed
 * under the secret key. Race-safe across processes: each contender inserts "if absent" and then
 * everyone reads the one row that won. Never logged; a secret key that cannot open the stored one
 * is an error, never a reason to make another.
 */
export async function signingKey(db: Kysely<DB>, secretKey: Buffer): Promise<SigningKey> {
  let row = await repo.findSigningKey(db, 'attestation');
  if (!row) {
    const { publicKey, privateKey } = generateKeyPairSync('ed25519');
    const pkcs8 = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    await repo.insertSigningKeyIfAbsent(db, {
      purpose: 'attestation',
      publicKeyPem: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
      fingerprint: keyFingerprint(publicKey),
      privateKeySealed: encryptSecret(secretKey, pkcs8, SEAL_CONTEXT),
    });
    row = await repo.findSigningKey(db, 'attestation');
    if (!row) throw new Error('the signing key vanished right after it was stored');
  }
  let pem: string;
  try {
    pem = decryptSecret(secretKey, row.private_key_sealed, SEAL_CONTEXT);
  } catch {
    throw new Error('the stored signing key does not open with this secret key (SERVICE_SECRET_KEY differs from the one that sealed it)');
  }
  return { privateKey: createPrivateKey(pem), publicKeyPem: row.public_key_pem, fingerprint: row.fingerprint };
}
