import { isUuid } from '@surveyor/contract';
import { type Kysely, sql } from 'kysely';
import type { DB } from '../db/schema.js';

/** An organisation by id or by (case-insensitive) name. */
export function findOrganisation(db: Kysely<DB>, idOrName: string) {
  return db
    .selectFrom('organisations')
    .select(['id', 'name'])
    .where((eb) => (isUuid(idOrName) ? eb('id', '=', idOrName) : eb(sql`lower(name)`, '=', idOrName.toLowerCase())))
    .executeTakeFirst();
}

export function countOrganisations(db: Kysely<DB>) {
  return db.selectFrom('organisations').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
}

export function insertOrganisation(db: Kysely<DB>, name: string) {
  return db.insertInto('organisations').values({ name }).returning(['id', 'name']).executeTakeFirstOrThrow();
}

export function insertUser(db: Kysely<DB>, u: { email: string; passwordHash: string | null; mustChangePassword: boolean }) {
  return db
    .insertInto('users')
    .values({ email: u.email, password_hash: u.passwordHash, must_change_password: u.mustChangePassword })
    .returning(['id'])
    .executeTakeFirstOrThrow();
}

export function findMembership(db: Kysely<DB>, organisationId: string, userId: string) {
  return db.selectFrom('memberships').selectAll().where('organisation_id', '=', organisationId).where('user_id', '=', userId).executeTakeFirst();
}

export async function insertMembership(db: Kysely<DB>, organisationId: string, userId: string, role: string): Promise<void> {
  await db.insertInto('memberships').values({ organisation_id: organisationId, user_id: userId, role }).execute();
}

export async function updateRole(db: Kysely<DB>, organisationId: string, userId: string, role: string): Promise<void> {
  await db
    .updateTable('memberships')
    .set({ role, updated_at: sql`now()` })
    .where('organisation_id', '=', organisationId)
    .where('user_id', '=', userId)
    .execute();
}

/** The email of the organisation's oldest owner. */
export async function oldestOwnerEmail(db: Kysely<DB>, organisationId: string): Promise<string | undefined> {
  const r = await db
    .selectFrom('memberships as m')
    .innerJoin('users as u', 'u.id', 'm.user_id')
    .select('u.email')
    .where('m.organisation_id', '=', organisationId)
    .where('m.role', '=', 'owner')
    .where('m.deactivated_at', 'is', null)
    .orderBy('m.created_at')
    .limit(1)
    .executeTakeFirst();
  return r?.email;
}
