import { type ScimRoleMapping, type ScimSettings, isUuid } from '@surveyor/contract';
import type { Kysely } from 'kysely';
import { type Actor, recordAudit } from '../audit/audit.repo.js';
import { mintUserKey } from '../auth/keys.service.js';
import type { Principal } from '../auth/principal.js';
import * as keysRepo from '../auth/keys.repo.js';
import { displayPrefix } from '../auth/tokens.js';
import type { DB } from '../db/schema.js';
import { emit } from '../events/emit.js';
import { AppError } from '../errors.js';
import * as repo from './scim.repo.js';

// Settings → SCIM: tokens, the group-to-role mapping, and what the provider has pushed.

type Session = Extract<Principal, { kind: 'session' }>;

/** The SCIM base URL under the service's public address. */
export const scimBase = (baseUrl: string) => `${baseUrl.replace(/\/$/, '')}/api/scim/v2`;

const actorOf = (p: Session, requestId: string): Actor => ({ type: 'session', userId: p.userId, requestId });

export async function getSettings(db: Kysely<DB>, organisationId: string, baseUrl: string): Promise<ScimSettings> {
  const [keys, mappings, groups, counts] = await Promise.all([
    keysRepo.listUserKeys(db, organisationId),
    repo.listMappings(db, organisationId),
    repo.groupSummaries(db, organisationId),
    repo.provisionedCounts(db, organisationId),
  ]);
  const roleOf = new Map(mappings.map((m) => [m.group_key, m.role as ScimRoleMapping['role']]));
  return {
    baseUrl: scimBase(baseUrl),
    tokens: keys.filter((k) => k.kind === 'scim').map((k) => ({
      id: k.id, name: k.name, kind: 'scim' as const, tokenPrefix: k.token_prefix, scopes: k.scopes as ['scim:manage'], userId: k.user_id!, userEmail: k.email,
      createdAt: k.created_at.toISOString(), lastUsedAt: k.last_used_at?.toISOString() ?? null, expiresAt: k.expires_at?.toISOString() ?? null, revokedAt: k.revoked_at?.toISOString() ?? null,
    })),
    mappings: mappings.map((m) => ({ group: m.group_name, role: m.role as ScimRoleMapping['role'] })),
    groups: groups.map((g) => ({
      id: g.id, displayName: g.display_name, externalId: g.external_id, members: Number(g.members ?? 0),
      role: roleOf.get(g.id) ?? roleOf.get(g.display_name.toLowerCase()) ?? null, updatedAt: g.updated_at.toISOString(),
    })),
    users: { managed: counts.managed, deactivated: counts.deactivated },
    lastChangeAt: counts.lastChange ? new Date(counts.lastChange).toISOString() : null,
  };
}

/** Mints a SCIM token owned by `userId` (an admin or owner of the organisation): kind scim, scope scim:manage. */
export async function mintScimToken(trx: Kysely<DB>, actor: Actor, input: { organisationId: string; userId: string; role: Session['role']; name: string; expiresAt: Date | null }) {
  return mintUserKey(trx, actor, { ...input, scopes: ['scim:manage'], kind: 'scim' });
}

export async function createToken(db: Kysely<DB>, p: Session, input: { name: string; expiresInDays?: number | undefined }, baseUrl: string, requestId: string) {
  return db.transaction().execute(async (trx) => {
    const expiresAt = input.expiresInDays ? new Date(Date.now() + input.expiresInDays * 86_400_000) : null;
    const k = await mintScimToken(trx, actorOf(p, requestId), { organisationId: p.organisationId, userId: p.userId, role: p.role, name: input.name, expiresAt });
    return {
      id: k.id, name: input.name, kind: 'scim' as const, tokenPrefix: displayPrefix(k.token), scopes: k.scopes, userId: p.userId, userEmail: p.email,
      createdAt: k.createdAt.toISOString(), lastUsedAt: null, expiresAt: expiresAt?.toISOString() ?? null, revokedAt: null, token: k.token, baseUrl: scimBase(baseUrl),
    };
  });
}

/**
 * Replaces the mapping (owner only, by the route) and recomputes every provisioned member's role
 * in the same transaction. A group named twice (case-insensitively, or by name and by its id): 400.
 */
export async function putMappings(db: Kysely<DB>, p: Session, mappings: ScimRoleMapping[], baseUrl: string, requestId: string): Promise<ScimSettings> {
  const keys = mappings.map((m) => (isUuid(m.group) ? m.group.toLowerCase() : m.group.trim().toLowerCase()));
  const seen = new Map<string, number>();
  const issues: { path: string; message: string }[] = [];
  const repeated: string[] = [];
  keys.forEach((k, i) => {
    if (seen.has(k)) {
      issues.push({ path: `body.mappings.${i}.group`, message: `already mapped in row ${seen.get(k)! + 1}` });
      repeated.push(`"${mappings[i]!.group.trim()}" (rows ${seen.get(k)! + 1} and ${i + 1})`);
    } else seen.set(k, i);
  });
  if (issues.length) throw new AppError('validation_failed', `Each group may be mapped once: ${repeated.join(', ')}.`, { issues });
  await db.transaction().execute(async (trx) => {
    const before = await repo.listMappings(trx, p.organisationId);
    await repo.replaceMappings(trx, p.organisationId, keys.map((groupKey, i) => ({ groupKey, groupName: mappings[i]!.group.trim(), role: mappings[i]!.role })));
    const changes = await repo.recomputeRoles(trx, p.organisationId, null);
    const actor = actorOf(p, requestId);
    await recordAudit(trx, actor, { organisationId: p.organisationId, action: 'scim.mappings.updated', targetType: 'organisation', targetId: p.organisationId, changes: { before: before.map((m) => ({ group: m.group_key, role: m.role })), after: keys.map((group, i) => ({ group, role: mappings[i]!.role })), rolesChanged: changes.length } });
    for (const c of changes) await recordAudit(trx, actor, { organisationId: p.organisationId, action: 'membership.role_changed', targetType: 'user', targetId: c.user_id, changes: { email: c.email, role: { from: c.from, to: c.to }, via: 'scim mapping' } });
    await emit(trx, p.organisationId, 'member.updated', changes.map((c) => ({ subjectId: c.user_id, data: { email: c.email, role: c.to, previousRole: c.from, via: 'scim' as const } })));
  });
  return getSettings(db, p.organisationId, baseUrl);
}
