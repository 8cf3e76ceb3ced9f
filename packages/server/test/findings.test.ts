import { FINDINGS_BULK_MAX } from '@surveyor/contract';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addHost, addService, addVulnerability } from './fixtures.js';
import { type SeededOrg, type TestApp, bearer, buildTestApp, login, seedMemberWithKey, seedOrg } from './helpers.js';

// Triage (issue 23): the actionable findings with host and port, by advisory, bulk moves with one
// note (one audit row each, a bounded selection), and a finding's history.

let t: TestApp;
let org: SeededOrg;
let other: SeededOrg;
let reader: string;
let editor: { token: string; email: string; keyId: string };
let viewerEmail: string;
const ids: Record<string, string> = {};

const get = (url: string, token = reader) => t.app.inject({ method: 'GET', url, headers: bearer(token) });
const bulk = (payload: unknown, token = editor.token) => t.app.inject({ method: 'POST', url: '/api/v1/findings/bulk', headers: bearer(token), payload: payload as object });
function expectProblem(res: { statusCode: number; json(): { code: string } }, status: number, code: string) {
  expect(res.statusCode).toBe(status);
  expect(res.json().code).toBe(code);
}
const states = async (...names: string[]) =>
  Object.fromEntries(
    (await t.database.db.selectFrom('vulnerabilities').select(['id', 'state', 'note']).where('id', 'in', names.map((n) => ids[n]!)).execute()).map((r) => [Object.keys(ids).find((k) => ids[k] === r.id), [r.state, r.note]]),
  );

beforeAll(async () => {
  t = await buildTestApp();
  org = await seedOrg(t.database);
  other = await seedOrg(t.database);
  reader = (await seedMemberWithKey(t.database, org, 'viewer', ['inventory:read'])).token;
  const e = await seedMemberWithKey(t.database, org, 'editor', ['inventory:read', 'inventory:write']);
  editor = { token: e.token, email: e.email, keyId: e.keyId };
  viewerEmail = (await seedMemberWithKey(t.database, org, 'viewer', ['inventory:read'])).email;
  const db = t.database.db;
  const o = org.organisationId;
  const web1 = await addHost(db, o, { hostname: 'web-1', addresses: ['10.1.0.10'] });
  const web2 = await addHost(db, o, { hostname: 'web-2', addresses: ['10.1.0.11', '10.9.9.9'] });
  const dbh = await addHost(db, o, { fqdn: 'db.example.net', addresses: ['10.2.0.5'] });
  const s = {
    web1ssh: await addService(db, o, web1, { port: 22, name: 'ssh', product: 'OpenSSH', version: '9.2p1' }),
    web1http: await addService(db, o, web1, { port: 443, name: 'https', product: 'Apache httpd', version: '2.4.49' }),
    web2http: await addService(db, o, web2, { port: 8443, name: 'https', product: 'Apache httpd', version: '2.4.49' }),
    dbpg: await addService(db, o, dbh, { port: 5432, protocol: 'tcp', name: 'postgresql', product: 'PostgreSQL', version: '13.1' }),
    dbudp: await addService(db, o, dbh, { port: 161, protocol: 'udp', name: 'snmp', product: 'net-snmp' }),
  };
  ids.apache1 = await addVulnerability(db, o, s.web1http, web1, { cveId: 'CVE-2021-41773', severity: 'critical', score: 9.8 });
  ids.apache2 = await addVulnerability(db, o, s.web2http, web2, { cveId: 'CVE-2021-41773', severity: 'critical', score: 9.8, state: 'acknowledged' });
  ids.ssh = await addVulnerability(db, o, s.web1ssh, web1, { cveId: 'CVE-2024-6387', severity: 'high', score: 8.1 });
  ids.pgHigh = await addVulnerability(db, o, s.dbpg, dbh, { cveId: 'CVE-2021-32027', severity: 'high', score: 8.8 });
  ids.snmp = await addVulnerability(db, o, s.dbudp, dbh, { cveId: 'CVE-2020-15862', severity: 'medium', score: 6.5 });
  ids.resolved = await addVulnerability(db, o, s.web1ssh, web1, { cveId: 'CVE-2023-38408', severity: 'critical', score: 9.8, state: 'resolved' });
  ids.fp = await addVulnerability(db, o, s.web2http, web2, { cveId: 'CVE-2021-42013', severity: 'critical', score: 9.8, state: 'false_positive' });
  const oh = await addHost(db, other.organisationId, { hostname: 'web-1', addresses: ['10.1.0.10'] });
  ids.foreign = await addVulnerability(db, other.organisationId, await addService(db, other.organisationId, oh, { port: 443, product: 'Apache httpd' }), oh, { cveId: 'CVE-2021-41773', severity: 'critical', score: 9.8 });
});
afterAll(async () => {
  await t.close();
});

describe('GET /api/v1/findings', () => {
  it('lists the actionable set (open and acknowledged) by severity, score, CVE and host name, with a total and each host, port/protocol and service', async () => {
    const res = await get('/api/v1/findings');
    expect(res.statusCode, res.body).toBe(200);
    const page = res.json();
    expect(page.total).toBe(5);
    expect(page.data.map((f: { id: string }) => f.id)).toEqual([ids.apache1, ids.apache2, ids.pgHigh, ids.ssh, ids.snmp]);
    const apache = page.data.find((f: { id: string }) => f.id === ids.apache1);
    expect(apache).toMatchObject({ cveId: 'CVE-2021-41773', severity: 'critical', score: 9.8, state: 'open', host: { name: 'web-1', address: '10.1.0.10' }, service: { protocol: 'tcp', port: 443, product: 'Apache httpd', version: '2.4.49' } });
    expect(page.data.find((f: { id: string }) => f.id === ids.snmp)).toMatchObject({ host: { name: 'db.example.net', address: '10.2.0.5' }, service: { protocol: 'udp', port: 161 } });
  });

  it('shows the other states when asked, and never another organisation\'s findings', async () => {
    expect((await get('/api/v1/findings?state=resolved,false_positive')).json().data.map((f: { id: string }) => f.id).sort()).toEqual([ids.resolved, ids.fp].sort());
    const all = (await get('/api/v1/findings?state=open,acknowledged,resolved,false_positive&limit=500')).json();
    expect(all.total).toBe(7);
    expect(all.data.map((f: { id: string }) => f.id)).not.toContain(ids.foreign);
  });

  it('searches by CVE id, host name or FQDN, address prefix and product', async () => {
    const found = async (q: string) => (await get(`/api/v1/findings?search=${encodeURIComponent(q)}`)).json().data.map((f: { id: string }) => f.id).sort();
    expect(await found('cve-2021-4177')).toEqual([ids.apache1, ids.apache2].sort());
    expect(await found('web-2')).toEqual([ids.apache2]);
    expect(await found('example.net')).toEqual([ids.pgHigh, ids.snmp].sort());
    expect(await found('10.1.0')).toEqual([ids.apache1, ids.apache2, ids.ssh].sort());
    expect(await found('10.9.9')).toEqual([ids.apache2]);
    expect(await found('apache')).toEqual([ids.apache1, ids.apache2].sort());
    expect(await found('100%')).toEqual([]);
  });

  it('pages with a cursor bound to the filters: every finding once, the total on each page', async () => {
    const first = (await get('/api/v1/findings?limit=2')).json();
    expect(first).toMatchObject({ total: 5, hasMore: true });
    const second = (await get(`/api/v1/findings?limit=2&cursor=${first.nextCursor}`)).json();
    const third = (await get(`/api/v1/findings?limit=2&cursor=${second.nextCursor}`)).json();
    expect(third).toMatchObject({ total: 5, hasMore: false, nextCursor: null });
    expect([...first.data, ...second.data, ...third.data].map((f: { id: string }) => f.id)).toEqual((await get('/api/v1/findings')).json().data.map((f: { id: string }) => f.id));
    expectProblem(await get(`/api/v1/findings?limit=2&severity=high&cursor=${first.nextCursor}`), 400, 'invalid_cursor');
  });

  it('refuses a bad filter, a short search and an unknown parameter, naming why', async () => {
    expectProblem(await get('/api/v1/findings?state=closed'), 400, 'invalid_filter');
    expectProblem(await get('/api/v1/findings?search=a'), 400, 'invalid_filter');
    expectProblem(await get('/api/v1/findings?severity=urgent'), 400, 'invalid_filter');
    expectProblem(await get('/api/v1/findings?limit=0'), 400, 'limit_out_of_range');
    expectProblem(await get('/api/v1/findings?hostId=x'), 400, 'unknown_parameter');
    expectProblem(await t.app.inject({ method: 'GET', url: '/api/v1/findings' }), 401, 'unauthorized');
  });
});

describe('GET /api/v1/findings/advisories', () => {
  it('groups the findings by advisory with their services, hosts and states counted, the most severe first', async () => {
    const res = await get('/api/v1/findings/advisories');
    expect(res.statusCode, res.body).toBe(200);
    const page = res.json();
    expect(page.total).toBe(4);
    expect(page.data.map((a: { cveId: string }) => a.cveId)).toEqual(['CVE-2021-41773', 'CVE-2021-32027', 'CVE-2024-6387', 'CVE-2020-15862']);
    expect(page.data[0]).toMatchObject({ severity: 'critical', score: 9.8, findings: 2, services: 2, hosts: 2, states: { open: 1, acknowledged: 1, resolved: 0, false_positive: 0 } });
    expect((await get('/api/v1/findings/advisories?search=db.example')).json().data.map((a: { cveId: string }) => a.cveId)).toEqual(['CVE-2021-32027', 'CVE-2020-15862']);
  });
});

describe('POST /api/v1/findings/bulk', () => {
  it('acknowledges a selection with one note in one go: one audit row per finding, a resolved one refused and left as it was', async () => {
    const res = await bulk({ ids: [ids.ssh, ids.snmp, ids.resolved], state: 'acknowledged', note: 'patch window 12 Dec' });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({ updated: 2, unchanged: 0, refused: [{ id: ids.resolved, state: 'resolved', allowed: [] }] });
    expect(await states('ssh', 'snmp', 'resolved')).toEqual({ ssh: ['acknowledged', 'patch window 12 Dec'], snmp: ['acknowledged', 'patch window 12 Dec'], resolved: ['resolved', null] });
    const audit = await t.database.db.selectFrom('audit_log').select(['target_id', 'changes', 'actor_type', 'actor_key_id']).where('organisation_id', '=', org.organisationId).where('target_type', '=', 'vulnerability').where('target_id', 'in', [ids.ssh!, ids.snmp!, ids.resolved!]).execute();
    expect(audit.map((a) => a.target_id).sort()).toEqual([ids.ssh, ids.snmp].sort());
    // Spec 4.3: the audit row records the acting key.
    expect(audit.map((a) => [a.actor_type, a.actor_key_id])).toEqual([['key', editor.keyId], ['key', editor.keyId]]);
    expect(audit[0]!.changes).toMatchObject({ state: { from: 'open', to: 'acknowledged' }, note: { from: null, to: 'patch window 12 Dec' } });
    // The same again changes nothing.
    expect((await bulk({ ids: [ids.ssh, ids.snmp], state: 'acknowledged', note: 'patch window 12 Dec' })).json()).toMatchObject({ updated: 0, unchanged: 2 });
  });

  it('moves every actionable finding of a CVE (the 71-dialog case), and reopens them', async () => {
    const res = await bulk({ cveId: 'CVE-2021-41773', state: 'false_positive', note: 'backported fix (Debian)' });
    expect(res.json()).toEqual({ updated: 2, unchanged: 0, refused: [] });
    expect(await states('apache1', 'apache2')).toEqual({ apache1: ['false_positive', 'backported fix (Debian)'], apache2: ['false_positive', 'backported fix (Debian)'] });
    expect((await bulk({ cveId: 'CVE-2021-41773', from: ['false_positive'], state: 'open' })).json()).toMatchObject({ updated: 2 });
    expect((await states('apache1', 'apache2')).apache1![0]).toBe('open');
    // Another organisation's finding of the same CVE is untouched.
    expect((await t.database.db.selectFrom('vulnerabilities').select('state').where('id', '=', ids.foreign!).executeTakeFirstOrThrow()).state).toBe('open');
  });

  it('moves nothing when one id is not the organisation\'s (404 not_found)', async () => {
    const before = await states('pgHigh');
    expectProblem(await bulk({ ids: [ids.pgHigh, ids.foreign], state: 'acknowledged' }), 404, 'not_found');
    expect(await states('pgHigh')).toEqual(before);
  });

  it(`refuses more than ${FINDINGS_BULK_MAX} findings, listed or by CVE, with 400 validation_failed, moving none`, async () => {
    const many = Array.from({ length: FINDINGS_BULK_MAX + 1 }, () => crypto.randomUUID());
    expectProblem(await bulk({ ids: many, state: 'acknowledged' }), 400, 'validation_failed');
    const db = t.database.db;
    const o = org.organisationId;
    const host = await addHost(db, o, { hostname: 'wide' });
    await sql`insert into services (organisation_id, host_id, protocol, port) select ${o}, ${host}, 'tcp', g from generate_series(1, ${FINDINGS_BULK_MAX + 1}) g`.execute(db);
    await sql`insert into vulnerabilities (organisation_id, service_id, host_id, cve_id, severity, state)
      select ${o}, id, host_id, 'CVE-2099-0001', 'low', 'open' from services where organisation_id = ${o} and host_id = ${host}`.execute(db);
    const res = await bulk({ cveId: 'CVE-2099-0001', state: 'acknowledged' });
    expectProblem(res, 400, 'validation_failed');
    expect(res.json().issues).toEqual([{ path: 'body.cveId', message: `selects ${FINDINGS_BULK_MAX + 1} findings, more than ${FINDINGS_BULK_MAX}` }]);
    const moved = await sql<{ n: number }>`select count(*)::int as n from vulnerabilities where organisation_id = ${o} and cve_id = 'CVE-2099-0001' and state <> 'open'`.execute(db);
    expect(moved.rows[0]!.n).toBe(0);
    await sql`delete from vulnerabilities where organisation_id = ${o} and cve_id = 'CVE-2099-0001'`.execute(db);
  });

  it('refuses a body with both or neither selection, a resolved target, and a viewer', async () => {
    expectProblem(await bulk({ ids: [ids.ssh], cveId: 'CVE-2024-6387', state: 'open' }), 400, 'validation_failed');
    expectProblem(await bulk({ state: 'open' }), 400, 'validation_failed');
    expectProblem(await bulk({ ids: [ids.ssh], state: 'resolved' }), 400, 'validation_failed');
    expectProblem(await bulk({ ids: [ids.ssh], from: ['open'], state: 'open' }), 400, 'validation_failed');
    expectProblem(await bulk({ ids: [ids.ssh], state: 'open' }, reader), 403, 'forbidden');
    const viewer = await login(t.app, viewerEmail);
    const res = await t.app.inject({ method: 'POST', url: '/api/v1/findings/bulk', headers: { cookie: viewer.cookie, 'x-csrf-token': viewer.csrfToken }, payload: { ids: [ids.ssh], state: 'open' } });
    expectProblem(res, 403, 'forbidden');
  });
});

describe('GET /api/v1/findings/{id}/history', () => {
  it('lists each change of state and note, who made it and when, oldest first', async () => {
    const owner = await login(t.app, org.ownerEmail);
    const patch = await t.app.inject({ method: 'PATCH', url: `/api/v1/vulnerabilities/${ids.pgHigh}`, headers: { cookie: owner.cookie, 'x-csrf-token': owner.csrfToken }, payload: { state: 'acknowledged', note: 'vendor ticket 4411' } });
    expect(patch.statusCode, patch.body).toBe(200);
    expect((await bulk({ ids: [ids.pgHigh], state: 'open', note: 'reopened after review' })).statusCode).toBe(200);
    const res = await get(`/api/v1/findings/${ids.pgHigh}/history`);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().data).toEqual([
      { at: expect.any(String), from: 'open', to: 'acknowledged', note: 'vendor ticket 4411', by: org.ownerEmail },
      { at: expect.any(String), from: 'acknowledged', to: 'open', note: 'reopened after review', by: editor.email },
    ]);
  });

  it('answers 404 for another organisation\'s finding, as for one that does not exist', async () => {
    expectProblem(await get(`/api/v1/findings/${ids.foreign}/history`), 404, 'not_found');
    expectProblem(await get(`/api/v1/findings/${crypto.randomUUID()}/history`), 404, 'not_found');
  });
});
