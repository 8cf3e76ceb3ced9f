import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SeededOrg, type TestApp, bearer, buildTestApp, seedMemberWithKey, seedOrg } from './helpers.js';
import { addCertificate, addHost, addService, addSite, addTopology, addVulnerability } from './fixtures.js';

const RFC3339 = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/;

type Member = Awaited<ReturnType<typeof seedMemberWithKey>>;
type AuditRow = { id: string; actor_type: string; actor_key_id: string | null; actor_user_id: string | null; action: string; target_type: string; target_id: string | null; changes: any; request_id: string | null };

/** Every audit row of an organisation, oldest first. */
async function auditRows(t: TestApp, organisationId: string): Promise<AuditRow[]> {
  const rows = await t.database.db.selectFrom('audit_log').selectAll().where('organisation_id', '=', organisationId).orderBy('occurred_at').orderBy('id').execute();
  return rows.map((r) => ({ ...r, changes: typeof r.changes === 'string' ? JSON.parse(r.changes) : r.changes }));
}

/** Runs `fn` and returns its result with the audit rows of the organisation it added. */
async function withAudit<T>(t: TestApp, organisationId: string, fn: () => Promise<T>): Promise<{ result: T; audit: AuditRow[] }> {
  const before = new Set((await auditRows(t, organisationId)).map((r) => r.id));
  const result = await fn();
  const audit = (await auditRows(t, organisationId)).filter((r) => !before.has(r.id));
  return { result, audit };
}

/** An organisation with an editor key (inventory:write) and a viewer key (inventory:read only). */
async function seedWriters(t: TestApp) {
  const org = await seedOrg(t.database);
  const editor = await seedMemberWithKey(t.database, org, 'editor', ['inventory:read', 'inventory:write']);
  const viewer = await seedMemberWithKey(t.database, org, 'viewer', ['inventory:read']);
  return { org, editor, viewer };
}

// ---------------------------------------------------------------------------------------------

describe('POST /api/v1/networks (spec 2.3, 4.3; decisions.md "Writes not detailed by the spec")', () => {
  let t: TestApp;
  let org: SeededOrg;
  let editor: Member;
  let viewer: Member;
  let other: SeededOrg;
  let otherEditor: Member;

  const post = (payload: unknown, token: string | null = editor.token, extraHeaders: Record<string, string> = {}) =>
    t.app.inject({ method: 'POST', url: '/api/v1/networks', headers: { ...(token ? bearer(token) : {}), ...extraHeaders }, ...(typeof payload === 'string' ? { body: payload } : { payload: payload as object }) });
  const list = async (query = '', token = editor.token) => {
    const res = await t.app.inject({ method: 'GET', url: `/api/v1/networks?limit=500${query}`, headers: bearer(token) });
    expect(res.statusCode, res.body).toBe(200);
    return res.json().data as any[];
  };
  const cidrs = async (query = '', token = editor.token) => (await list(query, token)).map((n) => n.cidr);
  let counter = 0;
  /** A fresh IPv4 /24 nobody in the test organisation has yet. */
  const freshCidr = () => `172.${16 + Math.floor(++counter / 250)}.${counter % 250}.0/24`;

  beforeAll(async () => {
    t = await buildTestApp();
    ({ org, editor, viewer } = await seedWriters(t));
    ({ org: other, editor: otherEditor } = await seedWriters(t));
  });
  afterAll(() => t.close());

  it('creates an IPv4 network with 201 and answers it in the collection item shape with the documented defaults', async () => {
    const res = await post({ name: 'Office LAN', cidr: '10.0.0.0/8' });
    expect(res.statusCode, res.body).toBe(201);
    const body = res.json();
    expect(body).toEqual({
      id: expect.stringMatching(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/),
      siteId: null,
      name: 'Office LAN',
      cidr: '10.0.0.0/8',
      family: 4,
      excludeCidrs: [],
      scanIntervalMinutes: null,
      topPortsTcp: 1000,
      topPortsUdp: 0,
      nmap: { enabled: false, scripts: [] },
      lastScanAt: null,
      activeSessionId: null,
      schedule: null,
      createdAt: expect.stringMatching(RFC3339),
      updatedAt: expect.stringMatching(RFC3339),
    });
    const listed = (await list()).find((n) => n.id === body.id);
    expect(listed).toEqual(body);
  });

  it('creates an IPv6 network with family 6 and lists it', async () => {
    const res = await post({ name: 'v6 lab', cidr: '2001:db8::/32' });
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json()).toMatchObject({ cidr: '2001:db8::/32', family: 6, topPortsTcp: 1000, topPortsUdp: 0, scanIntervalMinutes: null, nmap: { enabled: false, scripts: [] } });
    expect((await list()).find((n) => n.id === res.json().id)).toEqual(res.json());
  });

  it('stores every optional setting it is given and answers them back', async () => {
    const res = await post({
      name: 'DMZ',
      cidr: '192.168.100.0/24',
      scanIntervalMinutes: 60,
      excludeCidrs: ['192.168.100.0/28', '192.168.100.128/25'],
      topPortsTcp: 100,
      topPortsUdp: 20,
      nmap: { enabled: true, scripts: ['default', 'safe', 'version', 'vuln'] },
    });
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json()).toMatchObject({
      cidr: '192.168.100.0/24',
      scanIntervalMinutes: 60,
      excludeCidrs: ['192.168.100.0/28', '192.168.100.128/25'],
      topPortsTcp: 100,
      topPortsUdp: 20,
      nmap: { enabled: true, scripts: ['default', 'safe', 'version', 'vuln'] },
    });
    expect((await list()).find((n) => n.id === res.json().id)).toEqual(res.json());
  });

  it('accepts IPv6 exclusions and stores them', async () => {
    const res = await post({ name: 'v6 dc', cidr: '2001:db8:aa::/48', excludeCidrs: ['2001:db8:aa:ff::/64'] });
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json()).toMatchObject({ family: 6, excludeCidrs: ['2001:db8:aa:ff::/64'] });
  });

  it('attaches a network to a site of the organisation and finds it with the siteId filter', async () => {
    const site = await addSite(t.database.db, org.organisationId, 'branch-1');
    const cidr = freshCidr();
    const res = await post({ name: 'Branch 1', cidr, siteId: site.id });
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json()).toMatchObject({ siteId: site.id, cidr });
    const bySite = await list(`&siteId=${site.id}`);
    expect(bySite).toEqual([res.json()]);
    expect(await cidrs()).toContain(cidr);
  });

  it.each([
    ['10.0.0.1/8', 'IPv4'],
    ['192.168.1.1/24', 'IPv4'],
    ['2001:db8::1/32', 'IPv6'],
    ['2001:db8:0:1::/48', 'IPv6'],
  ])('refuses the CIDR %s with host bits set (%s) with 400 at body.cidr, never truncating it', async (cidr) => {
    const before = await cidrs();
    const res = await post({ name: 'host bits', cidr });
    expect(res.statusCode, res.body).toBe(400);
    expect(res.headers['content-type']).toContain('application/problem+json');
    const body = res.json();
    expect(body.code).toBe('validation_failed');
    expect(body.issues).toEqual(expect.arrayContaining([expect.objectContaining({ path: 'body.cidr', message: expect.stringMatching(/host bits/) })]));
    expect(await cidrs()).toEqual(before);
  });

  it.each(['10.0.0.0/33', '2001:db8::/129', 'abc', '10.0.0.0', '10.0.0/8', '10.0.0.256/32', '10.0.0.0/', '/8', '', ' 10.0.0.0/8'])(
    'refuses the malformed CIDR %j with 400 validation_failed at body.cidr',
    async (cidr) => {
      const before = await cidrs();
      const res = await post({ name: 'malformed', cidr });
      expect(res.statusCode, res.body).toBe(400);
      expect(res.json().code).toBe('validation_failed');
      expect(res.json().issues.map((i: { path: string }) => i.path)).toContain('body.cidr');
      expect(await cidrs()).toEqual(before);
    },
  );

  // RFC 4291 2.2: "::" stands for one or more groups of zeros. With eight explicit groups there is
  // none left for it, and PostgreSQL refuses the literal; the API must refuse it as a bad CIDR (400),
  // never pass it on and fail with 500.
  it.each(['1:2:3:4:5:6:7::8/128', '1:2:3:4:5:6::7:8/128', '1:2:3:4:5:6:7:8::/128', '::1:2:3:4:5:6:7:8/128'])(
    'refuses the IPv6 CIDR %s, whose "::" stands for no group, with 400 at body.cidr (never 500)',
    async (cidr) => {
      const before = await cidrs();
      const res = await post({ name: 'nine groups', cidr });
      expect(res.statusCode, res.body).toBe(400);
      expect(res.json().code).toBe('validation_failed');
      expect(res.json().issues.map((i: { path: string }) => i.path)).toContain('body.cidr');
      const excluded = await post({ name: 'nine groups excluded', cidr: '2001:db8:99::/48', excludeCidrs: [cidr] });
      expect(excluded.statusCode, excluded.body).toBe(400);
      expect(excluded.json().issues.map((i: { path: string }) => i.path)).toContain('body.excludeCidrs.0');
      expect(await cidrs()).toEqual(before);
    },
  );

  // A prefix written with leading zeros: either refused as malformed (400) or taken and stored in
  // canonical form (201), as 10.0.0.0/08 already is; PostgreSQL refuses it for IPv6, so it must
  // never reach the database as written (500).
  it.each([
    ['2001:db8:30::/048', '2001:db8:30::/48'],
    ['1::/016', '1::/16'],
    ['::/000', '::/0'],
  ])('answers the IPv6 CIDR %s with a prefix written with leading zeros with 400 or a canonical 201, never 500', async (cidr, canonical) => {
    const res = await post({ name: 'leading zeros', cidr });
    expect([400, 201], res.body).toContain(res.statusCode);
    if (res.statusCode === 201) expect(res.json().cidr).toBe(canonical);
    else expect(res.json().issues.map((i: { path: string }) => i.path)).toContain('body.cidr');
    const excluded = await post({ name: 'leading zeros excluded', cidr: freshCidr(), excludeCidrs: [cidr] });
    expect([400, 201], excluded.body).toContain(excluded.statusCode);
  });

  it.each([['10.9.0.1/24'], ['2001:db8::1/64'], ['10.9.0.0/33'], ['nope']])('refuses the exclusion %s like a network CIDR (400 at body.excludeCidrs.0), storing nothing', async (bad) => {
    const before = await cidrs();
    const res = await post({ name: 'bad exclusion', cidr: '10.9.0.0/16', excludeCidrs: [bad] });
    expect(res.statusCode, res.body).toBe(400);
    expect(res.json().code).toBe('validation_failed');
    expect(res.json().issues.map((i: { path: string }) => i.path)).toContain('body.excludeCidrs.0');
    expect(await cidrs()).toEqual(before);
  });

  it('refuses the same CIDR twice in one organisation with 409 duplicate, storing nothing more', async () => {
    const cidr = freshCidr();
    expect((await post({ name: 'first', cidr })).statusCode).toBe(201);
    const before = await list();
    const res = await post({ name: 'second', cidr });
    expect(res.statusCode, res.body).toBe(409);
    expect(res.json().code).toBe('duplicate');
    expect(await list()).toEqual(before);
  });

  it('recognises the same IPv6 CIDR written differently as a duplicate', async () => {
    expect((await post({ name: 'v6 a', cidr: '2001:db8:5::/48' })).statusCode).toBe(201);
    const res = await post({ name: 'v6 b', cidr: '2001:0DB8:0005:0000::/48' });
    expect(res.statusCode, res.body).toBe(409);
    expect(res.json().code).toBe('duplicate');
  });

  it('lets another organisation have the same CIDR (201), each seeing only its own', async () => {
    const cidr = freshCidr();
    const mine = await post({ name: 'mine', cidr });
    expect(mine.statusCode).toBe(201);
    const theirs = await post({ name: 'theirs', cidr }, otherEditor.token);
    expect(theirs.statusCode, theirs.body).toBe(201);
    expect(theirs.json().id).not.toBe(mine.json().id);
    expect((await list('', otherEditor.token)).map((n) => n.id)).toEqual([theirs.json().id]);
    expect((await list()).map((n) => n.id)).not.toContain(theirs.json().id);
  });

  it('answers exactly one 201 and one 409 when the same CIDR is posted twice at once', async () => {
    const cidr = freshCidr();
    const [a, b] = await Promise.all([post({ name: 'race a', cidr }), post({ name: 'race b', cidr })]);
    expect([a.statusCode, b.statusCode].sort()).toEqual([201, 409]);
    expect((await list()).filter((n) => n.cidr === cidr)).toHaveLength(1);
  });

  it.each([
    [{ organisationId: '00000000-0000-4000-8000-000000000000' }, 'organisationId'],
    [{ id: '00000000-0000-4000-8000-000000000000' }, 'id'],
    [{ family: 4 }, 'family'],
    [{ nmap: { enabled: false, scripts: [], timing: 4 } }, 'timing'],
  ])('refuses an unknown body field (%j) with 400 validation_failed naming it', async (extra, field) => {
    const before = await cidrs();
    const res = await post({ name: 'strict', cidr: freshCidr(), ...extra });
    expect(res.statusCode, res.body).toBe(400);
    expect(res.json().code).toBe('validation_failed');
    expect(res.json().issues.length).toBeGreaterThan(0);
    expect(JSON.stringify(res.json().issues)).toContain(field);
    expect(await cidrs()).toEqual(before);
  });

  it.each([
    [{ scanIntervalMinutes: 14 }, 'body.scanIntervalMinutes'],
    [{ scanIntervalMinutes: 10081 }, 'body.scanIntervalMinutes'],
    [{ scanIntervalMinutes: 0 }, 'body.scanIntervalMinutes'],
    [{ scanIntervalMinutes: 60.5 }, 'body.scanIntervalMinutes'],
    [{ scanIntervalMinutes: '60' }, 'body.scanIntervalMinutes'],
    [{ topPortsTcp: 65536 }, 'body.topPortsTcp'],
    [{ topPortsTcp: -1 }, 'body.topPortsTcp'],
    [{ topPortsUdp: 65536 }, 'body.topPortsUdp'],
    [{ nmap: { enabled: true, scripts: ['external'] } }, 'body.nmap.scripts.0'],
    [{ nmap: { enabled: true, scripts: ['http-title'] } }, 'body.nmap.scripts.0'],
    [{ nmap: { enabled: true, scripts: ['safe', '/usr/share/nmap/scripts/x.nse'] } }, 'body.nmap.scripts.1'],
    [{ nmap: { scripts: ['safe'] } }, 'body.nmap.enabled'],
    [{ name: '' }, 'body.name'],
    [{ name: 'x'.repeat(201) }, 'body.name'],
    [{ name: undefined }, 'body.name'],
  ])('refuses %j with 400 validation_failed at %s', async (patch, path) => {
    const before = await cidrs();
    const res = await post({ name: 'ranges', cidr: freshCidr(), ...patch });
    expect(res.statusCode, res.body).toBe(400);
    expect(res.json().code).toBe('validation_failed');
    expect(res.json().issues.map((i: { path: string }) => i.path)).toContain(path);
    expect(await cidrs()).toEqual(before);
  });

  it('refuses a body without a cidr with 400 at body.cidr', async () => {
    const res = await post({ name: 'no cidr' });
    expect(res.statusCode).toBe(400);
    expect(res.json().issues.map((i: { path: string }) => i.path)).toContain('body.cidr');
  });

  it.each([
    [{ scanIntervalMinutes: 15 }],
    [{ scanIntervalMinutes: 10080 }],
    [{ topPortsTcp: 0, topPortsUdp: 0 }],
    [{ topPortsTcp: 65535, topPortsUdp: 65535 }],
    [{ nmap: { enabled: true } }],
  ])('accepts the boundary value %j with 201 and stores it', async (patch) => {
    const res = await post({ name: 'bounds', cidr: freshCidr(), ...patch });
    expect(res.statusCode, res.body).toBe(201);
    const expected = 'nmap' in patch ? { nmap: { enabled: true, scripts: [] } } : patch;
    expect(res.json()).toMatchObject(expected);
    expect((await list()).find((n) => n.id === res.json().id)).toMatchObject(expected);
  });

  it('refuses a siteId of another organisation with 404 not_found and stores nothing', async () => {
    const theirSite = await addSite(t.database.db, other.organisationId, 'their-site');
    const before = await list();
    const theirsBefore = await list('', otherEditor.token);
    const res = await post({ name: 'sneaky', cidr: freshCidr(), siteId: theirSite.id });
    expect(res.statusCode, res.body).toBe(404);
    expect(res.json().code).toBe('not_found');
    expect(await list()).toEqual(before);
    expect(await list('', otherEditor.token)).toEqual(theirsBefore);
  });

  it('refuses an unknown siteId with 404 not_found', async () => {
    const res = await post({ name: 'nowhere', cidr: freshCidr(), siteId: randomUUID() });
    expect(res.statusCode, res.body).toBe(404);
    expect(res.json().code).toBe('not_found');
  });

  it('refuses a siteId that is not a UUID with 400 at body.siteId', async () => {
    const res = await post({ name: 'bad site', cidr: freshCidr(), siteId: 'hq' });
    expect(res.statusCode).toBe(400);
    expect(res.json().issues.map((i: { path: string }) => i.path)).toContain('body.siteId');
  });

  it('refuses a viewer key (inventory:read only) with 403 forbidden naming inventory:write, before looking at the body', async () => {
    const before = await cidrs();
    for (const payload of [{ name: 'viewer', cidr: freshCidr() }, { cidr: 'garbage', organisationId: 'x' }]) {
      const res = await post(payload, viewer.token);
      expect(res.statusCode, res.body).toBe(403);
      expect(res.json()).toMatchObject({ code: 'forbidden', requiredScope: 'inventory:write', status: 403 });
    }
    expect(await cidrs()).toEqual(before);
  });

  it('refuses a request without a key, or with an unknown key, with 401 unauthorized', async () => {
    const before = await cidrs();
    const anon = await post({ name: 'anon', cidr: freshCidr() }, null);
    expect(anon.statusCode).toBe(401);
    expect(anon.json().code).toBe('unauthorized');
    const unknown = await post({ name: 'anon', cidr: freshCidr() }, `svk_${'A'.repeat(43)}`);
    expect(unknown.statusCode).toBe(401);
    expect(await cidrs()).toEqual(before);
  });

  it('refuses a body that is not JSON with 415 unsupported_media_type', async () => {
    const before = await cidrs();
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'application/xml']) {
      const res = await post('name=x&cidr=10.77.0.0/16', editor.token, { 'content-type': type });
      expect(res.statusCode, type).toBe(415);
      expect(res.json().code, type).toBe('unsupported_media_type');
    }
    expect(await cidrs()).toEqual(before);
  });

  it('refuses malformed JSON with 400 validation_failed', async () => {
    const before = await cidrs();
    for (const body of ['{"name": "x", "cidr": ', '{name: "x"}', '']) {
      const res = await post(body, editor.token, { 'content-type': 'application/json' });
      expect(res.statusCode, body).toBe(400);
      expect(res.json().code, body).toBe('validation_failed');
    }
    expect(await cidrs()).toEqual(before);
  });

  it('refuses a JSON body that is not an object with 400 validation_failed', async () => {
    for (const body of ['[]', '"10.0.0.0/8"', 'null', '42']) {
      const res = await post(body, editor.token, { 'content-type': 'application/json' });
      expect(res.statusCode, body).toBe(400);
      expect(res.json().code, body).toBe('validation_failed');
    }
  });

  it('leaves exactly one audit row naming the acting key, its owner, the action, the target and the network', async () => {
    const site = await addSite(t.database.db, org.organisationId, 'audited');
    const { result: res, audit } = await withAudit(t, org.organisationId, () => post({ name: 'Audited', cidr: '10.128.0.0/9', siteId: site.id }));
    expect(res.statusCode, res.body).toBe(201);
    const network = res.json();
    expect(audit).toHaveLength(1);
    const row = audit[0]!;
    expect(row).toMatchObject({
      actor_type: 'key',
      actor_key_id: editor.keyId,
      actor_user_id: editor.userId,
      action: 'network.created',
      target_type: 'network',
      target_id: network.id,
    });
    expect(row.request_id).toBe(res.headers['x-request-id']);
    expect(JSON.stringify(row.changes)).toContain('10.128.0.0/9');
    expect(row.changes).toEqual({ after: network });
  });

  it('leaves no audit row for any refused write', async () => {
    const theirSite = await addSite(t.database.db, other.organisationId, 'their-audit-site');
    const taken = freshCidr();
    expect((await post({ name: 'taken', cidr: taken })).statusCode).toBe(201);
    const theirsBefore = (await auditRows(t, other.organisationId)).length;
    const { result, audit } = await withAudit(t, org.organisationId, async () => [
      await post({ name: 'host bits', cidr: '10.0.0.1/8' }),
      await post({ name: 'dup', cidr: taken }),
      await post({ name: 'unknown field', cidr: freshCidr(), organisationId: other.organisationId }),
      await post({ name: 'foreign site', cidr: freshCidr(), siteId: theirSite.id }),
      await post({ name: 'viewer', cidr: freshCidr() }, viewer.token),
      await post({ name: 'anon', cidr: freshCidr() }, null),
      await post('x', editor.token, { 'content-type': 'text/plain' }),
      await post('{', editor.token, { 'content-type': 'application/json' }),
    ]);
    expect(result.map((r) => r.statusCode)).toEqual([400, 409, 400, 404, 403, 401, 415, 400]);
    expect(audit).toEqual([]);
    // Nor in the other organisation.
    expect(await auditRows(t, other.organisationId)).toHaveLength(theirsBefore);
  });
});

// ---------------------------------------------------------------------------------------------

const STATES = ['open', 'acknowledged', 'resolved', 'false_positive'] as const;
type State = (typeof STATES)[number];
/** decisions.md, "Vulnerability transitions": the moves a PATCH may make. */
const ALLOWED: Record<State, State[]> = {
  open: ['acknowledged', 'false_positive'],
  acknowledged: ['open', 'false_positive'],
  false_positive: ['open'],
  resolved: [],
};
const PAIRS = STATES.flatMap((from) => STATES.map((to) => ({ from, to, outcome: from === to ? 'no-op' : ALLOWED[from].includes(to) ? 'allowed' : 'refused' })));
const BACKDATED = new Date('2025-01-01T00:00:00Z');

describe('PATCH /api/v1/vulnerabilities/{id} (decisions.md "Vulnerability transitions")', () => {
  let t: TestApp;
  let org: SeededOrg;
  let editor: Member;
  let viewer: Member;
  let other: SeededOrg;
  let otherEditor: Member;
  let port = 1000;

  const patch = (id: string, payload: unknown, token: string | null = editor.token, extraHeaders: Record<string, string> = {}) =>
    t.app.inject({ method: 'PATCH', url: `/api/v1/vulnerabilities/${id}`, headers: { ...(token ? bearer(token) : {}), ...extraHeaders }, ...(typeof payload === 'string' ? { body: payload } : { payload: payload as object }) });
  const stored = async (id: string) =>
    t.database.db.selectFrom('vulnerabilities').select(['organisation_id', 'state', 'note', 'state_changed_at', 'updated_at', 'resolved_at']).where('id', '=', id).executeTakeFirstOrThrow();

  /** A vulnerability in `state`, its state change backdated so a new one is visible. */
  async function vulnerability(state: State, o: SeededOrg = org) {
    const hostId = await addHost(t.database.db, o.organisationId, { hostname: `vuln-host-${port}` });
    const serviceId = await addService(t.database.db, o.organisationId, hostId, { port: port++ });
    const id = await addVulnerability(t.database.db, o.organisationId, serviceId, hostId, { cveId: 'CVE-2024-3094', severity: 'critical', score: 10, state });
    await t.database.db.updateTable('vulnerabilities').set({ state_changed_at: BACKDATED, updated_at: BACKDATED }).where('id', '=', id).execute();
    return { id, hostId, serviceId };
  }

  beforeAll(async () => {
    t = await buildTestApp();
    ({ org, editor, viewer } = await seedWriters(t));
    ({ org: other, editor: otherEditor } = await seedWriters(t));
  });
  afterAll(() => t.close());

  it('covers all 16 (from, to) pairs of the four states', () => {
    expect(PAIRS).toHaveLength(16);
    expect(PAIRS.filter((p) => p.outcome === 'allowed')).toHaveLength(5);
    expect(PAIRS.filter((p) => p.outcome === 'no-op')).toHaveLength(4);
    expect(PAIRS.filter((p) => p.outcome === 'refused')).toHaveLength(7);
  });

  it.each(PAIRS.filter((p) => p.outcome === 'allowed'))('moves $from → $to with 200, updating stateChangedAt and leaving one audit row', async ({ from, to }) => {
    const v = await vulnerability(from);
    const started = Date.now();
    const { result: res, audit } = await withAudit(t, org.organisationId, () => patch(v.id, { state: to }));
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(body).toMatchObject({ id: v.id, serviceId: v.serviceId, hostId: v.hostId, cveId: 'CVE-2024-3094', severity: 'critical', score: 10, state: to, resolvedAt: null });
    expect(body.stateChangedAt).toMatch(RFC3339);
    expect(Date.parse(body.stateChangedAt)).toBeGreaterThan(BACKDATED.getTime());
    expect(Date.parse(body.stateChangedAt)).toBeGreaterThanOrEqual(started - 60_000);
    const row = await stored(v.id);
    expect(row.state).toBe(to);
    expect(row.state_changed_at.toISOString()).toBe(body.stateChangedAt);
    expect(audit).toHaveLength(1);
    expect(audit[0]).toMatchObject({
      actor_type: 'key',
      actor_key_id: editor.keyId,
      actor_user_id: editor.userId,
      action: 'vulnerability.updated',
      target_type: 'vulnerability',
      target_id: v.id,
    });
    expect(audit[0]!.changes).toEqual({ state: { from, to } });
    // The collection shows the new state.
    const listed = await t.app.inject({ method: 'GET', url: `/api/v1/vulnerabilities?serviceId=${v.serviceId}`, headers: bearer(editor.token) });
    expect(listed.json().data).toEqual([body]);
  });

  it.each(PAIRS.filter((p) => p.outcome === 'no-op'))('answers $from → $to (the current state) with 200 as a no-op that changes and audits nothing', async ({ from, to }) => {
    const v = await vulnerability(from);
    const before = await stored(v.id);
    const { result: res, audit } = await withAudit(t, org.organisationId, () => patch(v.id, { state: to }));
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ id: v.id, state: from, stateChangedAt: BACKDATED.toISOString(), updatedAt: BACKDATED.toISOString() });
    expect(await stored(v.id)).toEqual(before);
    expect(audit).toEqual([]);
  });

  it.each(PAIRS.filter((p) => p.outcome === 'refused'))('refuses $from → $to with 409 invalid_transition naming the allowed next states, changing nothing', async ({ from, to }) => {
    const v = await vulnerability(from);
    const before = await stored(v.id);
    const { result: res, audit } = await withAudit(t, org.organisationId, () => patch(v.id, { state: to, note: 'should not be stored' }));
    expect(res.statusCode, res.body).toBe(409);
    expect(res.headers['content-type']).toContain('application/problem+json');
    const body = res.json();
    expect(body.code).toBe('invalid_transition');
    expect(body.allowedStates).toEqual(ALLOWED[from]);
    expect(body.detail).toContain(from);
    for (const s of ALLOWED[from]) expect(body.detail).toContain(s);
    if (ALLOWED[from].length === 0) expect(body.detail).toMatch(/none/);
    expect(await stored(v.id)).toEqual(before);
    expect(audit).toEqual([]);
  });

  it('stores and returns a note of 2000 characters along with the move, auditing the note change', async () => {
    const v = await vulnerability('open');
    const note = 'n'.repeat(1999) + 'é';
    const { result: res, audit } = await withAudit(t, org.organisationId, () => patch(v.id, { state: 'acknowledged', note }));
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ state: 'acknowledged', note });
    expect((await stored(v.id)).note).toBe(note);
    expect(audit).toHaveLength(1);
    expect(audit[0]!.changes).toEqual({ state: { from: 'open', to: 'acknowledged' }, note: { from: null, to: note } });
  });

  it('keeps the note when a later move carries none', async () => {
    const v = await vulnerability('open');
    expect((await patch(v.id, { state: 'acknowledged', note: 'ticket SEC-42' })).statusCode).toBe(200);
    const res = await patch(v.id, { state: 'open' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ state: 'open', note: 'ticket SEC-42' });
  });

  it('stores a note sent with the current state without changing the state or stateChangedAt', async () => {
    const v = await vulnerability('acknowledged');
    const res = await patch(v.id, { state: 'acknowledged', note: 'waiting for the vendor' });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ state: 'acknowledged', note: 'waiting for the vendor', stateChangedAt: BACKDATED.toISOString() });
    expect(await stored(v.id)).toMatchObject({ state: 'acknowledged', note: 'waiting for the vendor' });
  });

  it('refuses a note of 2001 characters with 400 at body.note, changing nothing', async () => {
    const v = await vulnerability('open');
    const before = await stored(v.id);
    const res = await patch(v.id, { state: 'acknowledged', note: 'n'.repeat(2001) });
    expect(res.statusCode).toBe(400);
    expect(res.json().code).toBe('validation_failed');
    expect(res.json().issues.map((i: { path: string }) => i.path)).toContain('body.note');
    expect(await stored(v.id)).toEqual(before);
  });

  it.each([
    [{ state: 'acknowledged', severity: 'low' }, 'severity'],
    [{ state: 'acknowledged', organisationId: '00000000-0000-4000-8000-000000000000' }, 'organisationId'],
    [{ state: 'acknowledged', stateChangedAt: '2020-01-01T00:00:00Z' }, 'stateChangedAt'],
  ])('refuses an unknown field (%j) with 400 validation_failed, changing nothing', async (payload, field) => {
    const v = await vulnerability('open');
    const before = await stored(v.id);
    const res = await patch(v.id, payload);
    expect(res.statusCode, res.body).toBe(400);
    expect(res.json().code).toBe('validation_failed');
    expect(JSON.stringify(res.json().issues)).toContain(field);
    expect(await stored(v.id)).toEqual(before);
  });

  it.each([['closed'], ['OPEN'], ['Resolved'], [''], ['fixed'], [null], [1]])('refuses the state %j outside the four with 400 validation_failed at body.state', async (state) => {
    const v = await vulnerability('open');
    const before = await stored(v.id);
    const res = await patch(v.id, { state });
    expect(res.statusCode, res.body).toBe(400);
    expect(res.json().code).toBe('validation_failed');
    expect(res.json().issues.map((i: { path: string }) => i.path)).toContain('body.state');
    expect(await stored(v.id)).toEqual(before);
  });

  it('refuses a body without a state with 400 at body.state', async () => {
    const v = await vulnerability('open');
    const res = await patch(v.id, { note: 'just a note' });
    expect(res.statusCode).toBe(400);
    expect(res.json().issues.map((i: { path: string }) => i.path)).toContain('body.state');
    expect((await stored(v.id)).note).toBeNull();
  });

  it('answers another organisation\'s vulnerability with 404 not_found (never 403) and leaves it unchanged', async () => {
    const theirs = await vulnerability('open', other);
    const before = await stored(theirs.id);
    const { result: res, audit } = await withAudit(t, other.organisationId, () => patch(theirs.id, { state: 'false_positive', note: 'not mine' }));
    expect(res.statusCode, res.body).toBe(404);
    expect(res.json().code).toBe('not_found');
    expect(await stored(theirs.id)).toEqual(before);
    expect(audit).toEqual([]);
    expect((await auditRows(t, org.organisationId)).filter((r) => r.target_id === theirs.id)).toEqual([]);
    // Its own organisation may change it.
    expect((await patch(theirs.id, { state: 'false_positive' }, otherEditor.token)).statusCode).toBe(200);
  });

  it('answers an unknown UUID with 404 not_found', async () => {
    const res = await patch(randomUUID(), { state: 'acknowledged' });
    expect(res.statusCode, res.body).toBe(404);
    expect(res.json().code).toBe('not_found');
  });

  it.each(['123', 'not-a-uuid', '00000000-0000-4000-8000-00000000000g'])('refuses the non-UUID id %s with 400 validation_failed', async (id) => {
    const res = await patch(id, { state: 'acknowledged' });
    expect(res.statusCode, res.body).toBe(400);
    expect(res.json().code).toBe('validation_failed');
    expect(res.json().issues.map((i: { path: string }) => i.path)).toContain('params.id');
  });

  it('refuses a viewer key with 403 forbidden naming inventory:write, and no key with 401, changing nothing', async () => {
    const v = await vulnerability('open');
    const before = await stored(v.id);
    const { result, audit } = await withAudit(t, org.organisationId, async () => [await patch(v.id, { state: 'acknowledged' }, viewer.token), await patch(v.id, { state: 'acknowledged' }, null)]);
    expect(result[0]!.statusCode).toBe(403);
    expect(result[0]!.json()).toMatchObject({ code: 'forbidden', requiredScope: 'inventory:write' });
    expect(result[1]!.statusCode).toBe(401);
    expect(result[1]!.json().code).toBe('unauthorized');
    expect(await stored(v.id)).toEqual(before);
    expect(audit).toEqual([]);
  });

  it('refuses a body that is not JSON with 415 and malformed JSON with 400', async () => {
    const v = await vulnerability('open');
    const before = await stored(v.id);
    const notJson = await patch(v.id, 'state=acknowledged', editor.token, { 'content-type': 'text/plain' });
    expect(notJson.statusCode).toBe(415);
    expect(notJson.json().code).toBe('unsupported_media_type');
    const malformed = await patch(v.id, '{"state":', editor.token, { 'content-type': 'application/json' });
    expect(malformed.statusCode).toBe(400);
    expect(malformed.json().code).toBe('validation_failed');
    expect(await stored(v.id)).toEqual(before);
  });
});

// ---------------------------------------------------------------------------------------------

describe('POST /api/v1/snapshots (spec 2.3, 4.3)', () => {
  let t: TestApp;
  let org: SeededOrg;
  let editor: Member;
  let viewer: Member;
  let other: SeededOrg;
  let otherEditor: Member;
  let siteA: string;
  let siteB: string;

  const post = (payload: unknown, token: string | null = editor.token, extraHeaders: Record<string, string> = {}) =>
    t.app.inject({ method: 'POST', url: '/api/v1/snapshots', headers: { ...(token ? bearer(token) : {}), ...extraHeaders }, ...(typeof payload === 'string' ? { body: payload } : { payload: payload as object }) });
  const list = async (query = '', token = editor.token) => {
    const res = await t.app.inject({ method: 'GET', url: `/api/v1/snapshots?limit=500${query}`, headers: bearer(token) });
    expect(res.statusCode, res.body).toBe(200);
    return res.json().data as any[];
  };

  /**
   * A known inventory:
   *   site A: web (2 addresses, 2 services, 1 certificate, 1 vulnerability), db (1 address, 1 service);
   *           one network (through the API) and one network topology
   *   site B: app (1 address, 1 service, 1 certificate, 1 vulnerability); one network (API)
   *   no site: printer (1 IPv6 address, no services); one network (API), one application topology
   * and another organisation with rows of every kind, none of which may count.
   */
  const WHOLE = { hosts: 4, addresses: 5, services: 4, networks: 3, sites: 2, certificates: 2, vulnerabilities: 2, topologies: 2 };
  const SITE_A = { hosts: 2, addresses: 3, services: 3, networks: 1, sites: 1, certificates: 1, vulnerabilities: 1, topologies: 1 };
  const SITE_B = { hosts: 1, addresses: 1, services: 1, networks: 1, sites: 1, certificates: 1, vulnerabilities: 1, topologies: 0 };

  async function createNetwork(token: string, body: object) {
    const res = await t.app.inject({ method: 'POST', url: '/api/v1/networks', headers: bearer(token), payload: body });
    expect(res.statusCode, res.body).toBe(201);
  }

  beforeAll(async () => {
    t = await buildTestApp();
    ({ org, editor, viewer } = await seedWriters(t));
    ({ org: other, editor: otherEditor } = await seedWriters(t));
    const db = t.database.db;
    const o = org.organisationId;
    siteA = (await addSite(db, o, 'site-a')).id;
    siteB = (await addSite(db, o, 'site-b')).id;
    const web = await addHost(db, o, { hostname: 'web', siteId: siteA, addresses: ['10.1.0.10', '2001:db8:a::10'] });
    const dbHost = await addHost(db, o, { hostname: 'db', siteId: siteA, addresses: ['10.1.0.20'] });
    const app = await addHost(db, o, { hostname: 'app', siteId: siteB, addresses: ['10.2.0.10'] });
    await addHost(db, o, { hostname: 'printer', addresses: ['2001:db8:c::99'] });
    const https = await addService(db, o, web, { port: 443 });
    await addService(db, o, web, { port: 22 });
    await addService(db, o, dbHost, { port: 5432 });
    const appSvc = await addService(db, o, app, { port: 8443 });
    await addCertificate(db, o, web, { trustStatus: 'trusted' });
    await addCertificate(db, o, app, { trustStatus: 'self_signed' });
    await addVulnerability(db, o, https, web, { cveId: 'CVE-2024-6387' });
    await addVulnerability(db, o, appSvc, app, { cveId: 'CVE-2023-44487', state: 'acknowledged' });
    await addTopology(db, o, { kind: 'network', siteId: siteA });
    await addTopology(db, o, { kind: 'application' });
    await createNetwork(editor.token, { name: 'A', cidr: '10.1.0.0/16', siteId: siteA });
    await createNetwork(editor.token, { name: 'B', cidr: '10.2.0.0/16', siteId: siteB });
    await createNetwork(editor.token, { name: 'v6', cidr: '2001:db8:c::/48' });

    // The other organisation: rows of every kind, more of them than ours.
    const x = other.organisationId;
    const theirSite = (await addSite(db, x, 'site-a')).id;
    for (let i = 0; i < 3; i++) {
      const h = await addHost(db, x, { hostname: `their-${i}`, siteId: theirSite, addresses: [`10.1.0.${10 + i}`, `10.9.0.${i}`] });
      const s = await addService(db, x, h, { port: 443 });
      await addCertificate(db, x, h, { trustStatus: 'expired' });
      await addVulnerability(db, x, s, h, { cveId: 'CVE-2024-6387' });
    }
    await addTopology(db, x, { kind: 'network', siteId: theirSite });
    await addTopology(db, x, { kind: 'application' });
    await createNetwork(otherEditor.token, { name: 'theirs', cidr: '10.1.0.0/16', siteId: theirSite });
    await createNetwork(otherEditor.token, { name: 'theirs 2', cidr: '10.9.0.0/16' });
  });
  afterAll(() => t.close());

  it('takes a manual snapshot by default with 201, in the collection item shape', async () => {
    const res = await post({});
    expect(res.statusCode, res.body).toBe(201);
    const body = res.json();
    expect(body).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      siteId: null,
      reason: 'manual',
      stats: WHOLE,
      contentSha256: expect.stringMatching(/^[0-9a-f]{64}$/),
      contentBytes: expect.any(Number),
      capturedAt: expect.stringMatching(RFC3339),
      createdAt: expect.stringMatching(RFC3339),
    });
    expect(Math.abs(Date.parse(body.capturedAt) - Date.now())).toBeLessThan(60_000);
    expect((await list()).find((s) => s.id === body.id)).toEqual(body);
  });

  it.each(['manual', 'pre_change', 'post_change', 'audit'])('accepts the reason %s and lists the snapshot under it', async (reason) => {
    const res = await post({ reason });
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json()).toMatchObject({ reason, siteId: null, stats: WHOLE });
    const byReason = await list(`&reason=${reason}`);
    expect(byReason.map((s) => s.id)).toContain(res.json().id);
    expect(byReason.every((s) => s.reason === reason)).toBe(true);
  });

  it('takes a manual snapshot when the request has no body at all', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/api/v1/snapshots', headers: bearer(editor.token) });
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json()).toMatchObject({ reason: 'manual', siteId: null, stats: WHOLE });
  });

  it('refuses the reason scheduled with 400 validation_failed at body.reason and stores nothing', async () => {
    const before = await list();
    const { result: res, audit } = await withAudit(t, org.organisationId, () => post({ reason: 'scheduled' }));
    expect(res.statusCode, res.body).toBe(400);
    expect(res.json().code).toBe('validation_failed');
    expect(res.json().issues.map((i: { path: string }) => i.path)).toContain('body.reason');
    expect(await list()).toEqual(before);
    expect(await list('&reason=scheduled')).toEqual([]);
    expect(audit).toEqual([]);
  });

  it.each([['whenever'], ['MANUAL'], [''], [null], [7]])('refuses the reason %j with 400 validation_failed', async (reason) => {
    const before = await list();
    const res = await post({ reason });
    expect(res.statusCode, res.body).toBe(400);
    expect(res.json().code).toBe('validation_failed');
    expect(await list()).toEqual(before);
  });

  it('refuses an unknown body field with 400 validation_failed', async () => {
    for (const payload of [{ organisationId: other.organisationId }, { stats: { hosts: 0 } }, { capturedAt: '2020-01-01T00:00:00Z' }]) {
      const res = await post(payload);
      expect(res.statusCode, JSON.stringify(payload)).toBe(400);
      expect(res.json().code).toBe('validation_failed');
    }
  });

  it('counts each entity type of the whole organisation exactly, and nothing of another organisation', async () => {
    const res = await post({ reason: 'audit' });
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json().stats).toEqual(WHOLE);
    // The other organisation's snapshot counts its own rows only.
    const theirs = await post({}, otherEditor.token);
    expect(theirs.statusCode).toBe(201);
    expect(theirs.json().stats).toEqual({ hosts: 3, addresses: 6, services: 3, networks: 2, sites: 1, certificates: 3, vulnerabilities: 3, topologies: 2 });
  });

  it('with a siteId counts only that site\'s hosts and what hangs off them', async () => {
    const a = await post({ siteId: siteA, reason: 'pre_change' });
    expect(a.statusCode, a.body).toBe(201);
    expect(a.json()).toMatchObject({ siteId: siteA, reason: 'pre_change', stats: SITE_A });
    const b = await post({ siteId: siteB });
    expect(b.statusCode, b.body).toBe(201);
    expect(b.json()).toMatchObject({ siteId: siteB, reason: 'manual', stats: SITE_B });
  });

  it('counts what exists at the moment of capture: a later change shows in the next snapshot only', async () => {
    const o = await seedOrg(t.database);
    const ed = await seedMemberWithKey(t.database, o, 'editor', ['inventory:write', 'inventory:read']);
    const empty = await post({}, ed.token);
    expect(empty.statusCode).toBe(201);
    expect(empty.json().stats).toEqual({ hosts: 0, addresses: 0, services: 0, networks: 0, sites: 0, certificates: 0, vulnerabilities: 0, topologies: 0 });
    const h = await addHost(t.database.db, o.organisationId, { hostname: 'late', addresses: ['10.0.0.1'] });
    await addService(t.database.db, o.organisationId, h, { port: 80 });
    await createNetwork(ed.token, { name: 'late', cidr: '10.0.0.0/24' });
    const later = await post({}, ed.token);
    expect(later.json().stats).toEqual({ hosts: 1, addresses: 1, services: 1, networks: 1, sites: 0, certificates: 0, vulnerabilities: 0, topologies: 0 });
    // The first snapshot keeps what it counted.
    const listed = await list('', ed.token);
    expect(listed.find((s) => s.id === empty.json().id).stats.hosts).toBe(0);
  });

  it('refuses a siteId of another organisation with 404 not_found and stores nothing', async () => {
    const theirSite = await addSite(t.database.db, other.organisationId, 'their-secret-site');
    const before = await list();
    const { result: res, audit } = await withAudit(t, org.organisationId, () => post({ siteId: theirSite.id }));
    expect(res.statusCode, res.body).toBe(404);
    expect(res.json().code).toBe('not_found');
    expect(await list()).toEqual(before);
    expect(audit).toEqual([]);
  });

  it('lists snapshots filtered by siteId and by reason together', async () => {
    const a = (await post({ siteId: siteA, reason: 'post_change' })).json();
    const whole = (await post({ reason: 'post_change' })).json();
    const bySite = await list(`&siteId=${siteA}`);
    expect(bySite.length).toBeGreaterThan(0);
    expect(bySite.every((s) => s.siteId === siteA)).toBe(true);
    expect(bySite.map((s) => s.id)).toContain(a.id);
    expect(bySite.map((s) => s.id)).not.toContain(whole.id);
    const both = await list(`&siteId=${siteA}&reason=post_change`);
    expect(both).toEqual([a]);
    for (const s of await list()) {
      expect(s.capturedAt).toMatch(RFC3339);
      expect(s.createdAt).toMatch(RFC3339);
    }
  });

  it('never shows a snapshot to another organisation', async () => {
    const mine = (await post({})).json();
    expect((await list('', otherEditor.token)).map((s) => s.id)).not.toContain(mine.id);
  });

  it('refuses a viewer key with 403 forbidden naming inventory:write, and no key with 401', async () => {
    const before = await list();
    const forbidden = await post({}, viewer.token);
    expect(forbidden.statusCode).toBe(403);
    expect(forbidden.json()).toMatchObject({ code: 'forbidden', requiredScope: 'inventory:write' });
    const anon = await post({}, null);
    expect(anon.statusCode).toBe(401);
    expect(await list()).toEqual(before);
  });

  it('refuses a body that is not JSON with 415 and malformed JSON with 400', async () => {
    const before = await list();
    const notJson = await post('reason=audit', editor.token, { 'content-type': 'text/plain' });
    expect(notJson.statusCode).toBe(415);
    expect(notJson.json().code).toBe('unsupported_media_type');
    const malformed = await post('{"reason":', editor.token, { 'content-type': 'application/json' });
    expect(malformed.statusCode).toBe(400);
    expect(malformed.json().code).toBe('validation_failed');
    expect(await list()).toEqual(before);
  });

  it('leaves exactly one audit row snapshot.created naming the acting key, its owner and the snapshot', async () => {
    const { result: res, audit } = await withAudit(t, org.organisationId, () => post({ reason: 'audit', siteId: siteA }));
    expect(res.statusCode, res.body).toBe(201);
    expect(audit).toHaveLength(1);
    expect(audit[0]).toMatchObject({
      actor_type: 'key',
      actor_key_id: editor.keyId,
      actor_user_id: editor.userId,
      action: 'snapshot.created',
      target_type: 'snapshot',
      target_id: res.json().id,
      request_id: res.headers['x-request-id'],
    });
    expect(audit[0]!.changes).toMatchObject({ reason: 'audit', siteId: siteA, stats: SITE_A });
  });
});
