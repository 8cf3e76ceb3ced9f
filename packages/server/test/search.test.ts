import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addHost, addHosts, addService, addVulnerability } from './fixtures.js';
import { type SeededOrg, type TestApp, bearer, buildTestApp, login, seedMemberWithKey, seedOrg } from './helpers.js';

// The console's search box (GET /api/v1/search, internal, issue 23): hosts by the host search's
// rules, present services by the services filters, CVEs of the organisation's findings, networks.

let t: TestApp;
let org: SeededOrg;
let other: SeededOrg;
let token: string;
let hostId: string;
let httpdId: string;
const search = (q: string, tok = token) => t.app.inject({ method: 'GET', url: `/api/v1/search?q=${encodeURIComponent(q)}`, headers: bearer(tok) });
const ok = async (q: string, tok = token) => {
  const res = await search(q, tok);
  expect(res.statusCode, res.body).toBe(200);
  return res.json();
};

beforeAll(async () => {
  t = await buildTestApp();
  [org, other] = await Promise.all([seedOrg(t.database), seedOrg(t.database)]);
  token = (await seedMemberWithKey(t.database, org, 'viewer', ['inventory:read'])).token;
  const editor = (await seedMemberWithKey(t.database, org, 'editor', ['inventory:read', 'inventory:write'])).token;
  const db = t.database.db;
  const o = org.organisationId;
  hostId = await addHost(db, o, { hostname: 'web-1', fqdn: 'web-1.corp.example', addresses: ['10.20.0.5'] });
  httpdId = await addService(db, o, hostId, { port: 80, product: 'Apache httpd', version: '2.4.49', cpe: 'cpe:2.3:a:apache:http_server:2.4.49:*:*:*:*:*:*:*' });
  const tomcat = await addService(db, o, hostId, { port: 8080, product: 'Apache Tomcat', version: '9.0.40', cpe: 'cpe:2.3:a:apache:tomcat:9.0.40:*:*:*:*:*:*:*' });
  const db2 = await addHost(db, o, { hostname: 'db-1', addresses: ['10.20.1.7'] });
  const pg = await addService(db, o, db2, { port: 5432, product: 'PostgreSQL', version: '14.2' });
  await addVulnerability(db, o, httpdId, hostId, { cveId: 'CVE-2021-41773', severity: 'critical', score: 9.8 });
  await addVulnerability(db, o, httpdId, hostId, { cveId: 'CVE-2021-42013', severity: 'critical', score: 9.8 });
  await addVulnerability(db, o, tomcat, hostId, { cveId: 'CVE-2021-41079', severity: 'high', score: 7.5 });
  await addVulnerability(db, o, pg, db2, { cveId: 'CVE-2022-1552', severity: 'high', score: 8.8 });
  await addHosts(db, o, 130, 'fleet');
  for (const body of [{ name: 'Office LAN', cidr: '10.20.0.0/24' }, { name: 'Data centre', cidr: '10.20.1.0/24' }, { name: 'Guest wifi', cidr: '192.168.50.0/24' }]) {
    const res = await t.app.inject({ method: 'POST', url: '/api/v1/networks', headers: bearer(editor), payload: body });
    expect(res.statusCode, res.body).toBe(201);
  }
  const theirHost = await addHost(db, other.organisationId, { hostname: 'web-1', addresses: ['10.20.0.5'] });
  const theirs = await addService(db, other.organisationId, theirHost, { port: 80, product: 'Apache httpd', version: '2.4.49' });
  await addVulnerability(db, other.organisationId, theirs, theirHost, { cveId: 'CVE-2021-41773' });
});
afterAll(async () => t?.close());

describe('GET /api/v1/search', () => {
  it('finds a host by name prefix, address, CIDR and id, with the host search\'s rules', async () => {
    for (const q of ['web', 'WEB-1', '10.20.0.5', '10.20.0.0/24', hostId]) {
      const r = await ok(q);
      expect(r.hosts.data.map((h: { id: string }) => h.id), q).toEqual([hostId]);
      expect(r.hosts).toMatchObject({ total: 1, capped: false });
    }
  });

  it('counts hosts up to 100 and says when the total is a lower bound; a group shows `limit` items', async () => {
    const r = await ok('fleet');
    expect(r.hosts).toMatchObject({ total: 100, capped: true });
    expect(r.hosts.data).toHaveLength(5);
    const more = await t.app.inject({ method: 'GET', url: '/api/v1/search?q=fleet&limit=20', headers: bearer(token) });
    expect(more.json().hosts.data).toHaveLength(20);
  });

  it('finds services by product, by "product version" and by CPE, with the filter that lists the same services and its exact total', async () => {
    const byProduct = await ok('apache');
    expect(byProduct.services.filter).toEqual({ product: 'apache' });
    expect(byProduct.services.total).toBe(2);
    const pair = await ok('Apache 2.4.49');
    expect(pair.services.filter).toEqual({ product: 'Apache', version: '2.4.49' });
    expect(pair.services.data.map((s: { id: string }) => s.id)).toEqual([httpdId]);
    const count = await t.app.inject({ method: 'GET', url: '/api/v1/services/count?product=Apache&version=2.4.49&gone=exclude', headers: bearer(token) });
    expect(pair.services.total).toBe(count.json().total);
    const byCpe = await ok('cpe:2.3:a:apache:tomcat:*');
    expect(byCpe.services.filter).toEqual({ cpe: 'cpe:2.3:a:apache:tomcat' });
    expect(byCpe.services.data.map((s: { product: string }) => s.product)).toEqual(['Apache Tomcat']);
  });

  it('finds CVEs of the organisation\'s findings by the start of the id, case-insensitive, the most severe first, with findings and hosts counted', async () => {
    const r = await ok('cve-2021-4');
    expect(r.cves.total).toBe(3);
    expect(r.cves.data.map((c: { cveId: string }) => c.cveId)).toEqual(['CVE-2021-41773', 'CVE-2021-42013', 'CVE-2021-41079']);
    expect(r.cves.data[0]).toMatchObject({ severity: 'critical', score: 9.8, findings: 1, hosts: 1 });
    expect((await ok('CVE-2022')).cves.data.map((c: { cveId: string }) => c.cveId)).toEqual(['CVE-2022-1552']);
    expect((await ok('CVE-1999')).cves).toMatchObject({ data: [], total: 0 });
  });

  it('finds networks by part of the name, the start of the CIDR, or an address inside', async () => {
    const names = async (q: string) => (await ok(q)).networks.data.map((n: { name: string }) => n.name);
    expect(await names('wifi')).toEqual(['Guest wifi']);
    expect(await names('10.20')).toEqual(['Office LAN', 'Data centre']);
    expect(await names('10.20.1.7')).toEqual(['Data centre']);
    expect(await names('10.0.0.0/8')).toEqual(['Office LAN', 'Data centre']);
    expect((await ok('10.20')).networks.total).toBe(2);
  });

  it('keeps organisations apart: another organisation sees only its own host, service and CVE', async () => {
    const theirs = (await seedMemberWithKey(t.database, other, 'viewer', ['inventory:read'])).token;
    const r = await ok('web-1', theirs);
    expect(r.hosts.total).toBe(1);
    expect(r.hosts.data[0].id).not.toBe(hostId);
    expect((await ok('apache', theirs)).services.total).toBe(1);
    expect((await ok('CVE-2021', theirs)).cves.total).toBe(1);
    expect((await ok('10.20', theirs)).networks.total).toBe(0);
  });

  it('refuses a query shorter than 2 characters (or none) with 400 invalid_filter, and an unknown parameter with 400 unknown_parameter', async () => {
    for (const url of ['/api/v1/search?q=a', '/api/v1/search?q=%20a%20', '/api/v1/search', '/api/v1/search?q=ab&limit=0']) {
      const res = await t.app.inject({ method: 'GET', url, headers: bearer(token) });
      expect(res.statusCode, url).toBe(400);
      expect(res.json().code, url).toBe(url.includes('limit') ? 'limit_out_of_range' : 'invalid_filter');
    }
    const res = await t.app.inject({ method: 'GET', url: '/api/v1/search?q=web&kind=hosts', headers: bearer(token) });
    expect(res.statusCode).toBe(400);
    expect(res.json().code).toBe('unknown_parameter');
  });

  it('needs inventory:read; a signed-in member\'s session may search; it is not in the public document', async () => {
    const metricsOnly = await seedMemberWithKey(t.database, org, 'viewer', ['metrics:read']);
    const res = await search('web', metricsOnly.token);
    expect(res.statusCode).toBe(403);
    expect(res.json().code).toBe('forbidden');
    expect((await t.app.inject({ method: 'GET', url: '/api/v1/search?q=web' })).statusCode).toBe(401);
    const session = await login(t.app, metricsOnly.email);
    const viaCookie = await t.app.inject({ method: 'GET', url: '/api/v1/search?q=web', headers: { cookie: session.cookie } });
    expect(viaCookie.json().hosts.total).toBe(1);
    const doc = (await t.app.inject({ method: 'GET', url: '/openapi.json' })).json();
    expect(doc.paths['/api/v1/search']).toBeUndefined();
  });
});
