import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SeededOrg, type TestApp, bearer, buildTestApp, seedMemberWithKey, seedOrg } from './helpers.js';
import { addCertificate, addHost, addHosts, addService, addSite, addTopology, addVulnerability } from './fixtures.js';

const collections = ['hosts', 'services', 'networks', 'sites', 'certificates', 'vulnerabilities', 'snapshots', 'topologies'] as const;

describe('inventory collections (spec 2, 4.1)', () => {
  let t: TestApp;
  let org: SeededOrg;
  let other: SeededOrg;
  let token: string;
  let otherToken: string;
  const get = (url: string, tok = token) => t.app.inject({ method: 'GET', url, headers: bearer(tok) });
  let doc: any;

  beforeAll(async () => {
    t = await buildTestApp();
    org = await seedOrg(t.database);
    other = await seedOrg(t.database);
    token = (await seedMemberWithKey(t.database, org, 'viewer', ['inventory:read'])).token;
    otherToken = (await seedMemberWithKey(t.database, other, 'viewer', ['inventory:read'])).token;
    doc = (await t.app.inject({ method: 'GET', url: '/openapi.json' })).json();
  });
  afterAll(() => t.close());

  it.each(collections)('%s answers the envelope { data, nextCursor, hasMore } for an empty organisation, with rate-limit headers', async (name) => {
    const res = await get(`/api/v1/${name}`);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ data: [], nextCursor: null, hasMore: false });
    expect(res.headers['ratelimit-limit']).toBe('1200');
    expect(Number(res.headers['ratelimit-remaining'])).toBeLessThan(1200);
  });

  it.each(collections)('%s needs inventory:read (403 forbidden with requiredScope) and a credential (401)', async (name) => {
    const metricsOnly = await seedMemberWithKey(t.database, org, 'viewer', ['metrics:read']);
    const res = await get(`/api/v1/${name}`, metricsOnly.token);
    expect(res.statusCode).toBe(403);
    expect(res.json()).toMatchObject({ code: 'forbidden', requiredScope: 'inventory:read' });
    const anon = await t.app.inject({ method: 'GET', url: `/api/v1/${name}` });
    expect(anon.statusCode).toBe(401);
  });

  it.each(collections)('%s refuses an unknown parameter with 400 unknown_parameter naming exactly the documented parameters', async (name) => {
    const documented = doc.paths[`/api/v1/${name}`].get.parameters.map((p: { name: string }) => p.name).sort();
    expect(documented).toEqual(expect.arrayContaining(['cursor', 'limit']));
    const res = await get(`/api/v1/${name}?organisationId=${other.organisationId}`);
    expect(res.statusCode).toBe(400);
    const body = res.json();
    expect(body.code).toBe('unknown_parameter');
    expect([...body.acceptedParameters].sort()).toEqual(documented);
    for (const p of documented) expect(body.detail).toContain(p);
  });

  it.each(collections)('%s accepts every documented parameter', async (name) => {
    const params = doc.paths[`/api/v1/${name}`].get.parameters as { name: string; schema: any }[];
    for (const p of params) {
      if (p.name === 'cursor') continue;
      const samples: Record<string, string> = { limit: '10', port: '443', cpe: 'cpe:2.3:a:apache' };
      const value = samples[p.name] ?? (p.schema.enum ? p.schema.enum[0] : p.schema.format === 'uuid' ? '00000000-0000-4000-8000-000000000000' : 'ab');
      const res = await get(`/api/v1/${name}?${p.name}=${encodeURIComponent(value)}`);
      expect(res.statusCode, `${name}?${p.name}=${value}: ${res.body}`).toBe(200);
    }
  });

  it.each(collections)('%s refuses limit 0, 501, 1.5, abc, empty and repeated with 400 limit_out_of_range', async (name) => {
    for (const q of ['limit=0', 'limit=501', 'limit=1.5', 'limit=abc', 'limit=', 'limit=-1', 'limit=5&limit=6']) {
      const res = await get(`/api/v1/${name}?${q}`);
      expect(res.statusCode, q).toBe(400);
      expect(res.json().code, q).toBe('limit_out_of_range');
    }
    expect((await get(`/api/v1/${name}?limit=500`)).statusCode).toBe(200);
    expect((await get(`/api/v1/${name}?limit=1`)).statusCode).toBe(200);
  });

  const badFilters: Record<string, string[]> = {
    hosts: ['siteId=nope', 'search=a', 'search=', 'search=%20x%20'],
    services: ['hostId=123', 'port=0', 'port=65536', 'port=http', 'port=', 'protocol=icmp', 'cpe=apache', 'cpe=cpe:/a:apache', 'product=a', 'version=', 'gone=yes'],
    networks: ['siteId=x'],
    certificates: ['hostId=x', 'trustStatus=valid'],
    vulnerabilities: ['serviceId=x', 'state=closed', 'severity=urgent', 'state=OPEN'],
    snapshots: ['siteId=x', 'reason=whenever'],
    topologies: ['siteId=x', 'kind=layer2', 'status=done'],
  };
  it.each(Object.entries(badFilters))('%s refuses invalid filter values with 400 invalid_filter, never an empty page', async (name, queries) => {
    for (const q of queries) {
      const res = await get(`/api/v1/${name}?${q}`);
      expect(res.statusCode, q).toBe(400);
      expect(res.json().code, q).toBe('invalid_filter');
      expect(res.json().issues.length, q).toBeGreaterThan(0);
    }
  });

  it('returns items with every documented field, timestamps RFC 3339 with offset, and nothing of another organisation', async () => {
    const site = await addSite(t.database.db, org.organisationId, 'hq');
    const hostId = await addHost(t.database.db, org.organisationId, { hostname: 'web-1', fqdn: 'web-1.corp.example', addresses: ['10.20.0.5', '2001:db8::5'], macs: ['AA:BB:CC:00:11:22'], siteId: site.id, os: 'Linux' });
    const serviceId = await addService(t.database.db, org.organisationId, hostId, { port: 443, name: 'https', product: 'nginx', version: '1.25.3', cpe: 'cpe:2.3:a:f5:nginx:1.25.3:*:*:*:*:*:*:*' });
    await addVulnerability(t.database.db, org.organisationId, serviceId, hostId, { cveId: 'CVE-2024-7347', severity: 'medium', score: 4.7 });
    await addCertificate(t.database.db, org.organisationId, hostId, { trustStatus: 'trusted' });
    await addTopology(t.database.db, org.organisationId, { kind: 'network', siteId: site.id });
    const theirHost = await addHost(t.database.db, other.organisationId, { hostname: 'web-1', addresses: ['10.20.0.5'] });
    await addService(t.database.db, other.organisationId, theirHost, { port: 22 });

    const hosts = (await get('/api/v1/hosts')).json().data;
    expect(hosts).toHaveLength(1);
    expect(hosts[0]).toMatchObject({ id: hostId, siteId: site.id, hostname: 'web-1', fqdn: 'web-1.corp.example', addresses: ['10.20.0.5', '2001:db8::5'], macs: ['aa:bb:cc:00:11:22'], os: 'Linux', openPortCount: 1 });
    const services = (await get('/api/v1/services')).json().data;
    expect(services).toEqual([expect.objectContaining({ id: serviceId, hostId, port: 443, protocol: 'tcp', name: 'https', product: 'nginx', version: '1.25.3', cpe: 'cpe:2.3:a:f5:nginx:1.25.3:*:*:*:*:*:*:*' })]);
    const vulns = (await get('/api/v1/vulnerabilities')).json().data;
    expect(vulns).toEqual([expect.objectContaining({ serviceId, hostId, cveId: 'CVE-2024-7347', severity: 'medium', score: 4.7, state: 'open' })]);
    const certs = (await get('/api/v1/certificates')).json().data;
    expect(certs).toEqual([expect.objectContaining({ hostId, subject: 'CN=example.test', issuer: 'CN=Example CA', trustStatus: 'trusted', notBefore: '2026-01-01T00:00:00.000Z', fingerprint: expect.stringMatching(/^[0-9a-f]{64}$/) })]);
    const topologies = (await get('/api/v1/topologies')).json().data;
    expect(topologies).toEqual([expect.objectContaining({ kind: 'network', status: 'ready', nodeCount: 3, edgeCount: 2, siteId: site.id })]);
    expect((await get('/api/v1/sites')).json().data).toEqual([expect.objectContaining({ id: site.id, code: 'hq' })]);

    const all = [hosts, services, vulns, certs, topologies].flat();
    for (const item of all) {
      for (const [k, v] of Object.entries(item)) {
        if (k.endsWith('At') && v !== null) expect(v, k).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/);
      }
    }
    // The other organisation sees only its own.
    expect((await get('/api/v1/hosts', otherToken)).json().data.map((h: { id: string }) => h.id)).toEqual([theirHost]);
    // Filtering by another organisation's id finds nothing.
    expect((await get(`/api/v1/services?hostId=${theirHost}`)).json().data).toEqual([]);
    expect((await get(`/api/v1/hosts?search=${theirHost}`)).json().data).toEqual([]);
  });

  it('filters each collection by its filters', async () => {
    const o = await seedOrg(t.database);
    const tok = (await seedMemberWithKey(t.database, o, 'viewer', ['inventory:read'])).token;
    const s1 = await addSite(t.database.db, o.organisationId, 's1');
    const h1 = await addHost(t.database.db, o.organisationId, { hostname: 'a', siteId: s1.id });
    const h2 = await addHost(t.database.db, o.organisationId, { hostname: 'b' });
    const sv1 = await addService(t.database.db, o.organisationId, h1, { port: 22 });
    const sv2 = await addService(t.database.db, o.organisationId, h2, { port: 80 });
    await addVulnerability(t.database.db, o.organisationId, sv1, h1, { cveId: 'CVE-2023-0001', severity: 'critical', state: 'open' });
    await addVulnerability(t.database.db, o.organisationId, sv2, h2, { cveId: 'CVE-2023-0002', severity: 'low', state: 'acknowledged' });
    await addCertificate(t.database.db, o.organisationId, h1, { trustStatus: 'expired' });
    await addCertificate(t.database.db, o.organisationId, h2, { trustStatus: 'self_signed' });
    await addTopology(t.database.db, o.organisationId, { kind: 'network', status: 'ready' });
    await addTopology(t.database.db, o.organisationId, { kind: 'application', status: 'stale', siteId: s1.id });
    const ids = async (url: string) => (await get(url, tok)).json().data.map((x: any) => x.hostId ?? x.hostname ?? x.kind);

    expect(await ids(`/api/v1/hosts?siteId=${s1.id}`)).toEqual(['a']);
    expect(await ids(`/api/v1/services?hostId=${h2}`)).toEqual([h2]);
    expect(await ids(`/api/v1/vulnerabilities?serviceId=${sv1}`)).toEqual([h1]);
    expect(await ids('/api/v1/vulnerabilities?state=acknowledged')).toEqual([h2]);
    expect(await ids('/api/v1/vulnerabilities?severity=critical')).toEqual([h1]);
    expect(await ids('/api/v1/vulnerabilities?severity=critical&state=acknowledged')).toEqual([]);
    expect(await ids('/api/v1/certificates?trustStatus=expired')).toEqual([h1]);
    expect(await ids(`/api/v1/certificates?hostId=${h2}`)).toEqual([h2]);
    expect(await ids('/api/v1/topologies?kind=application')).toEqual(['application']);
    expect(await ids('/api/v1/topologies?status=ready')).toEqual(['network']);
    expect(await ids(`/api/v1/topologies?siteId=${s1.id}`)).toEqual(['application']);
  });
});

describe('host search (spec 2.3)', () => {
  let t: TestApp;
  let token: string;
  const hosts: Record<string, string> = {};
  const search = async (term: string) => {
    const res = await t.app.inject({ method: 'GET', url: `/api/v1/hosts?search=${encodeURIComponent(term)}`, headers: bearer(token) });
    expect(res.statusCode, res.body).toBe(200);
    return res.json().data.map((h: { hostname: string }) => h.hostname).sort();
  };

  beforeAll(async () => {
    t = await buildTestApp();
    const org = await seedOrg(t.database);
    token = (await seedMemberWithKey(t.database, org, 'viewer', ['inventory:read'])).token;
    const db = t.database.db;
    hosts.web1 = await addHost(db, org.organisationId, { hostname: 'Web-01', fqdn: 'web-01.corp.example', addresses: ['10.1.2.3'] });
    hosts.web2 = await addHost(db, org.organisationId, { hostname: 'web-02', fqdn: 'web-02.corp.example', addresses: ['10.1.9.9', '2001:db8:1::10'] });
    hosts.db = await addHost(db, org.organisationId, { hostname: 'db_1', fqdn: 'postgres.corp.example', addresses: ['10.2.0.1', '2001:db8:2::1'] });
    hosts.pct = await addHost(db, org.organisationId, { hostname: 'dbx1', addresses: ['192.168.7.7'] });
  });
  afterAll(() => t.close());

  it('matches a UUID to the host id', async () => {
    expect(await search(hosts.db!)).toEqual(['db_1']);
    expect(await search(hosts.db!.toUpperCase())).toEqual(['db_1']);
  });

  it('matches an IPv4 or IPv6 address exactly', async () => {
    expect(await search('10.1.2.3')).toEqual(['Web-01']);
    expect(await search('2001:db8:2::1')).toEqual(['db_1']);
    expect(await search('2001:0db8:0002:0000:0000:0000:0000:0001')).toEqual(['db_1']);
    expect(await search('10.1.2.4')).toEqual([]);
  });

  it('matches a CIDR by containment, IPv4 and IPv6', async () => {
    expect(await search('10.1.0.0/16')).toEqual(['Web-01', 'web-02']);
    expect(await search('10.0.0.0/8')).toEqual(['Web-01', 'db_1', 'web-02']);
    expect(await search('2001:db8:1::/48')).toEqual(['web-02']);
    expect(await search('2001:db8::/32')).toEqual(['db_1', 'web-02']);
    expect(await search('10.1.2.3/16')).toEqual(['Web-01', 'web-02']);
  });

  it('matches anything else against hostname or FQDN, case-insensitively by prefix', async () => {
    expect(await search('web')).toEqual(['Web-01', 'web-02']);
    expect(await search('WEB-0')).toEqual(['Web-01', 'web-02']);
    expect(await search('postgres.corp')).toEqual(['db_1']);
    expect(await search('corp')).toEqual([]);
  });

  it('treats text that only looks like an address as a name, never failing', async () => {
    expect(await search('1:2:3:4:5:6:7::8')).toEqual([]);
    expect(await search('2001:db8::/032')).toEqual([]);
    expect(await search('10.1.2.3.4')).toEqual([]);
  });

  it('treats LIKE wildcards in the term literally', async () => {
    expect(await search('db_')).toEqual(['db_1']);
    expect(await search('d%')).toEqual([]);
  });
});

describe('keyset pagination', () => {
  let t: TestApp;
  let org: SeededOrg;
  let token: string;
  const page = async (url: string, tok = token) => {
    const res = await t.app.inject({ method: 'GET', url, headers: bearer(tok) });
    expect(res.statusCode, res.body).toBe(200);
    return res.json() as { data: { id: string }[]; nextCursor: string | null; hasMore: boolean };
  };

  beforeAll(async () => {
    t = await buildTestApp();
    org = await seedOrg(t.database);
    token = (await seedMemberWithKey(t.database, org, 'viewer', ['inventory:read'])).token;
  });
  afterAll(() => t.close());

  it('walks every row exactly once in insertion order, the last page with nextCursor null', async () => {
    const ids = await addHosts(t.database.db, org.organisationId, 120, 'walk');
    const seen: string[] = [];
    let url = '/api/v1/hosts?limit=50';
    const sizes: number[] = [];
    for (;;) {
      const p = await page(url);
      sizes.push(p.data.length);
      seen.push(...p.data.map((h) => h.id));
      expect(p.hasMore).toBe(p.nextCursor !== null);
      if (!p.nextCursor) break;
      url = `/api/v1/hosts?limit=50&cursor=${encodeURIComponent(p.nextCursor)}`;
    }
    expect(sizes).toEqual([50, 50, 20]);
    expect(seen).toEqual(ids);
  });

  it('never shows a row twice while rows are inserted and deleted during the walk', async () => {
    const o = await seedOrg(t.database);
    const tok = (await seedMemberWithKey(t.database, o, 'viewer', ['inventory:read'])).token;
    const initial = await addHosts(t.database.db, o.organisationId, 60, 'churn');
    const seen: string[] = [];
    let url = '/api/v1/hosts?limit=7';
    let round = 0;
    for (;;) {
      const p = await page(url, tok);
      seen.push(...p.data.map((h) => h.id));
      // Between pages: new rows arrive and some rows not yet seen, and some already seen, go away.
      await addHosts(t.database.db, o.organisationId, 3, `late-${round}`);
      const victim = initial[Math.min(59, 20 + round * 3)]!;
      await t.database.db.deleteFrom('hosts').where('organisation_id', '=', o.organisationId).where('id', '=', victim).execute();
      await t.database.db.deleteFrom('hosts').where('organisation_id', '=', o.organisationId).where('id', '=', initial[round]!).execute();
      round++;
      if (!p.nextCursor) break;
      url = `/api/v1/hosts?limit=7&cursor=${encodeURIComponent(p.nextCursor)}`;
      expect(round).toBeLessThan(100);
    }
    expect(new Set(seen).size).toBe(seen.length);
    // Rows that existed for the whole walk were all seen.
    const deleted = new Set((await t.database.db.selectFrom('hosts').select('id').where('organisation_id', '=', o.organisationId).execute()).map((r) => r.id));
    for (const id of initial.slice(Math.max(...[round])).filter((id) => deleted.has(id))) expect(seen).toContain(id);
  });

  it('pages a name search in insertion order whether its matches are few or many (over 5,000)', async () => {
    const o = await seedOrg(t.database);
    const tok = (await seedMemberWithKey(t.database, o, 'viewer', ['inventory:read'])).token;
    const many = await addHosts(t.database.db, o.organisationId, 5100, 'many');
    await addHosts(t.database.db, o.organisationId, 10, 'other');
    const few = await addHosts(t.database.db, o.organisationId, 7, 'few');
    const walk = async (term: string) => {
      const seen: string[] = [];
      let url = `/api/v1/hosts?limit=500&search=${term}`;
      for (;;) {
        const p = await page(url, tok);
        seen.push(...p.data.map((h) => h.id));
        if (!p.nextCursor) return seen;
        url = `/api/v1/hosts?limit=500&search=${term}&cursor=${encodeURIComponent(p.nextCursor)}`;
      }
    };
    expect(await walk('many')).toEqual(many);
    expect(await walk('FEW')).toEqual(few);
  });

  it('refuses a tampered cursor with 400 invalid_cursor', async () => {
    await addHosts(t.database.db, org.organisationId, 3, 'tamper');
    const p = await page('/api/v1/hosts?limit=1');
    const c = p.nextCursor!;
    const [body, mac] = c.split('.') as [string, string];
    const payload = JSON.parse(Buffer.from(body, 'base64url').toString());
    const forged = `${Buffer.from(JSON.stringify({ ...payload, s: 0 })).toString('base64url')}.${mac}`;
    for (const cursor of [forged, `${c}x`, 'garbage', `${body}.${'A'.repeat(22)}`, c.replace('.', '')]) {
      const res = await t.app.inject({ method: 'GET', url: `/api/v1/hosts?limit=1&cursor=${encodeURIComponent(cursor)}`, headers: bearer(token) });
      expect(res.statusCode, cursor).toBe(400);
      expect(res.json().code).toBe('invalid_cursor');
    }
  });

  it('refuses a cursor of another collection, another organisation or other filters with 400 invalid_cursor', async () => {
    const p = await page('/api/v1/hosts?limit=1');
    const c = encodeURIComponent(p.nextCursor!);
    const o = await seedOrg(t.database);
    const theirs = (await seedMemberWithKey(t.database, o, 'viewer', ['inventory:read'])).token;
    await addHosts(t.database.db, o.organisationId, 2, 'theirs');
    for (const [url, tok] of [
      [`/api/v1/services?cursor=${c}`, token],
      [`/api/v1/hosts?limit=1&cursor=${c}`, theirs],
      [`/api/v1/hosts?limit=1&search=walk&cursor=${c}`, token],
    ] as const) {
      const res = await t.app.inject({ method: 'GET', url, headers: bearer(tok) });
      expect(res.statusCode, url).toBe(400);
      expect(res.json().code, url).toBe('invalid_cursor');
    }
    // The page size may change during a walk: it is not a filter.
    expect((await t.app.inject({ method: 'GET', url: `/api/v1/hosts?limit=5&cursor=${c}`, headers: bearer(token) })).statusCode).toBe(200);
  });
});
