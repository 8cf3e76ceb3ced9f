import { type Kysely, sql } from 'kysely';
import type { DB } from '../db/schema.js';

type Db = Kysely<DB>;

export interface MemberRow {
  user_id: string;
  email: string;
  role: string;
  must_change_password: boolean;
  created_at: Date;
  last_sign_in_at: Date | null;
  deactivated_at: Date | null;
  scim_managed: boolean;
}

function members(db: Db, organisationId: string) {
  return db
    .selectFrom('memberships as m')
    .innerJoin('users as u', 'u.id', 'm.user_id')
    .leftJoin('scim_users as su', (j) => j.onRef('su.organisation_id', '=', 'm.organisation_id').onRef('su.user_id', '=', 'm.user_id'))
    .select((eb) => [
      'm.user_id',
      'u.email',
      'm.role',
      'u.must_change_password',
      'm.created_at',
      'm.last_sign_in_at',
      'm.deactivated_at',
      eb('su.user_id', 'is not', null).as('scim_managed'),
    ])
    .where('m.organisation_id', '=', organisationId);
}

/** The organisation's members, by email. */
export async function listMembers(db: Db, organisationId: string): Promise<MemberRow[]> {
  return (await members(db, organisationId).orderBy('u.email').execute()) as MemberRow[];
}

/** One member of the organisation; another organisation's user is undefined. */
export async function findMember(db: Db, organisationId: string, userId: string): Promise<MemberRow | undefined> {
  return (await members(db, organisationId).where('m.user_id', '=', userId).executeTakeFirst()) as MemberRow | undefined;
}

/**
 * The organisation's owners, their membership rows locked until the transaction ends: two owners
 * demoting or removing each other at once cannot both see "another owner is left".
 */
export async function lockOwners(db: Db, organisationId: string): Promise<string[]> {
  // Only active owners count: one the identity provider deactivated cannot act as the last owner.
  const rows = await db.selectFrom('memberships').select('user_id').where('organisation_id', '=', organisationId).where('role', '=', 'owner').where('deactivated_at', 'is', null).forUpdate().execute();
  return rows.map((r) => r.user_id);
}

export async function deleteMembership(db: Db, organisationId: string, userId: string): Promise<void> {
  await db.deleteFrom('memberships').where('organisation_id', '=', organisationId).where('user_id', '=', userId).execute();
}

/** Ends the user's sessions in one organisation; returns how many. */
export async function deleteSessions(db: Db, organisationId: string, userId: string): Promise<number> {
  const r = await db.deleteFrom('sessions').where('organisation_id', '=', organisationId).where('user_id', '=', userId).executeTakeFirst();
  return Number(r.numDeletedRows);
}

/** Revokes the user's live keys in one organisation; returns their ids. */
export async function revokeUserKeys(db: Db, organisationId: string, userId: string): Promise<string[]> {
  const rows = await db
    .updateTable('keys')
    .set({ revoked_at: sql`now()` })
    .where('organisation_id', '=', organisationId)
    .where('user_id', '=', userId)
    .where('revoked_at', 'is', null)
    .returning('id')
    .execute();
  return rows.map((r) => r.id);
}
