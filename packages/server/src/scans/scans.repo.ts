import { changeSelect, logChanges } from '../events/changes.js';
import { emit, emitSelect } from '../events/emit.js';
import { type Kysely, sql } from 'kysely';
import type { DB } from '../db/schema.js';
import { rfc3339 } from '../db/sql.js';
import { JOBS_CHANNEL } from '../daemons/job-waiters.js';

const ts = (c: string) => rfc3339<string | null>(c).as(c);

export const sessionColumns = [
  'id', 'state', 'network_id', 'daemon_id', 'nmap_enabled', 'nmap_scripts', 'hosts_total', 'hosts_scanned', 'ports_scanned', 'batches',
  sql<string>`cidr::text`.as('cidr_text'), ts('created_at'), ts('dispatched_at'), ts('started_at'), ts('finished_at'), ts('updated_at'),
] as const;

export function findSession(db: Kysely<DB>, organisationId: string, id: string) {
  return db.selectFrom('scan_sessions').select(sessionColumns).where('organisation_id', '=', organisationId).where('id', '=', id).executeTakeFirst();
}

/**
 * The sessions of a network or of a daemon, newest first, with the names of their daemon (a removed
 * one included) and network; none for another organisation's.
 */
export function listSessionHistory(db: Kysely<DB>, organisationId: string, of: { networkId: string } | { daemonId: string }, limit: number) {
  const daemon = (column: string) => sql.raw(`(select d.${column} from daemons d where d.organisation_id = scan_sessions.organisation_id and d.id = scan_sessions.daemon_id)`);
  return db
    .selectFrom('scan_sessions')
    .select(sessionColumns)
    .select([
      sql<string>`${daemon('name')}`.as('daemon_name'),
      sql<boolean>`${daemon('removed_at')} is not null`.as('daemon_removed'),
      sql<string>`(select n.name from networks n where n.organisation_id = scan_sessions.organisation_id and n.id = scan_sessions.network_id)`.as('network_name'),
    ])
    .where('organisation_id', '=', organisationId)
    .where('networkId' in of ? 'network_id' : 'daemon_id', '=', 'networkId' in of ? of.networkId : of.daemonId)
    .orderBy('scan_sessions.created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(limit)
    .execute();
}

export async function networkExists(db: Kysely<DB>, organisationId: string, networkId: string) {
  return !!(await db.selectFrom('networks').select('id').where('organisation_id', '=', organisationId).where('id', '=', networkId).executeTakeFirst());
}

export function findActiveSession(db: Kysely<DB>, organisationId: string, networkId: string) {
  return db
    .selectFrom('scan_sessions')
    .select('id')
    .where('organisation_id', '=', organisationId)
    .where('network_id', '=', networkId)
    .where('state', 'in', ['queued', 'dispatched', 'running'])
    .executeTakeFirst();
}

/** Marks the network's stalled sessions failed (a new scan supersedes them); returns their ids. */
export async function supersedeStalled(db: Kysely<DB>, organisationId: string, networkId: string) {
  const rows = await db
    .updateTable('scan_sessions')
    .set({ state: 'failed', finished_at: new Date(), updated_at: new Date() })
    .where('organisation_id', '=', organisationId)
    .where('network_id', '=', networkId)
    .where('state', '=', 'stalled')
    .returning('id')
    .execute();
  if (rows.length) {
    await logChanges(db, organisationId, 'scan', rows.map((r) => r.id), 'updated');
    await emit(db, organisationId, 'scan.failed', rows.map((r) => ({ subjectId: r.id, data: { networkId, reason: 'stalled, superseded by a new scan' } })));
  }
  return rows.map((r) => r.id);
}

/**
 * Marks the daemon's sessions in `states` failed (the daemon was disabled or removed), logs them
 * and announces `scan.failed` with `reason`; returns their ids.
 */
export async function failDaemonSessions(db: Kysely<DB>, organisationId: string, daemonId: string, states: readonly string[], reason: string) {
  const rows = await db
    .updateTable('scan_sessions')
    .set({ state: 'failed', finished_at: new Date(), updated_at: new Date() })
    .where('organisation_id', '=', organisationId)
    .where('daemon_id', '=', daemonId)
    .where('state', 'in', [...states])
    .returning(['id', 'network_id'])
    .execute();
  if (rows.length) {
    await logChanges(db, organisationId, 'scan', rows.map((r) => r.id), 'updated');
    await logChanges(db, organisationId, 'network', [...new Set(rows.map((r) => r.network_id))], 'updated');
    await emit(db, organisationId, 'scan.failed', rows.map((r) => ({ subjectId: r.id, data: { networkId: r.network_id, reason } })));
  }
  return rows.map((r) => r.id);
}

export function findNetworkForScan(db: Kysely<DB>, organisationId: string, id: string) {
  return db
    .selectFrom('networks')
    .select(['id', 'site_id', sql<string>`cidr::text`.as('cidr'), sql<string[]>`exclude_cidrs::text[]`.as('exclude_cidrs'), 'top_ports_tcp', 'top_ports_udp', 'nmap_enabled', 'nmap_scripts'])
    .where('organisation_id', '=', organisationId)
    .where('id', '=', id)
    // Shared lock: a delete of the network waits for the session, or the session sees it gone (404).
    .forShare()
    .executeTakeFirst();
}

/**
 * Online daemons that may scan the network, most recently heard first: those of its site, or for
 * a network without a site those whose reported CIDRs contain it. Locked shared: a daemon being
 * disabled or removed meanwhile is waited for and then re-checked, so a session is never queued
 * on a daemon that will never take it.
 */
export function candidateDaemons(db: Kysely<DB>, organisationId: string, network: { site_id: string | null; cidr: string }) {
  let q = db
    .selectFrom('daemons')
    .select(['id', sql<boolean>`coalesce((capabilities->>'nmap')::boolean, false)`.as('has_nmap')])
    .where('organisation_id', '=', organisationId)
    .where('status', '=', 'online')
    .where('disabled_at', 'is', null)
    .where('removed_at', 'is', null);
  q = network.site_id
    ? q.where('site_id', '=', network.site_id)
    : q.where(sql<boolean>`exists (select 1 from unnest(network_cidrs) c where c >>= ${network.cidr}::cidr)`);
  return q.orderBy('last_heartbeat_at', 'desc').forShare().execute();
}

export async function insertSession(
  db: Kysely<DB>,
  s: { organisationId: string; networkId: string; daemonId: string; keyId: string | null; cidr: string; excludeCidrs: string[]; topPortsTcp: number; topPortsUdp: number; nmapEnabled: boolean; nmapScripts: string[] },
) {
  const r = await sql<{ id: string }>`
    insert into scan_sessions (organisation_id, network_id, daemon_id, requested_by_key_id, cidr, exclude_cidrs, top_ports_tcp, top_ports_udp, nmap_enabled, nmap_scripts)
    values (${s.organisationId}, ${s.networkId}, ${s.daemonId}, ${s.keyId}, ${s.cidr}::cidr, ${s.excludeCidrs}::cidr[], ${s.topPortsTcp}, ${s.topPortsUdp}, ${s.nmapEnabled}, ${s.nmapScripts})
    returning id`.execute(db);
  const id = r.rows[0]!.id;
  await logChanges(db, s.organisationId, 'scan', [id], 'created');
  return id;
}

/** Queues a job for a daemon and notifies it (delivered when the caller's transaction commits). */
export async function enqueueJob(db: Kysely<DB>, organisationId: string, daemonId: string, kind: 'network' | 'cancel', sessionId: string) {
  await db.insertInto('daemon_jobs').values({ organisation_id: organisationId, daemon_id: daemonId, kind, session_id: sessionId }).execute();
  await sql`select pg_notify(${JOBS_CHANNEL}, ${daemonId})`.execute(db);
}

/**
 * Claims the daemon's oldest undelivered job; concurrent polls never get the same one. A disabled
 * daemon gets cancellations only (its queued sessions were failed when it was disabled).
 */
export async function claimJob(db: Kysely<DB>, organisationId: string, daemonId: string) {
  const r = await sql<{ kind: 'network' | 'cancel'; session_id: string }>`
    update daemon_jobs d set delivered_at = now()
    from (select id from daemon_jobs
          where organisation_id = ${organisationId} and daemon_id = ${daemonId} and delivered_at is null
            and (kind = 'cancel' or exists (select 1 from daemons x where x.organisation_id = ${organisationId} and x.id = ${daemonId} and x.disabled_at is null))
          order by seq limit 1 for update skip locked) j
    where d.organisation_id = ${organisationId} and d.id = j.id
    returning d.kind, d.session_id`.execute(db);
  return r.rows[0];
}

/**
 * Moves a queued session to dispatched and returns its target; nmap stays on only if the daemon
 * reports nmap now. Undefined when the session is no longer queued (cancelled meanwhile).
 */
export async function dispatchSession(db: Kysely<DB>, organisationId: string, sessionId: string) {
  const r = await sql<{ cidr: string; exclude_cidrs: string[]; top_ports_tcp: number; top_ports_udp: number; nmap_enabled: boolean; nmap_scripts: string[] }>`
    update scan_sessions s set state = 'dispatched', dispatched_at = now(), updated_at = now(),
      nmap_enabled = s.nmap_enabled and coalesce((select (d.capabilities->>'nmap')::boolean from daemons d where d.organisation_id = s.organisation_id and d.id = s.daemon_id), false)
    where s.organisation_id = ${organisationId} and s.id = ${sessionId} and s.state = 'queued'
    returning s.cidr::text as cidr, s.exclude_cidrs::text[] as exclude_cidrs, s.top_ports_tcp, s.top_ports_udp, s.nmap_enabled, s.nmap_scripts`.execute(db);
  if (r.rows[0]) await logChanges(db, organisationId, 'scan', [sessionId], 'updated');
  return r.rows[0];
}

/** Cancels an unfinished session; returns its previous state, or undefined when it had finished. */
export async function cancelSession(db: Kysely<DB>, organisationId: string, id: string) {
  const r = await sql<{ previous: string; daemon_id: string }>`
    update scan_sessions s set state = 'cancelled', finished_at = now(), updated_at = now()
    from (select state as previous from scan_sessions where organisation_id = ${organisationId} and id = ${id} for update) old
    where s.organisation_id = ${organisationId} and s.id = ${id} and s.state in ('queued', 'dispatched', 'running', 'stalled')
    returning old.previous, s.daemon_id`.execute(db);
  if (r.rows[0]) await logChanges(db, organisationId, 'scan', [id], 'updated');
  return r.rows[0];
}

/** Networks with a `scanIntervalMinutes` whose last session started longer ago than that (or never), of every organisation. */
export async function dueNetworks(db: Kysely<DB>, at: Date): Promise<{ organisation_id: string; id: string }[]> {
  const r = await sql<{ organisation_id: string; id: string }>`
    select n.organisation_id, n.id from networks n
    where n.scan_interval_minutes is not null
      and not exists (select 1 from scan_sessions s where s.organisation_id = n.organisation_id and s.network_id = n.id
                        and s.created_at > ${at}::timestamptz - make_interval(mins => n.scan_interval_minutes))
    order by n.organisation_id, n.id`.execute(db);
  return r.rows;
}

/** What the scheduler last did with a network (shown as the network's `schedule`). */
export async function recordScheduleOutcome(
  db: Kysely<DB>,
  organisationId: string,
  networkId: string,
  at: Date,
  outcome: 'queued' | 'skipped',
  detail: string | null,
  queued: { sessionId: string; daemonId: string } | null = null,
) {
  // The network changes for its watchers when the outcome does, not at every check (30 s).
  await sql`
    with prev as (
      select id, schedule_outcome, schedule_detail from networks where organisation_id = ${organisationId} and id = ${networkId} for update
    ), updated as (
      update networks n set schedule_checked_at = ${at}, schedule_outcome = ${outcome}, schedule_detail = ${detail},
        schedule_session_id = ${queued?.sessionId ?? null}, schedule_daemon_id = ${queued?.daemonId ?? null}
      from prev where n.organisation_id = ${organisationId} and n.id = prev.id
    )
    ${changeSelect('network', 'updated', { from: sql`prev`, organisationId: sql`${organisationId}::uuid`, where: sql`(prev.schedule_outcome, prev.schedule_detail) is distinct from (${outcome}::text, ${detail}::text)` })}`.execute(db);
}

/**
 * Marks `stalled` every session in a running state whose daemon has not heartbeated for 3 × its
 * heartbeat interval, or that received no batch since `quietBatches`; logs the change and
 * announces `scan.stalled`, in one statement.
 */
export async function markStalledSessions(db: Kysely<DB>, at: Date, quietBatches: Date): Promise<{ organisation_id: string; id: string }[]> {
  const stalled = await sql<{ organisation_id: string; id: string }>`
    with s as (
      update scan_sessions s set state = 'stalled', updated_at = now()
      from daemons d
      where s.state in ('dispatched', 'running') and d.organisation_id = s.organisation_id and d.id = s.daemon_id
        and (coalesce(d.last_heartbeat_at, '-infinity') < ${at}::timestamptz - make_interval(secs => 3 * d.heartbeat_interval_seconds)
             or coalesce(s.last_batch_at, s.started_at, s.dispatched_at, s.created_at) < ${quietBatches})
      returning s.organisation_id, s.id, s.daemon_id, s.network_id
    ), logged as (
      ${changeSelect('scan', 'updated', { from: sql`s` })}
    ), announced as (
      ${emitSelect('scan.stalled', { from: sql`s`, organisationId: sql`organisation_id`, subjectId: sql`id`, data: { daemonId: sql`daemon_id`, networkId: sql`network_id` } })}
    )
    select organisation_id, id from s`.execute(db);
  return stalled.rows;
}

/** Notes that a scan of the network was queued now (the network's `lastScanAt`). */
export async function touchNetworkScan(db: Kysely<DB>, organisationId: string, networkId: string) {
  await db.updateTable('networks').set({ last_scan_at: new Date() }).where('organisation_id', '=', organisationId).where('id', '=', networkId).execute();
  await logChanges(db, organisationId, 'network', [networkId], 'updated');
}
