import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as admin from '../src/admin/admin.service.js';
import { type Database, openDatabase } from '../src/db/database.js';
import { type Cluster, type SurveyorProcess, canRunCluster, healthy, startCluster } from './cluster.js';
import { JOB_NAMES, PASSWORD } from './helpers.js';

// Issue 28, "several processes on one PostgreSQL": two web processes and two workers of the real
// build on a PostgreSQL cluster of the test's own, Debian's nginx in front with deploy/nginx/nginx.conf.
// No timing is asserted here (figures are measured by `npm run bench:scale-out`, which runs this
// file with SCALE_OUT_REPORT set and writes docs/benchmarks.md); what is asserted is what must
// hold whatever the machine's speed: nothing lost, nothing doubled, nothing half-written.

const SCALE = 60; // the workers' schedule: an hour in a minute (SERVICE_JOBS_TIME_SCALE)
const KEY_LIMIT = 600; // SERVICE_RATE_LIMIT_KEY_PER_MINUTE of both web processes
const report: Record<string, unknown> = {};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const quantile = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil(q * s.length) - 1)]!;
};
const ms = (t0: number) => Math.round((performance.now() - t0) * 100) / 100;

/** The floor of a hand-over between processes: a bare NOTIFY on one connection reaching a LISTEN on another, on the same server. */
async function notifyRoundTrips(url: string, n: number): Promise<{ p50Ms: number; p99Ms: number }> {
  const listener = new pg.Client({ connectionString: url });
  const notifier = new pg.Client({ connectionString: url });
  await Promise.all([listener.connect(), notifier.connect()]);
  try {
    await listener.query('listen bench_handover');
    const times: number[] = [];
    for (let i = 0; i < n; i++) {
      const got = new Promise<void>((resolve) => listener.once('notification', () => resolve()));
      const t0 = performance.now();
      await notifier.query(`notify bench_handover, '${i}'`);
      await got;
      times.push(ms(t0));
    }
    return { p50Ms: quantile(times, 0.5), p99Ms: quantile(times, 0.99) };
  } finally {
    await Promise.all([listener.end(), notifier.end()]);
  }
}

describe.runIf(canRunCluster('the scale-out test (two web processes and two workers behind nginx)'))('two web processes and two workers on one PostgreSQL, behind nginx', () => {
  let c: Cluster;
  let db: Database;
  let orgId: string;
  let editorKey: string;
  let daemonToken: string;
  const ownerEmail = 'owner@scale-out.test';
  const api = (base: string, method: string, url: string, token: string, body?: unknown) =>
    fetch(`${base}${url}`, { method, headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
  /** The web process nginx sent the last completed request for `uri` to (its access log's upstream; nginx writes the line just after answering, so it is waited for). */
  const upstreamOf = async (uri: string): Promise<SurveyorProcess> => {
    for (let i = 0; i < 100; i++) {
      const line = c.nginx.access().filter((l) => l.uri.startsWith(uri)).at(-1);
      const w = c.webs.find((x) => line?.upstream === `127.0.0.1:${x.port}`);
      if (w) return w;
      await sleep(50);
    }
    throw new Error(`no upstream recorded for ${uri}`);
  };
  const other = (w: SurveyorProcess) => c.webs.find((x) => x !== w)!;

  beforeAll(async () => {
    c = await startCluster({
      webs: 2,
      workers: 2,
      env: { SERVICE_RATE_LIMIT_KEY_PER_MINUTE: String(KEY_LIMIT), SERVICE_SSE_HEARTBEAT_SECONDS: '60' },
      workerEnv: { SERVICE_JOBS_TIME_SCALE: String(SCALE), SERVICE_LOG_LEVEL: 'debug' },
    });
    db = await openDatabase({ url: c.pg.url, poolMax: 3 });
    const org = await admin.createOrganisation(db.db, { type: 'cli' }, { name: 'scale-out', ownerEmail, ownerPassword: PASSWORD });
    orgId = org.organisationId;
    await admin.createUser(db.db, { type: 'cli' }, { org: orgId, email: 'editor@scale-out.test', role: 'editor', password: PASSWORD });
    editorKey = (await admin.createApiKey(db.db, { type: 'cli' }, { org: orgId, userEmail: 'editor@scale-out.test', scopes: ['inventory:read', 'inventory:write', 'scan:run'] })).token;
    daemonToken = (await admin.createDaemonKey(db.db, { type: 'cli' }, { org: orgId })).token;
  }, 180_000);

  afterAll(async () => {
    if (process.env.SCALE_OUT_REPORT) writeFileSync(process.env.SCALE_OUT_REPORT, JSON.stringify(report, null, 2));
    await db?.close();
    await c?.close();
  }, 60_000);

  it('hands each of 200 scans queued through one web process to a daemon long-polling through nginx on the other, once each', async () => {
    // 200 networks, one scan each (a network holds one active session at a time).
    const networks: string[] = [];
    for (let i = 0; i < 200; i++) {
      const r = await api(c.webs[i % 2]!.url, 'POST', '/api/v1/networks', editorKey, { name: `n${i}`, cidr: `10.${100 + Math.floor(i / 100)}.${i % 100}.0/24` });
      expect(r.status, await r.clone().text()).toBe(201);
      networks.push(((await r.json()) as { id: string }).id);
    }
    const reg = await api(c.nginx.url, 'POST', '/api/v1/daemon/register', daemonToken, { name: 'scale-out', version: '1.0.0', os: 'linux', arch: 'amd64', capabilities: { ebpf: false, netflow: true, nmap: true }, networkCidrs: ['10.0.0.0/8'], bootId: randomUUID(), metadata: {} });
    expect(reg.status).toBe(200);
    const daemonId = ((await reg.json()) as { daemonId: string }).daemonId;
    const dh = { authorization: `Bearer ${daemonToken}`, 'x-daemon-id': daemonId, 'content-type': 'application/json' };
    const hb = await fetch(`${c.nginx.url}/api/v1/daemon/heartbeat`, { method: 'POST', headers: dh, body: JSON.stringify({ status: 'online', loadedSignatures: { core: 1, custom: 0 } }) });
    expect(hb.status).toBe(200);
    // nginx sends a credential to one process (deploy/nginx/nginx.conf): the daemon's polls land there; scans are queued on the other.
    const daemonWeb = await upstreamOf('/api/v1/daemon/heartbeat');
    const queueWeb = other(daemonWeb);
    const received = new Map<string, number>();
    const latencies: number[] = [];
    for (const networkId of networks) {
      const poll = fetch(`${c.nginx.url}/api/v1/daemon/jobs/poll`, { method: 'POST', headers: dh, body: JSON.stringify({ waitSeconds: 30 }) });
      await sleep(25); // the poll is waiting in the daemon's web process
      const t0 = performance.now();
      const queued = await api(queueWeb.url, 'POST', '/api/v1/scans', editorKey, { networkId });
      expect(queued.status, await queued.clone().text()).toBe(202);
      const res = await poll;
      latencies.push(ms(t0));
      expect(res.status).toBe(200);
      const job = (await res.json()) as { sessionId: string };
      expect(job.sessionId).toBe(((await queued.json()) as { sessionId: string }).sessionId);
      received.set(job.sessionId, (received.get(job.sessionId) ?? 0) + 1);
    }
    // 0 lost, 0 doubled: 200 distinct sessions, each handed over once, and nothing left to hand.
    expect(received.size).toBe(200);
    expect([...received.values()].every((n) => n === 1)).toBe(true);
    const rest = await fetch(`${c.nginx.url}/api/v1/daemon/jobs/poll`, { method: 'POST', headers: dh, body: JSON.stringify({ waitSeconds: 0 }) });
    expect(rest.status).toBe(204);
    const sessions = await sql<{ n: number }>`select count(*)::int as n from scan_sessions where organisation_id = ${orgId} and daemon_id = ${daemonId}`.execute(db.db);
    expect(sessions.rows[0]!.n).toBe(200);
    // Every poll went through nginx to the daemon's process, every scan straight to the other one.
    expect(new Set(c.nginx.access().filter((l) => l.uri === '/api/v1/daemon/jobs/poll').map((l) => l.upstream))).toEqual(new Set([`127.0.0.1:${daemonWeb.port}`]));
    report.handover = { scans: 200, lost: 0, doubled: 0, p50Ms: quantile(latencies, 0.5), p99Ms: quantile(latencies, 0.99), maxMs: Math.max(...latencies) };
    if (process.env.SCALE_OUT_REPORT) report.notifyBaseline = await notifyRoundTrips(c.pg.url, 200);
  }, 180_000);

  it('streams a change written through one web process to a console SSE client on the other, through nginx, as it happens', async () => {
    const login = await fetch(`${c.nginx.url}/api/v1/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: ownerEmail, password: PASSWORD }) });
    expect(login.status).toBe(200);
    const cookie = String(login.headers.get('set-cookie')).split(';')[0]!;
    const me = await fetch(`${c.nginx.url}/api/v1/auth/me`, { headers: { cookie } });
    expect(me.status).toBe(200);
    const sseWeb = await upstreamOf('/api/v1/auth/me');
    const abort = new AbortController();
    const stream = await fetch(`${c.nginx.url}/api/sse`, { headers: { cookie, accept: 'text/event-stream' }, signal: abort.signal });
    expect(stream.status).toBe(200);
    expect(stream.headers.get('content-type')).toMatch(/text\/event-stream/);
    const reader = stream.body!.getReader();
    const decoder = new TextDecoder();
    let text = '';
    const waitFor = async (needle: string, deadlineMs: number) => {
      const deadline = Date.now() + deadlineMs;
      while (!text.includes(needle)) {
        const left = deadline - Date.now();
        if (left <= 0) return false;
        const chunk = await Promise.race([reader.read(), sleep(left).then(() => null)]);
        if (!chunk || chunk.done) return text.includes(needle);
        text += decoder.decode(chunk.value, { stream: true });
      }
      return true;
    };
    try {
      await sleep(300); // subscribed
      const delays: number[] = [];
      for (let i = 0; i < 20; i++) {
        const t0 = performance.now();
        const r = await api(other(sseWeb).url, 'POST', '/api/v1/networks', editorKey, { name: `sse-${i}`, cidr: `172.16.${i}.0/24` });
        expect(r.status).toBe(201);
        const { id } = (await r.json()) as { id: string };
        // Well before the first heartbeat (60 s): a buffering proxy would hold a few hundred bytes back until then.
        expect(await waitFor(`"id":"${id}"`, 20_000), `network ${id} not streamed: ${text.slice(-500)}`).toBe(true);
        delays.push(ms(t0));
      }
      expect(text).toMatch(/event: network\.created/);
      report.sse = { changes: 20, p50Ms: quantile(delays, 0.5), p99Ms: quantile(delays, 0.99) };
    } finally {
      abort.abort();
    }
  }, 120_000);

  it(`holds a key's limit across both processes: nginx sends a credential to one (${KEY_LIMIT} a minute, the ${KEY_LIMIT + 1}st refused)`, async () => {
    const key = (await admin.createApiKey(db.db, { type: 'cli' }, { org: orgId, userEmail: 'editor@scale-out.test', scopes: ['inventory:read'] })).token;
    const statuses: number[] = [];
    const send = async (base: string, n: number) => {
      for (let i = 0; i < n; i++) {
        const r = await api(base, 'GET', '/api/v1/networks?limit=1', key);
        await r.arrayBuffer();
        statuses.push(r.status);
      }
    };
    await Promise.all(Array.from({ length: 8 }, () => send(c.nginx.url, (KEY_LIMIT + 8) / 8)));
    expect(statuses.filter((s) => s === 200)).toHaveLength(KEY_LIMIT);
    expect(statuses.filter((s) => s === 429)).toHaveLength(8);
    // The counts live in each process: the same key sent to both processes in turn, not through
    // nginx, gets up to twice the limit (the choice documented in docs/operating.md).
    const second = (await admin.createApiKey(db.db, { type: 'cli' }, { org: orgId, userEmail: 'editor@scale-out.test', scopes: ['inventory:read'] })).token;
    let ok = 0;
    for (let i = 0; i < KEY_LIMIT + 50; i++) {
      const r = await api(c.webs[i % 2]!.url, 'GET', '/api/v1/networks?limit=1', second);
      await r.arrayBuffer();
      if (r.status === 200) ok++;
    }
    expect(ok).toBe(KEY_LIMIT + 50);
    // Sign-in (by client address, no credential yet) holds too: 10 attempts a minute, the 11th
    // refused, even for a client that sends another made-up session cookie with each attempt.
    const logins: number[] = [];
    for (let i = 0; i < 12; i++) {
      const r = await fetch(`${c.nginx.url}/api/v1/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json', cookie: `surveyor_session=${randomUUID()}` }, body: JSON.stringify({ email: 'nobody@scale-out.test', password: 'wrong password here' }) });
      await r.arrayBuffer();
      logins.push(r.status);
    }
    // One success earlier (the SSE test's sign-in) counted in the same window.
    expect(logins.filter((s) => s === 429).length).toBeGreaterThanOrEqual(2);
    expect(logins.slice(0, 9).every((s) => s === 401)).toBe(true);
  }, 120_000);

  it('runs every job tick once across both workers at 60× (an hour of schedule a minute), and the survivor takes over every job after a SIGKILL mid-tick', async () => {
    const [w1, w2] = c.workers as [SurveyorProcess, SurveyorProcess];
    const start = Date.now();
    await sleep(6_000);
    // Mid-tick, for certain: the test holds scan.stall's status row, so the worker that takes its
    // next tick (the job's lock held, the slot claimed) waits inside it, recording the start; the
    // other worker's ticks of scan.stall are skipped meanwhile, the lock being held.
    const holder = new pg.Client({ connectionString: c.pg.url });
    await holder.connect();
    await holder.query('begin');
    await holder.query("select 1 from job_status where job = 'scan.stall' and organisation_id is null for update");
    const blockedAt = Date.now();
    await sleep(2_500);
    const skippedForLock = (w: SurveyorProcess) => w.lines.some((l) => l.job === 'scan.stall' && l.msg === 'job tick skipped: another process holds its lock' && Date.parse(l.time as string) > blockedAt);
    const victim = skippedForLock(w1) ? w2 : w1;
    const survivor = victim === w1 ? w2 : w1;
    expect(skippedForLock(survivor), 'the other worker found scan.stall running').toBe(true);
    expect(skippedForLock(victim)).toBe(false);
    victim.kill('SIGKILL');
    await victim.exited;
    const killedAt = Date.now();
    // Its session ends once the row is free (it then finds its client gone): the lock goes with it.
    await holder.query('rollback');
    await holder.end();
    const releasedAt = Date.now();
    await sleep(12_000);
    const runs = (w: SurveyorProcess) =>
      w.lines.filter((l) => (l.msg === 'job ran' || l.msg === 'job failed') && typeof l.slot === 'number').map((l) => ({ job: l.job as string, slot: l.slot as number, at: Date.parse(l.time as string), by: w.name }));
    const all = [...runs(w1), ...runs(w2)];
    const byJob = new Map<string, typeof all>();
    for (const r of all) byJob.set(r.job, [...(byJob.get(r.job) ?? []), r]);
    expect([...byJob.keys()].sort()).toEqual([...JOB_NAMES].sort());
    const summary: Record<string, unknown> = {};
    for (const [job, rs] of byJob) {
      const slots = rs.map((r) => r.slot).sort((a, b) => a - b);
      // Never twice.
      expect(new Set(slots).size, `${job} ran a slot twice: ${JSON.stringify(rs)}`).toBe(slots.length);
      // Never skipped, but while the tick held in scan.stall ran (its slot and those the survivor
      // found locked) or, for another job, the one tick the kill may have cut short.
      const missing: number[] = [];
      for (let s = slots[0]!; s <= slots.at(-1)!; s++) if (!slots.includes(s)) missing.push(s);
      if (job === 'scan.stall') expect(missing.length).toBeGreaterThanOrEqual(1);
      // A slot lost away from the held tick and the kill: only one the machine stalled past (both
      // workers late by a whole interval, under the suite's load), at most two a job.
      const [from, to] = job === 'scan.stall' ? [blockedAt, releasedAt] : [killedAt, killedAt];
      const away = missing.filter((s) => {
        const before = rs.filter((r) => r.slot < s).at(-1);
        const after = rs.find((r) => r.slot > s);
        return !before || !after || before.at > to + 50 || after.at < from;
      });
      // Or one stall of the machine under the suite's other files at full load (seen in CI: a
      // 0.5 s job's 8 slots in 4 s): one unbroken run of slots, its runs either side at most 6 s apart.
      const stalled = (() => {
        if (away.length === 0 || away.at(-1)! - away[0]! !== away.length - 1) return false;
        const before = rs.filter((r) => r.slot < away[0]!).at(-1);
        const after = rs.find((r) => r.slot > away.at(-1)!);
        return !!before && !!after && after.at - before.at <= 6_000;
      })();
      if (!stalled) expect(away.length, `${job} skipped slots ${away.join(', ')} away from the kill`).toBeLessThanOrEqual(2);
      summary[job] = { slots: slots.length, byVictim: rs.filter((r) => r.by === victim.name).length, lost: missing.length };
    }
    // After the kill, every job that ticks at least every 5 s (at 60×) kept running on the survivor.
    for (const job of ['scan.schedule', 'scan.stall', 'notify.deliver', 'cve.match', 'cloud.k8s']) {
      expect(byJob.get(job)!.some((r) => r.by === survivor.name && r.at > killedAt + 5_000), `${job} after the kill`).toBe(true);
    }
    report.jobs = { heldMs: releasedAt - blockedAt, scale: SCALE, realSeconds: Math.round((Date.now() - start) / 1000), compressedMinutes: Math.round(((Date.now() - start) * SCALE) / 60_000), perJob: summary };
  }, 60_000);

  it('answers 503 on /api/health while PostgreSQL is down, recovers every process without a restart, and leaves no half-written request', async () => {
    // Load: network creations through nginx, one after another on 4 connections (a key each, under
    // its rate limit), all through the outage.
    let stop = false;
    const outcomes: { name: string; status: number }[] = [];
    const keys = await Promise.all([1, 2, 3, 4].map(async () => (await admin.createApiKey(db.db, { type: 'cli' }, { org: orgId, userEmail: 'editor@scale-out.test', scopes: ['inventory:write'] })).token));
    const writer = async (k: number) => {
      for (let i = 0; !stop; i++) {
        const name = `load-${k}-${i}`;
        try {
          const r = await api(c.nginx.url, 'POST', '/api/v1/networks', keys[k - 1]!, { name, cidr: `192.${k}.${Math.floor(i / 250) % 250}.${i % 250}/32` });
          await r.arrayBuffer();
          outcomes.push({ name, status: r.status });
        } catch {
          outcomes.push({ name, status: 0 });
        }
        await sleep(25);
      }
    };
    const load = Promise.all([1, 2, 3, 4].map(writer));
    await sleep(1_000);
    await c.pg.stop('fast');
    const downAt = performance.now();
    // Down: every web process says so.
    await sleep(1_500);
    for (const w of c.webs) {
      const r = await fetch(`${w.url}/api/health`);
      expect(r.status, w.name).toBe(503);
      expect(((await r.json()) as { ok: boolean }).ok).toBe(false);
    }
    await sleep(1_000);
    await c.pg.start();
    const upAt = performance.now();
    const upWall = Date.now();
    // Up: each web process answers 200 again, and a write through nginx succeeds, without a restart.
    const recovered: Record<string, number> = {};
    await Promise.all(
      c.webs.map(async (w) => {
        const deadline = Date.now() + 60_000;
        while (!(await healthy(w.url)) && Date.now() < deadline) await sleep(50);
        recovered[w.name] = ms(upAt);
      }),
    );
    await sleep(2_000);
    stop = true;
    await load;
    for (const w of c.webs) expect(await healthy(w.url), w.name).toBe(true);
    const afterUp = outcomes.filter((o) => o.status === 201).length;
    expect(afterUp).toBeGreaterThan(0);
    // The surviving worker ticks again after the outage.
    const backAt = Date.now();
    const workerDeadline = backAt + 30_000;
    const ranAfter = () => c.workers.some((w) => w.lines.some((l) => l.msg === 'job ran' && Date.parse(l.time as string) > backAt));
    while (!ranAfter() && Date.now() < workerDeadline) await sleep(100);
    expect(ranAfter(), 'the surviving worker runs jobs again').toBe(true);
    // Nothing half-written: each network is there with its audit row (one transaction), each 201 is there.
    const rows = await sql<{ name: string; audited: boolean }>`
      select n.name, exists (select 1 from audit_log a where a.organisation_id = n.organisation_id and a.target_id = n.id::text and a.action = 'network.created') as audited
      from networks n where n.organisation_id = ${orgId} and n.name like 'load-%'`.execute(db.db);
    expect(rows.rows.filter((r) => !r.audited)).toEqual([]);
    const stored = new Set(rows.rows.map((r) => r.name));
    const created = outcomes.filter((o) => o.status === 201).map((o) => o.name);
    expect(created.filter((n) => !stored.has(n))).toEqual([]);
    // A refused request (503 while down, or 500 when the connection broke mid-statement) stored nothing, unless its commit had landed.
    const refused = outcomes.filter((o) => o.status !== 201);
    expect(refused.length).toBeGreaterThan(0);
    // Refused because the database was away (503 service_unavailable, or 500 when a connection broke mid-statement), never for another reason.
    expect([...new Set(refused.map((o) => o.status))].filter((s) => s !== 503 && s !== 500)).toEqual([]);
    const workerBack = Math.min(...c.workers.flatMap((w) => w.lines.filter((l) => l.msg === 'job ran').map((l) => Date.parse(l.time as string)).filter((t) => t > upWall)));
    report.restart = { downMs: Math.round(upAt - downAt), recoveredMsAfterUp: recovered, workerFirstTickMsAfterUp: workerBack - upWall, requests: outcomes.length, ok: created.length, refused: refused.length, refusedStatuses: [...new Set(refused.map((o) => o.status))].sort() };
  }, 120_000);
});
