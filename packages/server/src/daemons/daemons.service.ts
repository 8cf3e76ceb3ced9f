import type { z } from 'zod';
import type { HeartbeatRequest, RegisterRequest } from '@surveyor/contract';
import type { Kysely } from 'kysely';
import { type Actor, recordAudit } from '../audit/audit.repo.js';
import { revokeKey } from '../auth/keys.repo.js';
import type { Principal } from '../auth/principal.js';
import type { DB } from '../db/schema.js';
import { AppError } from '../errors.js';
import { failDaemonSessions } from '../scans/scans.repo.js';
import { sessionHistory } from '../scans/scans.service.js';
import * as repo from './daemons.repo.js';

export type DaemonPrincipal = Extract<Principal, { kind: 'daemon' }>;

/**
 * The calling daemon, as named by X-Daemon-ID: it must be of the key's organisation and have
 * registered with this key. Anything else is 404, so no caller ever reaches another daemon's jobs.
 */
export async function ownDaemon(db: Kysely<DB>, p: DaemonPrincipal) {
  const daemon = p.daemonId ? await repo.findOwnDaemon(db, p.organisationId, p.daemonId, p.keyId) : undefined;
  if (!daemon) throw new AppError('not_found', 'No daemon with this X-Daemon-ID is registered with this key; register first.');
  return daemon;
}

/** Registers (or re-registers, by name) a daemon. `siteCode` binds a site on first registration only. */
export async function register(db: Kysely<DB>, p: DaemonPrincipal, input: z.output<typeof RegisterRequest>): Promise<string> {
  const facts: repo.DaemonFacts = {
    keyId: p.keyId,
    name: input.name,
    version: input.version,
    os: input.os,
    arch: input.arch,
    capabilities: input.capabilities,
    networkCidrs: input.networkCidrs,
    metadata: input.metadata,
    bootId: input.bootId,
  };
  const attempt = () =>
    db.transaction().execute(async (trx) => {
      const existing = await repo.findDaemonByName(trx, p.organisationId, input.name);
      if (existing) {
        await repo.updateDaemon(trx, p.organisationId, existing.id, facts);
        return existing.id;
      }
      const siteId = input.siteCode ? await repo.siteForCode(trx, p.organisationId, input.siteCode) : null;
      return repo.insertDaemon(trx, p.organisationId, facts, siteId);
    });
  try {
    return await attempt();
  } catch (e) {
    // Two first registrations of one name at once: the loser finds the winner's row.
    if ((e as { code?: string }).code === '23505') return attempt();
    throw e;
  }
}

/** Spec 3.3: `online` → online, anything else → degraded. */
export async function heartbeat(db: Kysely<DB>, p: DaemonPrincipal, input: z.output<typeof HeartbeatRequest>, intervalSeconds: number) {
  const daemon = await ownDaemon(db, p);
  const status = input.status === 'online' ? 'online' : 'degraded';
  // A reason belongs to `degraded` only: an online heartbeat clears the one recorded before.
  const reason = status === 'degraded' && input.reason?.trim() ? input.reason.trim() : null;
  await repo.recordHeartbeat(db, p.organisationId, daemon.id, status, reason, input.loadedSignatures, intervalSeconds);
  return { status, serverTime: new Date().toISOString() } as const;
}

/** The console's list of daemons (GET /api/v1/daemons), the quietest first. */
export async function listDaemons(db: Kysely<DB>, organisationId: string) {
  return { data: (await repo.listDaemons(db, organisationId)).map(summary) };
}

/** One daemon of the organisation as the console lists it, or undefined. */
export async function daemonSummary(db: Kysely<DB>, organisationId: string, id: string) {
  const [d] = await repo.listDaemons(db, organisationId, id);
  return d && summary(d);
}

function summary(d: Awaited<ReturnType<typeof repo.listDaemons>>[number]) {
  return {
    id: d.id,
    name: d.name,
    siteId: d.site_id,
    status: d.status as 'online',
    reason: d.status_reason,
    version: d.version,
    os: d.os,
    arch: d.arch,
    capabilities: d.capabilities,
    networkCidrs: d.network_cidrs,
    lastHeartbeatAt: d.last_heartbeat_at ? new Date(d.last_heartbeat_at).toISOString() : null,
    quietSeconds: Math.max(0, Math.round(d.quiet)),
    // As daemon.offline counts it: announced (offline_since), or past the threshold the next check announces; never a disabled daemon.
    silent: d.status === 'online' && d.disabled_at === null && (d.offline_since !== null || d.quiet > repo.DAEMON_QUIET_SECONDS),
    heartbeatIntervalSeconds: d.heartbeat_interval_seconds,
    flowsDropped: Number(d.flows_dropped),
    restartCount: d.restart_count,
    registeredAt: new Date(d.registered_at).toISOString(),
    disabledAt: d.disabled_at ? new Date(d.disabled_at).toISOString() : null,
  };
}

type OrgActor = Actor & { organisationId: string };

async function lockedOrThrow(db: Kysely<DB>, organisationId: string, id: string) {
  const d = await repo.lockDaemon(db, organisationId, id);
  if (!d) throw new AppError('not_found', `No daemon ${id}.`);
  return d;
}

/** One daemon for its page: the summary, its key's prefix, its signatures, its 20 newest sessions. 404 when removed or another organisation's. */
export async function getDaemon(db: Kysely<DB>, organisationId: string, id: string) {
  const [d] = await repo.listDaemons(db, organisationId, id);
  if (!d) throw new AppError('not_found', `No daemon ${id}.`);
  return {
    ...summary(d),
    keyPrefix: await repo.keyPrefix(db, organisationId, d.key_id),
    loadedSignatures: d.loaded_signatures,
    recentSessions: await sessionHistory(db, organisationId, { daemonId: id }, 20),
  };
}

/**
 * Disables a daemon (no scan is handed to it; its queued sessions not yet handed over fail at
 * once, so their networks can be scanned elsewhere) or enables it again. The same state again
 * changes nothing and writes no audit row.
 */
export async function setDaemonEnabled(db: Kysely<DB>, actor: OrgActor, id: string, enabled: boolean) {
  const org = actor.organisationId;
  await db.transaction().execute(async (trx) => {
    const d = await lockedOrThrow(trx, org, id);
    if ((d.disabled_at === null) === enabled) return;
    await repo.setDisabled(trx, org, id, !enabled);
    const failed = enabled ? [] : await failDaemonSessions(trx, org, id, ['queued'], `daemon ${d.name} was disabled before it took the scan`);
    await recordAudit(trx, actor, { organisationId: org, action: enabled ? 'daemon.enabled' : 'daemon.disabled', targetType: 'daemon', targetId: id, changes: { name: d.name, ...(failed.length ? { sessionsFailed: failed } : {}) } });
  });
  return (await daemonSummary(db, org, id))!;
}

/**
 * Removes a daemon: its key is revoked (its next request is 401), its unfinished sessions fail,
 * and it leaves every list; the row stays so its past sessions keep their history and its name.
 */
export async function removeDaemon(db: Kysely<DB>, actor: OrgActor, id: string): Promise<void> {
  const org = actor.organisationId;
  await db.transaction().execute(async (trx) => {
    const d = await lockedOrThrow(trx, org, id);
    const failed = await failDaemonSessions(trx, org, id, ['queued', 'dispatched', 'running', 'stalled'], `daemon ${d.name} was removed`);
    await revokeKey(trx, d.key_id, org);
    await repo.markRemoved(trx, org, id);
    await recordAudit(trx, actor, { organisationId: org, action: 'daemon.removed', targetType: 'daemon', targetId: id, changes: { name: d.name, keyId: d.key_id, ...(failed.length ? { sessionsFailed: failed } : {}) } });
  });
}
