import { type Role, type Scope, roleAtLeast, scopeMinimumRole, scopesForRole } from '@surveyor/contract';
import type { Kysely } from 'kysely';
import { type Actor, recordAudit } from '../audit/audit.repo.js';
import type { DB } from '../db/schema.js';
import { AppError } from '../errors.js';
import * as repo from './keys.repo.js';
import type { Principal } from './principal.js';
import { displayPrefix, hashToken, mintToken } from './tokens.js';

type UserKeyKind = 'api' | 'metrics' | 'scim';

/** A metrics key is for a scraper and a SCIM token for an identity provider: each holds its one scope. */
const scopesOfKind: Record<UserKeyKind, readonly Scope[] | null> = { api: null, metrics: ['metrics:read'], scim: ['scim:manage'] };

/**
 * Mints a key owned by a membership, in the caller's transaction. Refuses (403 forbidden) scopes
 * the member's role cannot hold. Returns the token: the only time it exists outside the caller.
 */
export async function mintUserKey(
  trx: Kysely<DB>,
  actor: Actor,
  input: { organisationId: string; userId: string; role: Role; scopes: Scope[]; name: string; kind?: UserKeyKind; expiresAt?: Date | null },
) {
  const scopes = [...new Set(input.scopes)];
  if (scopes.length === 0) throw new AppError('validation_failed', 'scopes: at least one scope', { issues: [{ path: 'scopes', message: 'at least one scope' }] });
  const kind = input.kind ?? 'api';
  const only = scopesOfKind[kind];
  const foreign = only ? scopes.filter((s) => !only.includes(s)) : [];
  if (foreign.length) {
    throw new AppError('validation_failed', `A ${kind} key holds only ${only!.join(', ')}; refused: ${foreign.join(', ')}.`, { issues: [{ path: 'scopes', message: `a ${kind} key holds only ${only!.join(', ')}` }] });
  }
  const above = scopes.filter((s) => !roleAtLeast(input.role, scopeMinimumRole[s]));
  if (above.length) {
    throw new AppError('forbidden', `Role ${input.role} cannot hold ${above.map((s) => `${s} (needs ${scopeMinimumRole[s]})`).join(', ')}.`, { requiredScope: above[0] });
  }
  const token = mintToken(kind);
  const key = await repo.insertKey(trx, {
    organisationId: input.organisationId, kind, name: input.name, tokenHash: hashToken(token), tokenPrefix: displayPrefix(token), scopes, userId: input.userId, expiresAt: input.expiresAt ?? null,
  });
  await recordAudit(trx, actor, { organisationId: input.organisationId, action: 'key.created', targetType: 'key', targetId: key.id, changes: { kind, name: input.name, scopes, userId: input.userId } });
  return { id: key.id, token, scopes, kind, createdAt: key.created_at };
}

type Session = Extract<Principal, { kind: 'session' }>;
const isAdmin = (p: Session) => roleAtLeast(p.role, 'admin');

function toInfo(k: Awaited<ReturnType<typeof repo.listUserKeys>>[number]) {
  return {
    id: k.id,
    name: k.name,
    kind: k.kind as UserKeyKind,
    tokenPrefix: k.token_prefix,
    scopes: k.scopes as Scope[],
    userId: k.user_id!,
    userEmail: k.email,
    createdAt: k.created_at.toISOString(),
    lastUsedAt: k.last_used_at?.toISOString() ?? null,
    expiresAt: k.expires_at?.toISOString() ?? null,
    revokedAt: k.revoked_at?.toISOString() ?? null,
  };
}

/** Keys the session may see: all of the organisation's for an admin or owner, else the user's own. */
export async function listKeys(db: Kysely<DB>, p: Session) {
  const rows = await repo.listUserKeys(db, p.organisationId, isAdmin(p) ? undefined : p.userId);
  return rows.map(toInfo);
}

/** Mints an API key for the session user. */
export async function createKeyForSession(db: Kysely<DB>, p: Session, input: { name: string; scopes: Scope[]; expiresInDays?: number | undefined }, requestId: string) {
  return db.transaction().execute(async (trx) => {
    const expiresAt = input.expiresInDays ? new Date(Date.now() + input.expiresInDays * 86_400_000) : null;
    const k = await mintUserKey(trx, { type: 'session', userId: p.userId, requestId }, { organisationId: p.organisationId, userId: p.userId, role: p.role, scopes: input.scopes, name: input.name, expiresAt });
    return {
      id: k.id, name: input.name, kind: k.kind, tokenPrefix: displayPrefix(k.token), scopes: k.scopes, userId: p.userId, userEmail: p.email,
      createdAt: k.createdAt.toISOString(), lastUsedAt: null, expiresAt: expiresAt?.toISOString() ?? null, revokedAt: null, token: k.token,
    };
  });
}

/**
 * Revokes a key of the session's organisation: the user's own, or any for an admin or owner.
 * Another organisation's key, and a key the user may not see, are 404 (never 403).
 */
export async function revokeKeyForSession(db: Kysely<DB>, p: Session, id: string, requestId: string): Promise<void> {
  await db.transaction().execute(async (trx) => {
    const key = await repo.findKey(trx, id, p.organisationId);
    if (!key || key.kind === 'daemon' || (!isAdmin(p) && key.user_id !== p.userId)) throw new AppError('not_found', `No key ${id} in this organisation.`);
    if (key.revoked_at) return;
    await repo.revokeKey(trx, id, p.organisationId);
    await recordAudit(trx, { type: 'session', userId: p.userId, requestId }, { organisationId: p.organisationId, action: 'key.revoked', targetType: 'key', targetId: id });
  });
}

/** What the calling API key holds now. */
export function introspect(p: Extract<Principal, { kind: 'apiKey' }>) {
  const allowed = new Set(scopesForRole(p.role));
  return { id: p.keyId, organisationId: p.organisationId, userId: p.userId, role: p.role, scopes: p.keyScopes, effectiveScopes: p.keyScopes.filter((s) => allowed.has(s)) };
}
