import { type Kysely, sql } from 'kysely';
import type { Database } from '../db/database.js';
import type { DB, KeyKind } from '../db/schema.js';

export interface KeyRow {
  id: string;
  organisation_id: string;
  kind: KeyKind;
  scopes: string[];
  user_id: string | null;
  expires_at: Date | null;
  revoked_at: Date | null;
  last_used_at: Date | null;
  role: string | null;
  disabled_at: Date | null;
  /** The membership is deactivated (SCIM active: false): the key works again on reactivation. */
  deactivated_at: Date | null;
}

/**
 * The key with the role of its owner's membership, or undefined. Revocation and expiry are the
 * caller's to check. Runs on every API request, so it is a prepared statement: planning the
 * three-table join cost several times its execution.
 */
export async function findKeyByHash(database: Database, tokenHash: string): Promise<KeyRow | undefined> {
  const rows = await database.prepared<KeyRow & Record<string, unknown>>(
    'surveyor_key_by_hash_v2',
    `select k.id, k.organisation_id, k.kind, k.scopes, k.user_id, k.expires_at, k.revoked_at, k.last_used_at, m.role, u.disabled_at, m.deactivated_at
       from keys k
       left join memberships m on m.organisation_id = k.organisation_id and m.user_id = k.user_id
       left join users u on u.id = k.user_id
      where k.token_hash = $1`,
    [tokenHash],
  );
  return rows[0];
}

/** Records that a key was used. Callers skip it when the last record is under a minute old. */
export async function touchKey(db: Kysely<DB>, id: string): Promise<void> {
  await db.updateTable('keys').set({ last_used_at: sql`now()` }).where('id', '=', id).execute();
}

/** A live session with its user and current role; undefined when expired, unknown, or the membership is gone or deactivated. */
export function findLiveSession(db: Kysely<DB>, tokenHash: string) {
  return db
    .selectFrom('sessions as s')
    .innerJoin('users as u', 'u.id', 's.user_id')
    .innerJoin('memberships as m', (j) => j.onRef('m.organisation_id', '=', 's.organisation_id').onRef('m.user_id', '=', 's.user_id'))
    .innerJoin('organisations as o', 'o.id', 's.organisation_id')
    .select(['s.id', 's.user_id', 's.organisation_id', 's.csrf_token', 's.expires_at', 's.last_seen_at', 'u.email', 'u.must_change_password', 'm.role', 'o.name as organisation_name'])
    .where('s.token_hash', '=', tokenHash)
    .where('s.expires_at', '>', sql<Date>`now()`)
    .where('u.disabled_at', 'is', null)
    .where('m.deactivated_at', 'is', null)
    .executeTakeFirst();
}

/** Removes a user's expired sessions (done at each sign-in, so the table does not grow without bound). */
export async function deleteExpiredSessions(db: Kysely<DB>, userId: string): Promise<void> {
  await db.deleteFrom('sessions').where('user_id', '=', userId).where('expires_at', '<=', sql<Date>`now()`).execute();
}

export async function touchSession(db: Kysely<DB>, id: string): Promise<void> {
  await db.updateTable('sessions').set({ last_seen_at: sql`now()` }).where('id', '=', id).execute();
}

export async function insertSession(
  db: Kysely<DB>,
  s: { tokenHash: string; csrfToken: string; userId: string; organisationId: string; ttlHours: number },
) {
  return db
    .insertInto('sessions')
    .values({
      token_hash: s.tokenHash,
      csrf_token: s.csrfToken,
      user_id: s.userId,
      organisation_id: s.organisationId,
      expires_at: sql`now() + make_interval(hours => ${s.ttlHours})`,
    })
    .returning(['id', 'expires_at'])
    .executeTakeFirstOrThrow();
}

/** Records a sign-in on the membership it opened (Settings → Members shows it; sessions come and go). */
export async function recordSignIn(db: Kysely<DB>, organisationId: string, userId: string): Promise<void> {
  await db.updateTable('memberships').set({ last_sign_in_at: sql`now()` }).where('organisation_id', '=', organisationId).where('user_id', '=', userId).execute();
}

export async function deleteSession(db: Kysely<DB>, id: string): Promise<void> {
  await db.deleteFrom('sessions').where('id', '=', id).execute();
}

/** Ends every session of a user but one (after a password change), and any expired ones. */
export async function deleteOtherSessions(db: Kysely<DB>, userId: string, keepId: string): Promise<void> {
  await db.deleteFrom('sessions').where('user_id', '=', userId).where('id', '!=', keepId).execute();
}

export function findUserByEmail(db: Kysely<DB>, email: string) {
  return db.selectFrom('users').selectAll().where('email', '=', email.trim().toLowerCase()).executeTakeFirst();
}

export function findUserById(db: Kysely<DB>, id: string) {
  return db.selectFrom('users').selectAll().where('id', '=', id).executeTakeFirst();
}

/** The user's active memberships (a deactivated one cannot be signed in to), oldest first. */
export function listMemberships(db: Kysely<DB>, userId: string) {
  return db
    .selectFrom('memberships as m')
    .innerJoin('organisations as o', 'o.id', 'm.organisation_id')
    .select(['m.organisation_id', 'o.name as organisation_name', 'm.role'])
    .where('m.user_id', '=', userId)
    .where('m.deactivated_at', 'is', null)
    .orderBy('m.created_at')
    .orderBy('m.organisation_id')
    .execute();
}

export async function setPassword(db: Kysely<DB>, userId: string, passwordHash: string, mustChange: boolean): Promise<void> {
  await db.updateTable('users').set({ password_hash: passwordHash, must_change_password: mustChange }).where('id', '=', userId).execute();
}
