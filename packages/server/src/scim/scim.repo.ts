import { type Kysely, sql } from 'kysely';
import type { DB } from '../db/schema.js';

type Db = Kysely<DB>;

// One small function per query; every one names the organisation.

export interface UserRow {
  user_id: string;
  email: string;
  role: string;
  member_since: Date;
  member_updated: Date;
  deactivated_at: Date | null;
  user_name: string | null;
  external_id: string | null;
  resource: Record<string, unknown> | null;
  version: number | null;
  created_at: Date | null;
  updated_at: Date | null;
}

/** Most members a list reads before filtering: far above any organisation's head count. */
export const MAX_SCAN = 50_000;

function users(db: Db, organisationId: string) {
  return db
    .selectFrom('memberships as m')
    .innerJoin('users as u', 'u.id', 'm.user_id')
    .leftJoin('scim_users as su', (j) => j.onRef('su.organisation_id', '=', 'm.organisation_id').onRef('su.user_id', '=', 'm.user_id'))
    .select([
      'm.user_id', 'u.email', 'm.role', 'm.created_at as member_since', 'm.updated_at as member_updated', 'm.deactivated_at',
      'su.user_name', 'su.external_id', 'su.resource', 'su.version', 'su.created_at', 'su.updated_at',
    ])
    .where('m.organisation_id', '=', organisationId);
}

/** The organisation's provisioned users, narrowed by an equality the filter allows, oldest first. */
export async function listUsers(db: Db, organisationId: string, eq: { userName?: string | undefined; externalId?: string | undefined; id?: string | undefined }): Promise<UserRow[]> {
  let q = users(db, organisationId).where('su.user_id', 'is not', null);
  if (eq.id !== undefined) q = q.where('m.user_id', '=', eq.id);
  if (eq.externalId !== undefined) q = q.where('su.external_id', '=', eq.externalId);
  if (eq.userName !== undefined) q = q.where(sql`lower(coalesce(su.user_name, u.email))`, '=', eq.userName.toLowerCase());
  return (await q.orderBy('m.created_at').orderBy('m.user_id').limit(MAX_SCAN + 1).execute()) as UserRow[];
}

/** A provisioned user of the organisation; with `orMember`, a member the provider has not provisioned yet too (version null). */
export async function findUser(db: Db, organisationId: string, userId: string, orMember = false): Promise<UserRow | undefined> {
  return (await users(db, organisationId).where('m.user_id', '=', userId).$if(!orMember, (q) => q.where('su.user_id', 'is not', null)).executeTakeFirst()) as UserRow | undefined;
}

/** The provisioned user holding `userName` (case-insensitive) in the organisation, if any. */
export async function userIdByUserName(db: Db, organisationId: string, userName: string): Promise<string | undefined> {
  const r = await db.selectFrom('scim_users').select('user_id').where('organisation_id', '=', organisationId).where(sql`lower(user_name)`, '=', userName.toLowerCase()).executeTakeFirst();
  return r?.user_id;
}

/** The groups of each user: [user id, group id, group display name]. */
export function groupsOfUsers(db: Db, organisationId: string, userIds: string[]) {
  if (userIds.length === 0) return Promise.resolve([]);
  return db
    .selectFrom('scim_group_members as gm')
    .innerJoin('scim_groups as g', (j) => j.onRef('g.organisation_id', '=', 'gm.organisation_id').onRef('g.id', '=', 'gm.group_id'))
    .select(['gm.user_id', 'g.id', 'g.display_name'])
    .where('gm.organisation_id', '=', organisationId)
    .where('gm.user_id', 'in', userIds)
    .orderBy('g.display_name')
    .execute();
}

export async function insertScimUser(db: Db, organisationId: string, userId: string, u: { userName: string; externalId: string | null; resource: Record<string, unknown> }): Promise<void> {
  await db.insertInto('scim_users').values({ organisation_id: organisationId, user_id: userId, user_name: u.userName, external_id: u.externalId, resource: JSON.stringify(u.resource) }).execute();
}

export async function updateScimUser(db: Db, organisationId: string, userId: string, u: { userName: string; externalId: string | null; resource: Record<string, unknown> }): Promise<void> {
  await db
    .updateTable('scim_users')
    .set({ user_name: u.userName, external_id: u.externalId, resource: JSON.stringify(u.resource), version: sql`version + 1`, updated_at: sql`now()` })
    .where('organisation_id', '=', organisationId)
    .where('user_id', '=', userId)
    .execute();
}

/** Counts a change that is not in the stored resource (active, group membership) as a new version. */
export async function bumpScimUsers(db: Db, organisationId: string, userIds: string[]): Promise<void> {
  if (userIds.length === 0) return;
  await db.updateTable('scim_users').set({ version: sql`version + 1`, updated_at: sql`now()` }).where('organisation_id', '=', organisationId).where('user_id', 'in', userIds).execute();
}

export async function setDeactivated(db: Db, organisationId: string, userId: string, deactivated: boolean): Promise<void> {
  await db
    .updateTable('memberships')
    .set({ deactivated_at: deactivated ? sql`now()` : null, updated_at: sql`now()` })
    .where('organisation_id', '=', organisationId)
    .where('user_id', '=', userId)
    .execute();
}

/** The organisation's owners that are active, their rows locked (the last one may not be deactivated or deleted). */
export async function lockActiveOwners(db: Db, organisationId: string): Promise<string[]> {
  const rows = await db.selectFrom('memberships').select('user_id').where('organisation_id', '=', organisationId).where('role', '=', 'owner').where('deactivated_at', 'is', null).forUpdate().execute();
  return rows.map((r) => r.user_id);
}

export async function countKeys(db: Db, organisationId: string, userId: string): Promise<number> {
  const r = await db.selectFrom('keys').select((eb) => eb.fn.countAll<string>().as('n')).where('organisation_id', '=', organisationId).where('user_id', '=', userId).executeTakeFirstOrThrow();
  return Number(r.n);
}

/** Those of `userIds` that are provisioned users of the organisation. */
export async function provisionedUsers(db: Db, organisationId: string, userIds: string[]): Promise<Set<string>> {
  if (userIds.length === 0) return new Set();
  const rows = await db.selectFrom('scim_users').select('user_id').where('organisation_id', '=', organisationId).where('user_id', 'in', userIds).execute();
  return new Set(rows.map((r) => r.user_id));
}

/** A user of this email, in any organisation. */
export function findUserByEmail(db: Db, email: string) {
  return db.selectFrom('users').select(['id', 'email']).where('email', '=', email.toLowerCase()).executeTakeFirst();
}

/** How many organisations the user belongs to (a login identity shared with another organisation is not this one's to rename). */
export async function membershipCount(db: Db, userId: string): Promise<number> {
  const r = await db.selectFrom('memberships').select((eb) => eb.fn.countAll<string>().as('n')).where('user_id', '=', userId).executeTakeFirstOrThrow();
  return Number(r.n);
}

export async function setEmail(db: Db, userId: string, email: string): Promise<void> {
  await db.updateTable('users').set({ email }).where('id', '=', userId).execute();
}


// Groups

export interface GroupRow {
  id: string;
  display_name: string;
  external_id: string | null;
  version: number;
  created_at: Date;
  updated_at: Date;
}

export async function listGroups(db: Db, organisationId: string, eq: { displayName?: string | undefined; externalId?: string | undefined; id?: string | undefined }): Promise<GroupRow[]> {
  let q = db.selectFrom('scim_groups').select(['id', 'display_name', 'external_id', 'version', 'created_at', 'updated_at']).where('organisation_id', '=', organisationId);
  if (eq.id !== undefined) q = q.where('id', '=', eq.id);
  if (eq.externalId !== undefined) q = q.where('external_id', '=', eq.externalId);
  if (eq.displayName !== undefined) q = q.where(sql`lower(display_name)`, '=', eq.displayName.toLowerCase());
  return q.orderBy('created_at').orderBy('id').limit(MAX_SCAN + 1).execute();
}

/** A group; `forUpdate` locks its row until the transaction ends. */
export function findGroup(db: Db, organisationId: string, id: string, forUpdate = false): Promise<GroupRow | undefined> {
  return db
    .selectFrom('scim_groups')
    .select(['id', 'display_name', 'external_id', 'version', 'created_at', 'updated_at'])
    .where('organisation_id', '=', organisationId)
    .where('id', '=', id)
    .$if(forUpdate, (q) => q.forUpdate())
    .executeTakeFirst();
}

/** Locks a membership row until the transaction ends (a SCIM write to that user). */
export async function lockMembership(db: Db, organisationId: string, userId: string): Promise<void> {
  await db.selectFrom('memberships').select('user_id').where('organisation_id', '=', organisationId).where('user_id', '=', userId).forUpdate().execute();
}

export async function groupIdByName(db: Db, organisationId: string, displayName: string): Promise<string | undefined> {
  const r = await db.selectFrom('scim_groups').select('id').where('organisation_id', '=', organisationId).where(sql`lower(display_name)`, '=', displayName.toLowerCase()).executeTakeFirst();
  return r?.id;
}

export function insertGroup(db: Db, organisationId: string, g: { displayName: string; externalId: string | null }) {
  return db.insertInto('scim_groups').values({ organisation_id: organisationId, display_name: g.displayName, external_id: g.externalId }).returning('id').executeTakeFirstOrThrow();
}

export async function updateGroup(db: Db, organisationId: string, id: string, g: { displayName: string; externalId: string | null }): Promise<void> {
  await db
    .updateTable('scim_groups')
    .set({ display_name: g.displayName, external_id: g.externalId, version: sql`version + 1`, updated_at: sql`now()` })
    .where('organisation_id', '=', organisationId)
    .where('id', '=', id)
    .execute();
}

export async function deleteGroup(db: Db, organisationId: string, id: string): Promise<void> {
  await db.deleteFrom('scim_groups').where('organisation_id', '=', organisationId).where('id', '=', id).execute();
}

/** The members of each group, with their email (the member's `display`). */
export function membersOfGroups(db: Db, organisationId: string, groupIds: string[]) {
  if (groupIds.length === 0) return Promise.resolve([]);
  return db
    .selectFrom('scim_group_members as gm')
    .innerJoin('users as u', 'u.id', 'gm.user_id')
    .leftJoin('scim_users as su', (j) => j.onRef('su.organisation_id', '=', 'gm.organisation_id').onRef('su.user_id', '=', 'gm.user_id'))
    .select(['gm.group_id', 'gm.user_id', 'u.email', 'su.resource'])
    .where('gm.organisation_id', '=', organisationId)
    .where('gm.group_id', 'in', groupIds)
    .orderBy('u.email')
    .execute();
}

/** Makes the group's members exactly `userIds`; returns who was added and who removed. */
export async function setGroupMembers(db: Db, organisationId: string, groupId: string, userIds: string[]): Promise<{ added: string[]; removed: string[] }> {
  const removed = await db
    .deleteFrom('scim_group_members')
    .where('organisation_id', '=', organisationId)
    .where('group_id', '=', groupId)
    .$if(userIds.length > 0, (q) => q.where('user_id', 'not in', userIds))
    .returning('user_id')
    .execute();
  const added = userIds.length
    ? await sql<{ user_id: string }>`
        insert into scim_group_members (organisation_id, group_id, user_id)
        select ${organisationId}, ${groupId}, x from unnest(${userIds}::uuid[]) as x
        on conflict do nothing returning user_id`.execute(db)
    : { rows: [] };
  return { added: added.rows.map((r) => r.user_id), removed: removed.map((r) => r.user_id) };
}

/** The groups a set of users is in, before a group change: who a deleted group leaves. */
export async function groupMemberIds(db: Db, organisationId: string, groupId: string): Promise<string[]> {
  const rows = await db.selectFrom('scim_group_members').select('user_id').where('organisation_id', '=', organisationId).where('group_id', '=', groupId).execute();
  return rows.map((r) => r.user_id);
}

// Role mappings

export function listMappings(db: Db, organisationId: string) {
  return db.selectFrom('scim_role_mappings').select(['group_key', 'group_name', 'role']).where('organisation_id', '=', organisationId).orderBy('group_key').execute();
}

export async function replaceMappings(db: Db, organisationId: string, mappings: { groupKey: string; groupName: string; role: string }[]): Promise<void> {
  await db.deleteFrom('scim_role_mappings').where('organisation_id', '=', organisationId).execute();
  if (mappings.length) await db.insertInto('scim_role_mappings').values(mappings.map((m) => ({ organisation_id: organisationId, group_key: m.groupKey, group_name: m.groupName, role: m.role }))).execute();
}

/**
 * Sets the role of provisioned non-owner members (`userIds`, or all) to the highest role their
 * groups map to, viewer when none does; nothing when the organisation has no mapping. Returns
 * the changes.
 */
export async function recomputeRoles(db: Db, organisationId: string, userIds: string[] | null): Promise<{ user_id: string; email: string; from: string; to: string }[]> {
  if (userIds && userIds.length === 0) return [];
  const r = await sql<{ user_id: string; email: string; from: string; to: string }>`
    with target as (
      select m.user_id, m.role from memberships m
      join scim_users su on su.organisation_id = m.organisation_id and su.user_id = m.user_id
      where m.organisation_id = ${organisationId} and m.role <> 'owner'
        and exists (select 1 from scim_role_mappings where organisation_id = ${organisationId})
        ${userIds ? sql`and m.user_id = any(${userIds}::uuid[])` : sql``}
    ), granted as (
      select t.user_id, t.role as old_role,
             case coalesce(max(case rm.role when 'admin' then 3 when 'editor' then 2 when 'viewer' then 1 end), 1)
               when 3 then 'admin' when 2 then 'editor' else 'viewer' end as new_role
      from target t
      left join scim_group_members gm on gm.organisation_id = ${organisationId} and gm.user_id = t.user_id
      left join scim_groups g on g.organisation_id = ${organisationId} and g.id = gm.group_id
      left join scim_role_mappings rm on rm.organisation_id = ${organisationId} and rm.group_key in (lower(g.display_name), g.id::text)
      group by t.user_id, t.role
    )
    update memberships m set role = g.new_role, updated_at = now()
    from granted g, users u
    where m.organisation_id = ${organisationId} and m.user_id = g.user_id and u.id = m.user_id and g.new_role <> g.old_role
    returning m.user_id, u.email, g.old_role as "from", m.role as "to"`.execute(db);
  return r.rows;
}

/** Whether any mapping exists: with none, SCIM never changes a role. */
export async function hasMappings(db: Db, organisationId: string): Promise<boolean> {
  return (await db.selectFrom('scim_role_mappings').select('group_key').where('organisation_id', '=', organisationId).limit(1).executeTakeFirst()) !== undefined;
}

/** For Settings → SCIM: the groups with their member counts, and the provisioned members' counts. */
export function groupSummaries(db: Db, organisationId: string) {
  return db
    .selectFrom('scim_groups as g')
    .select((eb) => [
      'g.id', 'g.display_name', 'g.external_id', 'g.updated_at',
      eb.selectFrom('scim_group_members as gm').select(eb.fn.countAll<string>().as('n')).whereRef('gm.organisation_id', '=', 'g.organisation_id').whereRef('gm.group_id', '=', 'g.id').as('members'),
    ])
    .where('g.organisation_id', '=', organisationId)
    .orderBy(sql`lower(g.display_name)`)
    .limit(1000)
    .execute();
}

export async function provisionedCounts(db: Db, organisationId: string) {
  const r = await sql<{ managed: string; deactivated: string; last_change: Date | null }>`
    select count(*) as managed, count(*) filter (where m.deactivated_at is not null) as deactivated,
           greatest(max(su.updated_at), (select max(updated_at) from scim_groups where organisation_id = ${organisationId})) as last_change
    from scim_users su join memberships m on m.organisation_id = su.organisation_id and m.user_id = su.user_id
    where su.organisation_id = ${organisationId}`.execute(db);
  const row = r.rows[0]!;
  return { managed: Number(row.managed), deactivated: Number(row.deactivated), lastChange: row.last_change };
}
