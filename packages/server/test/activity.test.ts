import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { emit } from '../src/events/emit.js';
import { addHost } from './fixtures.js';
import { type SeededOrg, type TestApp, bearer, buildTestApp, login, seedMemberWithKey, seedOrg } from './helpers.js';

// The console's Activity screen (issue 23): the audit trail (newest first, by action, target and
// time, who acted) and the event log filtered by kind, subject and time, newest first.

let t: TestApp;
let org: SeededOrg;
let other: SeededOrg;
let owner: { cookie: string; csrfToken: string };
let editor: { token: string; email: string };
let viewerEmail: string;

const get = (url: string, cookie = owner.cookie) => t.app.inject({ method: 'GET', url, headers: { cookie } });
function expectProblem(res: { statusCode: number; json(): { code: string } }, status: number, code: string) {
  expect(res.statusCode).toBe(status);
  expect(res.json().code).toBe(code);
}

beforeAll(async () => {
  t = await buildTestApp();
  org = await seedOrg(t.database);
  other = await seedOrg(t.database);
  owner = await login(t.app, org.ownerEmail);
  const e = await seedMemberWithKey(t.database, org, 'editor', ['inventory:read', 'inventory:write']);
  editor = { token: e.token, email: e.email };
  viewerEmail = (await seedMemberWithKey(t.database, org, 'viewer', ['inventory:read'])).email;
  // Writes: two networks by the editor's key, a site by the owner's session; one in another organisation.
  for (const cidr of ['10.1.0.0/24', '10.2.0.0/24']) {
    const res = await t.app.inject({ method: 'POST', url: '/api/v1/networks', headers: bearer(editor.token), payload: { cidr, name: `net ${cidr}` } });
    expect(res.statusCode, res.body).toBe(201);
  }
  const site = await t.app.inject({ method: 'POST', url: '/api/v1/sites', headers: { cookie: owner.cookie, 'x-csrf-token': owner.csrfToken }, payload: { code: 'hq', name: 'Head office' } });
  expect(site.statusCode, site.body).toBe(201);
  const otherKey = await seedMemberWithKey(t.database, other, 'editor', ['inventory:write']);
  await t.app.inject({ method: 'POST', url: '/api/v1/networks', headers: bearer(otherKey.token), payload: { cidr: '10.9.0.0/24', name: 'theirs' } });
});
afterAll(async () => {
  await t.close();
});

describe('GET /api/v1/admin/audit', () => {
  it('lists the organisation\'s writes, the newest first, with who made each (member, key prefix)', async () => {
    const res = await get('/api/v1/admin/audit');
    expect(res.statusCode, res.body).toBe(200);
    const rows = res.json().data as { action: string; at: string; actor: { type: string; email: string | null; keyPrefix: string | null }; target: { type: string; id: string | null }; changes: Record<string, unknown> }[];
    const writes = rows.filter((r) => r.action === 'network.created' || r.action === 'site.created');
    expect(writes.map((r) => r.action)).toEqual(['site.created', 'network.created', 'network.created']);
    expect(writes[0]!.actor).toMatchObject({ type: 'session', email: org.ownerEmail, keyPrefix: null });
    expect(writes[1]!.actor).toMatchObject({ type: 'key', email: editor.email, keyPrefix: expect.stringMatching(/^svk_/) });
    expect(writes[1]!.target.type).toBe('network');
    expect(rows.map((r) => Date.parse(r.at))).toEqual([...rows.map((r) => Date.parse(r.at))].sort((a, b) => b - a));
    expect(JSON.stringify(rows)).not.toContain('theirs');
  });

  it('filters by action (or its start), target and time, and pages with a cursor', async () => {
    const networks = (await get('/api/v1/admin/audit?action=network.')).json().data as { target: { id: string }; action: string }[];
    expect(networks.map((r) => r.action)).toEqual(['network.created', 'network.created']);
    const one = (await get(`/api/v1/admin/audit?targetType=network&targetId=${networks[1]!.target.id}`)).json().data;
    expect(one).toHaveLength(1);
    expect((await get('/api/v1/admin/audit?action=network.&until=2000-01-01T00:00:00Z')).json().data).toEqual([]);
    expect((await get(`/api/v1/admin/audit?action=network.&since=${encodeURIComponent(new Date(Date.now() - 3_600_000).toISOString())}`)).json().data).toHaveLength(2);
    const first = (await get('/api/v1/admin/audit?action=network.&limit=1')).json();
    expect(first.data).toHaveLength(1);
    const second = (await get(`/api/v1/admin/audit?action=network.&limit=1&cursor=${first.nextCursor}`)).json();
    expect(second.data).toHaveLength(1);
    expect(second.data[0].id).not.toBe(first.data[0].id);
    expect(second.nextCursor).toBeNull();
    // A percent sign is a character, not a wildcard.
    expect((await get('/api/v1/admin/audit?action=%25')).json().data).toEqual([]);
  });

  it('refuses a bad cursor, a bad time and an unknown parameter; viewers (403) and API keys (401)', async () => {
    expectProblem(await get('/api/v1/admin/audit?cursor=bm90LWEtY3Vyc29y'), 400, 'invalid_cursor');
    expectProblem(await get('/api/v1/admin/audit?since=yesterday'), 400, 'invalid_filter');
    expectProblem(await get('/api/v1/admin/audit?limit=501'), 400, 'limit_out_of_range');
    expectProblem(await get('/api/v1/admin/audit?actor=me'), 400, 'unknown_parameter');
    const viewer = await login(t.app, viewerEmail);
    expectProblem(await get('/api/v1/admin/audit', viewer.cookie), 403, 'forbidden');
    expectProblem(await t.app.inject({ method: 'GET', url: '/api/v1/admin/audit', headers: bearer(editor.token) }), 401, 'unauthorized');
  });
});

describe('GET /api/v1/admin/events with the log\'s filters', () => {
  it('lists the newest first (order=desc, before), by kind, subject and time', async () => {
    const db = t.database.db;
    const hosts = [await addHost(db, org.organisationId, { hostname: 'a' }), await addHost(db, org.organisationId, { hostname: 'b' })];
    await emit(db, org.organisationId, 'host.discovered', hosts.map((id, i) => ({ subjectId: id, data: { fingerprint: i ? 'fp-b' : 'fp-a', siteId: null } })));
    await sql`update events set occurred_at = now() - interval '2 days' where organisation_id = ${org.organisationId} and subject_id = ${hosts[0]}`.execute(db);
    const desc = (await get('/api/v1/admin/events?order=desc&kind=host.discovered')).json();
    expect(desc.data.map((e: { subject: { id: string } }) => e.subject.id)).toEqual([hosts[1], hosts[0]]);
    expect(desc).toMatchObject({ nextAfter: null, nextBefore: null });
    const page = (await get('/api/v1/admin/events?order=desc&kind=host.discovered&limit=1')).json();
    expect(page.data).toHaveLength(1);
    const older = (await get(`/api/v1/admin/events?order=desc&kind=host.discovered&limit=1&before=${page.nextBefore}`)).json();
    expect(older.data[0].subject.id).toBe(hosts[0]);
    expect((await get(`/api/v1/admin/events?subjectId=${hosts[0]}`)).json().data).toHaveLength(1);
    const day = encodeURIComponent(new Date(Date.now() - 86_400_000).toISOString());
    expect((await get(`/api/v1/admin/events?kind=host.discovered&since=${day}`)).json().data.map((e: { subject: { id: string } }) => e.subject.id)).toEqual([hosts[1]]);
    expect((await get(`/api/v1/admin/events?kind=host.discovered&until=${day}`)).json().data.map((e: { subject: { id: string } }) => e.subject.id)).toEqual([hosts[0]]);
    // The default stays oldest first after `after`.
    expect((await get('/api/v1/admin/events?kind=host.discovered')).json().data.map((e: { subject: { id: string } }) => e.subject.id)).toEqual(hosts);
  });
});
