import type { Role } from '@surveyor/contract';
import type { Kysely } from 'kysely';
import { type Actor, recordAudit } from '../audit/audit.repo.js';
import { hashPassword } from '../auth/passwords.js';
import type { DB } from '../db/schema.js';
import { emit } from '../events/emit.js';
import * as adminRepo from '../admin/admin.repo.js';
import * as membersRepo from '../members/members.repo.js';
import { ScimError } from './errors.js';
import { type Resource, compileFilter, project } from './filter.js';
import { applyPatch, patchOperations } from './patch.js';
import { type GroupInput, type UserInput, checkIfMatch, etagOf, groupInput, groupResource, loginEmail, userEtag, userInput, userResource } from './resources.js';
import * as repo from './scim.repo.js';
import { MAX_RESULTS, URN } from './schema.js';

// The SCIM surface's rules. Users are the members the provider provisioned: created through
// SCIM, or a member added by hand whom the provider took over by creating a user with their email
// (members it never provisioned are not listed, so the provider cannot see or delete them);
// groups map to roles through the owner's mapping (roles recomputed in the same transaction as
// the change that moves them); deactivation is per membership and takes effect on the next
// request. Every change is an audit row and a member.* event, and a write that changes nothing
// (a provider re-sending the same user) writes nothing.

export interface ScimContext {
  db: Kysely<DB>;
  organisationId: string;
  actor: Actor;
  /** …/api/scim/v2, for locations and $ref. */
  base: string;
  /** The current role of the token's owner (admin or owner). */
  actorRole: Role;
}

export interface ListQuery {
  filter?: string | undefined;
  startIndex?: string | undefined;
  count?: string | undefined;
  attributes?: string | undefined;
  excludedAttributes?: string | undefined;
}

export interface Written {
  resource: Resource;
  etag: string;
}

const notFound = (kind: string, id: string) => new ScimError(404, `No ${kind} ${id} in this organisation.`);
const isId = (id: string) => /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(id);

function pageOf(q: ListQuery): { start: number; count: number } {
  const int = (v: string | undefined, name: string, fallback: number) => {
    if (v === undefined || v === '') return fallback;
    if (!/^-?\d{1,9}$/.test(v)) throw new ScimError(400, `${name} must be an integer.`, 'invalidValue');
    return Number(v);
  };
  // RFC 7644 3.4.2.4: a startIndex under 1 is 1; a negative count is 0; above the maximum, the maximum.
  return { start: Math.max(1, int(q.startIndex, 'startIndex', 1)), count: Math.min(MAX_RESULTS, Math.max(0, int(q.count, 'count', 100))) };
}

const listOf = (q: string | undefined) => q?.split(',').map((s) => s.trim()).filter(Boolean);

function listResponse(all: Resource[], page: { start: number; count: number }, q: ListQuery, type: 'User' | 'Group') {
  const slice = all.slice(page.start - 1, page.start - 1 + page.count);
  return {
    schemas: [URN.listResponse],
    totalResults: all.length,
    startIndex: page.start,
    itemsPerPage: slice.length,
    Resources: slice.map((r) => project(r, type, listOf(q.attributes), listOf(q.excludedAttributes))),
  };
}

function tooMany(n: number) {
  if (n > repo.MAX_SCAN) throw new ScimError(400, `The filter matches more than ${repo.MAX_SCAN} resources; narrow it.`, 'tooMany');
}

// ————— Users —————

async function usersAsResources(ctx: ScimContext, rows: repo.UserRow[]): Promise<Resource[]> {
  const groups = await repo.groupsOfUsers(ctx.db, ctx.organisationId, rows.map((r) => r.user_id));
  const byUser = new Map<string, { id: string; display_name: string }[]>();
  for (const g of groups) byUser.set(g.user_id, [...(byUser.get(g.user_id) ?? []), g]);
  return rows.map((r) => userResource(r, byUser.get(r.user_id) ?? [], ctx.base));
}

/** GET /Users. */
export async function listUsers(ctx: ScimContext, q: ListQuery) {
  const page = pageOf(q);
  const filter = q.filter ? compileFilter(q.filter, 'User') : undefined;
  const id = filter?.equalityOn('id');
  const rows = id !== undefined && !isId(id) ? [] : await repo.listUsers(ctx.db, ctx.organisationId, { userName: filter?.equalityOn('userName'), externalId: filter?.equalityOn('externalId'), id: id?.toLowerCase() });
  tooMany(rows.length);
  const all = (await usersAsResources(ctx, rows)).filter((r) => !filter || filter.test(r));
  return listResponse(all, page, q, 'User');
}

/** The provisioned user; with `lock`, its membership row locked first (writes: concurrent PUTs with one If-Match serialise). */
async function userOrThrow(db: Kysely<DB>, organisationId: string, id: string, lock = false): Promise<repo.UserRow> {
  if (lock && isId(id)) await repo.lockMembership(db, organisationId, id.toLowerCase());
  const row = isId(id) ? await repo.findUser(db, organisationId, id.toLowerCase()) : undefined;
  if (!row) throw notFound('User', id);
  return row;
}

async function userWritten(ctx: ScimContext, db: Kysely<DB>, id: string): Promise<Written> {
  const row = await userOrThrow(db, ctx.organisationId, id);
  const [resource] = await usersAsResources({ ...ctx, db }, [row]);
  return { resource: resource!, etag: userEtag(row) };
}

/** GET /Users/{id}. */
export async function getUser(ctx: ScimContext, id: string, q: ListQuery): Promise<Written> {
  const w = await userWritten(ctx, ctx.db, id);
  return { ...w, resource: project(w.resource, 'User', listOf(q.attributes), listOf(q.excludedAttributes)) };
}

/**
 * The hash of a pushed password (Okta's password sync), or undefined. It is only ever the
 * password of a person this very request creates: a person who already has an account (in this
 * organisation or another) keeps theirs, or one organisation's provider could sign in as them. A
 * password under 12 characters (Surveyor's own minimum) is not set, and the user is still
 * provisioned: refusing would leave the person out altogether; the audit row says so.
 */
async function passwordHashOf(u: UserInput): Promise<string | undefined> {
  if (u.password === undefined || u.password.length < 12 || u.password.length > 1024) return undefined;
  return hashPassword(u.password);
}

function passwordNote(u: UserInput, hash: string | undefined, newPerson: boolean): Record<string, string> {
  if (u.password === undefined) return {};
  if (!newPerson) return { password: 'not set: the person already has an account' };
  return { password: hash ? 'set' : 'not set: shorter than 12 characters' };
}

async function ensureUserNameFree(db: Kysely<DB>, organisationId: string, userName: string, self?: string): Promise<void> {
  const holder = await repo.userIdByUserName(db, organisationId, userName);
  if (holder && holder !== self) throw new ScimError(409, `userName ${JSON.stringify(userName)} is already taken in this organisation.`, 'uniqueness');
}

/** Deactivates or reactivates; refuses to deactivate the last active owner. Returns sessions ended. */
async function setActive(trx: Kysely<DB>, ctx: ScimContext, row: repo.UserRow, active: boolean): Promise<number> {
  if (active === (row.deactivated_at === null)) return 0;
  if (!active && row.role === 'owner') {
    refuseOwnerChangeByAdmin(ctx, row);
    await refuseLastOwner(trx, ctx.organisationId, row);
  }
  await repo.setDeactivated(trx, ctx.organisationId, row.user_id, !active);
  return active ? 0 : membersRepo.deleteSessions(trx, ctx.organisationId, row.user_id);
}

/** As in Settings → Members, only an owner acts on an owner: a token owned by an admin may not deactivate or delete one. */
function refuseOwnerChangeByAdmin(ctx: ScimContext, row: repo.UserRow): void {
  if (ctx.actorRole !== 'owner') throw new ScimError(403, `${row.email} is an owner: only a SCIM token owned by an owner may deactivate or delete an owner.`);
}

async function refuseLastOwner(trx: Kysely<DB>, organisationId: string, row: repo.UserRow): Promise<void> {
  const owners = await repo.lockActiveOwners(trx, organisationId);
  if (owners.filter((o) => o !== row.user_id).length === 0) {
    throw new ScimError(409, `${row.email} is the organisation's last active owner; make another member owner in Surveyor first.`);
  }
}

/** Announces role changes a recompute made (member.updated) with audit rows. */
async function announceRoles(trx: Kysely<DB>, ctx: ScimContext, changes: Awaited<ReturnType<typeof repo.recomputeRoles>>): Promise<void> {
  for (const c of changes) {
    await recordAudit(trx, ctx.actor, { organisationId: ctx.organisationId, action: 'membership.role_changed', targetType: 'user', targetId: c.user_id, changes: { email: c.email, role: { from: c.from, to: c.to }, via: 'scim' } });
  }
  await emit(trx, ctx.organisationId, 'member.updated', changes.map((c) => ({ subjectId: c.user_id, data: { email: c.email, role: c.to, previousRole: c.from, via: 'scim' as const } })));
}

/** JSON with object keys sorted: jsonb gives keys back in its own order, so only this compares a stored resource with a sent one. */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v && typeof v === 'object') return `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${canonical((v as Record<string, unknown>)[k])}`).join(',')}}`;
  return JSON.stringify(v);
}
const sameJson = (a: unknown, b: unknown) => canonical(a) === canonical(b);

/**
 * Writes a user's provisioned state (create, PUT, PATCH): the SCIM row, the sign-in email where
 * this organisation alone owns the login, activity, and the role its groups give.
 */
async function saveUser(trx: Kysely<DB>, ctx: ScimContext, row: repo.UserRow, next: UserInput, created: { passwordNote: Record<string, string> } | null): Promise<void> {
  if (!loginEmail(next)) throw new ScimError(400, 'Surveyor signs people in by email: give userName or emails[].value as an email address.', 'invalidValue');
  await ensureUserNameFree(trx, ctx.organisationId, next.userName, row.user_id);
  const changed = row.version === null || row.user_name !== next.userName || row.external_id !== next.externalId || !sameJson(row.resource, next.resource);
  if (row.version === null) await repo.insertScimUser(trx, ctx.organisationId, row.user_id, next);
  else if (changed) await repo.updateScimUser(trx, ctx.organisationId, row.user_id, next);

  // The login identity is shared by every organisation of the person: it follows the provider
  // only while this organisation is the person's only one, and only to a free address; an
  // owner's only by an owner's token (an admin's token must not move the owner's sign-in).
  const email = loginEmail(next);
  let emailChanged = false;
  const mayMove = row.role !== 'owner' || ctx.actorRole === 'owner';
  if (email && email !== row.email && mayMove && (await repo.membershipCount(trx, row.user_id)) === 1 && !(await repo.findUserByEmail(trx, email))) {
    await repo.setEmail(trx, row.user_id, email);
    emailChanged = true;
  }

  const wasActive = row.deactivated_at === null;
  const active = next.active ?? wasActive;
  const sessionsEnded = await setActive(trx, ctx, row, active);
  if (!changed && active !== wasActive) await repo.bumpScimUsers(trx, ctx.organisationId, [row.user_id]);
  const roles = await repo.recomputeRoles(trx, ctx.organisationId, [row.user_id]);
  const role = roles[0]?.to ?? row.role;
  const shownEmail = emailChanged ? email! : row.email;

  if (created) {
    await recordAudit(trx, ctx.actor, { organisationId: ctx.organisationId, action: 'scim.user.created', targetType: 'user', targetId: row.user_id, changes: { userName: next.userName, email: shownEmail, role, active, ...created.passwordNote } });
    await emit(trx, ctx.organisationId, 'member.created', [{ subjectId: row.user_id, data: { email: shownEmail, role, via: 'scim' } }]);
  } else if (changed || emailChanged) {
    await recordAudit(trx, ctx.actor, { organisationId: ctx.organisationId, action: 'scim.user.updated', targetType: 'user', targetId: row.user_id, changes: { userName: next.userName, ...(emailChanged ? { email: { from: row.email, to: email } } : {}) } });
    await emit(trx, ctx.organisationId, 'member.updated', [{ subjectId: row.user_id, data: { email: shownEmail, role, via: 'scim' } }]);
  }
  if (active !== wasActive) {
    await recordAudit(trx, ctx.actor, { organisationId: ctx.organisationId, action: active ? 'scim.user.reactivated' : 'scim.user.deactivated', targetType: 'user', targetId: row.user_id, changes: { email: shownEmail, ...(active ? { role } : { sessionsEnded }) } });
    if (active) await emit(trx, ctx.organisationId, 'member.reactivated', [{ subjectId: row.user_id, data: { email: shownEmail, role, via: 'scim' } }]);
    else await emit(trx, ctx.organisationId, 'member.deactivated', [{ subjectId: row.user_id, data: { email: shownEmail, sessionsEnded, via: 'scim' } }]);
  }
  if (!created) await announceRoles(trx, ctx, roles);
}

/**
 * POST /Users: a new person, a person of another organisation added, or a member added by hand
 * taken over by the provider. A userName already provisioned here: 409 uniqueness.
 */
export async function createUser(ctx: ScimContext, body: unknown): Promise<Written> {
  const next = userInput(body);
  const email = loginEmail(next);
  if (!email) throw new ScimError(400, 'Surveyor signs people in by email: give userName or emails[].value as an email address.', 'invalidValue');
  const passwordHash = await passwordHashOf(next); // before the transaction: scrypt is slow, and PGlite has one connection
  return ctx.db.transaction().execute(async (trx) => {
    await ensureUserNameFree(trx, ctx.organisationId, next.userName);
    let user = await repo.findUserByEmail(trx, email);
    const newPerson = !user;
    if (!user) user = { id: (await adminRepo.insertUser(trx, { email, passwordHash: passwordHash ?? null, mustChangePassword: false })).id, email };
    let row = await repo.findUser(trx, ctx.organisationId, user.id, true);
    if (row?.version !== null && row?.version !== undefined) throw new ScimError(409, `${email} is already provisioned here as ${JSON.stringify(row.user_name)}.`, 'uniqueness');
    if (!row) {
      await adminRepo.insertMembership(trx, ctx.organisationId, user.id, 'viewer');
      row = (await repo.findUser(trx, ctx.organisationId, user.id, true))!;
    }
    await saveUser(trx, ctx, row, next, { passwordNote: passwordNote(next, passwordHash, newPerson) });
    return userWritten(ctx, trx, user.id);
  });
}

/** PUT /Users/{id}: replaces the writable attributes. */
export async function replaceUser(ctx: ScimContext, id: string, body: unknown, ifMatch: string | string[] | undefined): Promise<Written> {
  const next = userInput(body); // a password in a replace is ignored: it never changes an existing person's
  return ctx.db.transaction().execute(async (trx) => {
    const row = await userOrThrow(trx, ctx.organisationId, id, true);
    checkIfMatch(ifMatch, userEtag(row));
    await saveUser(trx, ctx, row, next, null);
    return userWritten(ctx, trx, row.user_id);
  });
}

/** PATCH /Users/{id}: the operations applied to the user as the client sees it, then saved as a PUT. */
export async function patchUser(ctx: ScimContext, id: string, body: unknown, ifMatch: string | string[] | undefined): Promise<Written> {
  const ops = patchOperations(body);
  return ctx.db.transaction().execute(async (trx) => {
    const row = await userOrThrow(trx, ctx.organisationId, id, true);
    checkIfMatch(ifMatch, userEtag(row));
    const { groups: _g, meta: _m, ...current } = userResource(row, [], ctx.base);
    const next = userInput(applyPatch(current, ops, 'User'));
    if (next.password !== undefined) throw new ScimError(400, 'password cannot be changed by PATCH here (changePassword is not supported).', 'mutability');
    await saveUser(trx, ctx, row, next, null);
    return userWritten(ctx, trx, row.user_id);
  });
}

/** DELETE /Users/{id}: the membership goes, with its sessions and keys; the person stays if another organisation has them. */
export async function deleteUser(ctx: ScimContext, id: string, ifMatch: string | string[] | undefined): Promise<void> {
  await ctx.db.transaction().execute(async (trx) => {
    const row = await userOrThrow(trx, ctx.organisationId, id, true);
    checkIfMatch(ifMatch, userEtag(row));
    if (row.role === 'owner') {
      refuseOwnerChangeByAdmin(ctx, row);
      await refuseLastOwner(trx, ctx.organisationId, row);
    }
    const sessionsEnded = await membersRepo.deleteSessions(trx, ctx.organisationId, row.user_id);
    const keysRemoved = await repo.countKeys(trx, ctx.organisationId, row.user_id);
    await membersRepo.deleteMembership(trx, ctx.organisationId, row.user_id); // keys, SCIM row and group memberships go with it
    await recordAudit(trx, ctx.actor, { organisationId: ctx.organisationId, action: 'scim.user.deleted', targetType: 'user', targetId: row.user_id, changes: { email: row.email, role: row.role, sessionsEnded, keysRemoved } });
    await emit(trx, ctx.organisationId, 'member.deleted', [{ subjectId: row.user_id, data: { email: row.email, sessionsEnded, keysRemoved, via: 'scim' } }]);
  });
}

// ————— Groups —————

function wantsMembers(q: ListQuery): boolean {
  const has = (list: string | undefined) => listOf(list)?.some((a) => a.toLowerCase().replace(`${URN.group.toLowerCase()}:`, '').split('.')[0] === 'members');
  if (q.attributes) return has(q.attributes) ?? false;
  return !has(q.excludedAttributes);
}

async function groupsAsResources(ctx: ScimContext, db: Kysely<DB>, rows: repo.GroupRow[], withMembers: boolean): Promise<Resource[]> {
  const members = withMembers ? await repo.membersOfGroups(db, ctx.organisationId, rows.map((r) => r.id)) : [];
  const byGroup = new Map<string, typeof members>();
  for (const m of members) byGroup.set(m.group_id, [...(byGroup.get(m.group_id) ?? []), m]);
  return rows.map((g) => groupResource(g, withMembers ? (byGroup.get(g.id) ?? []) : undefined, ctx.base));
}

/** GET /Groups (members read only when returned or filtered on: Entra asks with excludedAttributes=members). */
export async function listGroups(ctx: ScimContext, q: ListQuery) {
  const page = pageOf(q);
  const filter = q.filter ? compileFilter(q.filter, 'Group') : undefined;
  const id = filter?.equalityOn('id');
  const rows = id !== undefined && !isId(id) ? [] : await repo.listGroups(ctx.db, ctx.organisationId, { displayName: filter?.equalityOn('displayName'), externalId: filter?.equalityOn('externalId'), id: id?.toLowerCase() });
  tooMany(rows.length);
  const filterNeedsMembers = q.filter !== undefined && /members/i.test(q.filter);
  const all = (await groupsAsResources(ctx, ctx.db, rows, wantsMembers(q) || filterNeedsMembers)).filter((r) => !filter || filter.test(r));
  return listResponse(all, page, q, 'Group');
}

/** The group; with `lock`, its row locked (writes: a PATCH reads members and writes the list back, so two at once must not interleave). */
async function groupOrThrow(db: Kysely<DB>, organisationId: string, id: string, lock = false): Promise<repo.GroupRow> {
  const g = isId(id) ? await repo.findGroup(db, organisationId, id.toLowerCase(), lock) : undefined;
  if (!g) throw notFound('Group', id);
  return g;
}

async function groupWritten(ctx: ScimContext, db: Kysely<DB>, id: string, withMembers = true): Promise<Written> {
  const g = await groupOrThrow(db, ctx.organisationId, id);
  const [resource] = await groupsAsResources(ctx, db, [g], withMembers);
  return { resource: resource!, etag: etagOf(g.version) };
}

/** GET /Groups/{id}. */
export async function getGroup(ctx: ScimContext, id: string, q: ListQuery): Promise<Written> {
  const w = await groupWritten(ctx, ctx.db, id, wantsMembers(q));
  return { ...w, resource: project(w.resource, 'Group', listOf(q.attributes), listOf(q.excludedAttributes)) };
}

async function ensureGroupNameFree(db: Kysely<DB>, organisationId: string, displayName: string, self?: string): Promise<void> {
  const holder = await repo.groupIdByName(db, organisationId, displayName);
  if (holder && holder !== self) throw new ScimError(409, `A group named ${JSON.stringify(displayName)} exists in this organisation.`, 'uniqueness');
}

/** Writes a group's name and exact membership, recomputes the roles of whoever moved, and announces it. */
async function saveGroup(trx: Kysely<DB>, ctx: ScimContext, groupId: string, before: repo.GroupRow | undefined, next: GroupInput): Promise<void> {
  await ensureGroupNameFree(trx, ctx.organisationId, next.displayName, groupId);
  const members = await repo.provisionedUsers(trx, ctx.organisationId, next.members);
  const unknown = next.members.filter((m) => !members.has(m));
  if (unknown.length) throw new ScimError(400, `members: ${unknown.slice(0, 5).join(', ')}${unknown.length > 5 ? ` and ${unknown.length - 5} more` : ''} ${unknown.length === 1 ? 'is not a User' : 'are not Users'} of this organisation.`, 'invalidValue');
  const renamed = before !== undefined && (before.display_name !== next.displayName || before.external_id !== next.externalId);
  if (renamed) await repo.updateGroup(trx, ctx.organisationId, groupId, next);
  const { added, removed } = await repo.setGroupMembers(trx, ctx.organisationId, groupId, next.members);
  if (before && !renamed && (added.length || removed.length)) await repo.updateGroup(trx, ctx.organisationId, groupId, next); // a new version
  // A rename can move every member's role (mappings name groups by display name).
  const moved = renamed ? next.members : [...added, ...removed];
  await repo.bumpScimUsers(trx, ctx.organisationId, [...added, ...removed]);
  const roles = await repo.recomputeRoles(trx, ctx.organisationId, [...new Set([...moved, ...removed])]);
  if (before === undefined || renamed || added.length || removed.length) {
    await recordAudit(trx, ctx.actor, {
      organisationId: ctx.organisationId, action: before ? 'scim.group.updated' : 'scim.group.created', targetType: 'scim_group', targetId: groupId,
      changes: { displayName: next.displayName, ...(before && before.display_name !== next.displayName ? { renamedFrom: before.display_name } : {}), membersAdded: added.length, membersRemoved: removed.length },
    });
  }
  await announceRoles(trx, ctx, roles);
  // Members who moved but kept their role are still news: their groups changed.
  const quiet = [...added, ...removed].filter((u) => !roles.some((r) => r.user_id === u));
  if (quiet.length) {
    const rows = await Promise.all(quiet.map((u) => repo.findUser(trx, ctx.organisationId, u)));
    const groups = await repo.groupsOfUsers(trx, ctx.organisationId, quiet);
    await emit(trx, ctx.organisationId, 'member.updated', rows.filter((r) => r !== undefined).map((r) => ({
      subjectId: r.user_id, data: { email: r.email, role: r.role, groups: groups.filter((g) => g.user_id === r.user_id).map((g) => g.display_name), via: 'scim' as const },
    })));
  }
}

/** POST /Groups. */
export async function createGroup(ctx: ScimContext, body: unknown): Promise<Written> {
  const next = groupInput(body);
  return ctx.db.transaction().execute(async (trx) => {
    await ensureGroupNameFree(trx, ctx.organisationId, next.displayName);
    const { id } = await repo.insertGroup(trx, ctx.organisationId, next);
    await saveGroup(trx, ctx, id, undefined, next);
    return groupWritten(ctx, trx, id);
  });
}

/** PUT /Groups/{id}: the name and the exact member list. */
export async function replaceGroup(ctx: ScimContext, id: string, body: unknown, ifMatch: string | string[] | undefined): Promise<Written> {
  const next = groupInput(body);
  return ctx.db.transaction().execute(async (trx) => {
    const g = await groupOrThrow(trx, ctx.organisationId, id, true);
    checkIfMatch(ifMatch, etagOf(g.version));
    await saveGroup(trx, ctx, g.id, g, next);
    return groupWritten(ctx, trx, g.id);
  });
}

/** PATCH /Groups/{id}: Okta's and Entra's member adds and removes, renames. The route answers 204 unless attributes are asked for (RFC 7644 3.5.2). */
export async function patchGroup(ctx: ScimContext, id: string, body: unknown, ifMatch: string | string[] | undefined): Promise<Written> {
  const ops = patchOperations(body);
  return ctx.db.transaction().execute(async (trx) => {
    const g = await groupOrThrow(trx, ctx.organisationId, id, true);
    checkIfMatch(ifMatch, etagOf(g.version));
    const members = await repo.membersOfGroups(trx, ctx.organisationId, [g.id]);
    const current = { schemas: [URN.group], displayName: g.display_name, ...(g.external_id ? { externalId: g.external_id } : {}), members: members.map((m) => ({ value: m.user_id })) };
    const patched = applyPatch(current, ops, 'Group');
    await saveGroup(trx, ctx, g.id, g, groupInput({ ...patched, schemas: [URN.group] }));
    return groupWritten(ctx, trx, g.id);
  });
}

/** DELETE /Groups/{id}: its members lose the role it gave. */
export async function deleteGroup(ctx: ScimContext, id: string, ifMatch: string | string[] | undefined): Promise<void> {
  await ctx.db.transaction().execute(async (trx) => {
    const g = await groupOrThrow(trx, ctx.organisationId, id, true);
    checkIfMatch(ifMatch, etagOf(g.version));
    const members = await repo.groupMemberIds(trx, ctx.organisationId, g.id);
    await repo.deleteGroup(trx, ctx.organisationId, g.id);
    await repo.bumpScimUsers(trx, ctx.organisationId, members);
    const roles = await repo.recomputeRoles(trx, ctx.organisationId, members);
    await recordAudit(trx, ctx.actor, { organisationId: ctx.organisationId, action: 'scim.group.deleted', targetType: 'scim_group', targetId: g.id, changes: { displayName: g.display_name, members: members.length } });
    await announceRoles(trx, ctx, roles);
  });
}
