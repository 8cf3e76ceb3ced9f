// Advisory matching benchmark (issue 13), on PostgreSQL (BENCH_DATABASE_URL), schema
// `bench_advisories`: 250,000 NVD records of the real shape (CVE API 2.0 `configurations` with
// version ranges) imported through the real import, 1,000,000 services in one organisation and
// 10,000 in another. Reports the import, the full first match of each, and an incremental tick
// after 1,000 services changed version, as the ratio of that tick at 1,000,000 services to the
// same tick at 10,000 (target ≤ 2: the cost follows the change, not the inventory). The section is
// written into docs/benchmarks.md.
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { sql } from 'kysely';
import pg from 'pg';
import * as admin from '../packages/server/dist/admin/admin.service.js';
import { importAdvisories } from '../packages/server/dist/advisories/import.service.js';
import { matchOrganisation } from '../packages/server/dist/advisories/match.service.js';
import { openDatabase } from '../packages/server/dist/db/database.js';
import { migrate } from '../packages/server/dist/db/migrate.js';

const URL_ = process.env.BENCH_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/postgres';
const SCHEMA = 'bench_advisories';
const ADVISORIES = Number(process.env.BENCH_ADVISORIES || 250_000);
const LARGE = Number(process.env.BENCH_ADVISORY_SERVICES || 1_000_000);
const SMALL = 10_000;
const CHANGED = 1_000;
const PER_PRODUCT = 10;
const PRODUCTS = ADVISORIES / PER_PRODUCT;
const TICKS = 5;

const root = new pg.Client({ connectionString: URL_ });
await root.connect();
await root.query(`drop schema if exists ${SCHEMA} cascade`);
await root.query(`create schema ${SCHEMA}`);
await root.end();
const database = await openDatabase({ url: URL_, poolMax: 4, searchPath: SCHEMA });
await migrate(database);
const db = database.db;

/** Advisory k of product p: affects versions k.0 ≤ v < k.1 (one in ten of the versions services run). */
function record(p, k) {
  const id = `CVE-2030-${String(p * PER_PRODUCT + k).padStart(6, '0')}`;
  return {
    cve: {
      id,
      sourceIdentifier: 'cve@mitre.org',
      published: '2024-03-01T10:15:00.000',
      lastModified: '2024-04-01T10:15:00.000',
      vulnStatus: 'Analyzed',
      descriptions: [{ lang: 'en', value: `A flaw in product${p} before ${k}.1 allows a remote attacker to do something unwelcome.` }],
      metrics: {
        cvssMetricV31: [{ source: 'nvd@nist.gov', type: 'Primary', cvssData: { version: '3.1', vectorString: 'CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:H/I:N/A:N', baseScore: 7.5, baseSeverity: 'HIGH' }, exploitabilityScore: 3.9, impactScore: 3.6 }],
      },
      weaknesses: [{ source: 'nvd@nist.gov', type: 'Primary', description: [{ lang: 'en', value: 'CWE-200' }] }],
      configurations: [{
        nodes: [{
          operator: 'OR',
          negate: false,
          cpeMatch: [
            { vulnerable: true, criteria: `cpe:2.3:a:vendor${p}:product${p}:*:*:*:*:*:*:*:*`, versionStartIncluding: `${k}.0`, versionEndExcluding: `${k}.1`, matchCriteriaId: '9A5D8E6B-0000-4000-8000-000000000000' },
            { vulnerable: false, criteria: `cpe:2.3:o:vendor${p}:firmware${p}:-:*:*:*:*:*:*:*`, matchCriteriaId: '9A5D8E6B-0000-4000-8000-000000000001' },
          ],
        }],
      }],
      references: [{ url: `https://vendor${p}.example/security/${id}`, source: 'cve@mitre.org', tags: ['Vendor Advisory'] }],
    },
  };
}

console.log(`importing ${ADVISORIES.toLocaleString('en')} advisories…`);
let t0 = performance.now();
for (let p = 0; p < PRODUCTS; p += 1000) {
  const records = [];
  for (let q = p; q < Math.min(PRODUCTS, p + 1000); q++) for (let k = 0; k < PER_PRODUCT; k++) records.push(record(q, k));
  await importAdvisories(db, [{ resultsPerPage: records.length, startIndex: 0, totalResults: records.length, format: 'NVD_CVE', version: '2.0', vulnerabilities: records }]);
}
const importMs = performance.now() - t0;
await sql`analyze advisories`.execute(db);
await sql`analyze advisory_products`.execute(db);

/** An organisation with `n` services on n/10 hosts, service g running product (g mod PRODUCTS) version a.b. */
async function inventory(name, n) {
  const org = (await admin.createOrganisation(db, { type: 'cli' }, { name, ownerEmail: `${name}@bench.test` })).organisationId;
  const hosts = Math.ceil(n / 10);
  await sql`insert into hosts (organisation_id, fingerprint, hostname) select ${org}, 'fp-' || g, 'host-' || g from generate_series(1, ${hosts}) g`.execute(db);
  await sql`
    insert into services (organisation_id, host_id, protocol, port, product, version, cpe)
    select ${org}, h.id, 'tcp', 1000 + s, 'product' || ((h.seq * 10 + s) % ${PRODUCTS}),
           ((h.seq * 7 + s) % 10) || '.' || ((h.seq * 3 + s * 7) % 10),
           'cpe:2.3:a:vendor' || ((h.seq * 10 + s) % ${PRODUCTS}) || ':product' || ((h.seq * 10 + s) % ${PRODUCTS}) || ':' || ((h.seq * 7 + s) % 10) || '.' || ((h.seq * 3 + s * 7) % 10) || ':*:*:*:*:*:*:*'
    from hosts h cross join generate_series(0, 9) s
    where h.organisation_id = ${org} and h.seq * 10 + s < (select min(seq) from hosts where organisation_id = ${org}) * 10 + ${n}`.execute(db);
  await sql`analyze services`.execute(db);
  return org;
}

/** 1,000 services move to another version, as an ingest would write them: the row and its change-log entry. */
async function change(org, round) {
  await db.transaction().execute(async (trx) => {
    const r = await sql`
      with picked as (select id from services where organisation_id = ${org} order by id limit ${CHANGED} offset ${round * CHANGED}),
      up as (
        update services s set version = (split_part(s.version, '.', 1)::int) || '.' || ((split_part(s.version, '.', 2)::int + 1 + ${round}) % 10),
          cpe = regexp_replace(s.cpe, ':[0-9]+\\.[0-9]+:', ':' || split_part(s.version, '.', 1) || '.' || ((split_part(s.version, '.', 2)::int + 1 + ${round}) % 10) || ':'),
          updated_at = now()
        from picked where s.organisation_id = ${org} and s.id = picked.id returning s.id)
      insert into change_log (organisation_id, entity_type, entity_id, action) select ${org}, 'service', id, 'updated' from up`.execute(trx);
    return r;
  });
}

async function timed(fn) {
  const t = performance.now();
  const v = await fn();
  return { ms: performance.now() - t, v };
}

const sizes = {};
for (const [name, n] of [['small', SMALL], ['large', LARGE]]) {
  console.log(`${name}: ${n.toLocaleString('en')} services…`);
  const org = await inventory(name, n);
  const full = await timed(() => matchOrganisation(db, org));
  // Let autovacuum's work on the fresh rows happen now, not during the ticks being measured.
  for (const table of ['services', 'vulnerabilities', 'service_match_keys', 'change_log', 'audit_log']) await sql.raw(`vacuum analyze ${table}`).execute(db);
  const ticks = [];
  for (let round = 0; round < TICKS; round++) {
    await change(org, round);
    ticks.push(await timed(() => matchOrganisation(db, org)));
  }
  const findings = (await sql`select count(*)::int as n from vulnerabilities where organisation_id = ${org}`.execute(db)).rows[0].n;
  sizes[name] = { n, full, ticks, findings };
  console.log(name, { fullMs: Math.round(full.ms), findings, ticks: ticks.map((x) => Math.round(x.ms)), matched: ticks.map((x) => x.v.value.servicesMatched) });
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const tick = (s) => median(s.ticks.map((x) => x.ms));
const ratio = tick(sizes.large) / tick(sizes.small);
const row = (s) => `| ${s.n.toLocaleString('en')} | ${(s.full.ms / 1000).toFixed(1)} | ${Math.round(s.n / (s.full.ms / 1000)).toLocaleString('en')} | ${s.findings.toLocaleString('en')} | ${tick(s).toFixed(0)} | ${median(s.ticks.map((x) => x.v.value.servicesMatched))} |`;
const out = [
  '## Advisory matching (issue 13)',
  '',
  `${ADVISORIES.toLocaleString('en')} NVD CVE API 2.0 records of the real shape (a vulnerable application criterion with \`versionStartIncluding\`/\`versionEndExcluding\` and a platform criterion each, ${PER_PRODUCT} per product over ${PRODUCTS.toLocaleString('en')} products), imported through \`importAdvisories\` in ${(importMs / 1000).toFixed(1)} s (${Math.round(ADVISORIES / (importMs / 1000)).toLocaleString('en')} a second). Each service runs one of those products at one of 100 versions (one in ten vulnerable). \`matchOrganisation\` (the job cve.match for one organisation): the first run matches every service; then ${TICKS} ticks, each after ${CHANGED.toLocaleString('en')} services moved to another version (rows and change-log entries as an ingest writes them), median shown.`,
  '',
  '| services | full first match s | services/s | findings | incremental tick ms | services matched in the tick |',
  '|---|---|---|---|---|---|',
  row(sizes.small),
  row(sizes.large),
  '',
  `Incremental tick at ${LARGE.toLocaleString('en')} services ÷ the same tick at ${SMALL.toLocaleString('en')}: **${ratio.toFixed(2)}** (target ≤ 2: the tick reads the change log since the last run and the advisories of the changed services' products, never the inventory).`,
];
console.log(out.join('\n'));
const doc = fileURLToPath(new URL('../docs/benchmarks.md', import.meta.url));
const text = readFileSync(doc, 'utf8');
const start = text.indexOf('\n## Advisory matching (issue 13)');
let next = start < 0 ? -1 : text.indexOf('\n## ', start + 1);
const updated = start < 0 ? `${text.trimEnd()}\n\n${out.join('\n')}\n` : `${text.slice(0, start).trimEnd()}\n\n${out.join('\n')}\n${next < 0 ? '' : `${text.slice(next)}`}`;
writeFileSync(doc, updated.endsWith('\n') ? updated : `${updated}\n`);
await database.close();
if (ratio > 2) process.exitCode = 1;
