// Metrics benchmark (issue 6): one scrape of GET /api/v1/metrics for an organisation with
// 1,000,000 hosts (5 services each, daemons, sessions, findings, certificates), on PostgreSQL
// (BENCH_DATABASE_URL). Target: under 1 second. Data is generated once into schema
// `bench_metrics`; the section is appended to (or replaced in) docs/benchmarks.md.
import http from 'node:http';
import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { sql } from 'kysely';
import pg from 'pg';
import * as admin from '../packages/server/dist/admin/admin.service.js';
import { loadConfig } from '../packages/server/dist/config.js';
import { openDatabase } from '../packages/server/dist/db/database.js';
import { migrate } from '../packages/server/dist/db/migrate.js';
import { buildWebApp } from '../packages/server/dist/main.js';
import { createLogger } from '../packages/server/dist/logger.js';

const URL_ = process.env.BENCH_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/postgres';
const SCHEMA = 'bench_metrics';
const HOSTS = Number(process.env.BENCH_METRICS_HOSTS || 1_000_000);
const SCRAPES = 30;
const root = new pg.Client({ connectionString: URL_ });
await root.connect();
await root.query(`create schema if not exists ${SCHEMA}`);
await root.end();
const database = await openDatabase({ url: URL_, poolMax: 10, searchPath: SCHEMA });
await migrate(database);
const db = database.db;
let org = await db.selectFrom('organisations').select('id').where('name', '=', 'metrics').executeTakeFirst();
const have = org ? (await sql`select count(*)::int as n from hosts where organisation_id = ${org.id}`.execute(db)).rows[0].n : 0;
if (!org || have !== HOSTS) {
  console.log(`generating ${HOSTS.toLocaleString('en')} hosts with 5 services each (once)…`);
  if (org) await db.deleteFrom('organisations').where('id', '=', org.id).execute();
  org = { id: (await admin.createOrganisation(db, { type: 'cli' }, { name: 'metrics', ownerEmail: 'metrics@bench.test' })).organisationId };
  for (let from = 1; from <= HOSTS; from += 250_000) {
    const to = Math.min(HOSTS, from + 249_999);
    await sql`insert into hosts (organisation_id, fingerprint, hostname) select ${org.id}, 'fp-' || g, 'host-' || g from generate_series(${from}::int, ${to}::int) g`.execute(db);
    process.stdout.write('.');
  }
  await sql`insert into services (organisation_id, host_id, protocol, port, state, name)
    select h.organisation_id, h.id, 'tcp', p, 'open', 'svc' from hosts h, unnest(array[22, 80, 443, 5432, 8080]) p where h.organisation_id = ${org.id}`.execute(db);
  process.stdout.write('.');
  // Findings on one service in 20, certificates on one host in 10 (validity spread over 60 days).
  await sql`insert into vulnerabilities (organisation_id, host_id, service_id, cve_id, severity, state)
    select s.organisation_id, s.host_id, s.id, 'CVE-2024-' || (10000 + s.seq % 5000), (array['critical','high','medium','low','none'])[1 + s.seq % 5], (array['open','acknowledged','resolved','false_positive'])[1 + s.seq % 4]
    from services s where s.organisation_id = ${org.id} and s.seq % 20 = 0`.execute(db);
  await sql`insert into certificates (organisation_id, host_id, port, subject, issuer, not_before, not_after, sha256, trust_status)
    select h.organisation_id, h.id, 443, 'CN=' || h.hostname, 'CN=bench', now() - interval '300 days', now() + ((h.seq % 60) - 5) * interval '1 day', md5(h.id::text) || md5(h.hostname), 'trusted'
    from hosts h where h.organisation_id = ${org.id} and h.seq % 10 = 0`.execute(db);
  const key = await admin.createDaemonKey(db, { type: 'cli' }, { org: org.id });
  await sql`insert into daemons (organisation_id, key_id, name, status, last_heartbeat_at)
    select ${org.id}, ${key.id}, 'd-' || g, (array['online','degraded','pending'])[1 + g % 3], now() - (g % 600) * interval '1 second' from generate_series(1, 500) g`.execute(db);
  await sql`analyze`.execute(db);
  console.log('');
}
const config = loadConfig({ SERVICE_LOG_LEVEL: 'silent', SERVICE_RATE_LIMIT_KEY_PER_MINUTE: '1000000', SERVICE_PORT: '0' });
const app = await buildWebApp({ config, database, logger: createLogger('silent'), secretKey: randomBytes(32) });
await app.listen({ host: '127.0.0.1', port: 0 });
const port = app.server.address().port;
const email = `scraper-${Date.now()}@bench.test`;
await admin.createUser(db, { type: 'cli' }, { org: org.id, email, role: 'viewer' });
const token = (await admin.createApiKey(db, { type: 'cli' }, { org: org.id, userEmail: email, scopes: ['metrics:read'], kind: 'metrics' })).token;
const agent = new http.Agent({ keepAlive: true });
const scrape = () =>
  new Promise((resolve, reject) => {
    const t0 = performance.now();
    http.get({ host: '127.0.0.1', port, path: '/api/v1/metrics', agent, headers: { authorization: `Bearer ${token}` } }, (res) => {
      let body = '';
      res.on('data', (c) => (body += c));
      res.on('end', () => (res.statusCode === 200 ? resolve({ ms: performance.now() - t0, body }) : reject(new Error(`metrics ${res.statusCode} ${body}`))));
    }).on('error', reject);
  });
await scrape(); // warm
const times = [];
let last;
for (let i = 0; i < SCRAPES; i++) {
  last = await scrape();
  times.push(last.ms);
}
times.sort((a, b) => a - b);
const q = (p) => times[Math.ceil((p / 100) * times.length) - 1];
const hosts = /^service_hosts (\d+)$/m.exec(last.body)[1];
const services = /^service_services (\d+)$/m.exec(last.body)[1];
const out = [
  '## Metrics scrape (issue 6)',
  '',
  `\`GET /api/v1/metrics\` through HTTP, client included, for an organisation with ${Number(hosts).toLocaleString('en')} hosts, ${Number(services).toLocaleString('en')} services, 500 daemons, findings and certificates; ${SCRAPES} scrapes (${new Date().toISOString().slice(0, 10)}):`,
  '',
  '| p50 ms | p99 ms | target |',
  '|---|---|---|',
  `| ${q(50).toFixed(0)} | **${q(99).toFixed(0)}** | < 1000 ms |`,
  '',
  'Seven fixed queries, run concurrently: grouped counts of daemons, sessions and findings, one pass over the certificates expiring within 30 days, the host and service counts, the latest snapshot and the job status. None loops over hosts; the two counts are the cost that grows with the inventory.',
];
console.log(out.join('\n'));
await app.close();
await database.close();
const doc = fileURLToPath(new URL('../docs/benchmarks.md', import.meta.url));
const text = readFileSync(doc, 'utf8');
const at = text.indexOf('\n## Metrics scrape (issue 6)');
const kept = (at >= 0 ? text.slice(0, at) : text).trimEnd();
writeFileSync(doc, `${kept}\n\n${out.join('\n')}\n`);
process.exit(0);
