import type { CreateScanRequest } from '@surveyor/contract';
import type { Kysely } from 'kysely';
import type { z } from 'zod';
import { type Actor, recordAudit } from '../audit/audit.repo.js';
import type { DB } from '../db/schema.js';
import { AppError } from '../errors.js';
import * as repo from './scans.repo.js';

type SessionRow = NonNullable<Awaited<ReturnType<typeof repo.findSession>>>;

export function toScanSession(r: SessionRow) {
  const total = r.hosts_total;
  return {
    sessionId: r.id,
    state: r.state as 'queued',
    networkId: r.network_id,
    daemonId: r.daemon_id,
    cidr: r.cidr_text,
    nmap: { enabled: r.nmap_enabled, scripts: r.nmap_scripts as ('default' | 'safe' | 'version' | 'vuln')[] },
    progress: {
      hostsTotal: total,
      hostsScanned: r.hosts_scanned,
      portsScanned: r.ports_scanned,
      batches: r.batches,
      percent: r.state === 'completed' ? 100 : total ? Math.min(100, Math.round((r.hosts_scanned / total) * 1000) / 10) : null,
    },
    createdAt: r.created_at!,
    dispatchedAt: r.dispatched_at,
    startedAt: r.started_at,
    finishedAt: r.finished_at,
    updatedAt: r.updated_at!,
  };
}

async function sessionOrThrow(db: Kysely<DB>, organisationId: string, id: string) {
  const s = await repo.findSession(db, organisationId, id);
  if (!s) throw new AppError('not_found', `No scan session ${id}.`);
  return s;
}

export const getScan = async (db: Kysely<DB>, organisationId: string, id: string) => toScanSession(await sessionOrThrow(db, organisationId, id));

/** The sessions of a network or a daemon, newest first, each with its daemon's and network's names (the console's histories). */
export async function sessionHistory(db: Kysely<DB>, organisationId: string, of: { networkId: string } | { daemonId: string }, limit: number) {
  return (await repo.listSessionHistory(db, organisationId, of, limit)).map((r) => ({
    ...toScanSession(r),
    daemonName: r.daemon_name,
    daemonRemoved: r.daemon_removed,
    networkName: r.network_name,
  }));
}

/** A network's sessions, newest first (console history); 404 for a network not in the organisation. */
export async function listNetworkScans(db: Kysely<DB>, organisationId: string, networkId: string, limit: number) {
  if (!(await repo.networkExists(db, organisationId, networkId))) throw new AppError('not_found', `No network ${networkId}.`);
  return { data: await sessionHistory(db, organisationId, { networkId }, limit) };
}

/**
 * Queues a scan on an online daemon that may scan the network (decisions.md "Scan sessions").
 * Refusals queue nothing: no daemon online, nmap asked of daemons without it, a scan queued or
 * running. A stalled session of the network is superseded: marked failed.
 */
export async function createScan(db: Kysely<DB>, actor: Actor & { organisationId: string }, input: z.output<typeof CreateScanRequest>) {
  const org = actor.organisationId;
  const alreadyActive = async (trx: Kysely<DB>) => {
    const active = await repo.findActiveSession(trx, org, input.networkId);
    return new AppError('scan_already_active', `The network already has a scan session in progress (${active?.id ?? 'unknown'}).`, { sessionId: active?.id });
  };
  try {
    return await db.transaction().execute(async (trx) => {
      const network = await repo.findNetworkForScan(trx, org, input.networkId);
      if (!network) throw new AppError('not_found', `No network ${input.networkId}.`);
      if (await repo.findActiveSession(trx, org, network.id)) throw await alreadyActive(trx);
      const nmap = input.nmap ?? { enabled: network.nmap_enabled, scripts: network.nmap_scripts as ('default' | 'safe' | 'version' | 'vuln')[] };
      const daemons = await repo.candidateDaemons(trx, org, network);
      if (daemons.length === 0) {
        throw new AppError('no_daemon_online', network.site_id ? 'No daemon of the network\'s site is online; nothing was queued.' : `No online daemon reports a network containing ${network.cidr}; nothing was queued.`);
      }
      const daemon = nmap.enabled ? daemons.find((d) => d.has_nmap) : daemons[0];
      if (!daemon) throw new AppError('nmap_unavailable', 'nmap was requested but no online daemon that may scan this network has nmap; nothing was queued.');
      // A stalled session of the network (its daemon went quiet) is superseded by this one.
      const superseded = await repo.supersedeStalled(trx, org, network.id);
      const sessionId = await repo.insertSession(trx, {
        organisationId: org,
        networkId: network.id,
        daemonId: daemon.id,
        keyId: actor.keyId ?? null,
        cidr: network.cidr,
        excludeCidrs: network.exclude_cidrs,
        topPortsTcp: network.top_ports_tcp,
        topPortsUdp: network.top_ports_udp,
        nmapEnabled: nmap.enabled,
        nmapScripts: [...new Set(nmap.scripts)],
      });
      await repo.enqueueJob(trx, org, daemon.id, 'network', sessionId);
      await repo.touchNetworkScan(trx, org, network.id);
      await recordAudit(trx, actor, { organisationId: org, action: 'scan.created', targetType: 'scan_session', targetId: sessionId, changes: { networkId: network.id, daemonId: daemon.id, nmap, ...(superseded.length ? { superseded } : {}) } });
      return toScanSession(await sessionOrThrow(trx, org, sessionId));
    });
  } catch (e) {
    // Two requests for one network at once: the unique index on active sessions refuses the second.
    if ((e as { code?: string }).code === '23505') throw await alreadyActive(db);
    // The network or the daemon went (deleted, removed) between the checks and the insert.
    if ((e as { code?: string }).code === '23503') throw new AppError('not_found', `No network ${input.networkId}, or its daemon was removed meanwhile; nothing was queued.`);
    throw e;
  }
}

/** Cancels a session; a daemon already holding it gets a `cancel` job. */
export async function cancelScan(db: Kysely<DB>, actor: Actor & { organisationId: string }, id: string) {
  return db.transaction().execute(async (trx) => {
    await sessionOrThrow(trx, actor.organisationId, id);
    const cancelled = await repo.cancelSession(trx, actor.organisationId, id);
    if (!cancelled) throw new AppError('conflict', 'The scan session has already finished.');
    if (cancelled.previous !== 'queued') await repo.enqueueJob(trx, actor.organisationId, cancelled.daemon_id, 'cancel', id);
    await recordAudit(trx, actor, { organisationId: actor.organisationId, action: 'scan.cancelled', targetType: 'scan_session', targetId: id, changes: { state: { from: cancelled.previous, to: 'cancelled' } } });
    return toScanSession(await sessionOrThrow(trx, actor.organisationId, id));
  });
}

/** Claims the daemon's next job: a dispatched network scan or a cancellation. Undefined when none. */
export async function claimNextJob(db: Kysely<DB>, organisationId: string, daemonId: string) {
  return db.transaction().execute(async (trx) => {
    for (;;) {
      const job = await repo.claimJob(trx, organisationId, daemonId);
      if (!job) return undefined;
      if (job.kind === 'cancel') return { kind: 'cancel' as const, sessionId: job.session_id };
      const target = await repo.dispatchSession(trx, organisationId, job.session_id);
      if (!target) continue; // cancelled before hand-over: nothing to do
      return {
        kind: 'network' as const,
        sessionId: job.session_id,
        target: {
          cidr: target.cidr,
          excludeCidrs: target.exclude_cidrs,
          topPortsTcp: target.top_ports_tcp,
          topPortsUdp: target.top_ports_udp,
          nmap: { enabled: target.nmap_enabled, scripts: target.nmap_enabled ? (target.nmap_scripts as ('default' | 'safe' | 'version' | 'vuln')[]) : [] },
        },
      };
    }
  });
}
