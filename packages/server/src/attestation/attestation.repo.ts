import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.js';

/** The stored signing key of a purpose, or undefined before its first use. */
export function findSigningKey(db: Kysely<DB>, purpose: 'attestation') {
  return db.selectFrom('service_signing_keys').select(['public_key_pem', 'fingerprint', 'private_key_sealed']).where('purpose', '=', purpose).executeTakeFirst();
}

/** Stores a new signing key unless another process stored one first (then nothing changes). */
export async function insertSigningKeyIfAbsent(db: Kysely<DB>, row: { purpose: 'attestation'; publicKeyPem: string; fingerprint: string; privateKeySealed: string }): Promise<void> {
  await db
    .insertInto('service_signing_keys')
    .values({ purpose: row.purpose, algorithm: 'ed25519', public_key_pem: row.publicKeyPem, fingerprint: row.fingerprint, private_key_sealed: row.privateKeySealed })
    .onConflict((oc) => oc.column('purpose').doNothing())
    .execute();
}

export async function organisationName(db: Kysely<DB>, organisationId: string): Promise<string> {
  return (await db.selectFrom('organisations').select('name').where('id', '=', organisationId).executeTakeFirstOrThrow()).name;
}

/** A snapshot's stored content (gzip), by id alone: for the operator's CLI, which works on the whole database. */
export function findSnapshotContent(db: Kysely<DB>, snapshotId: string) {
  return db.selectFrom('snapshots').select(['id', 'organisation_id', 'content', 'content_sha256']).where('id', '=', snapshotId).executeTakeFirst();
}
