import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as admin from '../src/admin/admin.service.js';
import { rollupFlows, windowSegments } from '../src/ingest/flow-rollups.js';
import { prepareFlows, storeFlows } from '../src/ingest/flows.js';
import { JobRunner } from '../src/jobs/runner.js';
import { createLogger } from '../src/logger.js';
import { jobDefinitions } from '../src/main.js';
import { rebuildDependencies } from '../src/topology/dependencies.js';
import { addHost, addService } from './fixtures.js';
import { type SeededOrg, TEST_DATABASE_URL, type TestApp, bearer, buildTestApp, seedMemberWithKey, seedOrg } from './helpers.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const iso = (ms: number) => new Date(ms).toISOString();

describe('where a flow window is read from (issue 30, migration 0039)', () => {
  const at = (s: string) => Date.parse(s);
  const marks = { hours: at('2026-11-27T10:00:00Z'), days: at('2026-11-27T00:00:00Z') };
  const seg = (from: string, to: string | null, m: typeof marks | null = marks) =>
    windowSegments(at(from), to === null ? null : at(to), m).map((s) => `${s.table} ${iso(s.from).slice(5, 16)}..${s.to === null ? '' : iso(s.to).slice(5, 16)}`);

  it('reads whole days and hours from the rollups up to the marks, the rest from the records', () => {
    expect(seg('2026-11-24T13:20:00Z', null)).toEqual([
      'flows 11-24T13:20..11-24T14:00', 'flow_hours 11-24T14:00..11-25T00:00', 'flow_days 11-25T00:00..11-27T00:00', 'flow_hours 11-27T00:00..11-27T10:00', 'flows 11-27T10:00..',
    ]);
    // A window starting on an hour has no partial hour; one inside the unrolled tail is all records.
    expect(seg('2026-11-27T03:00:00Z', null)).toEqual(['flow_hours 11-27T03:00..11-27T10:00', 'flows 11-27T10:00..']);
    expect(seg('2026-11-27T10:30:00Z', null)).toEqual(['flows 11-27T10:30..']);
    expect(seg('2026-11-27T09:10:00Z', null)).toEqual(['flows 11-27T09:10..']);
    // Before any rollup (no marks): records only.
    expect(seg('2026-11-20T00:00:00Z', null, null)).toEqual(['flows 11-20T00:00..']);
    // A closed window ending inside rolled hours: its last partial hour from the records.
    expect(seg('2026-11-26T22:00:00Z', '2026-11-27T05:45:00Z')).toEqual(['flow_hours 11-26T22:00..11-27T05:00', 'flows 11-27T05:00..11-27T05:45']);
    // Days not rolled yet (the day mark behind) are read from the hours.
    expect(seg('2026-11-24T06:00:00Z', null, { hours: marks.hours, days: at('2026-11-26T00:00:00Z') })).toEqual([
      'flow_hours 11-24T06:00..11-25T00:00', 'flow_days 11-25T00:00..11-26T00:00', 'flow_hours 11-26T00:00..11-27T10:00', 'flows 11-27T10:00..',
    ]);
    expect(seg('2026-11-25T06:00:00Z', null, { hours: marks.hours, days: at('2026-11-26T00:00:00Z') })).toEqual(['flow_hours 11-25T06:00..11-27T10:00', 'flows 11-27T10:00..']);
  });
});

describe('flow rollups (issue 30): hourly and daily rollups read where they cover, counted once', () => {
  let t: TestApp;
  let org: SeededOrg;
  let other: SeededOrg;
  let token: string;
  let headers: Record<string, string>;
  let otherHeaders: Record<string, string>;
  let web: string;
  const now = Date.now();
  // Window edges of the reads below: a record 2 minutes inside and one 2 minutes outside each.
  const ago = (ms: number) => iso(now - ms);
  const flow = (msAgo: number, over: Record<string, unknown> = {}) => ({ bucketStart: ago(msAgo), srcIp: '10.7.0.20', dstIp: '10.7.0.10', dstPort: 443, protocol: 'tcp', packets: 2, bytes: 100, source: 'softflowd', ...over });

  async function daemonHeaders(o: SeededOrg) {
    const key = (await admin.createDaemonKey(t.database.db, { type: 'cli' }, { org: o.organisationId })).token;
    const id = (await t.app.inject({ method: 'POST', url: '/api/v1/daemon/register', headers: bearer(key), payload: { name: 'flowd', bootId: randomUUID() } })).json().daemonId;
    return { ...bearer(key), 'x-daemon-id': id };
  }
  const post = async (h: Record<string, string>, flows: unknown[]) => {
    const res = await t.app.inject({ method: 'POST', url: '/api/v1/daemon/flows', headers: h, payload: { flows } });
    expect(res.statusCode, res.body).toBe(200);
    return res.json() as { accepted: number };
  };
  const topology = async (hours: number) => {
    const res = await t.app.inject({ method: 'GET', url: `/api/v1/hosts/${web}/topology?windowHours=${hours}`, headers: bearer(token) });
    expect(res.statusCode, res.body).toBe(200);
    const { inbound, outbound } = res.json();
    return { inbound, outbound };
  };
  const WINDOWS = [1, 3, 24, 49, 720];
  const reads = async () => ({
    topology: await Promise.all(WINDOWS.map(topology)),
    edges: (await rebuildDependencies(t.database.db, org.organisationId, new Date()), await sql`
      select src_host_id, dst_service_id, bytes::int as bytes, packets::int as packets, flows::int as flows, last_seen_at from dependency_edges
      where organisation_id = ${org.organisationId} order by src_host_id, dst_service_id`.execute(t.database.db)).rows,
  });
  const marksOf = async (o: SeededOrg) =>
    (await sql<{ hours_until: Date; days_until: Date }>`select hours_until, days_until from flow_rollups where organisation_id = ${o.organisationId}`.execute(t.database.db)).rows[0];
  const rolled = async (table: 'flow_hours' | 'flow_days', o = org) =>
    (await sql<{ n: number; bytes: number; flows: number }>`select count(*)::int as n, coalesce(sum(bytes), 0)::int as bytes, coalesce(sum(flows), 0)::int as flows from ${sql.table(table)} where organisation_id = ${o.organisationId}`.execute(t.database.db)).rows[0]!;

  beforeAll(async () => {
    t = await buildTestApp();
    org = await seedOrg(t.database);
    other = await seedOrg(t.database);
    token = (await seedMemberWithKey(t.database, org, 'viewer', ['inventory:read'])).token;
    headers = await daemonHeaders(org);
    otherHeaders = await daemonHeaders(other);
    web = await addHost(t.database.db, org.organisationId, { hostname: 'web', addresses: ['10.7.0.10'] });
    await addService(t.database.db, org.organisationId, web, { port: 443, name: 'https' });
    await addService(t.database.db, org.organisationId, web, { port: 22, name: 'ssh' });
    await addHost(t.database.db, org.organisationId, { hostname: 'client', addresses: ['10.7.0.20'] });
    await addHost(t.database.db, org.organisationId, { hostname: 'db', addresses: ['10.7.0.30'] });
  });
  afterAll(() => t.close());

  it('answers the host topology and the application view the same from the rollups as from the records', async () => {
    const flows = [];
    // Every window's edge from both sides, several conversations an hour, over 4 days, and the last minutes.
    // (Not past 720 h: older than the retention, not stored.)
    for (const w of WINDOWS) for (const d of w === 720 ? [-2 * 60_000] : [-2 * 60_000, 2 * 60_000]) flows.push(flow(w * HOUR + d, { bytes: w * 10 + (d > 0 ? 1 : 2) }));
    for (let h = 0; h < 96; h += 1.5) {
      flows.push(flow(h * HOUR + 7 * 60_000, { bytes: 1000 + Math.round(h * 2) }));
      flows.push(flow(h * HOUR + 9 * 60_000, { dstPort: 22, packets: 1, bytes: 40 }));
      flows.push(flow(h * HOUR + 11 * 60_000, { srcIp: '10.7.0.10', dstIp: '10.7.0.30', dstPort: 5432, bytes: 77 }));
      flows.push(flow(h * HOUR + 13 * 60_000, { srcIp: '192.0.2.9', protocol: 'udp', dstPort: 53, bytes: 9 }));
    }
    expect((await post(headers, flows)).accepted).toBe(flows.length);
    // Another organisation's flows between the same addresses: never in this one's rollups or reads.
    await post(otherHeaders, flows.slice(0, 40).map((f) => ({ ...f, bytes: 1_000_000 })));
    const before = await reads();
    expect(before.topology[4]!.inbound.length).toBeGreaterThan(1);
    expect(before.topology[1]!.inbound).not.toEqual(before.topology[4]!.inbound);
    // Through the job: every closed hour rolled (in steps of at most 6 hours), and every closed day.
    const runner = new JobRunner({ database: t.database, logger: createLogger('silent'), jobs: jobDefinitions({ config: t.config, secretKey: t.secretKey }), now: () => new Date(now) });
    const run = await runner.tick('flows.rollup');
    expect(run).toMatchObject({ ran: true, outcome: 'ok' });
    const m = (await marksOf(org))!;
    expect(new Date(m.hours_until).getTime()).toBe(Math.floor((now - 5 * 60_000) / HOUR) * HOUR);
    expect(new Date(m.days_until).getTime()).toBe(Math.floor(new Date(m.hours_until).getTime() / DAY) * DAY);
    const hours = await rolled('flow_hours');
    const days = await rolled('flow_days');
    expect(hours.n).toBeGreaterThan(0);
    expect(days.n).toBeGreaterThan(0);
    // The hours hold exactly the records before the mark.
    const raw = (await sql<{ bytes: number; n: number }>`select sum(bytes)::int as bytes, count(*)::int as n from flows where organisation_id = ${org.organisationId} and bucket_start < ${m.hours_until}`.execute(t.database.db)).rows[0]!;
    expect({ bytes: hours.bytes, flows: hours.flows }).toEqual({ bytes: raw.bytes, flows: raw.n });
    expect((await rolled('flow_hours', other)).bytes).toBeGreaterThan(0);
    expect(await reads()).toEqual(before);
    // A second run finds nothing to roll: nothing counted twice.
    expect((await rollupFlows(t.database.db, new Date(now))).hourRows).toBe(0);
    expect(await rolled('flow_hours')).toEqual(hours);
    expect(await reads()).toEqual(before);
  });

  it('adds a late delivery for hours and days already rolled up to their rollups, once, a retry included', async () => {
    const hours = await rolled('flow_hours');
    const days = await rolled('flow_days');
    const late = [flow(5 * HOUR + 30 * 60_000, { bytes: 5 }), flow(60 * HOUR + 30 * 60_000, { bytes: 6 }), flow(60 * HOUR + 31 * 60_000, { bytes: 7 })];
    const before = await topology(720);
    expect((await post(headers, late)).accepted).toBe(3);
    expect((await post(headers, late)).accepted).toBe(0);
    expect(await rolled('flow_hours')).toMatchObject({ bytes: hours.bytes + 18, flows: hours.flows + 3 });
    // Only the record older than the day mark reaches the days.
    const dayMark = new Date((await marksOf(org))!.days_until).getTime();
    const toDays = late.filter((f) => Date.parse(f.bucketStart) < dayMark).reduce((s, f) => s + f.bytes, 0);
    expect(toDays).toBeGreaterThan(0);
    expect((await rolled('flow_days')).bytes).toBe(days.bytes + toDays);
    const after = await topology(720);
    const client = (r: typeof before) => r.inbound.find((p: { address: string; ports: number[] }) => p.address === '10.7.0.20');
    expect(client(after).bytes).toBe(client(before).bytes + 18);
    expect(client(after).flows).toBe(client(before).flows + 3);
    expect((await rollupFlows(t.database.db, new Date(now))).hourRows).toBe(0);
    expect(await topology(720)).toEqual(after);
  });

  it('stores a record by COPY exactly as sent, a source with a tab, backslash or newline included', async () => {
    const source = 'exp\torter\\one\ntwo\r';
    await post(headers, [flow(30 * 60_000, { protocol: 'TCP', source, bytes: 31337 })]);
    const row = (await sql<{ protocol: string; source: string; src: string; daemon_id: string }>`
      select protocol, source, host(src_ip) as src, daemon_id from flows where organisation_id = ${org.organisationId} and bytes = 31337`.execute(t.database.db)).rows;
    expect(row).toEqual([{ protocol: 'tcp', source, src: '10.7.0.20', daemon_id: headers['x-daemon-id'] }]);
  });

  it('says the organisation has flows from its rollups, and an organisation without any has none', async () => {
    const res = await t.app.inject({ method: 'GET', url: `/api/v1/hosts/${web}/topology?windowHours=1`, headers: bearer(token) });
    expect(res.json().sources.flows).toBe(true);
    const empty = await seedOrg(t.database);
    const host = await addHost(t.database.db, empty.organisationId, { hostname: 'quiet', addresses: ['10.7.0.10'] });
    const viewer = (await seedMemberWithKey(t.database, empty, 'viewer', ['inventory:read'])).token;
    const quiet = await t.app.inject({ method: 'GET', url: `/api/v1/hosts/${host}/topology?windowHours=720`, headers: bearer(viewer) });
    expect(quiet.json()).toMatchObject({ inbound: [], outbound: [], sources: { flows: false } });
  });

  // PostgreSQL only: a delivery's transaction held open in one session while the job runs in another.
  if (TEST_DATABASE_URL) {
    it('rolls a delivery that was storing while the job started once: the job waits for it', async () => {
      const m = (await marksOf(org))!;
      // Make the last closed hour unrolled again: records in it are neither rolled nor late.
      const hourStart = new Date(m.hours_until).getTime() - HOUR;
      await sql`update flow_rollups set hours_until = ${new Date(hourStart)} where organisation_id = ${org.organisationId}`.execute(t.database.db);
      await sql`delete from flow_hours where organisation_id = ${org.organisationId} and hour = ${new Date(hourStart)}`.execute(t.database.db);
      const daemonId = headers['x-daemon-id']!;
      const records = [flow(now - (hourStart + 20 * 60_000), { bytes: 4242 })];
      const prepared = await prepareFlows(t.database.db, records as never, 0);
      let release!: () => void;
      const held = new Promise<void>((r) => (release = r));
      let stored!: () => void;
      const storedP = new Promise<void>((r) => (stored = r));
      const delivery = t.database.db.transaction().execute(async (trx) => {
        await storeFlows(trx, org.organisationId, daemonId, prepared);
        stored();
        await held;
      });
      await storedP;
      const job = rollupFlows(t.database.db, new Date(now)).finally(release);
      const schema = (await sql<{ s: string }>`select current_schema() as s`.execute(t.database.db)).rows[0]!.s;
      const watcher = new pg.Client({ connectionString: TEST_DATABASE_URL, options: `-c search_path=${schema}` });
      await watcher.connect();
      try {
        // The job's step waits on the delivery's lock of the organisation's marks.
        for (let i = 0; i < 100; i++) {
          const w = await watcher.query(`select count(*)::int as n from pg_stat_activity where wait_event_type = 'Lock' and query like '%flow_rollups%for update%'`);
          if (w.rows[0].n > 0) break;
          await new Promise((r) => setTimeout(r, 50));
        }
        expect((await watcher.query(`select count(*)::int as n from pg_stat_activity where wait_event_type = 'Lock' and query like '%flow_rollups%for update%'`)).rows[0].n).toBe(1);
      } finally {
        await watcher.end();
        release();
      }
      await delivery;
      await job;
      const row = (await sql<{ bytes: number }>`select sum(bytes)::int as bytes from flow_hours where organisation_id = ${org.organisationId} and hour = ${new Date(hourStart)} and bytes >= 4242`.execute(t.database.db)).rows[0]!;
      expect(row.bytes).toBeGreaterThanOrEqual(4242);
      const raw = (await sql<{ bytes: number }>`select sum(bytes)::int as bytes from flows where organisation_id = ${org.organisationId} and bucket_start >= ${new Date(hourStart)} and bucket_start < ${new Date(hourStart + HOUR)}`.execute(t.database.db)).rows[0]!;
      const hour = (await sql<{ bytes: number }>`select sum(bytes)::int as bytes from flow_hours where organisation_id = ${org.organisationId} and hour = ${new Date(hourStart)}`.execute(t.database.db)).rows[0]!;
      expect(hour.bytes).toBe(raw.bytes);
    });
  }
});
