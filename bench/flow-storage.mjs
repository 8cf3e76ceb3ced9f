// Flow storage (issue 30), on PostgreSQL (BENCH_DATABASE_URL): the three figures that share the
// flow tables, measured in one run so that one is not bought with another, each as a ratio against
// a baseline run side by side:
//   1. flow ingest through POST /api/v1/daemon/flows (BENCH_FLOWS records, default 1,000,000, in
//      batches of 20,000 from 4 daemons at once, client in its own thread: bench/flow-sender.mjs)
//      against a bare COPY of the same rows over as many connections into a table without
//      indexes (and, for reference, COPY into `flows` itself, with whatever it fires);
//   2. host topology at windowHours=720 (and 24) over BENCH_TOPOLOGY_FLOWS records (default
//      10,000,000) in 30 daily partitions, 10,000 hosts, 20 of them busy (1,600 callers each, half
//      the records): the service call's p50/p99 over 200 hosts (the 20 busy ones included) against
//      its own SQL statements run bare through pg on one connection, the same hosts, in the same run;
//   3. the application view's flow read (`rebuildDependencies`, the 24 h window of the same data)
//      against a bare grouped select of that window's raw records.
// The topology data is generated once into schema `bench_flow_storage` (records inserted with SQL,
// in time order as daemons deliver them; a storage that derives rows from the records at ingest
// must fill them here the way its ingest path does); the ingest runs
// in a fresh schema `bench_flow_ingest`. Prints a markdown table; BENCH_OUT=<file> also saves JSON.
import { randomBytes, randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import { Worker } from 'node:worker_threads';
import { Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import * as admin from '../packages/server/dist/admin/admin.service.js';
import { loadConfig } from '../packages/server/dist/config.js';
import { openDatabase } from '../packages/server/dist/db/database.js';
import { migrate } from '../packages/server/dist/db/migrate.js';
import { createLogger } from '../packages/server/dist/logger.js';
import { buildWebApp } from '../packages/server/dist/main.js';
import { rollupFlows } from '../packages/server/dist/ingest/flow-rollups.js';
import { rebuildDependencies } from '../packages/server/dist/topology/dependencies.js';
import { hostTopology } from '../packages/server/dist/topology/topology.service.js';

const URL_ = process.env.BENCH_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/postgres';
const FLOWS = Number(process.env.BENCH_FLOWS || 1_000_000);
const FLOW_BATCH = 20_000;
// BENCH_FLOW_SENDERS: daemons posting at once (and COPY connections of the baseline).
const SENDERS = Number(process.env.BENCH_FLOW_SENDERS || 4);
const TOPO_FLOWS = Number(process.env.BENCH_TOPOLOGY_FLOWS || 10_000_000);
const HOSTS = 10_000;
const BUSY = 20;
const PEERS = 1600;
const SAMPLES = 200;
const PARTS = (process.env.BENCH_PARTS || 'ingest,topology,dependencies').split(',');
const result = { date: new Date().toISOString(), machine: `${os.cpus().length} cores (${os.cpus()[0].model}), ${Math.round(os.totalmem() / 2 ** 30)} GiB, Node ${process.version}`, load: os.loadavg()[0] };
const secs = (t0) => Number(process.hrtime.bigint() - t0) / 1e9;
const q = (samples, p) => [...samples].sort((a, b) => a - b)[Math.ceil((p / 100) * samples.length) - 1];

async function schema(name, fresh) {
  const root = new pg.Client({ connectionString: URL_ });
  await root.connect();
  if (fresh) await root.query(`drop schema if exists ${name} cascade`);
  await root.query(`create schema if not exists ${name}`);
  result.postgres = (await root.query('select version()')).rows[0].version.split(',')[0];
  await root.end();
  const database = await openDatabase({ url: URL_, poolMax: 10, searchPath: name });
  await migrate(database);
  return database;
}

// --- 1. ingest ------------------------------------------------------------------------------------
if (PARTS.includes('ingest')) {
  const SCHEMA = 'bench_flow_ingest';
  const database = await schema(SCHEMA, true);
  const db = database.db;
  await sql`create table flows_bare (organisation_id uuid, bucket_start timestamptz, daemon_id uuid, src_ip inet, dst_ip inet, dst_port integer, protocol text, packets bigint, bytes bigint, source text)`.execute(db);
  const config = loadConfig({ SERVICE_LOG_LEVEL: 'silent', SERVICE_RATE_LIMIT_DAEMON_PER_MINUTE: '1000000', SERVICE_RATE_LIMIT_KEY_PER_MINUTE: '1000000', SERVICE_PORT: '0' });
  const app = await buildWebApp({ config, database, logger: createLogger('silent'), secretKey: randomBytes(32) });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const port = app.server.address().port;
  const daemons = [];
  for (let i = 0; i < SENDERS; i++) {
    const name = `flows-${i}`;
    const { organisationId } = await admin.createOrganisation(db, { type: 'cli' }, { name, ownerEmail: `${name}@bench.test` });
    const key = await admin.createDaemonKey(db, { type: 'cli' }, { org: organisationId });
    const res = await fetch(`http://127.0.0.1:${port}/api/v1/daemon/register`, { method: 'POST', headers: { authorization: `Bearer ${key.token}`, 'content-type': 'application/json' }, body: JSON.stringify({ name, bootId: randomUUID(), networkCidrs: ['10.0.0.0/8'], capabilities: { nmap: true } }) });
    daemons.push({ authorization: `Bearer ${key.token}`, 'x-daemon-id': (await res.json()).daemonId });
  }
  const baseOrg = (await admin.createOrganisation(db, { type: 'cli' }, { name: 'copy', ownerEmail: 'copy@bench.test' })).organisationId;
  const day = Date.now() - 3_600_000;
  const send = (mode, table, shape) =>
    new Promise((resolve, reject) => {
      const w = new Worker(new URL('./flow-sender.mjs', import.meta.url), {
        workerData: { mode, table, shape, flows: FLOWS, batch: FLOW_BATCH, hosts: 65_536, day, port, daemons, databaseUrl: URL_, schema: SCHEMA, baseOrg, baselineDaemon: randomUUID() },
      });
      w.once('message', resolve);
      w.once('error', reject);
    });
  // Two shapes of traffic (bench/flow-sender.mjs): `spread`, every record a conversation and minute
  // of its own (bench/ingest.mjs's rows: the worst case for rollups), and `recurring`, each daemon's
  // 20,000 conversations again every minute. Each against a bare COPY of its own rows, just before.
  result.ingest = { records: FLOWS };
  for (const shape of (process.env.BENCH_FLOW_SHAPES || 'spread,recurring').split(',')) {
    await sql`truncate flows_bare`.execute(db);
    const bare = await send('copy', 'flows_bare', shape);
    const api = await send('api', undefined, shape);
    if (api.stored !== FLOWS) throw new Error(`stored ${api.stored} of ${FLOWS}`);
    // CPU µs a record: of this process (web process and client thread), of its main thread alone
    // (the web process's JavaScript), of the client thread, of the rest of the process (V8's
    // helper threads: concurrent marking, parallel scavenges) and of PostgreSQL's processes
    // (Linux /proc, 10 ms ticks).
    const us = (r) => ({
      process: (r.cpu.self / FLOWS) * 1e6, web: (r.cpu.main / FLOWS) * 1e6, client: (r.cpu.sender / FLOWS) * 1e6,
      helpers: ((r.cpu.self - r.cpu.main - r.cpu.sender) / FLOWS) * 1e6, postgres: (r.cpu.postgres / FLOWS) * 1e6,
    });
    result.ingest[shape] = { bare: FLOWS / bare.seconds, api: FLOWS / api.seconds, ratio: bare.seconds / api.seconds, cpuUs: { bare: us(bare), api: us(api) } };
    console.log('ingest', shape, result.ingest[shape]);
  }
  const sizes = await sql`select relname, pg_total_relation_size(oid)::float8 / 1048576 as mb from pg_class where relnamespace = ${SCHEMA}::regnamespace and relkind in ('r') and (relname like 'flow%') order by 1`.execute(db);
  result.ingest.sizesMb = Object.fromEntries(sizes.rows.map((r) => [r.relname, Math.round(r.mb)]));
  await app.close();
  await database.close();
  console.log('ingest', result.ingest);
}

// --- 2, 3. topology data ---------------------------------------------------------------------------
if (PARTS.includes('topology') || PARTS.includes('dependencies')) {
  const SCHEMA = 'bench_flow_storage';
  const database = await schema(SCHEMA, false);
  const db = database.db;
  let org = await db.selectFrom('organisations').select('id').where('name', '=', 'flow-storage').executeTakeFirst();
  const have = org ? (await sql`select count(*)::int as n, max(bucket_start) as last from flows where organisation_id = ${org.id}`.execute(db)).rows[0] : { n: 0 };
  // Regenerated when the count differs or the data is more than a day old (the window would lose a day).
  if (!org || have.n !== TOPO_FLOWS || Date.now() - new Date(have.last).getTime() > 86_400_000) {
    console.log(`generating ${HOSTS} hosts and ${TOPO_FLOWS} flows over 30 days (once)…`);
    if (org) await db.deleteFrom('organisations').where('id', '=', org.id).execute();
    for (const t of (await sql`select relname from pg_class where relnamespace = ${SCHEMA}::regnamespace and relkind = 'p' and relname like 'flow%'`.execute(db)).rows) await sql`truncate ${sql.table(t.relname)}`.execute(db);
    org = { id: (await admin.createOrganisation(db, { type: 'cli' }, { name: 'flow-storage', ownerEmail: 'flows@bench.test' })).organisationId };
    await sql`insert into hosts (organisation_id, fingerprint, hostname) select ${org.id}, 'fp-' || g, 'host-' || g from generate_series(1, ${HOSTS}) g`.execute(db);
    await sql`insert into host_addresses (organisation_id, host_id, address) select organisation_id, id, '10.40.0.0'::inet + seq from hosts where organisation_id = ${org.id}`.execute(db);
    const hostRows = sql`select id, seq from hosts where organisation_id = ${org.id}`;
    await sql`insert into services (organisation_id, host_id, protocol, port, address, state, name)
      select ${org.id}, h.id, 'tcp', p, '10.40.0.0'::inet + h.seq, 'open', 'svc-' || p from (${hostRows}) h, unnest(array[22, 80, 443, 5432, 8080]) p`.execute(db);
    // The 30 days before today: the 720 h window starts inside the first one.
    const day0 = Math.floor(Date.now() / 86_400_000) * 86_400_000 - 30 * 86_400_000;
    const { prepareFlows } = await import('../packages/server/dist/ingest/flows.js');
    // The partitions (and whatever the schema keeps per day) as the ingest path makes them.
    for (let d = 0; d < 30; d++) await prepareFlows(db, [{ bucketStart: new Date(day0 + d * 86_400_000).toISOString(), srcIp: '10.0.0.1', dstIp: '10.0.0.2', dstPort: 1, protocol: 'tcp', packets: 0, bytes: 0, source: 'x' }], 0, day0 + 29 * 86_400_000);
    const daemon = '00000000-0000-4000-8000-000000000001';
    const perDay = Math.ceil(TOPO_FLOWS / 30);
    for (let d = 0; d < 30; d++) {
      const n = Math.min(perDay, TOPO_FLOWS - d * perDay);
      // In time order, as daemons deliver recent buckets. Even g: to one of the 20 busy hosts (seq 1..20) from one of its 1,600 callers; odd g: any host to any host.
      for (let k = 0; k < n; k += 50_000) {
        const a = d * perDay + k;
        const b = d * perDay + Math.min(n, k + 50_000) - 1;
        await sql`
          insert into flows (organisation_id, bucket_start, daemon_id, src_ip, dst_ip, dst_port, protocol, packets, bytes, source)
          select ${org.id}, to_timestamp(${day0 / 1000 + d * 86400}::float8 + (g - ${d * perDay}) * 86400.0 / ${perDay}), ${daemon}::uuid,
                 '10.40.0.0'::inet + case when g % 2 = 0 then 21 + (((g / 40) % ${PEERS}) * 7 + ((g / 2) % ${BUSY}) * 499) % 9980 else 1 + (g * 7919) % ${HOSTS} end,
                 '10.40.0.0'::inet + case when g % 2 = 0 then 1 + (g / 2) % ${BUSY} else 1 + (g * 104729) % ${HOSTS} end,
                 case when g % 2 = 0 then (array[443, 5432, 8080])[(1 + ((g / 40) % ${PEERS}) % 3)::int] else (array[22, 80, 443, 5432, 8080])[(1 + g % 5)::int] end,
                 'tcp', 1 + g % 40, 100 + g % 5000, 'ebpf'
          from generate_series(${a}::bigint, ${b}::bigint) g`.execute(db);
      }
      process.stdout.write('.');
    }
    await sql`vacuum analyze`.execute(db);
    console.log('');
  }
  // The rollups (migration 0039) as the product makes them: the first delivery sets the marks at
  // its first record, job flows.rollup rolls every closed hour and day (in steps; timed here).
  await sql`insert into flow_rollups (organisation_id, hours_until, days_until)
    select ${org.id}, date_trunc('hour', min(bucket_start), 'UTC'), date_trunc('day', min(bucket_start), 'UTC') from flows where organisation_id = ${org.id}
    on conflict do nothing`.execute(db);
  const rollupStart = performance.now();
  const rollup = await rollupFlows(db, new Date());
  if (rollup.hourRows > 0) {
    result.rollup = { ...rollup, seconds: (performance.now() - rollupStart) / 1000 };
    await sql`vacuum analyze`.execute(db);
    console.log('rollup', result.rollup);
  }
  result.topologyData = { records: TOPO_FLOWS, hosts: HOSTS, busy: BUSY, peers: PEERS };
  const sizes = await sql`select c.relname, (select sum(pg_total_relation_size(i.inhrelid))::float8 from pg_inherits i where i.inhparent = c.oid) / 1048576 as mb,
      (select sum(s.n_live_tup)::float8 from pg_inherits i join pg_stat_user_tables s on s.relid = i.inhrelid where i.inhparent = c.oid) as rows
    from pg_class c where c.relnamespace = ${SCHEMA}::regnamespace and c.relkind = 'p' and c.relname like 'flow%' order by 1`.execute(db);
  result.topologyData.tables = Object.fromEntries(sizes.rows.map((r) => [r.relname, { mb: Math.round(r.mb), rows: r.rows }]));

  if (PARTS.includes('topology')) {
    const busy = (await sql`select id from hosts where organisation_id = ${org.id} and seq <= ${BUSY} order by seq`.execute(db)).rows.map((r) => r.id);
    const rest = (await sql`select id from hosts where organisation_id = ${org.id} and seq > ${BUSY} order by seq limit ${SAMPLES - BUSY}`.execute(db)).rows.map((r) => r.id);
    const hosts = [...busy, ...rest];
    // The service's own statements for one host and window, captured once, run bare through pg.
    const captured = [];
    const spy = new Kysely({ dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: URL_, max: 1, options: `-c search_path=${SCHEMA}` }) }), log: (e) => captured.push(e.query) });
    const bare = new pg.Client({ connectionString: URL_, options: `-c search_path=${SCHEMA}` });
    await bare.connect();
    result.topology = {};
    for (const hours of [720, 24]) {
      const service = [];
      const raw = [];
      const peers = [];
      for (let i = 0; i < 3; i++) await hostTopology(db, org.id, hosts[i], hours);
      for (const id of hosts) {
        const now = new Date();
        captured.length = 0;
        await hostTopology(spy, org.id, id, hours, now);
        const statements = captured.map((c) => ({ text: c.sql, values: c.parameters.map((v) => (v instanceof Date ? v.toISOString() : v)) }));
        // Alternate which goes first, so neither is always the one that warms the cache.
        const runBare = async () => {
          const t0 = performance.now();
          for (const s of statements) await bare.query(s);
          raw.push(performance.now() - t0);
        };
        const runService = async () => {
          const t0 = performance.now();
          const t = await hostTopology(db, org.id, id, hours, now);
          service.push(performance.now() - t0);
          peers.push(t.inbound.length + t.outbound.length);
        };
        if (service.length % 2) { await runBare(); await runService(); } else { await runService(); await runBare(); }
      }
      const busyService = service.slice(0, BUSY);
      result.topology[hours] = {
        p50: q(service, 50), p99: q(service, 99), rawP50: q(raw, 50), rawP99: q(raw, 99), busyP50: q(busyService, 50), busyMax: Math.max(...busyService),
        busyPeers: Math.round(peers.slice(0, BUSY).reduce((a, b) => a + b, 0) / BUSY),
      };
      result.topology[hours].ratioP50 = result.topology[hours].p50 / result.topology[hours].rawP50;
      result.topology[hours].ratioP99 = result.topology[hours].p99 / result.topology[hours].rawP99;
      console.log('topology', hours, result.topology[hours]);
    }
    await bare.end();
    await spy.destroy();
  }

  if (PARTS.includes('dependencies')) {
    const now = new Date();
    const from = new Date(now.getTime() - 24 * 3_600_000);
    const build = [];
    const raw = [];
    let edges = 0;
    for (let i = 0; i < 3; i++) {
      let t0 = performance.now();
      const r = await sql`select src_ip, dst_ip, dst_port, protocol, sum(bytes) as bytes, sum(packets) as packets, count(*) as flows, max(bucket_start) as last_seen
        from flows where organisation_id = ${org.id} and bucket_start >= ${from} and bucket_start <= ${now} group by 1, 2, 3, 4`.execute(db);
      raw.push(performance.now() - t0);
      if (!r.rows.length) throw new Error('no conversations');
      t0 = performance.now();
      edges = (await rebuildDependencies(db, org.id, now)).edges;
      build.push(performance.now() - t0);
    }
    result.dependencies = { edges, build: q(build, 50), raw: q(raw, 50) };
    result.dependencies.ratio = result.dependencies.build / result.dependencies.raw;
    console.log('dependencies', result.dependencies);
  }
  await database.close();
}
result.loadEnd = os.loadavg()[0];
console.log(JSON.stringify(result, null, 2));
if (process.env.BENCH_OUT) writeFileSync(process.env.BENCH_OUT, JSON.stringify(result, null, 2));
