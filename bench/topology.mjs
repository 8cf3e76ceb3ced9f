// Host topology benchmark (issue 4): GET /api/v1/hosts/{id}/topology at windowHours=720 over
// 10,000,000 flow records in 30 daily partitions, on PostgreSQL (BENCH_DATABASE_URL). Data is
// generated once into schema `bench_topology`; the section is appended to docs/benchmarks.md.
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import * as admin from '../packages/server/dist/admin/admin.service.js';
import { openDatabase } from '../packages/server/dist/db/database.js';
import { migrate } from '../packages/server/dist/db/migrate.js';
import { hostTopology } from '../packages/server/dist/topology/topology.service.js';

const URL_ = process.env.BENCH_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/postgres';
const SCHEMA = 'bench_topology';
const FLOWS = Number(process.env.BENCH_TOPOLOGY_FLOWS || 10_000_000);
const HOSTS = 10_000;
const root = new pg.Client({ connectionString: URL_ });
await root.connect();
await root.query(`create schema if not exists ${SCHEMA}`);
await root.end();
const database = await openDatabase({ url: URL_, poolMax: 4, searchPath: SCHEMA });
await migrate(database);
const db = database.db;
let org = await db.selectFrom('organisations').select('id').where('name', '=', 'topology').executeTakeFirst();
const have = org ? (await sql`select count(*)::int as n from flows where organisation_id = ${org.id}`.execute(db)).rows[0].n : 0;
if (!org || have !== FLOWS) {
  console.log(`generating ${HOSTS} hosts and ${FLOWS} flows over 30 days (once)…`);
  if (org) await db.deleteFrom('organisations').where('id', '=', org.id).execute();
  await sql`delete from flows`.execute(db);
  org = { id: (await admin.createOrganisation(db, { type: 'cli' }, { name: 'topology', ownerEmail: 'topology@bench.test' })).organisationId };
  await sql`insert into hosts (organisation_id, fingerprint, hostname) select ${org.id}, 'fp-' || g, 'host-' || g from generate_series(1, ${HOSTS}) g`.execute(db);
  await sql`insert into host_addresses (organisation_id, host_id, address) select organisation_id, id, '10.40.0.0'::inet + seq from hosts where organisation_id = ${org.id}`.execute(db);
  const day0 = Math.floor(Date.now() / 86_400_000) * 86_400_000 - 29 * 86_400_000;
  for (let d = 0; d < 31; d++) {
    const from = new Date(day0 + d * 86_400_000).toISOString().slice(0, 10);
    const to = new Date(day0 + (d + 1) * 86_400_000).toISOString().slice(0, 10);
    await sql.raw(`create table if not exists flows_${from.replace(/-/g, '')} partition of flows for values from ('${from}T00:00:00Z') to ('${to}T00:00:00Z')`).execute(db);
  }
  const daemon = '00000000-0000-4000-8000-000000000001';
  const perDay = Math.ceil(FLOWS / 30);
  for (let d = 0; d < 30; d++) {
    const n = Math.min(perDay, FLOWS - d * perDay);
    await sql`
      insert into flows (organisation_id, bucket_start, daemon_id, src_ip, dst_ip, dst_port, protocol, packets, bytes, source)
      select ${org.id}, to_timestamp(${day0 / 1000 + d * 86400}::float8 + (g % 86400)), ${daemon}::uuid,
             '10.40.0.0'::inet + (1 + (g * 7919) % ${HOSTS}::int), '10.40.0.0'::inet + (1 + (g * 104729) % ${HOSTS}::int), (array[22, 80, 443, 5432, 8080])[(1 + g % 5)::int], 'tcp', 1 + g % 40, 100 + g % 5000, 'ebpf'
      from generate_series(${d * perDay}::bigint, ${d * perDay + n - 1}::bigint) g`.execute(db);
    process.stdout.write('.');
  }
  await sql`analyze flows`.execute(db);
  console.log('');
}
const hosts = (await sql`select id from hosts where organisation_id = ${org.id} order by seq limit 200`.execute(db)).rows.map((r) => r.id);
for (let i = 0; i < 3; i++) await hostTopology(db, org.id, hosts[i], 720);
const samples = [];
for (const id of hosts) {
  const t0 = performance.now();
  const t = await hostTopology(db, org.id, id, 720);
  samples.push(performance.now() - t0);
  if (t.inbound.length === 0) throw new Error('expected callers');
}
samples.sort((a, b) => a - b);
const q = (p) => samples[Math.ceil((p / 100) * samples.length) - 1];
const captured = [];
const spy = new Kysely({ dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: URL_, max: 1, options: `-c search_path=${SCHEMA}` }) }), log: (e) => captured.push(e.query) });
await hostTopology(spy, org.id, hosts[0], 720);
const inbound = captured.find((c) => c.sql.includes('"dst_ip" in'));
const literal = (v) => (typeof v === 'number' ? String(v) : v instanceof Date ? `'${v.toISOString()}'` : `'${String(v).replace(/'/g, "''")}'`);
const plan = (await sql.raw(`explain ${inbound.sql.replace(/\$(\d+)/g, (_, n) => literal(inbound.parameters[n - 1]))}`).execute(db)).rows.map((r) => r['QUERY PLAN']);
await spy.destroy();
const out = [
  '## Host topology (issue 4)',
  '',
  `\`GET /api/v1/hosts/{id}/topology?windowHours=720\` (the service call) over ${FLOWS.toLocaleString('en')} flow records in 30 daily partitions, ${HOSTS.toLocaleString('en')} hosts (about ${Math.round((2 * FLOWS) / HOSTS).toLocaleString('en')} flows touch each host), 200 hosts:`,
  '',
  `| p50 ms | p99 ms |`,
  '|---|---|',
  `| ${q(50).toFixed(1)} | **${q(99).toFixed(1)}** |`,
  '',
  'Callers query plan (the (organisation, dst_ip, bucket_start) index, probed per address of the host, on every partition in the window):',
  '```',
  ...plan.filter((l) => !/^\s+Filter|Rows Removed|Recheck/.test(l)).slice(0, 30),
  '```',
];
console.log(out.join('\n'));
const doc = fileURLToPath(new URL('../docs/benchmarks.md', import.meta.url));
// Only this section is replaced (others follow it and are edited by other benches and people).
const text = readFileSync(doc, 'utf8');
const start = text.indexOf('\n## Host topology (issue 4)');
const next = start < 0 ? -1 : text.indexOf('\n## ', start + 1);
writeFileSync(doc, start < 0 ? `${text.trimEnd()}\n\n${out.join('\n')}\n` : `${text.slice(0, start)}\n${out.join('\n')}\n${next < 0 ? '' : text.slice(next)}`);
await database.close();
