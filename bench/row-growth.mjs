// Row growth benchmark (issue 30), on PostgreSQL (BENCH_DATABASE_URL), schema `bench_row_growth`:
// how many rows a deployment of 10,000 organisations (BENCH_ROW_GROWTH_ORGS) writes a day by
// itself, with nobody using it. The organisations are inserted with SQL (empty: no daemon, no
// network); then every scheduled job of the build (`jobDefinitions`, the scheduler's own list)
// ticks through the service's JobRunner, its clock moved on by the job's interval between ticks,
// as the scheduler would. The rows of every table are counted before and after each tick; a day is
// extrapolated per job from its steady ticks (every tick after its first) times its ticks a day
// (the first tick of a day of inventory.snapshot, the one that takes the day's snapshot, counted
// once a day). A job's first tick ever may write more (a first run is a state change): shown apart.
//
// With the retention job of this build (events.prune), it also times the pruning of a backlog of
// BENCH_ROW_GROWTH_BACKLOG change rows older than the window (the set-based batched deletes).
//
// The section "Row growth (issue 30)" of docs/benchmarks.md is written from this run; the figures
// before issue 30 are kept in BEFORE (measured with this script on the build before the change).
import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { sql } from 'kysely';
import pg from 'pg';

// The build measured: packages/server/dist, or BENCH_SERVER_DIST (a copy of an older build, next to it).
const dist = new URL(`${process.env.BENCH_SERVER_DIST ?? '../packages/server/dist'}/`, import.meta.url);
const { loadConfig } = await import(new URL('config.js', dist));
const { openDatabase } = await import(new URL('db/database.js', dist));
const { migrate } = await import(new URL('db/migrate.js', dist));
const { JobRunner } = await import(new URL('jobs/runner.js', dist));
const { createLogger } = await import(new URL('logger.js', dist));
const { jobDefinitions } = await import(new URL('main.js', dist));

const URL_ = process.env.BENCH_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/postgres';
const SCHEMA = process.env.BENCH_ROW_GROWTH_SCHEMA || 'bench_row_growth';
const ORGS = Number(process.env.BENCH_ROW_GROWTH_ORGS || 10_000);
const BACKLOG = Number(process.env.BENCH_ROW_GROWTH_BACKLOG || 1_000_000);
const DAY = 86_400_000;
/** Ticks per job: the first, then steady ones (the short jobs get more, they dominate a day). */
const ticksOf = (intervalMs) => (intervalMs <= 60_000 ? 4 : 2);
/** What this bench measured of the service before issue 30 (a build of that tree, same machine), kept as the record. */
const BEFORE =
  'Before (the build of 3e215c1, whose runner logged every run\'s start and end to the change log; this bench on it, same machine, 2026-11-27, load average 6.6 to 13 from tests and a second run alongside): ' +
  '**130,590,000** rows a day, **130,080,000** of them `job.started` / `job.finished` change rows, two per organisation per tick of every job ' +
  '(`scan.schedule` 57,600,000, `scan.stall` 28,800,000, `notify.deliver` 28,800,000, `cve.match` 5,760,000, `cloud.k8s` 5,760,000, `cloud.sync` 1,920,000, ' +
  '`topology.dependencies`, `notify.certificates` and `inventory.snapshot` 480,000 each); the rest `topology.updated` change rows 480,000, `snapshot.created` 10,000, ' +
  '`snapshots` 10,000, `audit_log` 10,000. Nothing was pruned: the change log alone grew by 130 million rows a day, forever.';

const root = new pg.Client({ connectionString: URL_ });
await root.connect();
// A previous run's 20,000 id counters, 1,000 a statement: one `drop schema` of them all would need
// more locks than max_locks_per_transaction allows.
for (;;) {
  const r = await root.query(`select string_agg(format('%I.%I', $1::text, relname), ', ') as names from (
    select c.relname from pg_class c join pg_namespace n on n.oid = c.relnamespace where n.nspname = $1 and c.relkind = 'S' and c.relname like 'org\\_%' limit 1000) x`, [SCHEMA]);
  if (!r.rows[0].names) break;
  await root.query(`drop sequence ${r.rows[0].names}`);
}
await root.query(`drop schema if exists ${SCHEMA} cascade`);
await root.query(`create schema ${SCHEMA}`);
await root.end();
const database = await openDatabase({ url: URL_, poolMax: 4, searchPath: SCHEMA });
await migrate(database);
const db = database.db;

// --- 10,000 organisations (each makes its two id counters: batches keep the locks of one
// transaction below max_locks_per_transaction) -------------------------------------------------
const t0 = performance.now();
for (let i = 0; i < ORGS; i += 500) {
  await sql`insert into organisations (name) select 'org-' || g from generate_series(${i + 1}::int, ${Math.min(ORGS, i + 500)}::int) g`.execute(db);
}
console.log(`${ORGS} organisations in ${((performance.now() - t0) / 1000).toFixed(1)} s`);

const tables = (
  await sql`select c.relname as name from pg_class c join pg_namespace n on n.oid = c.relnamespace
    where n.nspname = ${SCHEMA} and c.relkind in ('r', 'p') and not c.relispartition order by 1`.execute(db)
).rows.map((r) => r.name);

/** Rows of every table of the schema now; the change log's job rows apart (`change_log (job)`). */
async function counts() {
  const each = tables.map((t) => (t === 'change_log' ? `select '${t}' as name, count(*) filter (where entity_type <> 'job') as n from ${t} union all select '${t} (job)', count(*) filter (where entity_type = 'job') from ${t}` : `select '${t}' as name, count(*)::bigint as n from ${t}`));
  const r = await sql.raw(each.join(' union all ')).execute(db);
  return new Map(r.rows.map((x) => [x.name, Number(x.n)]));
}
const diff = (a, b) => new Map([...b].map(([k, v]) => [k, v - (a.get(k) ?? 0)]).filter(([, v]) => v !== 0));

const config = loadConfig({ DATABASE_URL: URL_, SERVICE_SECRET_KEY: randomBytes(32).toString('hex'), SERVICE_LOG_LEVEL: 'silent' });
const jobs = jobDefinitions({ config, secretKey: randomBytes(32) });
// The clock starts a minute into today (UTC), so the steady ticks of the hourly jobs fall on the same day.
const base = Math.floor(Date.now() / DAY) * DAY + 60_000;
let clock = base;
const runner = new JobRunner({ database, logger: createLogger('silent'), jobs, now: () => new Date(clock), sleep: async () => {} });

const perJob = [];
for (const job of jobs) {
  if (job.name === 'events.prune') continue; // timed below, on a backlog
  const n = ticksOf(job.intervalMs);
  const seen = [await counts()];
  const times = [];
  for (let i = 0; i < n; i++) {
    clock = base + i * job.intervalMs;
    const t = performance.now();
    const r = await runner.tick(job.name);
    times.push(performance.now() - t);
    if (!r.ran || r.outcome !== 'ok') console.warn(`${job.name}: tick ${i + 1} ${r.ran ? r.outcome : 'skipped'} ${r.error ?? ''}`);
    seen.push(await counts());
  }
  const first = diff(seen[0], seen[1]);
  const steadyTotal = diff(seen[1], seen[n]);
  const steady = new Map([...steadyTotal].map(([k, v]) => [k, v / (n - 1)]));
  const perDay = DAY / job.intervalMs;
  // inventory.snapshot takes the day's snapshot on the day's first tick: that tick comes once a day.
  // job_status holds one row per job and organisation, updated in place: written once, never grown.
  // The day's first tick of inventory.snapshot comes once a day, but not its job rows (a first run ever).
  const daily = new Map();
  const dailyFirst = (k) => job.name === 'inventory.snapshot' && k !== 'change_log (job)';
  for (const k of new Set([...first.keys(), ...steady.keys()])) {
    if (k === 'job_status') continue;
    const v = dailyFirst(k) ? (first.get(k) ?? 0) + (perDay - 1) * (steady.get(k) ?? 0) : perDay * (steady.get(k) ?? 0);
    if (v !== 0) daily.set(k, v);
  }
  const oneOff = new Map([...first].map(([k, v]) => [k, k === 'job_status' ? v : dailyFirst(k) ? 0 : v - (steady.get(k) ?? 0)]).filter(([, v]) => v !== 0));
  perJob.push({ job: job.name, intervalMs: job.intervalMs, perDay, ticks: n, ms: times, first, steady, daily, oneOff });
  console.log(`${job.name} (${n} ticks, ${times.map((t) => (t / 1000).toFixed(2)).join(' / ')} s): a day ${fmtMap(daily)}; first tick once: ${fmtMap(oneOff)}`);
}

function fmtMap(m) {
  return m.size === 0 ? 'none' : [...m].map(([k, v]) => `${k} ${Math.round(v).toLocaleString('en-US')}`).join(', ');
}

const byTable = new Map();
for (const j of perJob) for (const [k, v] of j.daily) byTable.set(k, (byTable.get(k) ?? 0) + v);
const total = [...byTable.values()].reduce((a, b) => a + b, 0);
console.log(`a day, every job: ${Math.round(total).toLocaleString('en-US')} rows (${fmtMap(byTable)})`);

// --- Pruning a backlog (the build's retention job, when it has one) --------------------------
let prune = null;
const pruneJob = jobs.find((j) => j.name === 'events.prune');
if (pruneJob) {
  const orgs = (await sql`select id from organisations order by id limit 1000`.execute(db)).rows.map((r) => r.id);
  const perOrg = Math.ceil(BACKLOG / orgs.length);
  const t = performance.now();
  for (let i = 0; i < orgs.length; i += 100) {
    await sql`insert into change_log (organisation_id, entity_type, entity_id, action, at)
      select o, 'host', gen_random_uuid()::text, 'updated', now() - interval '30 days' + g * interval '1 second'
      from unnest(${orgs.slice(i, i + 100)}::uuid[]) o, generate_series(1, ${perOrg}::int) g`.execute(db);
  }
  const seeded = (await sql`select count(*)::int as n from change_log where at < now() - interval '20 days'`.execute(db)).rows[0].n;
  console.log(`backlog: ${seeded.toLocaleString('en-US')} change rows 30 days old (${((performance.now() - t) / 1000).toFixed(1)} s to write)`);
  const before = await counts();
  clock = Date.now();
  const t1 = performance.now();
  const r = await runner.tick('events.prune');
  const ms = performance.now() - t1;
  const after = await counts();
  const left = (await sql`select count(*)::int as n from change_log where at < now() - interval '20 days'`.execute(db)).rows[0].n;
  prune = { seeded, ms, deleted: -(diff(before, after).get('change_log') ?? 0), left, detail: r.result?.detail, outcome: r.outcome }; // the tick's own job rows are counted apart
  console.log(`events.prune: ${r.outcome}, ${prune.deleted.toLocaleString('en-US')} rows in ${(ms / 1000).toFixed(1)} s (${Math.round(prune.deleted / (ms / 1000)).toLocaleString('en-US')} rows/s), ${left} old rows left; ${JSON.stringify(r.result?.detail ?? {})}`);
}

await runner.stop();
await database.close();

// --- The section of docs/benchmarks.md --------------------------------------------------------
const machine = `${os.cpus().length} × ${os.cpus()[0]?.model?.trim() ?? 'CPU'}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, PostgreSQL ${(await pgVersion())}, load average ${os.loadavg().map((x) => x.toFixed(1)).join(' ')}`;
async function pgVersion() {
  const c = new pg.Client({ connectionString: URL_ });
  await c.connect();
  const v = (await c.query('show server_version')).rows[0].server_version;
  await c.end();
  return v;
}
const n = (v) => Math.round(v).toLocaleString('en-US');
const out = [
  '## Row growth (issue 30)',
  '',
  `\`bench/row-growth.mjs\`: ${n(ORGS)} empty organisations on PostgreSQL; every scheduled job ticks through the service's JobRunner with its clock moved on by the job's interval, rows of every table counted around each tick, a day extrapolated from each job's steady ticks × its ticks a day. ${new Date().toISOString().slice(0, 10)}, ${machine}.`,
  '',
  ...(BEFORE ? [BEFORE, ''] : []),
  `This build, a day (rows written by the jobs alone, nobody using the service): **${n(total)}**${byTable.size ? ` (${fmtMap(byTable)})` : ''}.`,
  '',
  '| Job | Ticks a day | Rows a day | Once, on its first tick ever |',
  '|---|---|---|---|',
  ...perJob.map((j) => `| \`${j.job}\` | ${n(j.perDay)} | ${fmtMap(j.daily)} | ${fmtMap(j.oneOff)} |`),
  '',
  ...(prune
    ? [`Pruning (\`events.prune\`, batches of 10,000): ${n(prune.deleted)} change rows 30 days old deleted in ${(prune.ms / 1000).toFixed(1)} s (${n(prune.deleted / (prune.ms / 1000))} rows/s), ${n(prune.left)} left.`, '']
    : []),
];
console.log(`\n${out.join('\n')}`);
if (process.env.BENCH_ROW_GROWTH_WRITE !== '0') {
  const doc = fileURLToPath(new URL('../docs/benchmarks.md', import.meta.url));
  const title = '\n## Row growth (issue 30)';
  let text = readFileSync(doc, 'utf8');
  const start = text.indexOf(title);
  const next = start < 0 ? -1 : text.indexOf('\n## ', start + 1);
  text = start < 0 ? `${text.trimEnd()}\n\n${out.join('\n').trimEnd()}\n` : `${text.slice(0, start).trimEnd()}\n\n${out.join('\n').trimEnd()}\n${next < 0 ? '' : text.slice(next)}`;
  writeFileSync(doc, text);
}
