import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as admin from '../src/admin/admin.service.js';
import { collectMetrics } from '../src/metrics/metrics.js';
import { haveTools } from '../../../test/system-tools.js';
import { addCertificate, addHost, addService, addVulnerability } from './fixtures.js';
import { type SeededOrg, type TestApp, bearer, buildTestApp, seedMemberWithKey, seedOrg } from './helpers.js';

const PROMETHEUS_DIR = fileURLToPath(new URL('../../../deploy/prometheus/', import.meta.url));

/** Parses the exposition into `name{labels}` → value, checking every sample line's syntax. */
function samples(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.trimEnd().split('\n')) {
    if (line.startsWith('#')) continue;
    const m = /^([a-z_]+)(\{[^}]*\})? (-?[0-9.e+]+)$/.exec(line);
    if (!m) throw new Error(`not a sample line: ${line}`);
    out.set(`${m[1]}${m[2] ?? ''}`, Number(m[3]));
  }
  return out;
}

describe('GET /api/v1/metrics (spec 4.8, decisions.md)', () => {
  let t: TestApp;
  let org: SeededOrg;
  let token: string;
  const scrape = async (tok = token) => t.app.inject({ method: 'GET', url: '/api/v1/metrics', headers: bearer(tok) });
  beforeAll(async () => {
    t = await buildTestApp();
    org = await seedOrg(t.database);
    token = (await seedMemberWithKey(t.database, org, 'viewer', ['metrics:read'])).token;
  });
  afterAll(() => t.close());

  it('answers the text exposition format 0.0.4', async () => {
    const res = await scrape();
    expect(res.statusCode, res.body).toBe(200);
    expect(res.headers['content-type']).toBe('text/plain; version=0.0.4; charset=utf-8');
    expect(res.body).toMatch(/^# HELP service_/);
  });

  it('refuses a key without metrics:read with 401 naming the scope, and no credential with 401', async () => {
    const reader = await seedMemberWithKey(t.database, org, 'admin', ['inventory:read']);
    const res = await scrape(reader.token);
    expect(res.statusCode).toBe(401);
    expect(res.json()).toMatchObject({ code: 'unauthorized', requiredScope: 'metrics:read' });
    expect(res.json().detail).toContain('metrics:read');
    const anon = await t.app.inject({ method: 'GET', url: '/api/v1/metrics' });
    expect(anon.statusCode).toBe(401);
    expect(anon.json().code).toBe('unauthorized');
  });

  it('lists every state of each count with 0 on an empty organisation, and no age series for things that do not exist', async () => {
    const empty = await seedOrg(t.database);
    const key = (await seedMemberWithKey(t.database, empty, 'viewer', ['metrics:read'])).token;
    const m = samples((await scrape(key)).body);
    for (const s of ['pending', 'online', 'degraded']) expect(m.get(`service_daemons{status="${s}"}`)).toBe(0);
    for (const s of ['queued', 'dispatched', 'running', 'completed', 'failed', 'cancelled', 'stalled']) expect(m.get(`service_scan_sessions{state="${s}"}`)).toBe(0);
    for (const sev of ['critical', 'high', 'medium', 'low', 'none']) {
      for (const st of ['open', 'acknowledged', 'resolved', 'false_positive']) expect(m.get(`service_findings{severity="${sev}",state="${st}"}`)).toBe(0);
    }
    for (const w of ['expired', '1d', '7d', '14d', '30d']) expect(m.get(`service_certificates_expiring{window="${w}"}`)).toBe(0);
    expect(m.get('service_hosts')).toBe(0);
    expect(m.get('service_services')).toBe(0);
    const names = [...m.keys()].map((k) => k.split('{')[0]);
    expect(names).not.toContain('service_snapshot_age_seconds');
    expect(names).not.toContain('service_cve_feed_age_seconds');
    expect(names).not.toContain('service_daemon_quiet_seconds');
    expect(names).not.toContain('service_job_last_run_age_seconds');
  });

  it('counts the organisation\'s own inventory, daemons, sessions, findings and expiring certificates, never another organisation\'s', async () => {
    const o = await seedOrg(t.database);
    const key = (await seedMemberWithKey(t.database, o, 'viewer', ['metrics:read'])).token;
    const db = t.database.db;
    const h1 = await addHost(db, o.organisationId, { hostname: 'a', addresses: ['10.9.0.1'] });
    const h2 = await addHost(db, o.organisationId, { hostname: 'b', addresses: ['10.9.0.2'] });
    const s1 = await addService(db, o.organisationId, h1, { port: 22 });
    await addService(db, o.organisationId, h2, { port: 443 });
    const gone = await addService(db, o.organisationId, h2, { port: 8080 });
    await sql`update services set gone_at = now() where id = ${gone}`.execute(db);
    await addVulnerability(db, o.organisationId, s1, h1, { cveId: 'CVE-2024-0001', severity: 'critical' });
    await addVulnerability(db, o.organisationId, s1, h1, { cveId: 'CVE-2024-0002', severity: 'high', state: 'acknowledged' });
    const now = new Date();
    const inDays = (d: number) => new Date(now.getTime() + d * 86_400_000);
    for (const [i, notAfter] of [inDays(-2), inDays(0.5), inDays(5), inDays(20), inDays(90)].entries()) {
      const id = await addCertificate(db, o.organisationId, h1, { trustStatus: 'trusted', port: 1000 + i });
      await sql`update certificates set not_after = ${notAfter} where id = ${id}`.execute(db);
    }
    const dkey = await admin.createDaemonKey(db, { type: 'cli' }, { org: o.organisationId });
    await sql`insert into daemons (organisation_id, key_id, name, status, last_heartbeat_at)
      values (${o.organisationId}, ${dkey.id}, 'on-1', 'online', now() - interval '400 seconds'), (${o.organisationId}, ${dkey.id}, 'on-2', 'online', now() - interval '10 seconds'),
             (${o.organisationId}, ${dkey.id}, 'new', 'pending', null)`.execute(db);
    // Another organisation's rows must not show.
    const other = await seedOrg(t.database);
    await addHost(db, other.organisationId, { hostname: 'theirs' });

    const m = samples((await scrape(key)).body);
    expect(m.get('service_hosts')).toBe(2);
    expect(m.get('service_services')).toBe(2);
    expect(m.get('service_findings{severity="critical",state="open"}')).toBe(1);
    expect(m.get('service_findings{severity="high",state="acknowledged"}')).toBe(1);
    expect(m.get('service_findings{severity="high",state="open"}')).toBe(0);
    expect(m.get('service_certificates_expiring{window="expired"}')).toBe(1);
    expect(m.get('service_certificates_expiring{window="1d"}')).toBe(1);
    expect(m.get('service_certificates_expiring{window="7d"}')).toBe(2);
    expect(m.get('service_certificates_expiring{window="14d"}')).toBe(2);
    expect(m.get('service_certificates_expiring{window="30d"}')).toBe(3);
    expect(m.get('service_daemons{status="online"}')).toBe(2);
    expect(m.get('service_daemons{status="pending"}')).toBe(1);
    expect(m.get('service_daemons{status="degraded"}')).toBe(0);
    expect(m.get('service_daemon_quiet_seconds{status="online"}')).toBeGreaterThanOrEqual(400);
    expect(m.get('service_daemon_quiet_seconds{status="online"}')).toBeLessThan(460);
    expect(m.has('service_daemon_quiet_seconds{status="degraded"}')).toBe(false);
  });

  it('gives the snapshot age once a snapshot exists, and the age and outcome of each job that ran', async () => {
    const o = await seedOrg(t.database);
    const key = (await seedMemberWithKey(t.database, o, 'viewer', ['metrics:read'])).token;
    const db = t.database.db;
    await sql`insert into snapshots (organisation_id, reason, stats, captured_at) values (${o.organisationId}, 'manual', '{}', now() - interval '2 hours')`.execute(db);
    await sql`insert into job_status (job, organisation_id, last_run_at, duration_ms, outcome, attempts) values
      ('inventory.snapshot', null, now() - interval '10 minutes', 5, 'ok', 1),
      ('inventory.snapshot', ${o.organisationId}, now() - interval '10 minutes', 5, 'failed', 3),
      ('scan.stall', null, now() - interval '30 seconds', 5, 'ok', 1)
      on conflict do nothing`.execute(db);
    const m = samples((await scrape(key)).body);
    expect(m.get('service_snapshot_age_seconds')).toBeGreaterThanOrEqual(7200);
    expect(m.get('service_snapshot_age_seconds')).toBeLessThan(7300);
    expect(m.get('service_job_last_run_age_seconds{job="inventory.snapshot"}')).toBeGreaterThanOrEqual(600);
    // This organisation's snapshot failed, whatever the job did for the others.
    expect(m.get('service_job_last_run_ok{job="inventory.snapshot"}')).toBe(0);
    expect(m.get('service_job_last_run_ok{job="scan.stall"}')).toBe(1);
  });

  it('feeds the alert unit tests series shaped as a scrape with deploy/prometheus/prometheus.yml stores them', async () => {
    // The scrape with honor_labels keeps the exposition's labels (its `job` too), and adds
    // `instance` and the target's `organisation`, and `job` = the scrape job where there is none.
    const exposed = new Map<string, Set<string>>();
    for (const key of samples(await collectMetrics(t.database.db, org.organisationId)).keys()) {
      const [, name, labels = ''] = /^([a-z_]+)(?:\{(.*)\})?$/.exec(key)!;
      const keys = [...labels.matchAll(/([a-z_]+)="/g)].map((m) => m[1]).sort().join(',');
      exposed.set(name!, (exposed.get(name!) ?? new Set()).add(keys));
    }
    const input = readFileSync(path.join(PROMETHEUS_DIR, 'alerts.test.yml'), 'utf8');
    const series = [...input.matchAll(/series: '([a-z_]+)\{([^}]*)\}'/g)];
    expect(series.length).toBeGreaterThan(10);
    for (const [, name, labelText] of series) {
      const labels = Object.fromEntries([...labelText!.matchAll(/([a-z_]+)="([^"]*)"/g)].map((m) => [m[1]!, m[2]!]));
      expect(labels, name).toMatchObject({ instance: expect.any(String), organisation: expect.any(String), job: expect.any(String) });
      expect(labels).not.toHaveProperty('exported_job');
      if (name === 'up') continue;
      const own = Object.keys(labels).filter((k) => k !== 'instance' && k !== 'organisation' && !(k === 'job' && labels.job!.startsWith('surveyor-')));
      // Series that exist only where their thing does (README, Metrics), absent from this organisation.
      const absent: Record<string, string> = { service_cve_feed_age_seconds: '', service_snapshot_age_seconds: '', service_daemon_quiet_seconds: 'status' };
      expect(exposed.get(name!) ?? new Set([absent[name!]]), name).toContain(own.sort().join(','));
    }
  });

  // Validated by Prometheus' own tool; .ci/run installs it (Debian package `prometheus`), and in
  // CI its absence fails the run rather than leaving these out.
  describe.skipIf(!haveTools("promtool's checks of the metrics and deploy/prometheus", ['promtool']))('checked by promtool', () => {
    it('passes promtool check metrics', async () => {
      const text = await collectMetrics(t.database.db, org.organisationId);
      const r = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });
      expect(`${r.stdout}${r.stderr}`.trim()).toBe('');
      expect(r.status).toBe(0);
      expect(execFileSync('promtool', ['--version']).toString()).toMatch(/promtool/);
    });

    it('ships alert rules that promtool accepts and whose unit tests pass (deploy/prometheus)', () => {
      const check = spawnSync('promtool', ['check', 'rules', 'alerts.yml'], { cwd: PROMETHEUS_DIR, encoding: 'utf8' });
      expect(check.status, `${check.stdout}${check.stderr}`).toBe(0);
      expect(check.stdout).toContain('SUCCESS: 6 rules found');
      const tests = spawnSync('promtool', ['test', 'rules', 'alerts.test.yml'], { cwd: PROMETHEUS_DIR, encoding: 'utf8' });
      expect(tests.status, `${tests.stdout}${tests.stderr}`).toBe(0);
      expect(tests.stdout).toContain('SUCCESS');
    });

    it('ships a scrape config that promtool accepts: honor_labels, the metrics path, a Bearer token from a file, the alert rules', () => {
      const conf = readFileSync(path.join(PROMETHEUS_DIR, 'prometheus.yml'), 'utf8');
      expect(conf).toMatch(/^ {4}honor_labels: true$/m);
      expect(conf).toMatch(/^ {4}metrics_path: \/api\/v1\/metrics$/m);
      expect(conf).toMatch(/^ {6}credentials_file: \S+$/m);
      expect(conf).toMatch(/^ {2}- alerts\.yml$/m);
      // promtool checks that the token file exists: check a copy beside a stand-in token.
      const dir = mkdtempSync(path.join(tmpdir(), 'surveyor-prometheus-'));
      try {
        for (const f of ['prometheus.yml', 'alerts.yml']) copyFileSync(path.join(PROMETHEUS_DIR, f), path.join(dir, f));
        writeFileSync(path.join(dir, /credentials_file: (\S+)/.exec(conf)![1]!), 'svm_stand_in\n', { mode: 0o600 });
        const r = spawnSync('promtool', ['check', 'config', 'prometheus.yml'], { cwd: dir, encoding: 'utf8' });
        expect(r.status, `${r.stdout}${r.stderr}`).toBe(0);
        expect(r.stdout).toContain('SUCCESS: 6 rules found');
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  });
});
