import { randomBytes } from 'node:crypto';
import { type Role, type Scope, roleAtLeast, scopeMinimumRole } from '@surveyor/contract';
import type { Kysely } from 'kysely';
import { recordAudit } from '../audit/audit.repo.js';
import type { Database } from '../db/database.js';
import type { DB } from '../db/schema.js';
import { AppError } from '../errors.js';
import * as repo from './auth.repo.js';
import type { KeyRow } from './auth.repo.js';
import type { CredentialCache } from './credential-cache.js';
import { hashPassword, verifyPassword } from './passwords.js';
import type { Principal } from './principal.js';
import { hashToken, mintToken } from './tokens.js';

type KeyPrincipal = Extract<Principal, { kind: 'apiKey' | 'daemon' }>;

/**
 * Resolves a bearer token to its key. Returns null for an unknown, revoked or expired key, a key
 * whose owner left the organisation, was disabled, or is deactivated in it (SCIM). Never throws for a bad token.
 * With `cache`, a row verified recently is taken from it (credential-cache.ts says when it is dropped).
 */
export async function authenticateBearer(database: Database, token: string, cache?: CredentialCache): Promise<KeyPrincipal | null> {
  if (!BEARER.test(token)) return null;
  const db = database.db;
  const hash = hashToken(token);
  let row = cache?.get(hash);
  const kept = row !== undefined;
  const mark = cache?.mark() ?? 0;
  row ??= await repo.findKeyByHash(database, hash);
  if (!row || !usable(row)) return null;
  // At most one write a minute per key: a busy key costs no write per request.
  if (untouched(row)) {
    await repo.touchKey(db, row.id);
    row.last_used_at = new Date();
  }
  if (cache && !kept) cache.set(hash, row, mark);
  return principalOf(row);
}

/** What a bearer token looks like; anything else is refused without a lookup. */
const BEARER = /^sv[kdms]_[A-Za-z0-9_-]{20,100}$/;

/** A key not marked used for a minute: its use is written (once a minute per key). */
const untouched = (row: KeyRow) => !row.last_used_at || Date.now() - row.last_used_at.getTime() > 60_000;

/**
 * authenticateBearer for a key `cache` keeps, without a promise (the hook of every request):
 * its principal, or null as authenticateBearer answers; undefined when the key is not kept or its
 * use is due to be written, and authenticateBearer must run.
 */
export function keptBearer(token: string, cache: CredentialCache): KeyPrincipal | null | undefined {
  if (!BEARER.test(token)) return null;
  const row = cache.get(hashToken(token));
  if (row === undefined || untouched(row)) return undefined;
  return usable(row) ? principalOf(row) : null;
}

/** Not revoked, not expired, and (a user's key) its owner a member with a role, neither disabled nor deactivated. */
function usable(row: KeyRow): boolean {
  if (row.revoked_at || (row.expires_at && row.expires_at.getTime() <= Date.now())) return false;
  return row.kind === 'daemon' || Boolean(row.role && !row.disabled_at && !row.deactivated_at && row.user_id);
}

function principalOf(row: KeyRow): KeyPrincipal | null {
  if (row.kind === 'daemon') return { kind: 'daemon', organisationId: row.organisation_id, keyId: row.id, daemonId: null };
  if (!row.role || !row.user_id) return null;
  return {
    kind: 'apiKey',
    organisationId: row.organisation_id,
    keyId: row.id,
    userId: row.user_id,
    role: row.role as Role,
    keyScopes: row.scopes as Scope[],
    keyKind: row.kind,
  };
}

/** True when the key holds `scope` and its owner's current role still allows it (spec 5 rule 5). */
export function keyGrants(p: Extract<Principal, { kind: 'apiKey' }>, scope: Scope): boolean {
  return p.keyScopes.includes(scope) && roleAtLeast(p.role, scopeMinimumRole[scope]);
}

/** Resolves a session cookie; null when unknown, expired, or the user lost the membership. */
export async function authenticateSession(db: Kysely<DB>, token: string): Promise<Extract<Principal, { kind: 'session' }> | null> {
  if (!/^svx_[A-Za-z0-9_-]{20,100}$/.test(token)) return null;
  const s = await repo.findLiveSession(db, hashToken(token));
  if (!s) return null;
  if (Date.now() - s.last_seen_at.getTime() > 60_000) await repo.touchSession(db, s.id);
  return {
    kind: 'session',
    organisationId: s.organisation_id,
    organisationName: s.organisation_name,
    sessionId: s.id,
    userId: s.user_id,
    email: s.email,
    role: s.role as Role,
    csrfToken: s.csrf_token,
    mustChangePassword: s.must_change_password,
    expiresAt: s.expires_at,
  };
}

const wrongCredentials = () => new AppError('unauthorized', 'The email or password is wrong.');

/**
 * Checks the password and opens a session in one of the user's organisations. Unknown email and
 * wrong password cost the same time and give the same refusal.
 */
export async function login(
  db: Kysely<DB>,
  input: { email: string; password: string; organisationId?: string | undefined; ttlHours: number; requestId: string },
): Promise<{ token: string; principal: Extract<Principal, { kind: 'session' }> }> {
  const user = await repo.findUserByEmail(db, input.email);
  const ok = await verifyPassword(input.password, user?.password_hash ?? null);
  if (!user || !ok || user.disabled_at) throw wrongCredentials();
  const memberships = await repo.listMemberships(db, user.id);
  const m = input.organisationId ? memberships.find((x) => x.organisation_id === input.organisationId) : memberships[0];
  if (!m) throw wrongCredentials();
  const token = mintToken('session');
  const csrfToken = randomBytes(32).toString('base64url');
  const created = await db.transaction().execute(async (trx) => {
    await repo.deleteExpiredSessions(trx, user.id);
    const s = await repo.insertSession(trx, { tokenHash: hashToken(token), csrfToken, userId: user.id, organisationId: m.organisation_id, ttlHours: input.ttlHours });
    await repo.recordSignIn(trx, m.organisation_id, user.id);
    await recordAudit(trx, { type: 'session', userId: user.id, requestId: input.requestId }, { organisationId: m.organisation_id, action: 'auth.login', targetType: 'user', targetId: user.id });
    return s;
  });
  return {
    token,
    principal: {
      kind: 'session',
      organisationId: m.organisation_id,
      organisationName: m.organisation_name,
      sessionId: created.id,
      userId: user.id,
      email: user.email,
      role: m.role as Role,
      csrfToken,
      mustChangePassword: user.must_change_password,
      expiresAt: created.expires_at,
    },
  };
}

export async function logout(db: Kysely<DB>, p: Extract<Principal, { kind: 'session' }>, requestId: string): Promise<void> {
  await db.transaction().execute(async (trx) => {
    await repo.deleteSession(trx, p.sessionId);
    await recordAudit(trx, { type: 'session', userId: p.userId, requestId }, { organisationId: p.organisationId, action: 'auth.logout', targetType: 'user', targetId: p.userId });
  });
}

/** The session as the browser sees it. */
export async function sessionInfo(db: Kysely<DB>, p: Extract<Principal, { kind: 'session' }>) {
  const memberships = await repo.listMemberships(db, p.userId);
  return {
    user: { id: p.userId, email: p.email, mustChangePassword: p.mustChangePassword },
    organisation: { id: p.organisationId, name: p.organisationName },
    role: p.role,
    memberships: memberships.map((m) => ({ organisationId: m.organisation_id, organisationName: m.organisation_name, role: m.role as Role })),
    csrfToken: p.csrfToken,
    expiresAt: p.expiresAt.toISOString(),
  };
}

/** Replaces the password after checking the current one; every other session of the user ends. */
export async function changePassword(
  db: Kysely<DB>,
  p: Extract<Principal, { kind: 'session' }>,
  input: { currentPassword: string; newPassword: string; requestId: string },
): Promise<void> {
  const user = await repo.findUserById(db, p.userId);
  if (!user || !(await verifyPassword(input.currentPassword, user.password_hash))) {
    throw new AppError('validation_failed', 'The current password is wrong.', { issues: [{ path: 'body.currentPassword', message: 'wrong password' }] });
  }
  const hash = await hashPassword(input.newPassword);
  await db.transaction().execute(async (trx) => {
    await repo.setPassword(trx, p.userId, hash, false);
    await repo.deleteOtherSessions(trx, p.userId, p.sessionId);
    await recordAudit(trx, { type: 'session', userId: p.userId, requestId: input.requestId }, { organisationId: p.organisationId, action: 'auth.password_changed', targetType: 'user', targetId: p.userId });
  });
}
