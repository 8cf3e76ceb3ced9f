import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addHost, addHosts, addService } from './fixtures.js';
import { type SeededOrg, type TestApp, bearer, buildTestApp, login, seedMemberWithKey, seedOrg } from './helpers.js';

// The services filters (issue 23): product, version, port, protocol, CPE and gone on the public
// collection, and the console's count of what they select (GET /api/v1/services/count, internal).

const HTTPD_49 = 'cpe:2.3:a:apache:http_server:2.4.49:*:*:*:*:*:*:*';
let t: TestApp;
let org: SeededOrg;
let other: SeededOrg;
let token: string;
const ids: Record<string, string> = {};
const get = (url: string, tok = token) => t.app.inject({ method: 'GET', url, headers: bearer(tok) });

/** Every service of a filtered walk, page by page with the cursor. */
async function walk(query: string, limit = 10): Promise<{ id: string; product: string | null; version: string | null; port: number; goneAt: string | null }[]> {
  const all = [];
  let cursor: string | null = null;
  do {
    const res = await get(`/api/v1/services?limit=${limit}${query ? `&${query}` : ''}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
    expect(res.statusCode, res.body).toBe(200);
    const page = res.json();
    all.push(...page.data);
    cursor = page.nextCursor;
  } while (cursor);
  return all;
}
const count = async (query: string) => {
  const res = await get(`/api/v1/services/count${query ? `?${query}` : ''}`);
  expect(res.statusCode, res.body).toBe(200);
  return res.json().total as number;
};
const idsOf = async (query: string) => (await walk(query, 500)).map((s) => s.id).sort();
const expectIds = async (query: string, names: string[]) => expect(await idsOf(query), query).toEqual(names.map((n) => ids[n]).sort());

beforeAll(async () => {
  t = await buildTestApp();
  [org, other] = await Promise.all([seedOrg(t.database), seedOrg(t.database)]);
  token = (await seedMemberWithKey(t.database, org, 'viewer', ['inventory:read'])).token;
  const db = t.database.db;
  const o = org.organisationId;
  const h = async (name: string) => addHost(db, o, { hostname: name, addresses: [] });
  ids.httpd49a = await addService(db, o, await h('web-1'), { port: 80, product: 'Apache httpd', version: '2.4.49', cpe: HTTPD_49 });
  ids.httpd49b = await addService(db, o, await h('web-2'), { port: 443, product: 'Apache httpd', version: '2.4.49', cpe: HTTPD_49.toUpperCase() });
  ids.httpd54 = await addService(db, o, await h('web-3'), { port: 80, product: 'Apache httpd', version: '2.4.54', cpe: 'cpe:2.3:a:apache:http_server:2.4.54:*:*:*:*:*:*:*' });
  ids.tomcat = await addService(db, o, await h('app-1'), { port: 8080, product: 'Apache Tomcat', version: '9.0.40', cpe: 'cpe:2.3:a:apache:tomcat:9.0.40:*:*:*:*:*:*:*' });
  ids.ssh = await addService(db, o, await h('bastion'), { port: 22, product: 'OpenSSH', version: '8.9p1', cpe: 'cpe:2.3:a:openbsd:openssh:8.9p1:*:*:*:*:*:*:*' });
  ids.dns = await addService(db, o, await h('dns-1'), { port: 53, protocol: 'udp', product: 'dnsmasq', version: '2.40' });
  ids.pct = await addService(db, o, await h('odd'), { port: 9000, product: '100% pure_http', version: '1.0' });
  ids.gone = await addService(db, o, await h('old-web'), { port: 80, product: 'Apache httpd', version: '2.4.49', cpe: HTTPD_49 });
  await sql`update services set gone_at = now() where id = ${ids.gone}`.execute(db);
  // 150 more hosts with nginx on 443, every other one with Apache 2.4.49 on 8080: filtered walks cross pages.
  const bulk = await addHosts(db, o, 150, 'fleet');
  await sql`insert into services (organisation_id, host_id, protocol, port, product, version, cpe)
    select ${o}, h, 'tcp', 443, 'nginx', '1.25.3', 'cpe:2.3:a:f5:nginx:1.25.3:*:*:*:*:*:*:*' from unnest(${bulk}::uuid[]) h`.execute(db);
  await sql`insert into services (organisation_id, host_id, protocol, port, product, version, cpe)
    select ${o}, h, 'tcp', 8080, 'Apache httpd', '2.4.49', ${HTTPD_49} from unnest(${bulk.filter((_, i) => i % 2 === 0)}::uuid[]) h`.execute(db);
  // Another organisation runs the same software: never counted, never listed.
  await addService(db, other.organisationId, await addHost(db, other.organisationId, { hostname: 'web-1' }), { port: 80, product: 'Apache httpd', version: '2.4.49', cpe: HTTPD_49 });
});
afterAll(async () => t?.close());

describe('services filters (GET /api/v1/services)', () => {
  it('matches product as a case-insensitive substring, LIKE characters taken literally', async () => {
    const tomcatAndHttpd = await walk('product=APACHE', 500);
    expect(new Set(tomcatAndHttpd.map((s) => s.product))).toEqual(new Set(['Apache httpd', 'Apache Tomcat']));
    await expectIds('product=tomcat', ['tomcat']);
    await expectIds('product=%25%20pure_', ['pct']);
    expect(await idsOf('product=%25%25')).toEqual([]);
  });

  it('matches version exactly or as a prefix followed by a non-digit (2.4 finds 2.4.49, never 2.40)', async () => {
    await expectIds('version=2.4.54', ['httpd54']);
    const v24 = await walk('version=2.4', 500);
    expect(new Set(v24.map((s) => s.version))).toEqual(new Set(['2.4.49', '2.4.54']));
    await expectIds('version=8.9', ['ssh']);
    await expectIds('version=2.40', ['dns']);
    expect(await idsOf('version=2.4.4')).toEqual([]);
  });

  it('matches port and protocol exactly', async () => {
    await expectIds('port=53', ['dns']);
    expect(await idsOf('port=53&protocol=tcp')).toEqual([]);
    await expectIds('protocol=udp', ['dns']);
    expect((await walk('port=8080', 500)).length).toBe(75 + 1);
  });

  it('matches a CPE on whole components, case-insensitive, trailing wildcards ignored', async () => {
    const httpd = await walk('cpe=cpe:2.3:a:apache:http_server', 500);
    expect(httpd.length).toBe(2 + 1 + 75 + 1); // 2.4.49 twice, 2.4.54, the fleet's, the gone one
    expect(await count('cpe=cpe:2.3:a:apache')).toBe(httpd.length + 1); // and Tomcat
    expect(await idsOf('cpe=cpe:2.3:a:apache:http')).toEqual([]); // not a whole component
    expect(await count(`cpe=${encodeURIComponent(HTTPD_49)}`)).toBe(2 + 75 + 1);
    expect(await count('cpe=CPE:2.3:A:Apache:HTTP_Server:2.4.49')).toBe(2 + 75 + 1);
    expect(await idsOf('cpe=cpe:2.3:a:apache:http_server:2.4')).toEqual([]); // 2.4 is not 2.4.49 as a component
  });

  it('lists gone services unless asked otherwise: gone=exclude leaves them out, gone=only lists just them', async () => {
    expect((await idsOf('product=apache%20httpd&port=80'))).toEqual([ids.httpd49a, ids.httpd54, ids.gone].sort());
    await expectIds('product=apache%20httpd&port=80&gone=exclude', ['httpd49a', 'httpd54']);
    await expectIds('gone=only', ['gone']);
  });

  it('answers "where does Apache 2.4.49 run?": filters combine, keyset pages cover every match once, and the count equals them', async () => {
    const q = 'product=apache&version=2.4.49&gone=exclude';
    const rows = await walk(q, 7);
    expect(rows.length).toBe(2 + 75);
    expect(new Set(rows.map((r) => r.id)).size).toBe(rows.length);
    expect(rows.every((r) => r.product === 'Apache httpd' && r.version === '2.4.49' && r.goneAt === null)).toBe(true);
    expect(await count(q)).toBe(rows.length);
    for (const query of ['', 'port=8080', 'cpe=cpe:2.3:a:apache', 'version=2.4&protocol=tcp', 'gone=only', 'product=nginx', 'product=none-such']) {
      expect(await count(query), query).toBe((await walk(query, 50)).length);
    }
  });

  it('binds the cursor to the filters: a cursor used with other filters is 400 invalid_cursor', async () => {
    const first = (await get('/api/v1/services?limit=5&product=apache')).json();
    expect(first.hasMore).toBe(true);
    const res = await get(`/api/v1/services?limit=5&product=nginx&cursor=${encodeURIComponent(first.nextCursor)}`);
    expect(res.statusCode).toBe(400);
    expect(res.json().code).toBe('invalid_cursor');
  });

  it('keeps organisations apart: the other organisation\'s Apache is neither listed nor counted', async () => {
    const theirs = (await seedMemberWithKey(t.database, other, 'viewer', ['inventory:read'])).token;
    const res = await get('/api/v1/services?product=apache&version=2.4.49', theirs);
    expect(res.json().data).toHaveLength(1);
    expect((await get('/api/v1/services/count?product=apache&version=2.4.49', theirs)).json()).toEqual({ total: 1 });
    expect(await count('product=apache&version=2.4.49')).toBe(2 + 75 + 1);
  });
});

describe('GET /api/v1/services/count (internal)', () => {
  it('refuses a bad filter value with 400 invalid_filter and an unknown parameter (limit included) with 400 unknown_parameter', async () => {
    for (const q of ['port=0', 'port=x', 'protocol=icmp', 'cpe=apache', 'product=a', 'hostId=1', 'gone=maybe']) {
      const res = await get(`/api/v1/services/count?${q}`);
      expect(res.statusCode, q).toBe(400);
      expect(res.json().code, q).toBe('invalid_filter');
    }
    for (const q of ['limit=10', 'organisationId=x', 'search=apache']) {
      const res = await get(`/api/v1/services/count?${q}`);
      expect(res.statusCode, q).toBe(400);
      expect(res.json().code, q).toBe('unknown_parameter');
      expect(res.json().detail, q).toContain('product');
    }
  });

  it('needs inventory:read (403 forbidden) and a credential (401); the console\'s session may call it', async () => {
    const metricsOnly = await seedMemberWithKey(t.database, org, 'viewer', ['metrics:read']);
    const res = await get('/api/v1/services/count', metricsOnly.token);
    expect(res.statusCode).toBe(403);
    expect(res.json()).toMatchObject({ code: 'forbidden', requiredScope: 'inventory:read' });
    expect((await t.app.inject({ method: 'GET', url: '/api/v1/services/count' })).statusCode).toBe(401);
    const session = await login(t.app, metricsOnly.email);
    const viaCookie = await t.app.inject({ method: 'GET', url: '/api/v1/services/count?port=22', headers: { cookie: session.cookie } });
    expect(viaCookie.statusCode).toBe(200);
    expect(viaCookie.json()).toEqual({ total: 1 });
  });

  it('is absent from the public OpenAPI document, while the collection documents every filter', async () => {
    const doc = (await t.app.inject({ method: 'GET', url: '/openapi.json' })).json();
    expect(doc.paths['/api/v1/services/count']).toBeUndefined();
    const params = doc.paths['/api/v1/services'].get.parameters.map((p: { name: string }) => p.name).sort();
    expect(params).toEqual(['cpe', 'cursor', 'exposed', 'gone', 'hostId', 'limit', 'port', 'product', 'protocol', 'version']);
  });
});
