import { Role, type Scope, ScopeSchema, isUuid } from '@surveyor/contract';
import type { Kysely } from 'kysely';
import { z } from 'zod';
import { type Actor, recordAudit } from '../audit/audit.repo.js';
import * as authRepo from '../auth/auth.repo.js';
import * as keysRepo from '../auth/keys.repo.js';
import { mintUserKey } from '../auth/keys.service.js';
import { generatePassword, hashPassword } from '../auth/passwords.js';
import { displayPrefix, hashToken, mintToken } from '../auth/tokens.js';
import type { DB, KeyKind } from '../db/schema.js';
import { AppError } from '../errors.js';
import * as repo from './admin.repo.js';

const Email = z.email().max(320).transform((e) => e.toLowerCase());
const Name = z.string().trim().min(1).max(200);
const OrgName = Name.refine((n) => !isUuid(n), 'a name may not look like an id');
const Password = z.string().min(12, 'at least 12 characters').max(1024);

function parse<T>(schema: z.ZodType<T>, value: unknown, field: string): T {
  const r = schema.safeParse(value);
  if (!r.success) throw new AppError('validation_failed', `${field}: ${r.error.issues[0]?.message ?? 'invalid'}`, { issues: r.error.issues.map((i) => ({ path: field, message: i.message })) });
  return r.data;
}

async function organisationOrThrow(db: Kysely<DB>, idOrName: string) {
  const org = await repo.findOrganisation(db, idOrName);
  if (!org) throw new AppError('not_found', `No organisation ${JSON.stringify(idOrName)}.`);
  return org;
}

async function membershipOrThrow(db: Kysely<DB>, organisationId: string, email: string) {
  const user = await authRepo.findUserByEmail(db, email);
  const m = user && (await repo.findMembership(db, organisationId, user.id));
  if (!user || !m) throw new AppError('not_found', `${email} is not a member of this organisation.`);
  return { user, role: m.role as Role };
}

/** Creates an organisation and its owner (a new user, or an existing one added as owner). */
export async function createOrganisation(
  db: Kysely<DB>,
  actor: Actor,
  input: { name: string; ownerEmail: string; ownerPassword?: string | undefined; mustChangePassword?: boolean },
): Promise<{ organisationId: string; userId: string; generatedPassword?: string }> {
  const name = parse(OrgName, input.name, 'name');
  const email = parse(Email, input.ownerEmail, 'owner-email');
  const password = input.ownerPassword === undefined ? undefined : parse(Password, input.ownerPassword, 'owner-password');
  const credential = await newCredential(password);
  try {
    return await db.transaction().execute(async (trx) => {
      if (await repo.findOrganisation(trx, name)) throw new AppError('duplicate', `An organisation named ${JSON.stringify(name)} exists.`);
      const org = await repo.insertOrganisation(trx, name);
      const { userId, generatedPassword } = await ensureUser(trx, email, password !== undefined, credential, input.mustChangePassword ?? false);
      await repo.insertMembership(trx, org.id, userId, 'owner');
      await recordAudit(trx, actor, { organisationId: org.id, action: 'organisation.created', targetType: 'organisation', targetId: org.id, changes: { name, ownerUserId: userId } });
      return { organisationId: org.id, userId, ...(generatedPassword ? { generatedPassword } : {}) };
    });
  } catch (e) {
    // Two concurrent creations of one name: the loser meets the unique index.
    if ((e as { code?: string }).code === '23505') throw new AppError('duplicate', `An organisation named ${JSON.stringify(name)} exists.`);
    throw e;
  }
}

/**
 * The password (given or generated) and its hash, computed before any transaction: scrypt takes
 * a while, and on PGlite a transaction holds the only connection.
 */
export async function newCredential(password: string | undefined) {
  const generated = password === undefined ? generatePassword() : undefined;
  return { generated, hash: await hashPassword(password ?? generated!) };
}

/** The user of this email: the existing one, or a new one with the credential (a generated password must be changed at first sign-in). */
export async function ensureUser(trx: Kysely<DB>, email: string, passwordGiven: boolean, credential: { generated?: string | undefined; hash: string }, mustChange: boolean) {
  const existing = await authRepo.findUserByEmail(trx, email);
  if (existing) {
    if (passwordGiven) throw new AppError('duplicate', `${email} already exists; its password is not changed here.`);
    return { userId: existing.id, generatedPassword: undefined };
  }
  const user = await repo.insertUser(trx, { email, passwordHash: credential.hash, mustChangePassword: mustChange || credential.generated !== undefined });
  return { userId: user.id, generatedPassword: credential.generated };
}

/** Adds a user (new, or existing and added) to an organisation with a role. */
export async function createUser(
  db: Kysely<DB>,
  actor: Actor,
  input: { org: string; email: string; role: string; password?: string | undefined },
): Promise<{ userId: string; generatedPassword?: string }> {
  const email = parse(Email, input.email, 'email');
  const role = parse(Role, input.role, 'role');
  const password = input.password === undefined ? undefined : parse(Password, input.password, 'password');
  const credential = await newCredential(password);
  return db.transaction().execute(async (trx) => {
    const org = await organisationOrThrow(trx, input.org);
    const { userId, generatedPassword } = await ensureUser(trx, email, password !== undefined, credential, false);
    if (await repo.findMembership(trx, org.id, userId)) throw new AppError('duplicate', `${email} is already a member; use set-role to change the role.`);
    await repo.insertMembership(trx, org.id, userId, role);
    await recordAudit(trx, actor, { organisationId: org.id, action: 'membership.created', targetType: 'user', targetId: userId, changes: { email, role } });
    return { userId, ...(generatedPassword ? { generatedPassword } : {}) };
  });
}

/** Mints an API (or metrics/SCIM) key for a member. Refuses scopes above the member's role. */
export async function createApiKey(
  db: Kysely<DB>,
  actor: Actor,
  input: { org: string; userEmail: string; scopes: string[]; name?: string | undefined; kind?: Extract<KeyKind, 'api' | 'metrics' | 'scim'> },
): Promise<{ id: string; token: string; scopes: Scope[] }> {
  const scopes = input.scopes.map((s) => parse(ScopeSchema, s, 'scopes'));
  return db.transaction().execute(async (trx) => {
    const org = await organisationOrThrow(trx, input.org);
    const { user, role } = await membershipOrThrow(trx, org.id, input.userEmail);
    const kind = input.kind ?? 'api';
    const name = parse(Name, input.name ?? `${kind} key for ${user.email}`, 'name');
    const k = await mintUserKey(trx, actor, { organisationId: org.id, userId: user.id, role, scopes, name, kind });
    return { id: k.id, token: k.token, scopes: k.scopes };
  });
}

/**
 * Mints a SCIM token (kind scim, scope scim:manage) owned by `userEmail`, an admin or owner, or by
 * the organisation's oldest owner when no user is named.
 */
export async function createScimToken(
  db: Kysely<DB>,
  actor: Actor,
  input: { org: string; userEmail?: string | undefined; name?: string | undefined; expiresDays?: string | undefined },
): Promise<{ id: string; token: string; userEmail: string; expiresAt: string | null }> {
  const days = input.expiresDays === undefined ? undefined : parse(z.coerce.number().int().min(1).max(3650), input.expiresDays, 'expires-days');
  return db.transaction().execute(async (trx) => {
    const org = await organisationOrThrow(trx, input.org);
    const email = input.userEmail ?? (await repo.oldestOwnerEmail(trx, org.id));
    if (!email) throw new AppError('not_found', 'The organisation has no owner to own the token; name one with --user.');
    const { user, role } = await membershipOrThrow(trx, org.id, email);
    const expiresAt = days ? new Date(Date.now() + days * 86_400_000) : null;
    const name = parse(Name, input.name ?? 'SCIM token', 'name');
    const k = await mintUserKey(trx, actor, { organisationId: org.id, userId: user.id, role, scopes: ['scim:manage'], name, kind: 'scim', expiresAt });
    return { id: k.id, token: k.token, userEmail: user.email, expiresAt: expiresAt?.toISOString() ?? null };
  });
}

/** Mints a daemon key for an organisation. */
export async function createDaemonKey(db: Kysely<DB>, actor: Actor, input: { org: string; name?: string | undefined }): Promise<{ id: string; token: string }> {
  return db.transaction().execute(async (trx) => {
    const org = await organisationOrThrow(trx, input.org);
    const token = mintToken('daemon');
    const name = parse(Name, input.name ?? 'daemon key', 'name');
    const key = await keysRepo.insertKey(trx, { organisationId: org.id, kind: 'daemon', name, tokenHash: hashToken(token), tokenPrefix: displayPrefix(token), scopes: [], userId: null });
    await recordAudit(trx, actor, { organisationId: org.id, action: 'key.created', targetType: 'key', targetId: key.id, changes: { kind: 'daemon', name } });
    return { id: key.id, token };
  });
}

/** Changes a member's role; the member's keys are capped by it from the next request on. */
export async function setRole(db: Kysely<DB>, actor: Actor, input: { org: string; userEmail: string; role: string }): Promise<{ userId: string; role: Role; previousRole: Role }> {
  const role = parse(Role, input.role, 'role');
  return db.transaction().execute(async (trx) => {
    const org = await organisationOrThrow(trx, input.org);
    const { user, role: previousRole } = await membershipOrThrow(trx, org.id, input.userEmail);
    await repo.updateRole(trx, org.id, user.id, role);
    await recordAudit(trx, actor, { organisationId: org.id, action: 'membership.role_changed', targetType: 'user', targetId: user.id, changes: { role: { from: previousRole, to: role } } });
    return { userId: user.id, role, previousRole };
  });
}

/** Revokes a key by id; revoking twice is a no-op that still answers. */
export async function revokeKey(db: Kysely<DB>, actor: Actor, input: { id: string }): Promise<{ id: string; revoked: true }> {
  const id = parse(z.uuid(), input.id, 'id');
  return db.transaction().execute(async (trx) => {
    const key = await keysRepo.findKey(trx, id);
    if (!key) throw new AppError('not_found', `No key ${id}.`);
    if (!key.revoked_at) {
      await keysRepo.revokeKey(trx, id);
      await recordAudit(trx, actor, { organisationId: key.organisation_id, action: 'key.revoked', targetType: 'key', targetId: id });
    }
    return { id, revoked: true as const };
  });
}

export const FIRST_OWNER_EMAIL = 'admin@surveyor.local';

/**
 * On an empty database, creates the organisation "Default" and its owner with a one-time password
 * that must be changed. Returns what it created, or null when any organisation exists.
 */
export async function bootstrapFirstOwner(db: Kysely<DB>): Promise<{ organisationId: string; email: string; password: string } | null> {
  const { n } = await repo.countOrganisations(db);
  if (n > 0) return null;
  const password = generatePassword();
  const r = await createOrganisation(db, { type: 'system' }, { name: 'Default', ownerEmail: FIRST_OWNER_EMAIL, ownerPassword: password, mustChangePassword: true });
  return { organisationId: r.organisationId, email: FIRST_OWNER_EMAIL, password };
}
