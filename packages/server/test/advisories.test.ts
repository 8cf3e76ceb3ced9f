import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { gzipSync } from 'node:zlib';
import { sql } from 'kysely';
import yazl from 'yazl';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { feedAgeSeconds } from '../src/advisories/advisories.repo.js';
import { cveMatch } from '../src/advisories/cve-match.job.js';
import { matchOrganisation } from '../src/advisories/match.service.js';
import { JobRunner } from '../src/jobs/runner.js';
import { createLogger } from '../src/logger.js';
import { addHost, addService } from './fixtures.js';
import { type SeededOrg, type TestApp, type TestDatabase, bearer, buildTestApp, createTestDatabase, login, seedMemberWithKey, seedOrg } from './helpers.js';
import { type Json, type Scanning, getScan, ingest, scanningSession, startSession } from './scanning.js';

// Advisories (issue 13): the import, the matcher's findings and their automatic lifecycle
// (decisions.md, "Vulnerability transitions"), organisation isolation, the metrics.

const fixture = (name: string) => JSON.parse(readFileSync(new URL(`./fixtures/advisories/${name}`, import.meta.url), 'utf8'));

const HIGH = 'CVSS:3.1/AV:N/AC:H/PR:N/UI:N/S:U/C:H/I:H/A:H'; // 8.1
const CRITICAL = 'CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:H/I:H/A:H'; // 9.8
const MEDIUM = 'CVSS:3.1/AV:N/AC:L/PR:N/UI:R/S:U/C:L/I:L/A:N'; // 5.4

/** An NVD CVE API 2.0 record of the real shape, for a product of this test's own. */
function nvd(id: string, o: { modified?: string; score?: number; vector?: string; configurations: Json[]; description?: string; status?: string }): Json {
  return {
    cve: {
      id,
      sourceIdentifier: 'cve@mitre.org',
      published: '2024-07-01T13:15:01.683',
      lastModified: o.modified ?? '2024-07-02T10:00:00.000',
      vulnStatus: o.status ?? 'Analyzed',
      descriptions: [{ lang: 'en', value: o.description ?? `${id} in the widget server` }],
      metrics: { cvssMetricV31: [{ source: 'nvd@nist.gov', type: 'Primary', cvssData: { version: '3.1', vectorString: o.vector ?? HIGH, baseScore: o.score ?? 8.1, baseSeverity: 'HIGH' } }] },
      weaknesses: [],
      configurations: o.configurations,
      references: [{ url: `https://example.test/${id}`, source: 'cve@mitre.org', tags: ['Vendor Advisory'] }],
    },
  };
}
const range = (criteria: string, r: Json) => [{ nodes: [{ operator: 'OR', negate: false, cpeMatch: [{ vulnerable: true, criteria, matchCriteriaId: '00000000-0000-0000-0000-000000000000', ...r }] }] }];
const page = (...records: Json[]) => ({ resultsPerPage: records.length, startIndex: 0, totalResults: records.length, format: 'NVD_CVE', version: '2.0', timestamp: '2024-07-03T00:00:00.000', vulnerabilities: records });

/** acme widget 2.0 ≤ v < 2.4.58 (high). */
const WIDGET = nvd('CVE-2031-1001', { configurations: range('cpe:2.3:a:acme:widget:*:*:*:*:*:*:*:*', { versionStartIncluding: '2.0', versionEndExcluding: '2.4.58' }) });
const widgetCpe = (v: string) => `cpe:2.3:a:acme:widget:${v}:*:*:*:*:*:*:*`;

describe('advisories and findings', () => {
  let t: TestApp;
  let admin: { cookie: string; csrfToken: string };
  let org: SeededOrg;

  const importDoc = (doc: unknown, who = admin) =>
    t.app.inject({ method: 'POST', url: '/api/v1/admin/advisories/import', headers: { cookie: who.cookie, 'x-csrf-token': who.csrfToken }, payload: doc as Json });
  const imported = async (doc: unknown) => {
    const res = await importDoc(doc);
    expect(res.statusCode, res.body).toBe(200);
    return res.json();
  };
  const findings = async (s: Scanning, q = '') => {
    const res = await t.app.inject({ method: 'GET', url: `/api/v1/vulnerabilities?limit=500${q}`, headers: bearer(s.api) });
    expect(res.statusCode, res.body).toBe(200);
    return res.json().data as Json[];
  };
  const match = (s: Scanning) => matchOrganisation(t.database.db, s.org.organisationId).then((r) => r.value);
  /**
   * Moves the organisation's changes so far an hour back: a run reads changes from the start of
   * the oldest transaction open anywhere in the database, and on a shared PostgreSQL other test
   * files keep some open, so without this the next run may see this test's own earlier changes.
   */
  const settle = (s: Scanning) => sql`update change_log set at = at - interval '1 hour' where organisation_id = ${s.org.organisationId}`.execute(t.database.db);
  const events = async (organisationId: string) =>
    (await sql<{ kind: string; subject_id: string; data: Json }>`select kind, subject_id, data from events where organisation_id = ${organisationId} and kind = 'vulnerability.opened' order by seq`.execute(t.database.db)).rows;

  /** A scanning organisation with one host (fp-w, 10.9.0.5) whose tcp/8080 runs `service`. */
  async function widgetHost(service: Json, cidr = '10.9.0.0/24') {
    const { s, sessionId } = await scanningSession(t, cidr);
    const address = cidr.replace(/0\/24$/, '5');
    await ingest(t, s.daemon, { sessionId, hosts: [{ fingerprint: 'fp-w' }], ips: [{ hostFingerprint: 'fp-w', address }], services: [{ fingerprint: 'fp-w', address, protocol: 'tcp', port: 8080, ...service }] });
    return { s, sessionId, address };
  }

  beforeAll(async () => {
    t = await buildTestApp();
    org = await seedOrg(t.database);
    admin = await login(t.app, org.ownerEmail);
  });
  afterAll(() => t.close());

  describe('import', () => {
    it('imports an NVD page once: new, then unchanged on a re-import; a newer lastModified replaces, an older one changes nothing', async () => {
      const rec = nvd('CVE-2031-0001', { configurations: range('cpe:2.3:a:acme:gadget:*:*:*:*:*:*:*:*', { versionEndIncluding: '1.0' }) });
      expect(await imported(page(rec))).toMatchObject({ new: 1, updated: 0, unchanged: 0, skippedCount: 0, skipped: [] });
      expect(await imported(page(rec))).toMatchObject({ new: 0, updated: 0, unchanged: 1 });
      const newer = nvd('CVE-2031-0001', { modified: '2024-08-01T00:00:00.000', score: 9.8, vector: CRITICAL, configurations: range('cpe:2.3:a:acme:gadget:*:*:*:*:*:*:*:*', { versionEndIncluding: '1.1' }) });
      expect(await imported(newer)).toMatchObject({ new: 0, updated: 1, unchanged: 0 });
      expect(await imported(page(rec))).toMatchObject({ new: 0, updated: 0, unchanged: 1 });
      const row = await t.database.db.selectFrom('advisories').selectAll().where('id', '=', 'CVE-2031-0001').executeTakeFirstOrThrow();
      expect(row).toMatchObject({ source: 'nvd', cve_id: 'CVE-2031-0001', severity: 'critical', vector: CRITICAL, cvss31_vector: CRITICAL });
      expect(Number(row.score)).toBe(9.8);
      expect(row.modified_at.toISOString()).toBe('2024-08-01T00:00:00.000Z');
      const keys = await t.database.db.selectFrom('advisory_products').select('product_key').where('advisory_id', '=', 'CVE-2031-0001').execute();
      expect(keys.map((k) => k.product_key)).toEqual(['a:acme:gadget']);
    });

    it('imports the real NVD and OSV fixtures with their scores, and lists what it skipped and why', async () => {
      const r = await imported([fixture('osv-GHSA-c2qf-rxjj-qqgw.json'), { id: 'not an advisory' }, { cve: { id: 'CVE-2031-0002' } }]);
      expect(r).toMatchObject({ new: 1, skippedCount: 2 });
      expect(r.skipped).toEqual([
        { id: 'not an advisory', reason: expect.stringMatching(/neither an NVD CVE record nor an OSV record/) },
        { id: 'CVE-2031-0002', reason: expect.stringMatching(/not an NVD CVE record: lastModified/) },
      ]);
      const osv = await t.database.db.selectFrom('advisories').selectAll().where('id', '=', 'GHSA-c2qf-rxjj-qqgw').executeTakeFirstOrThrow();
      expect(osv).toMatchObject({ source: 'osv', cve_id: 'CVE-2022-25883', severity: 'medium' });
      expect(Number(osv.score)).toBe(5.3);
      const ssh = await imported(fixture('nvd-CVE-2024-6387.json'));
      expect(ssh).toMatchObject({ new: 1 });
      const row = await t.database.db.selectFrom('advisories').selectAll().where('id', '=', 'CVE-2024-6387').executeTakeFirstOrThrow();
      expect(row).toMatchObject({ severity: 'high', vector: HIGH });
    });

    it('replaces a record re-imported with the same lastModified but other content (the content hash wins), and counts it updated (issue 29)', async () => {
      const config = range('cpe:2.3:a:acme:gizmo:*:*:*:*:*:*:*:*', { versionEndIncluding: '2.0' });
      expect(await imported(page(nvd('CVE-2031-0060', { configurations: config, description: 'first text' })))).toMatchObject({ new: 1 });
      expect(await imported(page(nvd('CVE-2031-0060', { configurations: config, description: 'first text' })))).toMatchObject({ new: 0, updated: 0, unchanged: 1 });
      const wider = range('cpe:2.3:a:acme:gizmo:*:*:*:*:*:*:*:*', { versionEndIncluding: '3.0' });
      expect(await imported(page(nvd('CVE-2031-0060', { configurations: wider, description: 'second text' })))).toMatchObject({ new: 0, updated: 1, unchanged: 0 });
      const row = await t.database.db.selectFrom('advisories').selectAll().where('id', '=', 'CVE-2031-0060').executeTakeFirstOrThrow();
      expect(row.summary).toBe('second text');
      expect(JSON.stringify(row.affected)).toContain('3.0');
    });

    it('bounds what it stores of a record\'s text: the summary cut at a word with …, at most 50 references, no URL over 2,000 characters (issue 29)', async () => {
      const long = `${'overflow '.repeat(3000)}end`;
      const rec = nvd('CVE-2031-0070', { description: long, configurations: range('cpe:2.3:a:acme:doohickey:*:*:*:*:*:*:*:*', { versionEndIncluding: '1.0' }) }) as { cve: { references: { url: string }[] } };
      rec.cve.references = [{ url: `https://example.test/${'x'.repeat(3000)}` }, ...Array.from({ length: 120 }, (_, i) => ({ url: `https://example.test/ref/${i}` }))];
      expect(await imported(page(rec))).toMatchObject({ new: 1 });
      const row = await t.database.db.selectFrom('advisories').selectAll().where('id', '=', 'CVE-2031-0070').executeTakeFirstOrThrow();
      expect(row.summary!.length).toBeLessThanOrEqual(2000);
      expect(row.summary).toMatch(/^overflow overflow .* overflow…$/);
      const refs = row.refs as { url: string }[];
      expect(refs).toHaveLength(50);
      expect(refs[0]!.url).toBe('https://example.test/ref/0');
      expect(refs.every((r) => r.url.length <= 2000)).toBe(true);
    });

    it('reports a criteria string that is not CPE 2.3 as skipped with its reason, and keeps the record and its other criteria (issue 29)', async () => {
      // The real CVE-2024-6387 record with one criterion cut short (10 attributes), as malformed records carry them.
      const rec = structuredClone(fixture('nvd-CVE-2024-6387.json')) as { vulnerabilities: { cve: { id: string; lastModified: string; configurations: { nodes: { cpeMatch: { criteria: string }[] }[] }[] } }[] };
      const cve = rec.vulnerabilities[0]!.cve;
      cve.id = 'CVE-2031-0099';
      const matches = cve.configurations.flatMap((g) => g.nodes.flatMap((n) => n.cpeMatch));
      expect(matches.length).toBeGreaterThan(1);
      matches[0]!.criteria = 'cpe:2.3:a:openbsd:openssh:*:*:*:*:*:*:*';
      const r = await imported(rec);
      expect(r).toMatchObject({ new: 1, skippedCount: 1 });
      expect(r.skipped).toEqual([{ id: 'CVE-2031-0099', reason: 'criteria "cpe:2.3:a:openbsd:openssh:*:*:*:*:*:*:*" is not a CPE 2.3 formatted string (cpe:2.3: and 11 attributes); kept, it can never match' }]);
      const keys = await t.database.db.selectFrom('advisory_products').select('product_key').where('advisory_id', '=', 'CVE-2031-0099').execute();
      expect(keys.length).toBeGreaterThan(0);
    });

    it('refuses a document without one usable record with 400 validation_failed and the reasons, and leaves the mirror\'s age alone (issue 29)', async () => {
      const mirror = async () => (await t.app.inject({ method: 'GET', url: '/api/v1/advisories', headers: { cookie: admin.cookie } })).json().feed.confirmedAt as string | null;
      await imported(page(nvd('CVE-2031-0050', { configurations: range('cpe:2.3:a:acme:gadget:*:*:*:*:*:*:*:*', { versionEndIncluding: '1.0' }) })));
      const before = await mirror();
      expect(before).not.toBeNull();
      for (const doc of [[{ id: 'not an advisory' }, { cve: { id: 'CVE-2031-0051' } }], { resultsPerPage: 0, startIndex: 0, totalResults: 0, vulnerabilities: [] }]) {
        const res = await importDoc(doc);
        expect(res.statusCode, res.body).toBe(400);
        expect(res.json()).toMatchObject({ code: 'validation_failed', detail: expect.stringMatching(/^The document holds no usable advisory record/) });
      }
      expect((await importDoc([{ id: 'not an advisory' }])).json().issues).toEqual([{ path: 'not an advisory', message: expect.stringMatching(/neither an NVD CVE record nor an OSV record/) }]);
      expect(await mirror()).toBe(before);
    });

    it('refuses a viewer (403 forbidden), and every upload when SERVICE_ADVISORY_UPLOAD=deny', async () => {
      const viewer = await seedMemberWithKey(t.database, org, 'viewer', ['inventory:read']);
      const res = await importDoc(page(WIDGET), await login(t.app, viewer.email));
      expect(res.statusCode).toBe(403);
      expect(res.json().code).toBe('forbidden');
      const locked = await buildTestApp({ env: { SERVICE_ADVISORY_UPLOAD: 'deny' } });
      try {
        const o = await seedOrg(locked.database);
        const s = await login(locked.app, o.ownerEmail);
        const refused = await locked.app.inject({ method: 'POST', url: '/api/v1/admin/advisories/import', headers: { cookie: s.cookie, 'x-csrf-token': s.csrfToken }, payload: page(WIDGET) });
        expect(refused.statusCode).toBe(403);
        expect(refused.json()).toMatchObject({ code: 'forbidden', detail: expect.stringMatching(/SERVICE_ADVISORY_UPLOAD=deny/) });
        expect(await locked.database.db.selectFrom('advisories').select('id').execute()).toEqual([]);
      } finally {
        await locked.close();
      }
    });

    it('refuses a body that is not a JSON object or array with 400 validation_failed', async () => {
      const res = await t.app.inject({ method: 'POST', url: '/api/v1/admin/advisories/import', headers: { cookie: admin.cookie, 'x-csrf-token': admin.csrfToken, 'content-type': 'application/json' }, body: '"CVE-2031-1"' });
      expect(res.statusCode).toBe(400);
      expect(res.json().code).toBe('validation_failed');
    });
  });

  describe('matching and the lifecycle', () => {
    beforeAll(async () => {
      await imported(page(WIDGET));
    });

    it('opens one finding per (service, CVE) with the advisory\'s severity, score, vector and summary, and announces it (high)', async () => {
      const { s } = await widgetHost({ product: 'widget', version: '2.4.57', cpe: widgetCpe('2.4.57') });
      expect(await match(s)).toMatchObject({ full: true, servicesMatched: 1, opened: 1, resolved: 0 });
      const [f, ...rest] = await findings(s);
      expect(rest).toEqual([]);
      expect(f).toMatchObject({
        cveId: 'CVE-2031-1001', advisoryId: 'CVE-2031-1001', severity: 'high', score: 8.1, vector: HIGH, summary: 'CVE-2031-1001 in the widget server',
        state: 'open', note: null, matchedCpe: widgetCpe('2.4.57'), resolvedAt: null,
      });
      expect(f!.firstSeenAt).toBe(f!.lastSeenAt);
      const ev = await events(s.org.organisationId);
      expect(ev).toEqual([expect.objectContaining({ subject_id: f!.id, data: expect.objectContaining({ cveId: 'CVE-2031-1001', severity: 'high', score: 8.1, serviceId: f!.serviceId, hostId: f!.hostId }) })]);
      const audit = await t.database.db.selectFrom('audit_log').selectAll().where('organisation_id', '=', s.org.organisationId).where('target_id', '=', f!.id).execute();
      expect(audit).toEqual([expect.objectContaining({ actor_type: 'system', action: 'vulnerability.updated', changes: { state: { from: null, to: 'open' }, job: 'cve.match' } })]);
      // The finding and its event refer to the advisory; its text is read from there (issue 29).
      const row = await t.database.db.selectFrom('vulnerabilities').select(['summary', 'advisory_id']).where('id', '=', f!.id).executeTakeFirstOrThrow();
      expect(row).toEqual({ summary: null, advisory_id: 'CVE-2031-1001' });
      const owner = await login(t.app, s.org.ownerEmail);
      const api = await t.app.inject({ method: 'GET', url: '/api/v1/admin/events?kind=vulnerability.opened', headers: { cookie: owner.cookie } });
      expect(api.json().data, api.body).toEqual([expect.objectContaining({ data: expect.objectContaining({ advisoryId: 'CVE-2031-1001', summary: 'CVE-2031-1001 in the widget server' }) })]);
    });

    it('is idempotent: a second run opens nothing and announces nothing again; the finding is seen again only when its service is matched again', async () => {
      const { s } = await widgetHost({ product: 'widget', version: '2.1', cpe: widgetCpe('2.1') });
      await match(s);
      await settle(s);
      const before = await findings(s);
      expect(await match(s)).toMatchObject({ full: false, servicesMatched: 0, opened: 0, resolved: 0 });
      expect(await findings(s)).toEqual(before);
      expect(await events(s.org.organisationId)).toHaveLength(1);
    });

    it('does not match versions outside the range, nor a service with a name but no version', async () => {
      const { s, sessionId, address } = await widgetHost({ product: 'widget', version: '2.4.58', cpe: widgetCpe('2.4.58') });
      await ingest(t, s.daemon, { sessionId, services: [
        { fingerprint: 'fp-w', address, protocol: 'tcp', port: 8081, product: 'widget', vendor: 'acme' },
        { fingerprint: 'fp-w', address, protocol: 'tcp', port: 8082, cpe: widgetCpe('1.9') },
      ] });
      expect(await match(s)).toMatchObject({ servicesMatched: 3, opened: 0 });
      expect(await findings(s)).toEqual([]);
    });

    it('derives a CPE from vendor, product and version when the service has none', async () => {
      const { s } = await widgetHost({ vendor: 'Acme', product: 'Widget', version: '2.2.0' });
      expect(await match(s)).toMatchObject({ opened: 1 });
      expect(await findings(s)).toEqual([expect.objectContaining({ cveId: 'CVE-2031-1001', matchedCpe: widgetCpe('2.2.0') })]);
    });

    it('open → resolved when the version changes out of range, with an audit row by the job; resolved → open when it matches again, announced as reopened', async () => {
      const { s, sessionId, address } = await widgetHost({ product: 'widget', version: '2.3', cpe: widgetCpe('2.3') });
      await match(s);
      const [opened] = await findings(s);
      await ingest(t, s.daemon, { sessionId, services: [{ fingerprint: 'fp-w', address, protocol: 'tcp', port: 8080, version: '2.4.58', cpe: widgetCpe('2.4.58') }] });
      expect(await match(s)).toMatchObject({ full: false, servicesMatched: 1, resolved: 1, opened: 0 });
      const [resolved] = await findings(s);
      expect(resolved).toMatchObject({ id: opened!.id, state: 'resolved', resolvedAt: expect.any(String) });
      expect(Date.parse(resolved!.stateChangedAt)).toBeGreaterThanOrEqual(Date.parse(opened!.stateChangedAt));
      await ingest(t, s.daemon, { sessionId, services: [{ fingerprint: 'fp-w', address, protocol: 'tcp', port: 8080, version: '2.3', cpe: widgetCpe('2.3') }] });
      expect(await match(s)).toMatchObject({ opened: 1, resolved: 0 });
      const [again] = await findings(s);
      expect(again).toMatchObject({ id: opened!.id, state: 'open', resolvedAt: null });
      const ev = await events(s.org.organisationId);
      expect(ev.map((e) => e.data.reopened ?? false)).toEqual([false, true]);
      const audit = await t.database.db.selectFrom('audit_log').select(['actor_type', 'changes']).where('target_id', '=', opened!.id).orderBy('occurred_at').execute();
      expect(audit.map((a) => (a.changes as Json).state)).toEqual([{ from: null, to: 'open' }, { from: 'open', to: 'resolved' }, { from: 'resolved', to: 'open' }]);
      expect(new Set(audit.map((a) => a.actor_type))).toEqual(new Set(['system']));
    });

    it('acknowledged → resolved when a completed scan no longer sees the service; false_positive is never changed', async () => {
      const { s, sessionId, address } = await widgetHost({ product: 'widget', version: '2.3', cpe: widgetCpe('2.3') });
      await ingest(t, s.daemon, { sessionId, services: [{ fingerprint: 'fp-w', address, protocol: 'tcp', port: 9090, cpe: widgetCpe('2.0') }] });
      await match(s);
      const byPort = async () => {
        const fs = await findings(s);
        const svc = await t.database.db.selectFrom('services').select(['id', 'port']).where('organisation_id', '=', s.org.organisationId).execute();
        return Object.fromEntries(fs.map((f) => [svc.find((x) => x.id === f.serviceId)!.port, f]));
      };
      const f = await byPort();
      const patch = (id: string, state: string) => t.app.inject({ method: 'PATCH', url: `/api/v1/vulnerabilities/${id}`, headers: bearer(s.api), payload: { state, note: `marked ${state}` } });
      expect((await patch(f[8080]!.id, 'acknowledged')).statusCode).toBe(200);
      const fp = await patch(f[9090]!.id, 'false_positive');
      expect(fp.statusCode).toBe(200);
      // A second, completed scan of the network sees the host without either service.
      await ingest(t, s.daemon, { sessionId, final: true });
      const second = await startSession(t, s, (await getScan(t, s, sessionId)).networkId);
      await ingest(t, s.daemon, { sessionId: second, hosts: [{ fingerprint: 'fp-w' }], ips: [{ hostFingerprint: 'fp-w', address }], final: true });
      expect(await match(s)).toMatchObject({ resolved: 1 });
      const after = await byPort();
      expect(after[8080]).toMatchObject({ state: 'resolved', note: 'marked acknowledged' });
      expect(after[9090]).toMatchObject({ state: 'false_positive', note: 'marked false_positive', stateChangedAt: fp.json().stateChangedAt, resolvedAt: null });
      // A resolved finding cannot be moved by hand (409 naming that nothing is allowed).
      const refused = await patch(f[8080]!.id, 'open');
      expect(refused.statusCode).toBe(409);
      expect(refused.json()).toMatchObject({ code: 'invalid_transition', detail: expect.stringMatching(/allowed: none/) });
      // Seen again: the resolved one reopens; the false positive stays one.
      const third = await startSession(t, s, (await getScan(t, s, sessionId)).networkId);
      await ingest(t, s.daemon, { sessionId: third, hosts: [{ fingerprint: 'fp-w' }], services: [
        { fingerprint: 'fp-w', address, protocol: 'tcp', port: 8080, cpe: widgetCpe('2.3') },
        { fingerprint: 'fp-w', address, protocol: 'tcp', port: 9090, cpe: widgetCpe('2.0') },
      ] });
      await match(s);
      const last = await byPort();
      expect(last[8080]).toMatchObject({ state: 'open' });
      expect(last[9090]).toMatchObject({ state: 'false_positive' });
    });

    it('matches an AND configuration (an application running on an OS) only where the platform is seen on the host', async () => {
      const onOs = nvd('CVE-2031-1002', {
        vector: CRITICAL,
        score: 9.8,
        configurations: [{ operator: 'AND', nodes: [
          { operator: 'OR', negate: false, cpeMatch: [{ vulnerable: true, criteria: 'cpe:2.3:a:acme:agent:*:*:*:*:*:*:*:*', versionEndIncluding: '5.0', matchCriteriaId: 'x' }] },
          { operator: 'OR', negate: false, cpeMatch: [{ vulnerable: false, criteria: 'cpe:2.3:o:microsoft:windows:-:*:*:*:*:*:*:*', matchCriteriaId: 'y' }] },
        ] }],
      });
      await imported(page(onOs));
      const agent = { cpe: 'cpe:2.3:a:acme:agent:5.0:*:*:*:*:*:*:*' };
      const linux = await widgetHost(agent, '10.9.1.0/24');
      const windows = await widgetHost(agent, '10.9.2.0/24');
      await ingest(t, windows.s.daemon, { sessionId: windows.sessionId, services: [{ fingerprint: 'fp-w', address: windows.address, protocol: 'tcp', port: 445, cpe: 'cpe:/o:microsoft:windows' }] });
      await match(linux.s);
      await match(windows.s);
      expect(await findings(linux.s)).toEqual([]);
      expect(await findings(windows.s)).toEqual([expect.objectContaining({ cveId: 'CVE-2031-1002', severity: 'critical' })]);
    });

    it('matches an AND configuration on the platform a host reports of itself (its OS and hardware CPEs), keeps it through scans naming less, and drops what the host stopped naming a month ago (issue 29)', async () => {
      const onIos = nvd('CVE-2031-1003', {
        vector: CRITICAL,
        score: 9.8,
        configurations: [{ operator: 'AND', nodes: [
          { operator: 'OR', negate: false, cpeMatch: [{ vulnerable: true, criteria: 'cpe:2.3:a:acme:mgmt:*:*:*:*:*:*:*:*', versionEndIncluding: '2.0', matchCriteriaId: 'x' }] },
          { operator: 'OR', negate: false, cpeMatch: [{ vulnerable: false, criteria: 'cpe:2.3:h:cisco:catalyst_2960:-:*:*:*:*:*:*:*', matchCriteriaId: 'y' }] },
        ] }],
      });
      await imported(page(onIos));
      const mgmt = { cpe: 'cpe:2.3:a:acme:mgmt:2.0:*:*:*:*:*:*:*' };
      const sw = await widgetHost(mgmt, '10.9.3.0/24');
      // Only the services' CPEs: no platform, no finding.
      await match(sw.s);
      expect(await findings(sw.s)).toEqual([]);
      // The daemon reports the host's own CPEs (nmap's OS detection of a Catalyst 2960): its services are matched again.
      await settle(sw.s);
      await ingest(t, sw.s.daemon, { sessionId: sw.sessionId, hosts: [{ fingerprint: 'fp-w', cpes: ['cpe:2.3:h:cisco:catalyst_2960:*:*:*:*:*:*:*:*', 'cpe:2.3:o:cisco:ios:15:*:*:*:*:*:*:*'] }] });
      const stored = await t.database.db.selectFrom('host_platform_cpes').select('cpe').where('organisation_id', '=', sw.s.org.organisationId).orderBy('cpe').execute();
      expect(stored.map((r) => r.cpe)).toEqual(['cpe:2.3:h:cisco:catalyst_2960:*:*:*:*:*:*:*:*', 'cpe:2.3:o:cisco:ios:15:*:*:*:*:*:*:*']);
      await match(sw.s);
      expect(await findings(sw.s)).toEqual([expect.objectContaining({ cveId: 'CVE-2031-1003', severity: 'critical', state: 'open' })]);
      // A later scan naming less (or other) CPEs adds to the set: nothing shrinks, no finding flaps.
      await settle(sw.s);
      await ingest(t, sw.s.daemon, { sessionId: sw.sessionId, hosts: [{ fingerprint: 'fp-w', cpes: ['cpe:2.3:h:cisco:catalyst_9300:*:*:*:*:*:*:*:*'] }] });
      const cpes = async () => (await t.database.db.selectFrom('host_platform_cpes').select('cpe').where('organisation_id', '=', sw.s.org.organisationId).orderBy('cpe').execute()).map((r) => r.cpe);
      expect(await cpes()).toEqual(['cpe:2.3:h:cisco:catalyst_2960:*:*:*:*:*:*:*:*', 'cpe:2.3:h:cisco:catalyst_9300:*:*:*:*:*:*:*:*', 'cpe:2.3:o:cisco:ios:15:*:*:*:*:*:*:*']);
      await match(sw.s);
      expect(await findings(sw.s)).toEqual([expect.objectContaining({ cveId: 'CVE-2031-1003', state: 'open' })]);
      // What a host has not named for 30 days leaves its set at its next report: the configuration no longer holds.
      await settle(sw.s);
      await sql`update host_platform_cpes set seen_at = now() - interval '31 days' where organisation_id = ${sw.s.org.organisationId} and cpe <> 'cpe:2.3:h:cisco:catalyst_9300:*:*:*:*:*:*:*:*'`.execute(t.database.db);
      await ingest(t, sw.s.daemon, { sessionId: sw.sessionId, hosts: [{ fingerprint: 'fp-w', cpes: ['cpe:2.3:h:cisco:catalyst_9300:*:*:*:*:*:*:*:*', 'cpe:2.3:o:cisco:ios_xe:17.9:*:*:*:*:*:*:*'] }] });
      expect(await cpes()).toEqual(['cpe:2.3:h:cisco:catalyst_9300:*:*:*:*:*:*:*:*', 'cpe:2.3:o:cisco:ios_xe:17.9:*:*:*:*:*:*:*']);
      await match(sw.s);
      expect(await findings(sw.s, '&state=resolved')).toEqual([expect.objectContaining({ cveId: 'CVE-2031-1003', state: 'resolved' })]);
      // A CPE that is no operating system or hardware is refused at the edge.
      const bad = await t.app.inject({ method: 'POST', url: '/api/v1/daemon/observations', headers: { ...bearer(sw.s.daemon.token), 'x-daemon-id': sw.s.daemon.id }, payload: { sessionId: sw.sessionId, hosts: [{ fingerprint: 'fp-w', cpes: ['cpe:2.3:a:acme:mgmt:2.0:*:*:*:*:*:*:*'] }] } });
      expect(bad.statusCode).toBe(400);
      expect(bad.json().code).toBe('validation_failed');
    });

    it('matches the real CVE-2024-6387 record against OpenSSH as nmap and NVD write it: 8.5p1 and 9.6p1 affected, 9.8p1 and 8.4p1 not', async () => {
      const { s, sessionId, address } = await widgetHost({ product: 'OpenSSH', version: '8.5p1', cpe: 'cpe:/a:openbsd:openssh:8.5p1' });
      await ingest(t, s.daemon, { sessionId, services: [
        { fingerprint: 'fp-w', address, protocol: 'tcp', port: 22, cpe: 'cpe:2.3:a:openbsd:openssh:9.6:p1:*:*:*:*:*:*' },
        { fingerprint: 'fp-w', address, protocol: 'tcp', port: 2222, cpe: 'cpe:2.3:a:openbsd:openssh:9.8:p1:*:*:*:*:*:*' },
        { fingerprint: 'fp-w', address, protocol: 'tcp', port: 2223, cpe: 'cpe:2.3:a:openbsd:openssh:8.4p1:*:*:*:*:*:*:*' },
      ] });
      await match(s);
      const svc = await t.database.db.selectFrom('services').select(['id', 'port']).where('organisation_id', '=', s.org.organisationId).execute();
      const ports = (await findings(s)).filter((f) => f.cveId === 'CVE-2024-6387').map((f) => svc.find((x) => x.id === f.serviceId)!.port).sort((a, b) => a - b);
      expect(ports).toEqual([22, 8080]);
    });

    it('matches an OSV record to a service whose CPE names its package (npm semver)', async () => {
      const { s, sessionId, address } = await widgetHost({ cpe: 'cpe:2.3:a:npmjs:semver:7.5.1:*:*:*:*:node.js:*:*' });
      await ingest(t, s.daemon, { sessionId, services: [{ fingerprint: 'fp-w', address, protocol: 'tcp', port: 8443, cpe: 'cpe:2.3:a:npmjs:semver:7.5.2:*:*:*:*:node.js:*:*' }] });
      await match(s);
      expect(await findings(s)).toEqual([expect.objectContaining({ cveId: 'CVE-2022-25883', advisoryId: 'GHSA-c2qf-rxjj-qqgw', severity: 'medium', score: 5.3 })]);
    });

    it('re-matches only what changed: a new advisory reaches the services of its product, other services are not read', async () => {
      const { s, sessionId, address } = await widgetHost({ cpe: 'cpe:2.3:a:acme:sprocket:3.1:*:*:*:*:*:*:*' });
      await ingest(t, s.daemon, { sessionId, services: [{ fingerprint: 'fp-w', address, protocol: 'tcp', port: 8090, cpe: widgetCpe('3.0') }] });
      expect(await match(s)).toMatchObject({ full: true, servicesMatched: 2, opened: 0 });
      await settle(s);
      await imported(page(nvd('CVE-2031-1003', { vector: MEDIUM, score: 5.4, configurations: range('cpe:2.3:a:acme:sprocket:*:*:*:*:*:*:*:*', { versionStartExcluding: '3.0', versionEndExcluding: '3.2' }) })));
      expect(await match(s)).toMatchObject({ full: false, servicesMatched: 1, opened: 1 });
      expect(await findings(s)).toEqual([expect.objectContaining({ cveId: 'CVE-2031-1003', severity: 'medium', score: 5.4 })]);
      // An advisory whose newer record no longer names the version resolves the finding.
      await imported(page(nvd('CVE-2031-1003', { modified: '2024-09-01T00:00:00.000', vector: MEDIUM, score: 5.4, configurations: range('cpe:2.3:a:acme:sprocket:*:*:*:*:*:*:*:*', { versionStartExcluding: '3.0', versionEndExcluding: '3.1' }) })));
      await settle(s);
      expect(await match(s)).toMatchObject({ servicesMatched: 1, resolved: 1 });
    });

    it('keeps organisations apart: each has its own finding; another organisation\'s finding is 404 to PATCH and absent from the collection', async () => {
      const a = await widgetHost({ cpe: widgetCpe('2.4.0') });
      const b = await widgetHost({ cpe: widgetCpe('2.4.0') });
      await match(a.s);
      const [fa] = await findings(a.s);
      expect(await findings(b.s)).toEqual([]);
      await match(b.s);
      const [fb] = await findings(b.s);
      expect(fb!.id).not.toBe(fa!.id);
      const res = await t.app.inject({ method: 'PATCH', url: `/api/v1/vulnerabilities/${fb!.id}`, headers: bearer(a.s.api), payload: { state: 'acknowledged' } });
      expect(res.statusCode).toBe(404);
      expect(res.json().code).toBe('not_found');
      expect((await findings(a.s)).map((f) => f.id)).toEqual([fa!.id]);
      expect(await events(b.s.org.organisationId)).toHaveLength(1);
    });

    it('runs as the job cve.match through the admin endpoint, and reports service_findings and service_cve_feed_age_seconds', async () => {
      const { s } = await widgetHost({ cpe: widgetCpe('2.0.1') });
      const owner = await login(t.app, s.org.ownerEmail);
      const res = await t.app.inject({ method: 'POST', url: '/api/v1/admin/cve-match', headers: { cookie: owner.cookie, 'x-csrf-token': owner.csrfToken } });
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json()).toEqual({ full: true, servicesMatched: 1, opened: 1, resolved: 0, seen: 0 });
      const metricsKey = await seedMemberWithKey(t.database, s.org, 'viewer', ['metrics:read']);
      const m = await t.app.inject({ method: 'GET', url: '/api/v1/metrics', headers: bearer(metricsKey.token) });
      expect(m.statusCode, m.body).toBe(200);
      expect(m.body).toMatch(/^service_findings\{severity="high",state="open"\} 1$/m);
      expect(m.body).toMatch(/^service_findings\{severity="critical",state="resolved"\} 0$/m);
      expect(m.body).toMatch(/^service_cve_feed_age_seconds \d+(\.\d+)?$/m);
    });
  });
});

describe('the advisory feed (SERVICE_ADVISORY_FEED_URL) pulled by cve.match', () => {
  let db: TestDatabase;
  let server: Server;
  let base: string;
  const requests: { url: URL; apiKey: string | undefined; ifNoneMatch: string | undefined }[] = [];
  let nvdRecords: Json[] = [];
  let increment: Json[] = [];
  let failWith: number | null = null;
  /** The NVD page (startIndex) answered 503, the others served. */
  let failPage: string | null = null;
  /** What /osv/all.zip serves. */
  let zipped: Buffer = Buffer.alloc(0);
  const osvFile = gzipSync(JSON.stringify([fixture('osv-GHSA-c2qf-rxjj-qqgw.json')]));

  const runner = (url: string, sleeps: number[] = []) =>
    new JobRunner({
      database: db.database,
      logger: createLogger('silent'),
      jobs: [cveMatch({ advisoryFeed: { url, apiKey: 'nvd-key-123', timeoutMs: 5000, pageDelayMs: 0 } })],
      sleep: async (ms) => void sleeps.push(ms),
    });
  const feedRow = () => db.database.db.selectFrom('advisory_feed').selectAll().executeTakeFirstOrThrow();

  beforeAll(async () => {
    db = await createTestDatabase();
    server = createServer((req, res) => {
      const url = new URL(req.url!, 'http://feed.test');
      requests.push({ url, apiKey: req.headers.apikey as string | undefined, ifNoneMatch: req.headers['if-none-match'] as string | undefined });
      if (failWith || (failPage !== null && url.searchParams.get('startIndex') === failPage)) {
        res.writeHead(failWith ?? 503).end();
      } else if (url.pathname === '/rest/json/cves/2.0') {
        // Two records a page, whatever was asked (NVD may serve fewer than resultsPerPage).
        const all = url.searchParams.has('lastModStartDate') ? increment : nvdRecords;
        const start = Number(url.searchParams.get('startIndex') ?? 0);
        const records = all.slice(start, start + 2);
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ ...page(...records), startIndex: start, totalResults: all.length }));
      } else if (url.pathname === '/osv/all.zip') {
        res.writeHead(200, { 'content-type': 'application/zip' }).end(zipped);
      } else if (url.pathname === '/garbage.json') {
        res.writeHead(200, { 'content-type': 'application/json' }).end('{ "vulnerabilities": [ ');
      } else if (url.pathname === '/osv/all.json.gz') {
        if (req.headers['if-none-match'] === '"osv-1"') res.writeHead(304, { etag: '"osv-1"' }).end();
        else res.writeHead(200, { 'content-type': 'application/gzip', etag: '"osv-1"', 'last-modified': 'Tue, 01 Oct 2024 00:00:00 GMT' }).end(osvFile);
      } else {
        res.writeHead(404).end();
      }
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.close();
    await db.drop();
  });

  it('pages through the NVD API with the API key, then asks only for what changed since (lastModStartDate / lastModEndDate)', async () => {
    nvdRecords = ['CVE-2031-2001', 'CVE-2031-2002', 'CVE-2031-2003'].map((id) => nvd(id, { configurations: range(widgetCpe('*'), { versionEndExcluding: '1.0' }) }));
    const r = await runner(`${base}/rest/json/cves/2.0`).runNow('cve.match');
    expect(r).toMatchObject({ outcome: 'ok', attempts: 1 });
    expect(r.result?.detail).toMatchObject({ feed: { mode: 'nvd', changed: true, new: 3, updated: 0, pages: 2 } });
    expect(requests.map((q) => q.url.searchParams.get('startIndex'))).toEqual(['0', '2']);
    expect(requests.every((q) => q.apiKey === 'nvd-key-123' && !q.url.searchParams.has('lastModStartDate'))).toBe(true);
    const first = await feedRow();
    expect(first).toMatchObject({ url: `${base}/rest/json/cves/2.0`, last_error: null });
    requests.length = 0;
    increment = [nvd('CVE-2031-2002', { modified: '2024-09-01T00:00:00.000', configurations: range(widgetCpe('*'), { versionEndExcluding: '1.1' }) })];
    const again = await runner(`${base}/rest/json/cves/2.0`).runNow('cve.match');
    expect(again.result?.detail).toMatchObject({ feed: { mode: 'nvd', new: 0, updated: 1, pages: 1 } });
    expect(requests).toHaveLength(1);
    expect(requests[0]!.url.searchParams.get('lastModStartDate')).toBe(first.nvd_through!.toISOString().replace('Z', '+00:00'));
    expect(Date.parse(requests[0]!.url.searchParams.get('lastModEndDate')!)).toBeGreaterThan(first.nvd_through!.getTime());
    expect((await feedRow()).confirmed_at!.getTime()).toBeGreaterThan(first.confirmed_at!.getTime());
  });

  it('fetches a gzip file with If-None-Match: a 304 imports nothing and confirms the mirror current', async () => {
    requests.length = 0;
    const url = `${base}/osv/all.json.gz`;
    expect((await runner(url).runNow('cve.match')).result?.detail).toMatchObject({ feed: { mode: 'file', changed: true, new: 1 } });
    const first = await feedRow();
    expect(first).toMatchObject({ url, etag: '"osv-1"', last_modified: 'Tue, 01 Oct 2024 00:00:00 GMT' });
    expect((await runner(url).runNow('cve.match')).result?.detail).toMatchObject({ feed: { mode: 'file', changed: false, new: 0 } });
    expect(requests.map((q) => q.ifNoneMatch)).toEqual([undefined, '"osv-1"']);
    const confirmed = (await feedRow()).confirmed_at!;
    expect(confirmed.getTime()).toBeGreaterThan(first.confirmed_at!.getTime());
    // service_cve_feed_age_seconds counts from that confirmation.
    expect(await feedAgeSeconds(db.database.db, new Date(confirmed.getTime() + 90_000))).toBeCloseTo(90, 2); // PostgreSQL keeps microseconds, a Date milliseconds
  });

  it('fails the tick on a 5xx after three attempts (5 s, 25 s), still matching what the mirror holds; a 4xx is not retried', async () => {
    const org = await seedOrg(db.database);
    const host = await addHost(db.database.db, org.organisationId, { hostname: 'w' });
    const service = await addService(db.database.db, org.organisationId, host, { port: 80, cpe: widgetCpe('0.9') });
    failWith = 503;
    const sleeps: number[] = [];
    const r = await runner(`${base}/rest/json/cves/2.0`, sleeps).runNow('cve.match');
    expect(r).toMatchObject({ outcome: 'failed', attempts: 3, error: expect.stringMatching(/answered 503/) });
    expect(sleeps).toEqual([5000, 25000]);
    expect((await feedRow()).last_error).toMatch(/answered 503/);
    const found = await db.database.db.selectFrom('vulnerabilities').select(['service_id', 'cve_id', 'state']).where('organisation_id', '=', org.organisationId).orderBy('cve_id').execute();
    expect(found).toEqual(['CVE-2031-2001', 'CVE-2031-2002', 'CVE-2031-2003'].map((cve_id) => ({ service_id: service, cve_id, state: 'open' })));
    failWith = 404;
    expect(await runner(`${base}/rest/json/cves/2.0`).runNow('cve.match')).toMatchObject({ outcome: 'failed', attempts: 1 });
    failWith = null;
  });

  it('records why a pull failed, by kind, for advisories status and the console: DNS, connection, HTTP status, parse error; network failures are retried (issue 29)', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const refused = `http://127.0.0.1:${(closed.address() as AddressInfo).port}/rest/json/cves/2.0`;
    await new Promise((resolve) => closed.close(resolve));
    const cases: [string, RegExp, number][] = [
      ['http://feed.invalid/rest/json/cves/2.0', /^DNS: feed\.invalid does not resolve \((ENOTFOUND|EAI_AGAIN)\) \(source http:\/\/feed\.invalid\/rest\/json\/cves\/2\.0\)$/, 3],
      [refused, /^connection: ECONNREFUSED \(source http:\/\/127\.0\.0\.1:\d+\/rest\/json\/cves\/2\.0\)$/, 3],
      [`${base}/osv/not-there.json`, /^HTTP 404: advisory feed http:\/\/127\.0\.0\.1:\d+\/osv\/not-there\.json answered 404$/, 1],
      [`${base}/garbage.json?apiKey=secret`, /^parse error: .+ \(source http:\/\/127\.0\.0\.1:\d+\/garbage\.json\)$/, 1],
    ];
    for (const [url, reason, attempts] of cases) {
      const r = await runner(url).runNow('cve.match');
      expect(r, url).toMatchObject({ outcome: 'failed', attempts });
      expect((await feedRow()).last_error, url).toMatch(reason);
    }
    expect((await feedRow()).last_error).not.toContain('secret');
    // A URL with userinfo: fetch refuses it quoting the whole URL; neither the password nor the query key is kept.
    const r = await runner(`http://ops:hunter2-pass@127.0.0.1:9/feed.json?apiKey=QUERYKEY42`).runNow('cve.match');
    expect(r).toMatchObject({ outcome: 'failed' });
    const stored = (await feedRow()).last_error!;
    expect(stored).toMatch(/credentials/);
    for (const secret of ['hunter2-pass', 'QUERYKEY42']) {
      expect(stored).not.toContain(secret);
      expect(r.error ?? '').not.toContain(secret);
    }
  });

  it('reads an offline mirror (file://): a directory of NVD records one per file, a mirror release file (cve_items), OSV records, gzip; unchanged files are not read again (issue 29)', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'surveyor-mirror-'));
    try {
      const cveOf = (id: string) => (nvd(id, { configurations: range(widgetCpe('*'), { versionEndExcluding: '1.0' }) }) as { cve: Json }).cve;
      mkdirSync(path.join(dir, 'CVE-2031', 'CVE-2031-30xx'), { recursive: true });
      // The layout of the NVD JSON mirror repositories: one `cve` object a file, in year folders.
      writeFileSync(path.join(dir, 'CVE-2031', 'CVE-2031-30xx', 'CVE-2031-3001.json'), JSON.stringify(cveOf('CVE-2031-3001')));
      // A release file of the same mirror, unpacked: the records under cve_items.
      writeFileSync(path.join(dir, 'CVE-Modified.json'), JSON.stringify({ timestamp: '2031-01-01T00:00:00', cve_count: 2, cve_items: [cveOf('CVE-2031-3002'), cveOf('CVE-2031-3003')] }));
      // An OSV ecosystem's all.zip, unzipped: one record a file; and a gzip page of the NVD API.
      writeFileSync(path.join(dir, 'GHSA-c2qf-rxjj-qqgw.json'), JSON.stringify(fixture('osv-GHSA-c2qf-rxjj-qqgw.json')));
      writeFileSync(path.join(dir, 'page.json.gz'), gzipSync(JSON.stringify(page(nvd('CVE-2031-3004', { configurations: range(widgetCpe('*'), { versionEndExcluding: '1.0' }) })))));
      writeFileSync(path.join(dir, 'README.txt'), 'not read');
      const url = pathToFileURL(dir).href;
      const first = await runner(url).runNow('cve.match');
      expect(first).toMatchObject({ outcome: 'ok' });
      // Four new; the OSV record is held already (the file feed above), unchanged.
      expect(first.result?.detail).toMatchObject({ feed: { mode: 'file', changed: true, new: 4, updated: 0 } });
      const stored = await db.database.db.selectFrom('advisories').select('id').where('id', 'in', ['CVE-2031-3001', 'CVE-2031-3002', 'CVE-2031-3003', 'CVE-2031-3004', 'GHSA-c2qf-rxjj-qqgw']).execute();
      expect(stored).toHaveLength(5);
      const confirmed = (await feedRow()).confirmed_at!;
      // Unchanged: confirmed current without reading a file.
      expect((await runner(url).runNow('cve.match')).result?.detail).toMatchObject({ feed: { mode: 'file', changed: false, pages: 0 } });
      expect((await feedRow()).confirmed_at!.getTime()).toBeGreaterThan(confirmed.getTime());
      // A new file: read again.
      writeFileSync(path.join(dir, 'CVE-2031', 'CVE-2031-30xx', 'CVE-2031-3005.json'), JSON.stringify(cveOf('CVE-2031-3005')));
      expect((await runner(url).runNow('cve.match')).result?.detail).toMatchObject({ feed: { mode: 'file', changed: true, new: 1 } });
      // One truncated file does not keep the others out: they are imported, and the pull fails naming it.
      const before = (await feedRow()).confirmed_at;
      writeFileSync(path.join(dir, 'CVE-2031', 'CVE-2031-30xx', 'CVE-2031-3006.json'), JSON.stringify(cveOf('CVE-2031-3006')).slice(0, 40));
      writeFileSync(path.join(dir, 'CVE-2031', 'CVE-2031-30xx', 'CVE-2031-3007.json'), JSON.stringify(cveOf('CVE-2031-3007')));
      expect(await runner(url).runNow('cve.match')).toMatchObject({ outcome: 'failed' });
      expect((await feedRow()).last_error).toMatch(/^parse error: 1 of 7 files of .* could not be read \(the others were imported\): .*CVE-2031-3006\.json: /);
      expect(await db.database.db.selectFrom('advisories').select('id').where('id', 'in', ['CVE-2031-3006', 'CVE-2031-3007']).execute()).toEqual([{ id: 'CVE-2031-3007' }]);
      expect((await feedRow()).confirmed_at).toEqual(before);
      rmSync(path.join(dir, 'CVE-2031', 'CVE-2031-30xx', 'CVE-2031-3006.json'));
      // A missing path and a file that is not what it is named say why; neither confirms the mirror current.
      expect(await runner(pathToFileURL(path.join(dir, 'gone')).href).runNow('cve.match')).toMatchObject({ outcome: 'failed', attempts: 1 });
      expect((await feedRow()).last_error).toMatch(/^file: ENOENT/);
      writeFileSync(path.join(dir, 'CVE-all.json.xz'), 'xz');
      expect(await runner(pathToFileURL(path.join(dir, 'CVE-all.json.xz')).href).runNow('cve.match')).toMatchObject({ outcome: 'failed' });
      // Named .xz but not xz (told by its bytes): a parse error naming it (real xz files: advisory-mirror.test.ts).
      expect((await feedRow()).last_error).toMatch(/^parse error: .*CVE-all\.json\.xz: not JSON/);
      expect((await feedRow()).confirmed_at).toEqual(before);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('reads an OSV ecosystem\'s all.zip, fetched or as a file:// path: every record of the archive, in batches (issue 29)', async () => {
    const zipOf = (records: Json[]) =>
      new Promise<Buffer>((resolve, reject) => {
        const z = new yazl.ZipFile();
        for (const r of records) z.addBuffer(Buffer.from(JSON.stringify(r)), `${String(r.id)}.json`);
        z.addBuffer(Buffer.from('not a record'), 'README.txt');
        z.end();
        const chunks: Buffer[] = [];
        z.outputStream.on('data', (c: Buffer) => chunks.push(c)).on('end', () => resolve(Buffer.concat(chunks))).on('error', reject);
      });
    const osv = fixture('osv-GHSA-c2qf-rxjj-qqgw.json') as Json;
    // 450 records: three batches of at most 200.
    const records = Array.from({ length: 450 }, (_, i) => ({ ...osv, id: `GHSA-zip${String(i).padStart(4, '0')}-qqgw`, aliases: [] }));
    const dir = mkdtempSync(path.join(tmpdir(), 'surveyor-zip-'));
    try {
      writeFileSync(path.join(dir, 'all.zip'), await zipOf(records));
      const local = await runner(pathToFileURL(path.join(dir, 'all.zip')).href).runNow('cve.match');
      expect(local).toMatchObject({ outcome: 'ok' });
      expect(local.result?.detail).toMatchObject({ feed: { mode: 'file', changed: true, new: 450, pages: 3 } });
      const held = await sql<{ n: number }>`select count(*)::int as n from advisories where id like 'GHSA-zip%'`.execute(db.database.db);
      expect(held.rows[0]!.n).toBe(450);
      // Served over HTTP, as OSV publishes it: the same archive, one record newer.
      zipped = await zipOf([{ ...records[0]!, modified: '2031-01-01T00:00:00Z', summary: 'newer' }, ...records.slice(1)]);
      const fetched = await runner(`${base}/osv/all.zip`).runNow('cve.match');
      expect(fetched.result?.detail).toMatchObject({ feed: { mode: 'file', changed: true, new: 0, updated: 1 } });
      writeFileSync(path.join(dir, 'empty.zip'), await zipOf([]));
      expect(await runner(pathToFileURL(path.join(dir, 'empty.zip')).href).runNow('cve.match')).toMatchObject({ outcome: 'failed' });
      expect((await feedRow()).last_error).toMatch(/^parse error: .*empty\.zip holds no advisory record/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('confirms the mirror current only once every NVD page is in: a pull failing on page 2 keeps what it stored and the age running', async () => {
    const url = `${base}/rest/json/cves/2.0`;
    const before = await feedRow();
    // The last successful pull was the file feed, so this one reads the NVD API whole.
    nvdRecords = ['CVE-2031-2101', 'CVE-2031-2102', 'CVE-2031-2103'].map((id) => nvd(id, { modified: '2024-10-01T00:00:00.000', configurations: range(widgetCpe('*'), { versionEndExcluding: '1.0' }) }));
    failPage = '2';
    const r = await runner(url).runNow('cve.match');
    failPage = null;
    expect(r).toMatchObject({ outcome: 'failed', error: expect.stringMatching(/answered 503/) });
    const after = await feedRow();
    expect(after.confirmed_at).toEqual(before.confirmed_at);
    expect(after.nvd_through).toEqual(before.nvd_through);
    expect(after.last_error).toMatch(/answered 503/);
    const stored = await db.database.db.selectFrom('advisories').select('id').where('id', 'in', ['CVE-2031-2101', 'CVE-2031-2102', 'CVE-2031-2103']).orderBy('id').execute();
    expect(stored.map((x) => x.id)).toEqual(['CVE-2031-2101', 'CVE-2031-2102']);
    // The next pull resumes at the page that failed (issue 29), with the pass's own window, and then confirms.
    requests.length = 0;
    const resumed = await runner(url).runNow('cve.match');
    expect(resumed).toMatchObject({ outcome: 'ok' });
    expect(resumed.result?.detail).toMatchObject({ feed: { mode: 'nvd', resumedAt: 2, new: 1, pages: 1 } });
    expect(requests.map((q) => q.url.searchParams.get('startIndex'))).toEqual(['2']);
    const done = await feedRow();
    expect(done).toMatchObject({ last_error: null, nvd_pass_url: null, nvd_pass_index: null, nvd_pass_end: null });
    expect(done.confirmed_at!.getTime()).toBeGreaterThan(before.confirmed_at!.getTime());
  });

  it('never reads a whole feed inside a Run now (an HTTP request): the scheduled tick does, and Run now matches what the mirror holds (issue 29)', async () => {
    const org = await seedOrg(db.database);
    requests.length = 0;
    const fresh = `${base}/rest/json/cves/2.0?fresh=1`;
    const now = await runner(fresh).runNow('cve.match', { organisationId: org.organisationId, trigger: 'admin' });
    expect(now).toMatchObject({ outcome: 'ok' });
    expect(now.result?.detail).toMatchObject({ feed: { deferred: expect.stringMatching(/runs in the scheduled cve\.match tick/) } });
    expect(requests).toEqual([]);
    // The scheduled tick reads it whole; after that a Run now pulls the (short) increment itself.
    expect((await runner(fresh).runNow('cve.match')).result?.detail).toMatchObject({ feed: { mode: 'nvd' } });
    expect(requests.length).toBeGreaterThan(0);
    requests.length = 0;
    increment = [];
    expect((await runner(fresh).runNow('cve.match', { organisationId: org.organisationId, trigger: 'admin' })).result?.detail).toMatchObject({ feed: { mode: 'nvd', pages: 1 } });
    expect(requests.map((q) => q.url.searchParams.has('lastModStartDate'))).toEqual([true]);
  });
});
