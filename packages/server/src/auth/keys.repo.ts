import { type Kysely, sql } from 'kysely';
import type { DB, KeyKind } from '../db/schema.js';

export function insertKey(
  db: Kysely<DB>,
  k: { organisationId: string; kind: KeyKind; name: string; tokenHash: string; tokenPrefix: string; scopes: string[]; userId: string | null; expiresAt?: Date | null },
) {
  return db
    .insertInto('keys')
    .values({
      organisation_id: k.organisationId,
      kind: k.kind,
      name: k.name,
      token_hash: k.tokenHash,
      token_prefix: k.tokenPrefix,
      scopes: k.scopes,
      user_id: k.userId,
      expires_at: k.expiresAt ?? null,
    })
    .returning(['id', 'created_at'])
    .executeTakeFirstOrThrow();
}

/** A key by id, in any organisation (CLI), or within one (`organisationId`): another organisation's key is not found. */
export function findKey(db: Kysely<DB>, id: string, organisationId?: string) {
  let q = db.selectFrom('keys').select(['id', 'organisation_id', 'kind', 'user_id', 'revoked_at']).where('id', '=', id);
  if (organisationId) q = q.where('organisation_id', '=', organisationId);
  return q.executeTakeFirst();
}

/** Revokes a key; with `organisationId` only that organisation's (every tenant write but the operator's CLI names it). */
export async function revokeKey(db: Kysely<DB>, id: string, organisationId?: string): Promise<void> {
  let q = db.updateTable('keys').set({ revoked_at: sql`now()` }).where('id', '=', id).where('revoked_at', 'is', null);
  if (organisationId !== undefined) q = q.where('organisation_id', '=', organisationId);
  await q.execute();
}

/** The organisation's user-owned keys, newest first; only `userId`'s when given. */
export function listUserKeys(db: Kysely<DB>, organisationId: string, userId?: string) {
  let q = db
    .selectFrom('keys as k')
    .innerJoin('users as u', 'u.id', 'k.user_id')
    .select(['k.id', 'k.name', 'k.kind', 'k.token_prefix', 'k.scopes', 'k.user_id', 'u.email', 'k.created_at', 'k.last_used_at', 'k.expires_at', 'k.revoked_at'])
    .where('k.organisation_id', '=', organisationId)
    .where('k.kind', '!=', 'daemon');
  if (userId) q = q.where('k.user_id', '=', userId);
  return q.orderBy('k.created_at', 'desc').orderBy('k.id', 'desc').limit(1000).execute();
}
