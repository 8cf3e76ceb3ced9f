import { type Kysely, sql } from 'kysely';
import type { Config } from '../config.js';
import type { DB } from '../db/schema.js';
import { AppError } from '../errors.js';
import { emitSelect } from '../events/emit.js';
import { takeScheduledSnapshot } from '../inventory/inventory.service.js';
import { pruneFlows } from '../ingest/flows.js';
import { announceExpiringCertificates } from '../notifications/certificates.js';
import { notifyDeliver } from '../notifications/deliver.js';
import { sendOptions } from '../notifications/senders.js';
import { createScan } from '../scans/scans.service.js';
import { rebuildDependencies } from '../topology/dependencies.js';
import { type JobDefinition, type JobResult, type OrganisationOutcome, OrganisationsFailed, isTransient } from './runner.js';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

/** Refusals of POST /api/v1/scans that make the scheduler skip a network (and say why). */
const SKIP_CODES = new Set(['no_daemon_online', 'nmap_unavailable', 'scan_already_active']);

async function organisations(db: Kysely<DB>): Promise<string[]> {
  return (await db.selectFrom('organisations').select('id').orderBy('id').execute()).map((r) => r.id);
}

/**
 * Runs `fn` for each organisation; one organisation failing does not stop the others. When every
 * one fails, the tick fails (retried when every error is transient, a database outage), with each
 * organisation's outcome recorded; the job's own error is the first error only when transient
 * (an outage reads the same for everyone), else a summary: one organisation's error text is not
 * shown to the others, as the job's status and `job.failed` reach every organisation.
 */
export async function perOrganisation(ids: string[], fn: (id: string) => Promise<Record<string, unknown>>): Promise<JobResult> {
  const outcomes = new Map<string, OrganisationOutcome>();
  const errors: unknown[] = [];
  for (const id of ids) {
    try {
      outcomes.set(id, { ok: true, detail: await fn(id) });
    } catch (err) {
      errors.push(err);
      outcomes.set(id, { ok: false, error: String((err as Error)?.message ?? err) });
    }
  }
  if (errors.length > 0 && errors.length === ids.length) {
    const transient = errors.every(isTransient);
    // A database outage reads the same for everyone; any other error text stays with its organisation.
    const message = transient ? String((errors[0] as Error)?.message ?? errors[0]) : `failed for every organisation (${ids.length}); each organisation's status has its own error`;
    throw new OrganisationsFailed(message, outcomes, transient);
  }
  return { detail: { organisations: ids.length, failed: errors.length }, organisations: outcomes };
}

/**
 * scan.schedule (30 s): every network with a `scanIntervalMinutes` whose last session started
 * longer ago than that (or never) gets a scan queued exactly as POST /api/v1/scans would. A
 * refusal (no daemon online, nmap unavailable, a scan already active) skips the network; its
 * schedule status says why.
 */
export function scanSchedule(): JobDefinition {
  return {
    name: 'scan.schedule',
    intervalMs: 30_000,
    async run({ db, now }) {
      const at = now();
      const due = await sql<{ organisation_id: string; id: string }>`
        select n.organisation_id, n.id from networks n
        where n.scan_interval_minutes is not null
          and not exists (select 1 from scan_sessions s where s.organisation_id = n.organisation_id and s.network_id = n.id
                            and s.created_at > ${at}::timestamptz - make_interval(mins => n.scan_interval_minutes))
        order by n.organisation_id, n.id`.execute(db);
      const byOrg = new Map<string, string[]>();
      for (const r of due.rows) (byOrg.get(r.organisation_id) ?? byOrg.set(r.organisation_id, []).get(r.organisation_id)!).push(r.id);
      let queued = 0;
      let skipped = 0;
      const result = await perOrganisation([...byOrg.keys()], async (org) => {
        const counts = { queued: 0, skipped: 0 };
        let unexpected: unknown;
        for (const networkId of byOrg.get(org)!) {
          let outcome: 'queued' | 'skipped' = 'queued';
          let detail: string | null = null;
          try {
            const session = await createScan(db, { type: 'system', organisationId: org }, { networkId });
            detail = `session ${session.sessionId} on daemon ${session.daemonId}`;
          } catch (err) {
            // Any other failure fails the organisation's run, after its other networks had their turn.
            if (!(err instanceof AppError) || !SKIP_CODES.has(err.code)) {
              unexpected ??= err;
              continue;
            }
            outcome = 'skipped';
            detail = `${err.code}: ${err.message}`;
          }
          counts[outcome]++;
          await sql`update networks set schedule_checked_at = ${at}, schedule_outcome = ${outcome}, schedule_detail = ${detail}
            where organisation_id = ${org} and id = ${networkId}`.execute(db);
        }
        queued += counts.queued;
        skipped += counts.skipped;
        if (unexpected) throw unexpected;
        return counts;
      });
      return { ...result, detail: { ...result.detail, due: due.rows.length, queued, skipped } };
    },
  };
}

/**
 * scan.stall (1 min, decisions.md): a session in a running state (`dispatched`, `running`) is
 * `stalled` when its daemon has not heartbeated for 3 × the heartbeat interval it was handed, or the session
 * received no batch for SERVICE_SCAN_STALL_SECONDS. A later batch moves it back to `running`.
 * The same minute it announces daemons gone quiet (`daemon.offline`).
 */
export function scanStall(config: Pick<Config, 'jobs'>): JobDefinition {
  return {
    name: 'scan.stall',
    intervalMs: MINUTE,
    async run({ db, now }) {
      const at = now();
      const quietBatches = new Date(at.getTime() - config.jobs.scanStallSeconds * 1000);
      const stalled = await sql<{ organisation_id: string; id: string }>`
        with s as (
          update scan_sessions s set state = 'stalled', updated_at = now()
          from daemons d
          where s.state in ('dispatched', 'running') and d.organisation_id = s.organisation_id and d.id = s.daemon_id
            and (coalesce(d.last_heartbeat_at, '-infinity') < ${at}::timestamptz - make_interval(secs => 3 * d.heartbeat_interval_seconds)
                 or coalesce(s.last_batch_at, s.started_at, s.dispatched_at, s.created_at) < ${quietBatches})
          returning s.organisation_id, s.id, s.daemon_id, s.network_id
        ), logged as (
          insert into change_log (organisation_id, entity_type, entity_id, action) select organisation_id, 'scan', id, 'updated' from s
        ), announced as (
          ${emitSelect('scan.stalled', { from: sql`s`, organisationId: sql`organisation_id`, subjectId: sql`id`, data: { daemonId: sql`daemon_id`, networkId: sql`network_id` } })}
        )
        select organisation_id, id from s`.execute(db);
      const offline = await markQuietDaemonsOffline(db, at);
      const organisations = new Map<string, OrganisationOutcome>();
      const count = (org: string, what: 'stalled' | 'offline') => {
        const o = organisations.get(org) ?? { ok: true, detail: { stalled: 0, offline: 0 } };
        (o.detail as Record<typeof what, number>)[what]++;
        organisations.set(org, o);
      };
      for (const r of stalled.rows) count(r.organisation_id, 'stalled');
      for (const r of offline) count(r.organisation_id, 'offline');
      return { detail: { stalled: stalled.rows.length, sessions: stalled.rows.map((r) => r.id), offline: offline.length, daemons: offline.map((r) => r.id) }, organisations };
    },
  };
}

/** Quiet for more than this while `online` is a problem (spec 3.3, decisions.md). */
export const DAEMON_QUIET_SECONDS = 300;

/**
 * daemon.offline (decisions.md): an `online` daemon quiet (no heartbeat) for more than 300 s
 * starts a quiet episode, announced once; its next heartbeat ends it with `daemon.online`
 * (daemons.repo recordHeartbeat). Checked every minute, by scan.stall.
 */
async function markQuietDaemonsOffline(db: Kysely<DB>, at: Date): Promise<{ organisation_id: string; id: string }[]> {
  const r = await sql<{ organisation_id: string; id: string }>`
    with quiet as (
      update daemons set offline_since = ${at}
      where status = 'online' and offline_since is null
        and coalesce(last_heartbeat_at, registered_at) < ${at}::timestamptz - make_interval(secs => ${DAEMON_QUIET_SECONDS})
      returning organisation_id, id, name, last_heartbeat_at, site_id
    ), announced as (
      ${emitSelect('daemon.offline', {
        from: sql`quiet`, organisationId: sql`organisation_id`, subjectId: sql`id`,
        data: { name: sql`name`, siteId: sql`site_id`, lastHeartbeatAt: sql`last_heartbeat_at`, quietSeconds: sql`round(extract(epoch from ${at}::timestamptz - last_heartbeat_at))` },
      })}
    )
    select organisation_id, id from quiet order by organisation_id, id`.execute(db);
  return r.rows;
}

/**
 * perOrganisation over every organisation, the job's detail carrying under `key` the sum of
 * `count` over the organisations' details.
 */
async function everyOrganisation(db: Kysely<DB>, key: string, fn: (org: string) => Promise<Record<string, unknown>>, count: (detail: Record<string, unknown>) => number): Promise<JobResult> {
  let total = 0;
  const result = await perOrganisation(await organisations(db), async (org) => {
    const detail = await fn(org);
    total += count(detail);
    return detail;
  });
  return { ...result, detail: { ...result.detail, [key]: total } };
}

/** inventory.snapshot (1 h): today's scheduled snapshot of every organisation, if not taken yet. */
export function inventorySnapshot(): JobDefinition {
  return {
    name: 'inventory.snapshot',
    intervalMs: HOUR,
    run({ db, now }) {
      const at = now();
      return everyOrganisation(
        db,
        'created',
        async (org) => {
          const r = await takeScheduledSnapshot(db, org, at);
          return { created: r.created, snapshotId: r.snapshot.id };
        },
        (d) => (d.created ? 1 : 0),
      );
    },
  };
}

/**
 * topology.dependencies (1 h): every organisation's application topology rebuilt from recent flows;
 * then flows past the 30-day retention are pruned (decisions.md).
 */
export function topologyDependencies(): JobDefinition {
  return {
    name: 'topology.dependencies',
    intervalMs: HOUR,
    async run({ db, now }) {
      const at = now();
      const result = await everyOrganisation(
        db,
        'edges',
        async (org) => {
          const r = await rebuildDependencies(db, org, at);
          return { edges: r.edges, topologies: r.topologies.length };
        },
        (d) => d.edges as number,
      );
      // Pruning failing (the database, not a busy table: that is skipped) does not undo the rebuild: it says so in the detail.
      const pruned = await pruneFlows(db, at).catch((err) => ({ error: String((err as Error)?.message ?? err), partitions: [], busy: [], batches: 0 }));
      return {
        ...result,
        detail: { ...result.detail, prunedPartitions: pruned.partitions, busyPartitions: pruned.busy, prunedBatches: pruned.batches, ...('error' in pruned ? { pruneError: pruned.error } : {}) },
      };
    },
  };
}

/** notify.certificates (1 h): `tls.expiring` for every organisation's certificates that crossed a threshold. */
export function notifyCertificates(): JobDefinition {
  return {
    name: 'notify.certificates',
    intervalMs: HOUR,
    run({ db, now }) {
      const at = now();
      return everyOrganisation(db, 'announced', (org) => announceExpiringCertificates(db, org, at), (d) => d.announced as number);
    },
  };
}

/** Every job this build runs. A job of a later feature plugs in by adding its definition here. */
export function coreJobs(config: Pick<Config, 'jobs' | 'baseUrl' | 'notify'>, deps: { secretKey: Buffer }): JobDefinition[] {
  return [
    scanSchedule(),
    scanStall(config),
    notifyDeliver({ secretKey: deps.secretKey, send: sendOptions(config) }),
    topologyDependencies(),
    notifyCertificates(),
    inventorySnapshot(),
  ];
}
