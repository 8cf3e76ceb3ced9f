import { createHash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { gunzipSync } from 'node:zlib';
import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../src/cli/main.js';
import { loadConfig } from '../src/config.js';
import { eventsSince } from '../src/events/events.js';
import { jobDefinitions } from '../src/main.js';
import { JobRunner, type JobResult } from '../src/jobs/runner.js';
import { prepareFlows, storeFlows } from '../src/ingest/flows.js';
import { takeScheduledSnapshot } from '../src/snapshots/snapshots.service.js';
import { createLogger } from '../src/logger.js';
import { daemonHeaders, daemonKey, heartbeat, poll, register } from './daemon-client.js';
import { type Daemon, type Json, type Scanning, createNetwork, getScan, ingest, onlineDaemon, queueScan, scanningOrg, siteIdOf, startSession } from './scanning.js';
import { addCertificate, addHost, addHosts, addService, addSite, addTopology, addVulnerability, nonConformingEvents } from './fixtures.js';
import {
  type SeededOrg, type TestApp, type TestDatabase, JOB_NAMES, TEST_DATABASE_URL, bearer, buildTestApp, createTestDatabase, login, seedMemberWithKey, seedOrg,
} from './helpers.js';

// Scheduled jobs (spec 1.1, 3.2, 4.6; decisions.md "Scan sessions", "Small rules"): each job is
// ticked through the real JobRunner with an injected clock; timestamps the rules depend on ("a
// heartbeat 91 s ago") are set with SQL. Everything else goes through HTTP as a daemon, an
// operator or an administrator would.


const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

const ENV = {
  SERVICE_RATE_LIMIT_DAEMON_PER_MINUTE: '1000000',
  SERVICE_RATE_LIMIT_KEY_PER_MINUTE: '1000000',
  SERVICE_RATE_LIMIT_ANON_PER_MINUTE: '1000000',
  SERVICE_RATE_LIMIT_LOGIN_PER_MINUTE: '1000',
};

const ago = (at: Date, ms: number) => new Date(at.getTime() - ms);

/** One tick of `job` through the runner, its clock fixed at `at`; the tick must run and succeed. */
async function tick(t: TestApp, job: string, at: Date): Promise<JobResult> {
  const runner = new JobRunner({ database: t.database, logger: createLogger('silent'), jobs: jobDefinitions({ config: t.config, secretKey: t.secretKey }), now: () => at });
  const r = await runner.tick(job);
  expect(r, JSON.stringify(r)).toMatchObject({ job, ran: true, outcome: 'ok', attempts: 1 });
  expect(r.result).toBeDefined();
  return r.result!;
}

/** A small batch: one host with one address (inside 10.0.0.0/8). */
const smallBatch = (sessionId: string, address: string, extra: Json = {}) => ({
  sessionId,
  hosts: [{ fingerprint: `fp-${address}`, hostname: `h-${address}` }],
  ips: [{ hostFingerprint: `fp-${address}`, address }],
  ...extra,
});

/** A running session: queued, handed over at a poll, then one batch. */
async function runningSession(t: TestApp, s: Scanning, cidr: string, address: string) {
  const sessionId = await startSession(t, s, await createNetwork(t, s, cidr));
  await ingest(t, s.daemon, smallBatch(sessionId, address));
  expect((await getScan(t, s, sessionId)).state).toBe('running');
  return sessionId;
}

async function sessionsOf(t: TestApp, networkId: string) {
  return (
    await sql<{ id: string; state: string; daemon_id: string }>`
      select id, state, daemon_id from scan_sessions where network_id = ${networkId} order by seq`.execute(t.database.db)
  ).rows;
}

async function stateOf(t: TestApp, sessionId: string) {
  return (await sql<{ state: string }>`select state from scan_sessions where id = ${sessionId}`.execute(t.database.db)).rows[0]!.state;
}

async function setHeartbeat(t: TestApp, daemonId: string, at: Date) {
  await sql`update daemons set last_heartbeat_at = ${at} where id = ${daemonId}`.execute(t.database.db);
}

async function setLastBatch(t: TestApp, sessionId: string, at: Date) {
  await sql`update scan_sessions set last_batch_at = ${at} where id = ${sessionId}`.execute(t.database.db);
}

/** The network as GET /api/v1/networks shows it to a key holding inventory:read. */
async function networkView(t: TestApp, s: Scanning, networkId: string): Promise<Json> {
  const reader = (await seedMemberWithKey(t.database, s.org, 'viewer', ['inventory:read'])).token;
  const res = await t.app.inject({ method: 'GET', url: '/api/v1/networks?limit=500', headers: bearer(reader) });
  expect(res.statusCode, res.body).toBe(200);
  const n = (res.json().data as Json[]).find((x) => x.id === networkId);
  expect(n, `network ${networkId}`).toBeDefined();
  return n!;
}

// =============================================================================================

describe('job scan.schedule queues a scan for every network that is due (spec 1.1; decisions.md "Scan sessions")', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await buildTestApp({ env: ENV });
  });
  afterAll(() => t.close());

  it('queues a session on an online daemon of the network\'s site for a network with scanIntervalMinutes never scanned, and GET /api/v1/networks shows the outcome queued', async () => {
    const s = await scanningOrg(t, { siteCode: 'hq' });
    // An online daemon outside the site whose CIDRs contain the network must not take it.
    const outsider = await onlineDaemon(t, s.org, { networkCidrs: ['10.0.0.0/8'] });
    const networkId = await createNetwork(t, s, '10.20.0.0/16', { scanIntervalMinutes: 60 });
    expect((await networkView(t, s, networkId)).schedule).toBeNull();

    const at = new Date();
    const result = await tick(t, 'scan.schedule', at);

    const sessions = await sessionsOf(t, networkId);
    expect(sessions).toHaveLength(1);
    expect(sessions[0]).toMatchObject({ state: 'queued', daemon_id: s.daemon.id });
    expect(sessions[0]!.daemon_id).not.toBe(outsider.id);
    expect(result.organisations?.get(s.org.organisationId)).toEqual({ ok: true, detail: { queued: 1, skipped: 0 } });

    const view = await networkView(t, s, networkId);
    expect(view.schedule).toMatchObject({ outcome: 'queued' });
    expect(Date.parse(view.schedule.checkedAt)).toBe(at.getTime());
    expect(view.schedule.detail).toContain(sessions[0]!.id);
    expect(view.lastScanAt).not.toBeNull();

    // Queued exactly as POST /api/v1/scans would: the daemon's next poll hands it over.
    const job = await poll(t.app, s.daemon.token, s.daemon.id);
    expect(job.statusCode, job.body).toBe(200);
    expect(job.json()).toMatchObject({ kind: 'network', sessionId: sessions[0]!.id, target: { cidr: '10.20.0.0/16' } });
    expect(await stateOf(t, sessions[0]!.id)).toBe('dispatched');
  });

  it('queues a session of a network without a site on an online daemon whose networkCidrs contain it', async () => {
    const s = await scanningOrg(t, { networkCidrs: ['172.16.0.0/12'] });
    // Heard from last, so first in line if it were a candidate: its CIDRs do not contain the network.
    const other = await onlineDaemon(t, s.org, { networkCidrs: ['192.168.0.0/16'] });
    const networkId = await createNetwork(t, s, '172.16.5.0/24', { scanIntervalMinutes: 15 });
    await tick(t, 'scan.schedule', new Date());
    const sessions = await sessionsOf(t, networkId);
    expect(sessions).toHaveLength(1);
    expect(sessions[0]).toMatchObject({ state: 'queued', daemon_id: s.daemon.id });
    expect(sessions[0]!.daemon_id).not.toBe(other.id);
  });

  it('queues nothing for a network whose last session started less than scanIntervalMinutes ago, and queues one once the interval has passed', async () => {
    const s = await scanningOrg(t);
    const networkId = await createNetwork(t, s, '10.30.0.0/24', { scanIntervalMinutes: 60 });
    const first = await startSession(t, s, networkId);
    await ingest(t, s.daemon, smallBatch(first, '10.30.0.5', { final: true }));
    expect(await stateOf(t, first)).toBe('completed');
    const at = new Date();
    await sql`update scan_sessions set created_at = ${ago(at, 10 * MINUTE)} where id = ${first}`.execute(t.database.db);

    const notDue = await tick(t, 'scan.schedule', at);
    expect(await sessionsOf(t, networkId)).toHaveLength(1);
    expect(notDue.organisations?.has(s.org.organisationId)).toBe(false);
    expect((await networkView(t, s, networkId)).schedule).toBeNull();

    // 61 minutes after the last session started, it is due.
    const later = new Date(at.getTime() + 51 * MINUTE);
    await tick(t, 'scan.schedule', later);
    const sessions = await sessionsOf(t, networkId);
    expect(sessions).toHaveLength(2);
    expect(sessions[1]).toMatchObject({ state: 'queued', daemon_id: s.daemon.id });
    expect((await networkView(t, s, networkId)).schedule).toMatchObject({ outcome: 'queued' });
  });

  it('never schedules a network without scanIntervalMinutes, however long it has gone unscanned', async () => {
    const s = await scanningOrg(t);
    const networkId = await createNetwork(t, s, '10.40.0.0/24');
    for (const at of [new Date(), new Date(Date.now() + 30 * DAY)]) {
      const result = await tick(t, 'scan.schedule', at);
      expect(result.organisations?.has(s.org.organisationId)).toBe(false);
    }
    expect(await sessionsOf(t, networkId)).toEqual([]);
    expect((await networkView(t, s, networkId)).schedule).toBeNull();
  });

  it('skips a due network when no daemon that may scan it is online: nothing is queued and schedule.detail starts with no_daemon_online', async () => {
    const s = await scanningOrg(t, { siteCode: 'a', networkCidrs: ['10.0.0.0/8'] });
    // Site b has a daemon that registered but never heartbeated (pending) and one that is degraded.
    const pendingToken = await daemonKey(t, s.org);
    await register(t.app, pendingToken, { siteCode: 'b', networkCidrs: ['10.0.0.0/8', '192.168.0.0/16'] });
    const degradedToken = await daemonKey(t, s.org);
    const degraded = await register(t.app, degradedToken, { siteCode: 'b', networkCidrs: ['10.0.0.0/8', '192.168.0.0/16'] });
    await heartbeat(t.app, degradedToken, degraded, 'degraded');
    const siteB = await siteIdOf(t, s.org, 'b');
    const inSiteB = await createNetwork(t, { ...s, siteId: siteB }, '10.50.0.0/24', { scanIntervalMinutes: 30 });
    // No site, and no online daemon reports a CIDR containing it (site a's daemon has 10.0.0.0/8 only).
    const noSite = await createNetwork(t, { ...s, siteId: null }, '192.168.50.0/24', { scanIntervalMinutes: 30 });

    const at = new Date();
    const result = await tick(t, 'scan.schedule', at);
    expect(result.organisations?.get(s.org.organisationId)).toEqual({ ok: true, detail: { queued: 0, skipped: 2 } });
    for (const networkId of [inSiteB, noSite]) {
      expect(await sessionsOf(t, networkId)).toEqual([]);
      const view = await networkView(t, s, networkId);
      expect(view.schedule).toMatchObject({ outcome: 'skipped' });
      expect(view.schedule.detail).toMatch(/^no_daemon_online/);
      expect(Date.parse(view.schedule.checkedAt)).toBe(at.getTime());
      expect(view.lastScanAt).toBeNull();
    }
    const jobs = await sql<{ n: number }>`select count(*)::int as n from daemon_jobs where organisation_id = ${s.org.organisationId}`.execute(t.database.db);
    expect(jobs.rows[0]!.n).toBe(0);
  });

  it('skips a due network that still has an active session with scan_already_active, queuing nothing more', async () => {
    const s = await scanningOrg(t);
    const networkId = await createNetwork(t, s, '10.60.0.0/24', { scanIntervalMinutes: 15 });
    const running = await startSession(t, s, networkId);
    await ingest(t, s.daemon, smallBatch(running, '10.60.0.7'));
    const at = new Date();
    await sql`update scan_sessions set created_at = ${ago(at, 2 * HOUR)} where id = ${running}`.execute(t.database.db);

    const result = await tick(t, 'scan.schedule', at);
    expect(result.organisations?.get(s.org.organisationId)).toEqual({ ok: true, detail: { queued: 0, skipped: 1 } });
    expect(await sessionsOf(t, networkId)).toEqual([expect.objectContaining({ id: running, state: 'running' })]);
    const view = await networkView(t, s, networkId);
    expect(view.schedule).toMatchObject({ outcome: 'skipped' });
    expect(view.schedule.detail).toMatch(/^scan_already_active/);
  });

  it('supersedes a stalled session of a due network: the stalled one becomes failed and a new session is queued', async () => {
    const s = await scanningOrg(t);
    const networkId = await createNetwork(t, s, '10.61.0.0/24', { scanIntervalMinutes: 15 });
    const stalled = await startSession(t, s, networkId);
    await ingest(t, s.daemon, smallBatch(stalled, '10.61.0.7'));
    const at = new Date();
    await sql`update scan_sessions set created_at = ${ago(at, 2 * HOUR)}, state = 'stalled' where id = ${stalled}`.execute(t.database.db);

    const result = await tick(t, 'scan.schedule', at);
    expect(result.organisations?.get(s.org.organisationId)).toEqual({ ok: true, detail: { queued: 1, skipped: 0 } });
    const sessions = await sessionsOf(t, networkId);
    expect(sessions).toHaveLength(2);
    expect(sessions.find((x: { id: string }) => x.id === stalled)).toMatchObject({ state: 'failed' });
    expect(sessions.find((x: { id: string }) => x.id !== stalled)).toMatchObject({ state: 'queued' });
    // A late batch of the superseded session is taken but changes nothing about its state.
    await ingest(t, s.daemon, smallBatch(stalled, '10.61.0.8'));
    expect((await sessionsOf(t, networkId)).find((x: { id: string }) => x.id === stalled)).toMatchObject({ state: 'failed' });
  });

  it('skips a due network asking for nmap when the daemons that may scan it lack nmap, with nmap_unavailable', async () => {
    const s = await scanningOrg(t, { capabilities: { ebpf: false, netflow: true, nmap: false } });
    const withNmap = await createNetwork(t, s, '10.70.0.0/24', { scanIntervalMinutes: 15, nmap: { enabled: true, scripts: ['default'] } });
    const withoutNmap = await createNetwork(t, s, '10.71.0.0/24', { scanIntervalMinutes: 15 });

    const result = await tick(t, 'scan.schedule', new Date());
    expect(result.organisations?.get(s.org.organisationId)).toEqual({ ok: true, detail: { queued: 1, skipped: 1 } });
    expect(await sessionsOf(t, withNmap)).toEqual([]);
    const view = await networkView(t, s, withNmap);
    expect(view.schedule).toMatchObject({ outcome: 'skipped' });
    expect(view.schedule.detail).toMatch(/^nmap_unavailable/);
    // The same daemon takes a network that does not ask for nmap.
    expect(await sessionsOf(t, withoutNmap)).toEqual([expect.objectContaining({ state: 'queued', daemon_id: s.daemon.id })]);
  });

  it('does not queue a second session when the tick runs again right away', async () => {
    const s = await scanningOrg(t);
    const networkId = await createNetwork(t, s, '10.80.0.0/24', { scanIntervalMinutes: 15 });
    const at = new Date();
    await tick(t, 'scan.schedule', at);
    expect(await sessionsOf(t, networkId)).toHaveLength(1);
    const again = await tick(t, 'scan.schedule', new Date(at.getTime() + SECOND));
    expect(again.organisations?.has(s.org.organisationId)).toBe(false);
    expect(await sessionsOf(t, networkId)).toEqual([expect.objectContaining({ state: 'queued' })]);
    // The network was not due again: its schedule still tells of the first tick.
    const view = await networkView(t, s, networkId);
    expect(view.schedule).toMatchObject({ outcome: 'queued' });
    expect(Date.parse(view.schedule.checkedAt)).toBe(at.getTime());
  });

  it('queues one session when two runners tick at the same moment', async () => {
    const s = await scanningOrg(t);
    const networkId = await createNetwork(t, s, '10.90.0.0/24', { scanIntervalMinutes: 15 });
    const at = new Date();
    const runner = () => new JobRunner({ database: t.database, logger: createLogger('silent'), jobs: jobDefinitions({ config: t.config, secretKey: t.secretKey }), now: () => at });
    const results = await Promise.all([runner().tick('scan.schedule'), runner().tick('scan.schedule')]);
    for (const r of results) if (r.ran) expect(r.outcome).toBe('ok');
    expect(await sessionsOf(t, networkId)).toEqual([expect.objectContaining({ state: 'queued' })]);
    expect((await networkView(t, s, networkId)).schedule).toMatchObject({ outcome: 'queued' });
  });
});

// =============================================================================================

describe('job scan.stall marks running sessions whose daemon stopped reporting stalled (spec 3.2; decisions.md "Scan sessions")', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await buildTestApp({ env: ENV });
  });
  afterAll(() => t.close());

  it('uses the defaults: heartbeat interval 30 s and SERVICE_SCAN_STALL_SECONDS 900', () => {
    expect(t.config.daemon.heartbeatSeconds).toBe(30);
    expect(t.config.jobs.scanStallSeconds).toBe(900);
  });

  it('marks a running session stalled when its daemon last heartbeated more than 3 × 30 s = 90 s before now, and leaves one heard from 90 s or 30 s ago', async () => {
    const quiet = await scanningOrg(t);
    const boundary = await scanningOrg(t);
    const fresh = await scanningOrg(t);
    const sQuiet = await runningSession(t, quiet, '10.1.0.0/24', '10.1.0.1');
    const sBoundary = await runningSession(t, boundary, '10.1.0.0/24', '10.1.0.1');
    const sFresh = await runningSession(t, fresh, '10.1.0.0/24', '10.1.0.1');
    const at = new Date();
    await setHeartbeat(t, quiet.daemon.id, ago(at, 91 * SECOND));
    await setHeartbeat(t, boundary.daemon.id, ago(at, 90 * SECOND));
    await setHeartbeat(t, fresh.daemon.id, ago(at, 30 * SECOND));

    const result = await tick(t, 'scan.stall', at);
    expect((await getScan(t, quiet, sQuiet)).state).toBe('stalled');
    expect((await getScan(t, boundary, sBoundary)).state).toBe('running');
    expect((await getScan(t, fresh, sFresh)).state).toBe('running');
    expect(result.detail?.sessions).toContain(sQuiet);
    expect(result.detail?.sessions).not.toContain(sBoundary);
    expect(result.detail?.sessions).not.toContain(sFresh);
    expect(result.organisations?.get(quiet.org.organisationId)).toEqual({ ok: true, detail: { stalled: 1, offline: 0 } });
    expect(result.organisations?.has(fresh.org.organisationId)).toBe(false);
  });

  it('marks a dispatched session stalled likewise when its daemon went quiet, and leaves a dispatched one whose daemon heartbeats', async () => {
    const quiet = await scanningOrg(t);
    const fresh = await scanningOrg(t);
    const sQuiet = await startSession(t, quiet, await createNetwork(t, quiet, '10.2.0.0/24'));
    const sFresh = await startSession(t, fresh, await createNetwork(t, fresh, '10.2.0.0/24'));
    expect(await stateOf(t, sQuiet)).toBe('dispatched');
    const at = new Date();
    await setHeartbeat(t, quiet.daemon.id, ago(at, 91 * SECOND));
    await setHeartbeat(t, fresh.daemon.id, ago(at, 5 * SECOND));

    await tick(t, 'scan.stall', at);
    expect((await getScan(t, quiet, sQuiet)).state).toBe('stalled');
    expect((await getScan(t, fresh, sFresh)).state).toBe('dispatched');
  });

  it('marks a session whose daemon heartbeats stalled when it received no batch for more than SERVICE_SCAN_STALL_SECONDS (900 s), and leaves one that did', async () => {
    const s = await scanningOrg(t);
    const quietRunning = await runningSession(t, s, '10.3.1.0/24', '10.3.1.1');
    const freshRunning = await runningSession(t, s, '10.3.2.0/24', '10.3.2.1');
    const quietDispatched = await startSession(t, s, await createNetwork(t, s, '10.3.3.0/24'));
    const at = new Date();
    await setHeartbeat(t, s.daemon.id, ago(at, 5 * SECOND));
    await setLastBatch(t, quietRunning, ago(at, 901 * SECOND));
    await setLastBatch(t, freshRunning, ago(at, 899 * SECOND));
    // Handed over 901 s ago and no batch since.
    await sql`update scan_sessions set dispatched_at = ${ago(at, 901 * SECOND)}, created_at = ${ago(at, 902 * SECOND)} where id = ${quietDispatched}`.execute(t.database.db);

    const result = await tick(t, 'scan.stall', at);
    expect(await stateOf(t, quietRunning)).toBe('stalled');
    expect(await stateOf(t, quietDispatched)).toBe('stalled');
    expect(await stateOf(t, freshRunning)).toBe('running');
    expect(result.organisations?.get(s.org.organisationId)).toEqual({ ok: true, detail: { stalled: 2, offline: 0 } });
  });

  it('never touches queued, completed, cancelled, failed or already stalled sessions, however quiet their daemon', async () => {
    const s = await scanningOrg(t);
    const completed = await startSession(t, s, await createNetwork(t, s, '10.4.1.0/24'));
    await ingest(t, s.daemon, smallBatch(completed, '10.4.1.1', { final: true }));
    const failed = await startSession(t, s, await createNetwork(t, s, '10.4.3.0/24'));
    await sql`update scan_sessions set state = 'failed', finished_at = now() where id = ${failed}`.execute(t.database.db);
    const stalled = await startSession(t, s, await createNetwork(t, s, '10.4.4.0/24'));
    await sql`update scan_sessions set state = 'stalled' where id = ${stalled}`.execute(t.database.db);
    // Cancelled and queued last: the daemon's next poll would take their jobs first.
    const cancelled = await startSession(t, s, await createNetwork(t, s, '10.4.2.0/24'));
    const cancel = await t.app.inject({ method: 'POST', url: `/api/v1/scans/${cancelled}/cancel`, headers: bearer(s.api) });
    expect(cancel.statusCode, cancel.body).toBe(200);
    const queued = (await queueScan(t, s, await createNetwork(t, s, '10.4.5.0/24'))).sessionId;
    const expected = { [completed]: 'completed', [cancelled]: 'cancelled', [failed]: 'failed', [stalled]: 'stalled', [queued]: 'queued' };
    for (const [id, state] of Object.entries(expected)) expect(await stateOf(t, id)).toBe(state);

    const at = new Date();
    const old = ago(at, 2 * HOUR);
    await setHeartbeat(t, s.daemon.id, old);
    await sql`
      update scan_sessions set created_at = ${old}, updated_at = ${old}, last_batch_at = ${old},
        dispatched_at = case when dispatched_at is null then null else ${old}::timestamptz end,
        started_at = case when started_at is null then null else ${old}::timestamptz end
      where organisation_id = ${s.org.organisationId}`.execute(t.database.db);
    const scanChanges = async () =>
      (await sql<{ n: number }>`select count(*)::int as n from change_log where organisation_id = ${s.org.organisationId} and entity_type = 'scan'`.execute(t.database.db)).rows[0]!.n;
    const loggedBefore = await scanChanges();

    const result = await tick(t, 'scan.stall', at);
    for (const [id, state] of Object.entries(expected)) expect(await stateOf(t, id), id).toBe(state);
    // The daemon quiet for 2 h is announced offline; no session of it is touched.
    expect(result.organisations?.get(s.org.organisationId)).toEqual({ ok: true, detail: { stalled: 0, offline: 1 } });
    const touched = await sql<{ n: number }>`
      select count(*)::int as n from scan_sessions where organisation_id = ${s.org.organisationId} and updated_at <> ${old}`.execute(t.database.db);
    expect(touched.rows[0]!.n).toBe(0);
    expect(await scanChanges()).toBe(loggedBefore);
  });

  it('writes one change_log row (entity_type scan, action updated) for each session it stalls, and none for one it leaves', async () => {
    const quiet = await scanningOrg(t);
    const fresh = await scanningOrg(t);
    const sQuiet = await runningSession(t, quiet, '10.5.0.0/24', '10.5.0.1');
    const sFresh = await runningSession(t, fresh, '10.5.0.0/24', '10.5.0.1');
    // What the tick logs: the rows after those of the sessions' creation, dispatch and first batch
    // (change ids are numbered per organisation).
    const sinceOf = async (org: string) => (await sql<{ max: number }>`select coalesce(max(id), 0)::int as max from change_log where organisation_id = ${org}`.execute(t.database.db)).rows[0]!.max;
    const since = new Map([[sQuiet, await sinceOf(quiet.org.organisationId)], [sFresh, await sinceOf(fresh.org.organisationId)]]);
    const logOf = async (id: string) =>
      (await sql<{ organisation_id: string; entity_type: string; action: string }>`
        select organisation_id, entity_type, action from change_log where entity_id = ${id} and id > ${since.get(id)!} order by id`.execute(t.database.db)).rows;
    expect(await logOf(sQuiet)).toEqual([]);
    const at = new Date();
    await setHeartbeat(t, quiet.daemon.id, ago(at, 10 * MINUTE));
    await setHeartbeat(t, fresh.daemon.id, ago(at, 10 * SECOND));

    await tick(t, 'scan.stall', at);
    expect(await logOf(sQuiet)).toEqual([{ organisation_id: quiet.org.organisationId, entity_type: 'scan', action: 'updated' }]);
    expect(await logOf(sFresh)).toEqual([]);
    // A second tick does not stall (nor log) the stalled session again.
    await tick(t, 'scan.stall', new Date(at.getTime() + MINUTE));
    expect(await logOf(sQuiet)).toHaveLength(1);
  });

  it('moves a stalled session back to running when a later observation batch for it arrives, and the next tick leaves it running', async () => {
    const s = await scanningOrg(t);
    const sessionId = await runningSession(t, s, '10.6.0.0/24', '10.6.0.1');
    const at = new Date();
    await setHeartbeat(t, s.daemon.id, ago(at, 10 * MINUTE));
    await tick(t, 'scan.stall', at);
    expect((await getScan(t, s, sessionId)).state).toBe('stalled');

    // The daemon is back: it heartbeats and sends the next batch.
    await heartbeat(t.app, s.daemon.token, s.daemon.id);
    expect(await ingest(t, s.daemon, smallBatch(sessionId, '10.6.0.2'))).toEqual({ accepted: 2, dedupHits: 0, outOfWindow: 0 });
    const scan = await getScan(t, s, sessionId);
    expect(scan.state).toBe('running');
    expect(scan.progress.batches).toBe(2);

    await tick(t, 'scan.stall', new Date());
    expect((await getScan(t, s, sessionId)).state).toBe('running');
  });

  it('measures a daemon\'s silence against 3 × the heartbeat interval it was handed, even when the worker\'s own setting differs', async () => {
    // The web process hands daemons a 120 s interval; the worker runs with the default (30 s).
    const web = await buildTestApp({ env: { ...ENV, SERVICE_DAEMON_HEARTBEAT_SECONDS: '120' } });
    try {
      const s = await scanningOrg(web);
      const other = await scanningOrg(web);
      const heard = await runningSession(web, s, '10.8.0.0/24', '10.8.0.1');
      const quiet = await runningSession(web, other, '10.8.0.0/24', '10.8.0.1');
      const handed = await sql<{ id: string; heartbeat_interval_seconds: number }>`
        select id, heartbeat_interval_seconds from daemons where id in (${s.daemon.id}, ${other.daemon.id})`.execute(web.database.db);
      expect(handed.rows.map((r) => r.heartbeat_interval_seconds)).toEqual([120, 120]);
      const at = new Date();
      await setHeartbeat(web, s.daemon.id, ago(at, 100 * SECOND)); // one interval late at most: still reporting
      await setHeartbeat(web, other.daemon.id, ago(at, 361 * SECOND)); // more than 3 × 120 s
      const worker = new JobRunner({ database: web.database, logger: createLogger('silent'), jobs: jobDefinitions({ config: loadConfig({}), secretKey: web.secretKey }), now: () => at });
      expect(await worker.tick('scan.stall')).toMatchObject({ ran: true, outcome: 'ok' });
      expect(await stateOf(web, quiet)).toBe('stalled');
      expect(await stateOf(web, heard)).toBe('running');
    } finally {
      await web.close();
    }
  });

  it('follows SERVICE_DAEMON_HEARTBEAT_SECONDS and SERVICE_SCAN_STALL_SECONDS when they are set', async () => {
    const custom = await buildTestApp({ env: { ...ENV, SERVICE_DAEMON_HEARTBEAT_SECONDS: '10', SERVICE_SCAN_STALL_SECONDS: '120' } });
    try {
      const s = await scanningOrg(custom);
      const other = await scanningOrg(custom);
      const quietDaemon = await runningSession(custom, s, '10.7.0.0/24', '10.7.0.1');
      const quietBatches = await runningSession(custom, other, '10.7.1.0/24', '10.7.1.1');
      const fresh = await runningSession(custom, other, '10.7.2.0/24', '10.7.2.1');
      const at = new Date();
      await setHeartbeat(custom, s.daemon.id, ago(at, 31 * SECOND)); // above 3 × 10 s
      await setHeartbeat(custom, other.daemon.id, ago(at, 29 * SECOND));
      await setLastBatch(custom, quietBatches, ago(at, 121 * SECOND));
      await setLastBatch(custom, fresh, ago(at, 119 * SECOND));
      await tick(custom, 'scan.stall', at);
      expect(await stateOf(custom, quietDaemon)).toBe('stalled');
      expect(await stateOf(custom, quietBatches)).toBe('stalled');
      expect(await stateOf(custom, fresh)).toBe('running');
    } finally {
      await custom.close();
    }
  });
});

// =============================================================================================

describe('job inventory.snapshot takes today\'s scheduled snapshot of every organisation (spec 1.1 rule 1; decisions.md "Small rules")', () => {
  let t: TestApp;
  /** UTC midnight of today: the injected clock moves within this day and the next. */
  const today = new Date(`${new Date().toISOString().slice(0, 10)}T00:00:00Z`);
  const dayOf = (d: Date) => d.toISOString().slice(0, 10);
  const at = (ms: number) => new Date(today.getTime() + ms);

  beforeAll(async () => {
    t = await buildTestApp({ env: ENV });
  });
  afterAll(() => t.close());

  const scheduledOf = async (org: SeededOrg) =>
    (
      await sql<{ id: string; capture_day: string }>`
        select id, capture_day::text as capture_day from snapshots
        where organisation_id = ${org.organisationId} and reason = 'scheduled' order by capture_day, seq`.execute(t.database.db)
    ).rows;

  it('takes today\'s snapshot with reason scheduled for every organisation', async () => {
    const a = await seedOrg(t.database);
    const b = await seedOrg(t.database);
    await addHost(t.database.db, a.organisationId, { hostname: 'a-1', addresses: ['10.0.0.1'] });
    const clock = at(6 * HOUR);
    const result = await tick(t, 'inventory.snapshot', clock);
    for (const org of [a, b]) {
      const rows = await scheduledOf(org);
      expect(rows).toEqual([{ id: expect.any(String), capture_day: dayOf(today) }]);
      expect(result.organisations?.get(org.organisationId)).toEqual(expect.objectContaining({ ok: true, detail: { created: true, snapshotId: rows[0]!.id } }));
    }
    expect(result.detail).toMatchObject({ failed: 0 });
    expect(result.detail?.created).toBeGreaterThanOrEqual(2);

    const key = (await seedMemberWithKey(t.database, a, 'viewer', ['inventory:read'])).token;
    const res = await t.app.inject({ method: 'GET', url: '/api/v1/snapshots?reason=scheduled', headers: bearer(key) });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().data).toEqual([expect.objectContaining({ id: (await scheduledOf(a))[0]!.id, reason: 'scheduled', siteId: null, stats: expect.objectContaining({ hosts: 1, addresses: 1 }) })]);
  });

  it('creates nothing on a second tick the same day: created false, with the snapshot already taken', async () => {
    const org = await seedOrg(t.database);
    const first = await tick(t, 'inventory.snapshot', at(6 * HOUR));
    const taken = (first.organisations?.get(org.organisationId)?.detail as Json).snapshotId as string;
    expect(first.organisations?.get(org.organisationId)).toEqual(expect.objectContaining({ ok: true, detail: { created: true, snapshotId: taken } }));

    const second = await tick(t, 'inventory.snapshot', at(23 * HOUR + 59 * MINUTE));
    expect(second.organisations?.get(org.organisationId)).toEqual(expect.objectContaining({ ok: true, detail: { created: false, snapshotId: taken } }));
    expect(second.detail).toMatchObject({ created: 0, failed: 0 });
    expect(await scheduledOf(org)).toEqual([{ id: taken, capture_day: dayOf(today) }]);
  });

  it('takes a new scheduled snapshot the next day', async () => {
    const org = await seedOrg(t.database);
    await tick(t, 'inventory.snapshot', at(6 * HOUR));
    const next = await tick(t, 'inventory.snapshot', at(DAY + 6 * HOUR));
    const rows = await scheduledOf(org);
    expect(rows.map((r) => r.capture_day)).toEqual([dayOf(today), dayOf(at(DAY))]);
    expect(next.organisations?.get(org.organisationId)).toEqual(expect.objectContaining({ ok: true, detail: { created: true, snapshotId: rows[1]!.id } }));
  });

  it('does not count a manual snapshot (POST /api/v1/snapshots) as today\'s scheduled one', async () => {
    const org = await seedOrg(t.database);
    const key = (await seedMemberWithKey(t.database, org, 'editor', ['inventory:write', 'inventory:read'])).token;
    const manual = await t.app.inject({ method: 'POST', url: '/api/v1/snapshots', headers: bearer(key), payload: {} });
    expect(manual.statusCode, manual.body).toBe(201);
    expect(manual.json().reason).toBe('manual');
    const manualDay = (await sql<{ d: string }>`select capture_day::text as d from snapshots where id = ${manual.json().id}`.execute(t.database.db)).rows[0]!.d;
    expect(manualDay).toBe(dayOf(today));

    const result = await tick(t, 'inventory.snapshot', at(12 * HOUR));
    const rows = await scheduledOf(org);
    expect(rows).toHaveLength(1);
    expect(rows[0]!.id).not.toBe(manual.json().id);
    expect(result.organisations?.get(org.organisationId)).toEqual(expect.objectContaining({ ok: true, detail: { created: true, snapshotId: rows[0]!.id } }));
  });

  it('takes exactly one scheduled snapshot a day when two takers race: one answers created true, the other created false with the same snapshot', async () => {
    const org = await seedOrg(t.database);
    await addHost(t.database.db, org.organisationId, { hostname: 'race', addresses: ['10.9.9.9'] });
    const clock = at(9 * HOUR);
    // On PostgreSQL the two run on two connections of the pool; on PGlite they serialise.
    const results = await Promise.all([takeScheduledSnapshot(t.database.db, org.organisationId, clock), takeScheduledSnapshot(t.database.db, org.organisationId, clock)]);
    expect(results.map((r) => r.created).sort()).toEqual([false, true]);
    expect(results[0]!.snapshot.id).toBe(results[1]!.snapshot.id);
    expect(results[0]!.snapshot).toEqual(results[1]!.snapshot);
    expect(await scheduledOf(org)).toEqual([{ id: results[0]!.snapshot.id, capture_day: dayOf(today) }]);
    const audits = await sql<{ n: number }>`select count(*)::int as n from audit_log where organisation_id = ${org.organisationId} and action = 'snapshot.created'`.execute(t.database.db);
    expect(audits.rows[0]!.n).toBe(1);
  });

  it('captures every row of an inventory larger than one read chunk (5,000 rows), once each and in id order', async () => {
    const org = await seedOrg(t.database);
    const db = t.database.db;
    const o = org.organisationId;
    const editor = (await seedMemberWithKey(t.database, org, 'editor', ['inventory:write'])).token;
    await addHosts(db, o, 5_001, 'chunk');
    await sql`insert into services (organisation_id, host_id, protocol, port) select organisation_id, id, 'tcp', p from hosts, unnest(array[22, 443]) p where organisation_id = ${o}`.execute(db);
    const res = await t.app.inject({ method: 'POST', url: '/api/v1/snapshots', headers: bearer(editor), payload: { reason: 'audit' } });
    expect(res.statusCode, res.body).toBe(201);
    const row = (await sql<{ content: Uint8Array; content_sha256: string }>`select content, content_sha256 from snapshots where organisation_id = ${o} and id = ${res.json().id}`.execute(db)).rows[0]!;
    const text = gunzipSync(Buffer.from(row.content));
    expect(createHash('sha256').update(text).digest('hex')).toBe(row.content_sha256);
    const content = JSON.parse(text.toString('utf8')) as { hosts: { id: string }[]; services: { id: string }[] };
    for (const [list, n] of [[content.hosts, 5_001], [content.services, 10_002]] as const) {
      const ids = list.map((x) => x.id);
      expect(ids).toHaveLength(n);
      expect(new Set(ids).size).toBe(n);
      expect(ids).toEqual([...ids].sort());
    }
  }, 60_000);

  it('stores stats matching the inventory counts and gzip content listing the inventory, whose SHA-256 is content_sha256 and the API\'s contentSha256', async () => {
    const org = await seedOrg(t.database);
    const db = t.database.db;
    const o = org.organisationId;
    const editor = (await seedMemberWithKey(t.database, org, 'editor', ['inventory:write', 'inventory:read'])).token;
    const site = (await addSite(db, o, 'lon')).id;
    const net = await t.app.inject({ method: 'POST', url: '/api/v1/networks', headers: bearer(editor), payload: { name: 'lon', cidr: '10.5.0.0/24', siteId: site } });
    expect(net.statusCode, net.body).toBe(201);
    const alpha = await addHost(db, o, { hostname: 'alpha', addresses: ['10.5.0.1', '10.5.0.2'], siteId: site });
    const beta = await addHost(db, o, { hostname: 'beta', addresses: ['10.5.0.3'] });
    const gamma = await addHost(db, o, { hostname: 'gamma' });
    const ssh = await addService(db, o, alpha, { port: 22, name: 'ssh' });
    const https = await addService(db, o, alpha, { port: 443, name: 'https' });
    const http = await addService(db, o, beta, { port: 80, name: 'http' });
    const cert = await addCertificate(db, o, alpha, { trustStatus: 'trusted', port: 443 });
    const vuln = await addVulnerability(db, o, ssh, alpha, { cveId: 'CVE-2024-6387', severity: 'high' });
    await addTopology(db, o, { kind: 'network', siteId: site });

    const result = await tick(t, 'inventory.snapshot', at(7 * HOUR));
    const snapshotId = (result.organisations?.get(o)?.detail as Json).snapshotId as string;
    const row = (
      await sql<{ stats: Json; content: Uint8Array; content_sha256: string; content_bytes: number }>`
        select stats, content, content_sha256, content_bytes::int as content_bytes from snapshots where organisation_id = ${o} and id = ${snapshotId}`.execute(db)
    ).rows[0]!;
    const expectedStats = { hosts: 3, addresses: 3, services: 3, networks: 1, sites: 1, certificates: 1, vulnerabilities: 1, topologies: 1 };
    expect(row.stats).toEqual(expectedStats);

    const text = gunzipSync(Buffer.from(row.content));
    const sha = createHash('sha256').update(text).digest('hex');
    expect(row.content_sha256).toBe(sha);
    expect(row.content_bytes).toBe(text.length);
    const content = JSON.parse(text.toString('utf8')) as Json;
    const byId = <T extends { id: string }>(xs: T[]) => [...xs].sort((x, y) => (x.id < y.id ? -1 : x.id > y.id ? 1 : 0));
    expect(content.hosts.map((h: Json) => ({ id: h.id, siteId: h.siteId, hostname: h.hostname, addresses: h.addresses }))).toEqual(
      byId([
        { id: alpha, siteId: site, hostname: 'alpha', addresses: ['10.5.0.1', '10.5.0.2'] },
        { id: beta, siteId: null, hostname: 'beta', addresses: ['10.5.0.3'] },
        { id: gamma, siteId: null, hostname: 'gamma', addresses: [] },
      ]),
    );
    expect(content.services.map((x: Json) => ({ id: x.id, hostId: x.hostId, port: x.port, protocol: x.protocol, name: x.name, gone: x.gone }))).toEqual(
      byId([
        { id: ssh, hostId: alpha, port: 22, protocol: 'tcp', name: 'ssh', gone: false },
        { id: https, hostId: alpha, port: 443, protocol: 'tcp', name: 'https', gone: false },
        { id: http, hostId: beta, port: 80, protocol: 'tcp', name: 'http', gone: false },
      ]),
    );
    expect(content.certificates.map((c: Json) => c.id)).toEqual([cert]);
    expect(content.vulnerabilities.map((v: Json) => ({ id: v.id, cve: v.cve }))).toEqual([{ id: vuln, cve: 'CVE-2024-6387' }]);

    const res = await t.app.inject({ method: 'GET', url: '/api/v1/snapshots?reason=scheduled', headers: bearer(editor) });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().data).toEqual([expect.objectContaining({ id: snapshotId, stats: expectedStats, contentSha256: sha, contentBytes: text.length })]);
  });
});

// =============================================================================================

describe('job topology.dependencies rebuilds the application topology from the flows of the last 24 hours (spec 1.1)', () => {
  let t: TestApp;
  let org: SeededOrg;
  let api: string;
  let daemon: Daemon;
  let dc1: string;
  let dc2: string;
  let server: string;
  let https: string;
  let client: string;
  let server2: string;
  let ssh: string;
  let client2: string;
  /** The clock of every tick: flows are placed relative to it. */
  const now = new Date(Math.floor(Date.now() / MINUTE) * MINUTE);
  const bucket = (msAgo: number) => new Date(now.getTime() - msAgo).toISOString();
  const flow = (over: Json) => ({ srcIp: '10.9.0.20', dstIp: '10.9.0.10', dstPort: 443, protocol: 'tcp', packets: 1, bytes: 100, source: 'ebpf', ...over });

  async function postFlows(flows: Json[]) {
    const res = await t.app.inject({ method: 'POST', url: '/api/v1/daemon/flows', headers: daemonHeaders(daemon.token, daemon.id), payload: { flows, dropped: 0 } });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({ accepted: flows.length, outOfWindow: 0 });
  }

  const edges = async () =>
    (
      await sql<{ site_id: string | null; src_host_id: string; dst_host_id: string; dst_service_id: string; bytes: number; packets: number; flows: number; last_seen_ms: number }>`
        select site_id, src_host_id, dst_host_id, dst_service_id, bytes::int as bytes, packets::int as packets, flows::int as flows,
               (extract(epoch from last_seen_at) * 1000)::float8 as last_seen_ms
        from dependency_edges where organisation_id = ${org.organisationId} order by bytes desc`.execute(t.database.db)
    ).rows;

  async function applicationTopologies(): Promise<Json[]> {
    const res = await t.app.inject({ method: 'GET', url: '/api/v1/topologies?kind=application&limit=500', headers: bearer(api) });
    expect(res.statusCode, res.body).toBe(200);
    return res.json().data;
  }
  const topologyOf = (list: Json[], siteId: string | null) => {
    const found = list.filter((x) => x.siteId === siteId);
    expect(found, `application topology of site ${siteId}`).toHaveLength(1);
    return found[0]!;
  };

  beforeAll(async () => {
    t = await buildTestApp({ env: ENV });
    org = await seedOrg(t.database);
    api = (await seedMemberWithKey(t.database, org, 'editor', ['scan:run', 'inventory:write', 'inventory:read'])).token;
    const db = t.database.db;
    const o = org.organisationId;
    dc1 = (await addSite(db, o, 'dc1')).id;
    dc2 = (await addSite(db, o, 'dc2')).id;
    server = await addHost(db, o, { hostname: 'web', addresses: ['10.9.0.10'], siteId: dc1 });
    https = await addService(db, o, server, { port: 443, name: 'https' });
    client = await addHost(db, o, { hostname: 'client', addresses: ['10.9.0.20'], siteId: dc1 });
    server2 = await addHost(db, o, { hostname: 'db', addresses: ['10.9.1.10'] });
    ssh = await addService(db, o, server2, { port: 22, name: 'ssh' });
    client2 = await addHost(db, o, { hostname: 'jump', addresses: ['10.9.1.20'] });
    // The daemon of site dc1, online.
    daemon = await onlineDaemon(t, org, { siteCode: 'dc1', networkCidrs: ['10.9.0.0/16'] });
    await postFlows([
      flow({ bucketStart: bucket(1 * HOUR), bytes: 1000, packets: 10 }),
      flow({ bucketStart: bucket(3 * HOUR), bytes: 2000, packets: 20 }),
      flow({ bucketStart: bucket(23 * HOUR), bytes: 300, packets: 3 }),
      // Older than 24 hours: no part of the edge.
      flow({ bucketStart: bucket(25 * HOUR), bytes: 90000, packets: 900 }),
      // To a port where the inventory knows no service: no edge.
      flow({ bucketStart: bucket(1 * HOUR), dstPort: 8080, bytes: 5 }),
      // Between two hosts without a site.
      flow({ bucketStart: bucket(2 * HOUR), srcIp: '10.9.1.20', dstIp: '10.9.1.10', dstPort: 22, bytes: 50, packets: 1 }),
    ]);
  });
  afterAll(() => t.close());

  it('builds one edge per calling host and called service from the flows of the last 24 hours: bytes, packets and flows summed, last seen the latest bucket', async () => {
    const result = await tick(t, 'topology.dependencies', now);
    expect(await edges()).toEqual([
      { site_id: dc1, src_host_id: client, dst_host_id: server, dst_service_id: https, bytes: 3300, packets: 33, flows: 3, last_seen_ms: now.getTime() - HOUR },
      { site_id: null, src_host_id: client2, dst_host_id: server2, dst_service_id: ssh, bytes: 50, packets: 1, flows: 1, last_seen_ms: now.getTime() - 2 * HOUR },
    ]);
    expect(result.detail).toMatchObject({ failed: 0 });
    expect(result.organisations?.get(org.organisationId)).toEqual(expect.objectContaining({ ok: true, detail: { edges: 2, topologies: 3, views: 6, failedViews: 0 } }));
  });

  it('makes no edge from flows whose source address is unknown to the inventory', async () => {
    await tick(t, 'topology.dependencies', now);
    const before = await edges();
    await postFlows([
      flow({ bucketStart: bucket(30 * MINUTE), srcIp: '192.0.2.50', bytes: 7777, packets: 7 }),
      flow({ bucketStart: bucket(40 * MINUTE), srcIp: '2001:db8::50', dstIp: '10.9.1.10', dstPort: 22, bytes: 8888, packets: 8 }),
    ]);
    await tick(t, 'topology.dependencies', now);
    expect(await edges()).toEqual(before);
  });

  it('marks the application topology of each site, and of the hosts without a site, ready with its node and edge counts', async () => {
    await tick(t, 'topology.dependencies', now);
    const list = await applicationTopologies();
    expect(list).toHaveLength(3);
    expect(topologyOf(list, dc1)).toMatchObject({ kind: 'application', status: 'ready', nodeCount: 2, edgeCount: 1 });
    expect(topologyOf(list, dc2)).toMatchObject({ kind: 'application', status: 'ready', nodeCount: 0, edgeCount: 0 });
    expect(topologyOf(list, null)).toMatchObject({ kind: 'application', status: 'ready', nodeCount: 2, edgeCount: 1 });
    for (const x of list) expect(Date.parse(x.builtAt)).toBe(now.getTime());
  });

  it('marks the site\'s topology stale when an observation batch changes its inventory, and the next tick makes it ready again', async () => {
    await tick(t, 'topology.dependencies', now);
    const s: Scanning = { org, api, daemon, siteId: dc1 };
    const sessionId = await startSession(t, s, await createNetwork(t, s, '10.9.0.0/24'));
    await ingest(t, daemon, { sessionId, hosts: [{ fingerprint: 'fp-new', hostname: 'new-1' }], ips: [{ hostFingerprint: 'fp-new', address: '10.9.0.99' }] });

    let list = await applicationTopologies();
    expect(topologyOf(list, dc1).status).toBe('stale');
    expect(topologyOf(list, dc2).status).toBe('ready');
    expect(topologyOf(list, null).status).toBe('ready');

    await tick(t, 'topology.dependencies', now);
    list = await applicationTopologies();
    for (const x of list) expect(x.status, x.siteId).toBe('ready');
    expect(topologyOf(list, dc1)).toMatchObject({ nodeCount: 2, edgeCount: 1 });

    // A batch that changes nothing in the inventory leaves it ready.
    const again = await ingest(t, daemon, { sessionId, hosts: [{ fingerprint: 'fp-new', hostname: 'new-1' }], ips: [{ hostFingerprint: 'fp-new', address: '10.9.0.99' }], stats: { hostsTotal: 1, hostsScanned: 1 } });
    expect(again).toEqual({ accepted: 2, dedupHits: 2, outOfWindow: 0 });
    expect(topologyOf(await applicationTopologies(), dc1).status).toBe('ready');
  });

  it('marks stale the topology of the site of each host a batch changes, not only the scanning daemon\'s site', async () => {
    const moved = await addHost(t.database.db, org.organisationId, { hostname: 'moved', siteId: dc2 });
    const fingerprint = (await sql<{ fingerprint: string }>`select fingerprint from hosts where id = ${moved}`.execute(t.database.db)).rows[0]!.fingerprint;
    // Known by its fingerprint, as a host a daemon reported is.
    await sql`insert into host_fingerprints (organisation_id, fingerprint, host_id) values (${org.organisationId}, ${fingerprint}, ${moved})`.execute(t.database.db);
    await tick(t, 'topology.dependencies', now);
    const s: Scanning = { org, api, daemon, siteId: dc1 };
    const sessionId = await startSession(t, s, await createNetwork(t, s, '10.9.3.0/24'));
    // dc1's daemon reports the dc2 host (known by its fingerprint) under a new name.
    await ingest(t, daemon, { sessionId, hosts: [{ fingerprint, hostname: 'moved-renamed' }] });
    const list = await applicationTopologies();
    expect(topologyOf(list, dc2).status).toBe('stale');
    expect(topologyOf(list, dc1).status).toBe('ready');
    expect(topologyOf(list, null).status).toBe('ready');
  });

  it('prunes flows older than 30 days (decisions.md): drops each daily partition that ended more than 30 days ago, and forgets flow and observation batch digests as old', async () => {
    const partitions = async () =>
      (await sql<{ name: string }>`select c.relname as name from pg_inherits i join pg_class c on c.oid = i.inhrelid where i.inhparent = 'flows'::regclass order by 1`.execute(t.database.db)).rows.map((r) => r.name);
    const dayName = (msAgo: number) => `flows_${bucket(msAgo).slice(0, 10).replace(/-/g, '')}`;
    // Stored when they were fresh (the API now leaves buckets older than the retention out).
    const old = await prepareFlows(t.database.db, [flow({ bucketStart: bucket(32 * DAY), bytes: 11 }), flow({ bucketStart: bucket(29 * DAY), bytes: 22 })] as never, 0, now.getTime() - 29 * DAY);
    expect(old).toMatchObject({ records: 2, outOfWindow: 0 });
    await t.database.db.transaction().execute((trx) => storeFlows(trx, org.organisationId, daemon.id, old));
    await postFlows([flow({ bucketStart: bucket(2 * HOUR), dstPort: 9999, bytes: 33 })]);
    // One batch digest received 31 days ago, the others now.
    await sql`update flow_batches set received_at = ${ago(now, 31 * DAY)} where organisation_id = ${org.organisationId}
              and received_at = (select min(received_at) from flow_batches where organisation_id = ${org.organisationId})`.execute(t.database.db);
    const batchesBefore = (await sql<{ n: number }>`select count(*)::int as n from flow_batches`.execute(t.database.db)).rows[0]!.n;
    expect(await partitions()).toContain(dayName(32 * DAY));
    // Two observation batches of a session: the first's digest received 31 days ago (migration 0047).
    const s: Scanning = { org, api, daemon, siteId: dc1 };
    const sessionId = await startSession(t, s, await createNetwork(t, s, '10.9.4.0/24'));
    const first = { sessionId, hosts: [{ fingerprint: 'pruned-digest-a', hostname: 'a' }] };
    const second = { sessionId, hosts: [{ fingerprint: 'pruned-digest-b', hostname: 'b' }] };
    expect(await ingest(t, daemon, first)).toMatchObject({ accepted: 1, dedupHits: 0 });
    expect(await ingest(t, daemon, second)).toMatchObject({ accepted: 1, dedupHits: 0 });
    const digests = async () => (await sql<{ n: number }>`select count(*)::int as n from scan_batches where session_id = ${sessionId}`.execute(t.database.db)).rows[0]!.n;
    await sql`update scan_batches set received_at = ${ago(now, 31 * DAY)} where session_id = ${sessionId}
              and received_at = (select min(received_at) from scan_batches where session_id = ${sessionId})`.execute(t.database.db);

    const result = await tick(t, 'topology.dependencies', now);
    // The day's records and both its rollups (migration 0039) go together.
    const day32 = dayName(32 * DAY).slice('flows_'.length);
    expect(result.detail).toMatchObject({ prunedPartitions: [`flow_days_${day32}`, `flow_hours_${day32}`, `flows_${day32}`], prunedBatches: 1, prunedScanBatches: 1 });
    // The recent digest is kept: that batch sent again is still recognised as a retry.
    expect(await digests()).toBe(1);
    expect(await ingest(t, daemon, second)).toMatchObject({ accepted: 1, dedupHits: 1 });
    const left = await partitions();
    expect(left).not.toContain(dayName(32 * DAY));
    expect(left).toContain(dayName(29 * DAY));
    const bytes = (await sql<{ b: number }>`select bytes::int as b from flows where organisation_id = ${org.organisationId} and bytes in (11, 22) order by 1`.execute(t.database.db)).rows.map((r) => r.b);
    expect(bytes).toEqual([22]);
    expect((await sql<{ n: number }>`select count(*)::int as n from flow_batches`.execute(t.database.db)).rows[0]!.n).toBe(batchesBefore - 1);
    // Nothing more to prune on the next run; the edges of the last 24 hours are untouched.
    expect((await tick(t, 'topology.dependencies', now)).detail).toMatchObject({ prunedPartitions: [], prunedBatches: 0, prunedScanBatches: 0 });
    expect((await edges()).map((e) => e.bytes)).toEqual([3300, 50]);
  });

  // PostgreSQL only: a second session holding the flows table open.
  if (TEST_DATABASE_URL) {
    it('leaves a partition that readers hold for the next run (lock timeout), and the job still succeeds', async () => {
      const name = `flows_${bucket(40 * DAY).slice(0, 10).replace(/-/g, '')}`;
      // Stored when it was fresh (the API now leaves buckets older than the retention out).
      const old = await prepareFlows(t.database.db, [flow({ bucketStart: bucket(40 * DAY), bytes: 44 })] as never, 0, now.getTime() - 40 * DAY);
      await t.database.db.transaction().execute((trx) => storeFlows(trx, org.organisationId, daemon.id, old));
      const schema = (await sql<{ s: string }>`select current_schema() as s`.execute(t.database.db)).rows[0]!.s;
      const reader = new pg.Client({ connectionString: TEST_DATABASE_URL, options: `-c search_path=${schema}` });
      await reader.connect();
      try {
        await reader.query('begin');
        await reader.query('select count(*) from flows');
        const held = await tick(t, 'topology.dependencies', now);
        // The rollups of that day, which the reader does not hold, go now; the records wait.
        expect(held.detail).toMatchObject({ prunedPartitions: [name.replace('flows_', 'flow_days_'), name.replace('flows_', 'flow_hours_')], busyPartitions: [name] });
        await reader.query('commit');
        expect((await tick(t, 'topology.dependencies', now)).detail).toMatchObject({ prunedPartitions: [name], busyPartitions: [] });
      } finally {
        await reader.end();
      }
    });
  }
});

// =============================================================================================

describe('admin endpoints that run a job now, and the job status (spec 4.6, 1.1 rule 7)', () => {
  let t: TestApp;
  let org: SeededOrg;
  let adminEmail: string;
  let viewerEmail: string;
  let editorEmail: string;
  let apiKey: string;

  const post = (url: string, headers: Record<string, string> = {}) => t.app.inject({ method: 'POST', url, headers });
  const get = (url: string, headers: Record<string, string> = {}) => t.app.inject({ method: 'GET', url, headers });
  const session = async (email: string) => {
    const s = await login(t.app, email);
    return { cookie: s.cookie, 'x-csrf-token': s.csrfToken };
  };
  const scheduledCount = async (o: string) =>
    (await sql<{ n: number }>`select count(*)::int as n from snapshots where organisation_id = ${o} and reason = 'scheduled'`.execute(t.database.db)).rows[0]!.n;
  const expectProblem = (res: Awaited<ReturnType<typeof post>>, status: number, code: string, what: string) => {
    expect(res.statusCode, `${what}: ${res.body}`).toBe(status);
    expect(res.json().code, what).toBe(code);
  };

  beforeAll(async () => {
    t = await buildTestApp({ env: ENV });
    org = await seedOrg(t.database);
    adminEmail = (await seedMemberWithKey(t.database, org, 'admin', ['inventory:read'])).email;
    viewerEmail = (await seedMemberWithKey(t.database, org, 'viewer', ['inventory:read'])).email;
    editorEmail = (await seedMemberWithKey(t.database, org, 'editor', ['inventory:read'])).email;
    apiKey = (await seedMemberWithKey(t.database, org, 'owner', ['inventory:read', 'inventory:write'])).token;
    // One dependency: client → web:443, seen an hour ago by an online daemon.
    const db = t.database.db;
    const web = await addHost(db, org.organisationId, { hostname: 'web', addresses: ['10.8.0.10'] });
    await addService(db, org.organisationId, web, { port: 443, name: 'https' });
    await addHost(db, org.organisationId, { hostname: 'client', addresses: ['10.8.0.20'] });
    const d = await onlineDaemon(t, org, { networkCidrs: ['10.8.0.0/16'] });
    const res = await t.app.inject({
      method: 'POST', url: '/api/v1/daemon/flows', headers: daemonHeaders(d.token, d.id),
      payload: { flows: [{ bucketStart: new Date(Date.now() - HOUR).toISOString(), srcIp: '10.8.0.20', dstIp: '10.8.0.10', dstPort: 443, protocol: 'tcp', packets: 4, bytes: 400, source: 'ebpf' }], dropped: 0 },
    });
    expect(res.statusCode, res.body).toBe(200);
  });
  afterAll(() => t.close());

  const ADMIN_POSTS = ['/api/v1/admin/snapshot', '/api/v1/admin/dependency-tick'];

  it('refuses a viewer or an editor session with 403 forbidden on every admin endpoint, and takes no snapshot', async () => {
    const before = await scheduledCount(org.organisationId);
    for (const email of [viewerEmail, editorEmail]) {
      const headers = await session(email);
      for (const url of ADMIN_POSTS) expectProblem(await post(url, headers), 403, 'forbidden', `${email} POST ${url}`);
      expectProblem(await get('/api/v1/admin/jobs', headers), 403, 'forbidden', `${email} GET jobs`);
    }
    expect(await scheduledCount(org.organisationId)).toBe(before);
  });

  it('refuses an admin\'s POST without the X-CSRF-Token header, or with another value, with 403 csrf_failed', async () => {
    const before = await scheduledCount(org.organisationId);
    const { cookie } = await session(adminEmail);
    for (const url of ADMIN_POSTS) {
      expectProblem(await post(url, { cookie }), 403, 'csrf_failed', `no token: POST ${url}`);
      expectProblem(await post(url, { cookie, 'x-csrf-token': 'x'.repeat(43) }), 403, 'csrf_failed', `wrong token: POST ${url}`);
    }
    expect(await scheduledCount(org.organisationId)).toBe(before);
  });

  it('refuses an API key (Bearer) or no credential with 401 unauthorized', async () => {
    const before = await scheduledCount(org.organisationId);
    const credentials: [string, Record<string, string>][] = [['API key', bearer(apiKey)], ['no credential', {}]];
    for (const [what, headers] of credentials) {
      for (const url of ADMIN_POSTS) expectProblem(await post(url, headers), 401, 'unauthorized', `${what}: POST ${url}`);
      expectProblem(await get('/api/v1/admin/jobs', headers), 401, 'unauthorized', `${what}: GET jobs`);
    }
    expect(await scheduledCount(org.organisationId)).toBe(before);
  });

  it('POST /api/v1/admin/snapshot with an admin session takes today\'s scheduled snapshot: 200 { created: true, snapshot }, then created false with the same snapshot', async () => {
    const headers = await session(adminEmail);
    const first = await post('/api/v1/admin/snapshot', headers);
    expect(first.statusCode, first.body).toBe(200);
    expect(first.json()).toEqual({
      created: true,
      snapshot: expect.objectContaining({ id: expect.any(String), reason: 'scheduled', siteId: null, stats: expect.objectContaining({ hosts: 2, services: 1, addresses: 2 }), contentSha256: expect.stringMatching(/^[0-9a-f]{64}$/) }),
    });
    const second = await post('/api/v1/admin/snapshot', headers);
    expect(second.statusCode, second.body).toBe(200);
    expect(second.json()).toEqual({ created: false, snapshot: first.json().snapshot });
    expect(await scheduledCount(org.organisationId)).toBe(1);
    const listed = await get('/api/v1/snapshots?reason=scheduled', bearer(apiKey));
    expect(listed.json().data.map((x: Json) => x.id)).toEqual([first.json().snapshot.id]);
  });

  it('POST /api/v1/admin/dependency-tick with an owner session rebuilds the application topology: 200 with its edges and topologies', async () => {
    const res = await post('/api/v1/admin/dependency-tick', await session(org.ownerEmail));
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(body).toMatchObject({ windowHours: 24, edges: 1, topologies: [{ topologyId: expect.any(String), siteId: null, status: 'ready', nodeCount: 2, edgeCount: 1 }] });
    expect(Date.parse(body.builtAt) - Date.parse(body.from)).toBe(24 * HOUR);
    const stored = await sql<{ bytes: number }>`select bytes::int as bytes from dependency_edges where organisation_id = ${org.organisationId}`.execute(t.database.db);
    expect(stored.rows).toEqual([{ bytes: 400 }]);
  });

  it('GET /api/v1/admin/jobs lists each job as a whole and this organisation\'s rows after the calls, never another organisation\'s', async () => {
    // A tick of the worker: a row for the job as a whole.
    await tick(t, 'scan.stall', new Date());
    const headers = await session(adminEmail);
    expect((await post('/api/v1/admin/snapshot', headers)).statusCode).toBe(200);
    expect((await post('/api/v1/admin/dependency-tick', headers)).statusCode).toBe(200);
    // Another organisation's administrator runs the snapshot too.
    const other = await seedOrg(t.database);
    expect((await post('/api/v1/admin/snapshot', await session(other.ownerEmail))).statusCode).toBe(200);

    const res = await get('/api/v1/admin/jobs', headers);
    expect(res.statusCode, res.body).toBe(200);
    const rows = res.json().data as Json[];
    expect(rows).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ job: 'scan.stall', organisationId: null, outcome: 'ok', attempts: 1, error: null }),
        expect.objectContaining({ job: 'inventory.snapshot', organisationId: org.organisationId, outcome: 'ok', attempts: 1, error: null, detail: expect.objectContaining({ snapshotId: expect.any(String), trigger: 'admin' }) }),
        expect.objectContaining({ job: 'topology.dependencies', organisationId: org.organisationId, outcome: 'ok', detail: expect.objectContaining({ edges: 1, trigger: 'admin' }) }),
      ]),
    );
    expect(rows.filter((r) => r.organisationId !== null && r.organisationId !== org.organisationId)).toEqual([]);
    // Every job the runner knows is listed as a whole, those that never ran marked so.
    const whole = rows.filter((r) => r.organisationId === null);
    expect(whole.map((r) => r.job).sort()).toEqual([...JOB_NAMES].sort());
    for (const r of whole.filter((w) => w.outcome === 'never')) {
      expect(r).toMatchObject({ outcome: 'never', lastRunAt: null, durationMs: null, attempts: 0, lastOkAt: null, intervalSeconds: expect.any(Number) });
    }
    for (const r of rows.filter((x) => x.outcome !== 'never')) {
      expect(r.lastRunAt).toMatch(/(Z|[+-]\d\d:\d\d)$/);
      if (r.outcome === 'ok') expect(r.lastOkAt).toBe(r.lastRunAt);
    }
  });
});

// =============================================================================================

// An in-memory PGlite cannot be shared with the CLI: these run on PostgreSQL only (CI runs the
// suite on PostgreSQL; the worker and jobs list through the CLI on the embedded database are in
// jobs-process.test.ts).
describe('events written with the change that caused them (spec 6; decisions.md "Events and alerts")', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await buildTestApp({ env: ENV });
  });
  afterAll(() => t.close());
  const kinds = async (s: Scanning) => (await eventsSince(t.database.db, s.org.organisationId)).map((e) => [e.kind, e.subject.type, e.subject.id]);

  it('announces each host a batch discovers once (host.discovered), with the payload shape of decisions.md, and not again when seen again', async () => {
    const s = await scanningOrg(t);
    const sessionId = await startSession(t, s, await createNetwork(t, s, '10.150.0.0/24'));
    await ingest(t, s.daemon, smallBatch(sessionId, '10.150.0.1'));
    await ingest(t, s.daemon, smallBatch(sessionId, '10.150.0.1', { ports: [{ fingerprint: 'fp-10.150.0.1', address: '10.150.0.1', protocol: 'tcp', number: 22 }] }));
    const hostId = (await t.database.db.selectFrom('hosts').select('id').where('organisation_id', '=', s.org.organisationId).executeTakeFirstOrThrow()).id;
    const events = await eventsSince(t.database.db, s.org.organisationId);
    expect(events).toHaveLength(1);
    const { seq, severity, ...payload } = events[0]!;
    expect(seq).toBeGreaterThan(0);
    expect(severity).toBe('info');
    expect(payload).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/), kind: 'host.discovered', occurredAt: expect.stringMatching(/Z$/), organisationId: s.org.organisationId,
      subject: { type: 'host', id: hostId }, data: { fingerprint: 'fp-10.150.0.1', siteId: null },
    });
  });

  it('emits scan.completed once when the final batch completes a session, not for a repeated final batch', async () => {
    const s = await scanningOrg(t);
    const sessionId = await startSession(t, s, await createNetwork(t, s, '10.151.0.0/24'));
    const last = smallBatch(sessionId, '10.151.0.1', { final: true, stats: { hostsTotal: 1, hostsScanned: 1 } });
    await ingest(t, s.daemon, last);
    await ingest(t, s.daemon, last);
    await ingest(t, s.daemon, { ...last, hosts: [], ips: [] });
    const completed = (await eventsSince(t.database.db, s.org.organisationId)).filter((e) => e.kind === 'scan.completed');
    expect(completed).toHaveLength(1);
    expect(completed[0]).toMatchObject({ subject: { type: 'scan_session', id: sessionId }, data: { cidr: '10.151.0.0/24', daemonId: s.daemon.id, hostsTotal: 1, goneServices: 0 } });
  });

  it('emits scan.stalled for a session the stall job marks, and scan.failed when a new scan supersedes it', async () => {
    const s = await scanningOrg(t);
    const sessionId = await runningSession(t, s, '10.152.1.0/24', '10.152.1.1');
    const at = new Date();
    await setHeartbeat(t, s.daemon.id, ago(at, 10 * MINUTE));
    await tick(t, 'scan.stall', at);
    expect(await kinds(s)).toContainEqual(['scan.stalled', 'scan_session', sessionId]);
    expect(await kinds(s)).not.toContainEqual(['scan.failed', 'scan_session', sessionId]);
    // The daemon is back; a new scan of the stalled session's network supersedes it.
    await heartbeat(t.app, s.daemon.token, s.daemon.id);
    const stalledNetwork = (await sql<{ network_id: string }>`select network_id from scan_sessions where id = ${sessionId}`.execute(t.database.db)).rows[0]!.network_id;
    await queueScan(t, s, stalledNetwork);
    expect(await stateOf(t, sessionId)).toBe('failed');
    const failed = (await eventsSince(t.database.db, s.org.organisationId)).find((e) => e.kind === 'scan.failed');
    expect(failed).toMatchObject({ severity: 'warning', subject: { type: 'scan_session', id: sessionId }, data: { networkId: stalledNetwork } });
  });
  it('writes every event with data matching its kind\'s schema in the contract (host.discovered, scan.completed, scan.stalled, scan.failed)', async () => {
    const kinds = await sql<{ kind: string }>`select distinct kind from events order by kind`.execute(t.database.db);
    expect(kinds.rows.map((r) => r.kind)).toEqual(expect.arrayContaining(['host.discovered', 'scan.completed', 'scan.failed', 'scan.stalled']));
    expect(await nonConformingEvents(t.database.db)).toEqual([]);
  });
});

if (TEST_DATABASE_URL) describe('surveyor jobs (CLI) on the configured database', () => {
  let testDb: TestDatabase | undefined;
  let t: TestApp | undefined;
  let org: SeededOrg;
  let env: Record<string, string>;

  beforeAll(async () => {
    if (!TEST_DATABASE_URL) return;
    testDb = await createTestDatabase();
    t = await buildTestApp({ testDb, env: ENV });
    org = await seedOrg(testDb.database);
    const options = encodeURIComponent(`-c search_path=${testDb.schema}`);
    env = {
      DATABASE_URL: `${TEST_DATABASE_URL}${TEST_DATABASE_URL.includes('?') ? '&' : '?'}options=${options}`,
      SERVICE_SECRET_KEY: randomBytes(32).toString('hex'),
      SERVICE_LOG_LEVEL: 'silent',
    };
  });
  afterAll(async () => {
    await t?.close();
    await testDb?.drop();
  });

  async function cli(...argv: string[]) {
    const out: string[] = [];
    const err: string[] = [];
    const code = await runCli(argv, { out: (l) => out.push(l), err: (l) => err.push(l), env });
    return { code, out, err };
  }

  it('jobs list on a database where no job has run lists every job the runner knows, each marked never run', async () => {
    const json = await cli('jobs', 'list', '--json');
    expect(json.err).toEqual([]);
    expect(json.code).toBe(0);
    const rows = JSON.parse(json.out[0]!) as Json[];
    expect(rows.map((r) => r.job).sort()).toEqual([...JOB_NAMES].sort());
    for (const r of rows) expect(r).toMatchObject({ organisation_id: null, outcome: 'never', last_run_at: null, attempts: 0, interval_seconds: expect.any(Number) });
    const text = await cli('jobs', 'list');
    expect(text.code).toBe(0);
    const lines = text.out.join('\n').split('\n');
    expect(lines).toHaveLength(JOB_NAMES.length);
    for (const name of JOB_NAMES) expect(lines.find((l) => l.startsWith(`${name} `))).toMatch(/never run \(every \d+ s\)$/);
  });

  it('the README\'s job table lists every job the runner knows, each with its interval', async () => {
    const readme = readFileSync(fileURLToPath(new URL('../../../README.md', import.meta.url)), 'utf8');
    const table = readme.slice(readme.indexOf('| Job | Interval | What it does |'));
    const rows = [...table.slice(0, table.indexOf('\n\n')).matchAll(/^\| `([a-z0-9.]+)` \| ([^|]+) \|/gm)].map((m) => [m[1]!, m[2]!.trim()] as const);
    const every = (ms: number) => (ms % 3_600_000 === 0 ? `${ms / 3_600_000} h` : ms % 60_000 === 0 ? `${ms / 60_000} min` : `${ms / 1000} s`);
    const jobs = jobDefinitions({ config: loadConfig({}), secretKey: Buffer.alloc(32) });
    expect(new Map(rows)).toEqual(new Map(jobs.map((j) => [j.name, every(j.intervalMs)])));
  });

  it('jobs run inventory.snapshot --json runs one tick: exit 0, JSON with ran true and outcome ok, and today\'s snapshot exists', async () => {
    const r = await cli('jobs', 'run', 'inventory.snapshot', '--json');
    expect(r.err).toEqual([]);
    expect(r.code).toBe(0);
    expect(r.out).toHaveLength(1);
    const printed = JSON.parse(r.out[0]!);
    expect(printed).toMatchObject({ job: 'inventory.snapshot', ran: true, outcome: 'ok', attempts: 1, durationMs: expect.any(Number), detail: { organisations: 1, failed: 0, created: 1 } });
    const rows = await sql<{ capture_day: string }>`
      select capture_day::text as capture_day from snapshots where organisation_id = ${org.organisationId} and reason = 'scheduled'`.execute(testDb!.database.db);
    expect(rows.rows).toEqual([{ capture_day: new Date().toISOString().slice(0, 10) }]);
  });

  it('jobs run no.such.job exits 2 with a one-line error naming the job', async () => {
    const r = await cli('jobs', 'run', 'no.such.job');
    expect(r.code).toBe(2);
    expect(r.out).toEqual([]);
    expect(r.err).toHaveLength(1);
    expect(r.err[0]).toMatch(/^surveyor: /);
    expect(r.err[0]).toContain('no.such.job');
  });

  async function listed(): Promise<Json[]> {
    const r = await cli('jobs', 'list', '--json');
    expect(r.err).toEqual([]);
    expect(r.code).toBe(0);
    expect(r.out).toHaveLength(1);
    return JSON.parse(r.out[0]!) as Json[];
  }

  it('jobs list --json shows the status row of each job that ran, as a whole: last run, duration, outcome, attempts, detail', async () => {
    expect((await cli('jobs', 'run', 'inventory.snapshot', '--json')).code).toBe(0);
    const rows = await listed();
    const whole = rows.filter((r) => r.job === 'inventory.snapshot' && r.organisation_id === null);
    expect(whole).toEqual([
      expect.objectContaining({ outcome: 'ok', attempts: 1, error: null, duration_ms: expect.any(Number), detail: { organisations: 1, failed: 0, created: 0 } }),
    ]);
    expect(Date.parse(whole[0]!.last_run_at)).not.toBeNaN();
    expect(whole[0]!.last_ok_at).toBe(whole[0]!.last_run_at);
  });

  it('jobs list --json also shows the per-organisation rows, where a job records what it did (or why it failed) for each organisation', async () => {
    expect((await cli('jobs', 'run', 'inventory.snapshot', '--json')).code).toBe(0);
    const rows = await listed();
    expect(rows).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ job: 'inventory.snapshot', organisation_id: org.organisationId, outcome: 'ok', detail: expect.objectContaining({ created: false }) }),
      ]),
    );
  });

  it('two jobs run inventory.snapshot started while a run holds the lock both wait, both exit 0, and leave exactly one snapshot of the day', async () => {
    const fresh = await seedOrg(testDb!.database);
    // A run in progress elsewhere: the job's lock held by another session of the same schema.
    const release = await testDb!.database.tryLock('job:inventory.snapshot');
    expect(release).not.toBeNull();
    let settled = 0;
    const runs = [cli('jobs', 'run', 'inventory.snapshot', '--json'), cli('jobs', 'run', 'inventory.snapshot', '--json')].map((p) => p.finally(() => settled++));
    await new Promise((r) => setTimeout(r, 1_500));
    expect(settled).toBe(0); // waiting, not skipped
    await release!();
    const [a, b] = await Promise.all(runs);
    for (const r of [a!, b!]) {
      expect(r.err).toEqual([]);
      expect(r.code).toBe(0);
      expect(JSON.parse(r.out[0]!)).toMatchObject({ job: 'inventory.snapshot', ran: true, outcome: 'ok' });
    }
    // One of them took the fresh organisation's snapshot; the other found it taken.
    expect([a!, b!].map((r) => JSON.parse(r.out[0]!).detail.created).sort()).toEqual([0, 1]);
    const snaps = await sql`select id from snapshots where organisation_id = ${fresh.organisationId} and reason = 'scheduled'`.execute(testDb!.database.db);
    expect(snaps.rows).toHaveLength(1);
  });
});
