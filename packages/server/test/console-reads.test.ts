import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addCertificate, addHost, addHosts, addSite } from './fixtures.js';
import { type SeededOrg, type TestApp, bearer, buildTestApp, login, seedMemberWithKey, seedOrg } from './helpers.js';

// What the console reads beyond the plain collections: names for the ids a page shows
// (GET /api/v1/lookup, internal), certificates by expiry window (the overview's links) and
// snapshots newest first.

let t: TestApp;
let org: SeededOrg;
let other: SeededOrg;
let viewer: { cookie: string };
let theirs: { cookie: string };
let editorToken: string;

beforeAll(async () => {
  t = await buildTestApp();
  [org, other] = await Promise.all([seedOrg(t.database), seedOrg(t.database)]);
  viewer = await login(t.app, (await seedMemberWithKey(t.database, org, 'viewer', ['inventory:read'])).email);
  theirs = await login(t.app, (await seedMemberWithKey(t.database, other, 'viewer', ['inventory:read'])).email);
  editorToken = (await seedMemberWithKey(t.database, org, 'editor', ['inventory:read', 'inventory:write'])).token;
});
afterAll(async () => t?.close());

const get = (s: { cookie: string }, url: string) => t.app.inject({ method: 'GET', url, headers: { cookie: s.cookie } });
const asKey = (method: 'GET' | 'POST', url: string, payload?: Record<string, unknown>) =>
  t.app.inject({ method, url, headers: bearer(editorToken), ...(payload ? { payload } : {}) });

function expectProblem(res: LightMyRequestResponse, status: number, code: string) {
  expect(res.statusCode, res.body).toBe(status);
  expect(res.json().code).toBe(code);
}

describe('GET /api/v1/lookup', () => {
  it('answers the hosts, sites and networks of the organisation among the ids, past the first 500 of each list', async () => {
    const db = t.database.db;
    const o = org.organisationId;
    await addHosts(db, o, 600, 'early');
    const late = await addHost(db, o, { hostname: 'late-host', addresses: ['10.9.0.7'] });
    const site = (await addSite(db, o, `s-${randomUUID().slice(0, 6)}`)).id;
    const net = await asKey('POST', '/api/v1/networks', { name: 'Lab', cidr: '10.9.0.0/24' });
    expect(net.statusCode, net.body).toBe(201);
    const theirHost = await addHost(db, other.organisationId, { hostname: 'theirs' });
    const unknown = randomUUID();

    const res = await get(viewer, `/api/v1/lookup?hosts=${late},${theirHost},${unknown}&sites=${site}&networks=${net.json().id},${unknown}`);
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(body.hosts).toHaveLength(1);
    expect(body.hosts[0]).toMatchObject({ id: late, hostname: 'late-host', addresses: ['10.9.0.7'] });
    // The same item as the collection gives.
    const listed = await get(viewer, `/api/v1/hosts?search=${late}`);
    expect(body.hosts[0]).toEqual(listed.json().data[0]);
    expect(body.sites.map((s: { id: string }) => s.id)).toEqual([site]);
    expect(body.networks).toEqual([net.json()]);

    // The other organisation sees none of them; no kind asked: an empty list.
    const theirView = (await get(theirs, `/api/v1/lookup?hosts=${late},${theirHost}`)).json();
    expect(theirView).toEqual({ hosts: [expect.objectContaining({ id: theirHost })], sites: [], networks: [] });
    expect((await get(viewer, '/api/v1/lookup')).json()).toEqual({ hosts: [], sites: [], networks: [] });
  });

  it('refuses what is not a list of up to 100 ids (400 validation_failed), an unknown parameter, and a request without a session', async () => {
    expectProblem(await get(viewer, '/api/v1/lookup?hosts=not-a-uuid'), 400, 'validation_failed');
    expectProblem(await get(viewer, `/api/v1/lookup?hosts=${Array.from({ length: 101 }, () => randomUUID()).join(',')}`), 400, 'validation_failed');
    expectProblem(await get(viewer, `/api/v1/lookup?services=${randomUUID()}`), 400, 'validation_failed');
    const res = await t.app.inject({ method: 'GET', url: `/api/v1/lookup?hosts=${randomUUID()}`, headers: bearer(editorToken) });
    expect(res.statusCode).toBe(401);
  });
});

describe('GET /api/v1/certificates?expiring=', () => {
  it('lists the certificates each overview window counts, by notAfter (not the trust status recorded when seen)', async () => {
    const s = await seedOrg(t.database);
    const db = t.database.db;
    const session = await login(t.app, s.ownerEmail);
    const h = await addHost(db, s.organisationId, { hostname: 'tls' });
    const now = Date.now();
    const day = 86_400_000;
    const certs: [number, string][] = [
      [-1000, 'trusted'], // past, but recorded as trusted when last seen
      [-5 * day, 'expired'],
      [day - 60_000, 'trusted'],
      [day + 60_000, 'trusted'],
      [7 * day - 60_000, 'untrusted'],
      [14 * day + 60_000, 'trusted'],
      [30 * day - 60_000, 'self_signed'],
      [30 * day + 60_000, 'trusted'],
    ];
    const ids: string[] = [];
    for (const [i, [offset, trust]] of certs.entries()) {
      const id = await addCertificate(db, s.organisationId, h, { trustStatus: trust, port: 3000 + i });
      await sql`update certificates set not_after = ${new Date(now + offset)} where id = ${id}`.execute(db);
      ids.push(id);
    }
    const overview = (await get(session, '/api/v1/overview')).json().certificatesExpiring as Record<string, number>;
    const expected: Record<string, string[]> = {
      expired: [ids[0]!, ids[1]!],
      '1d': [ids[2]!],
      '7d': [ids[2]!, ids[3]!, ids[4]!],
      '14d': [ids[2]!, ids[3]!, ids[4]!],
      '30d': [ids[2]!, ids[3]!, ids[4]!, ids[5]!, ids[6]!],
    };
    for (const [window, want] of Object.entries(expected)) {
      const res = await get(session, `/api/v1/certificates?expiring=${window}&limit=500`);
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json().data.map((c: { id: string }) => c.id), window).toEqual(want);
      expect(overview[window], window).toBe(want.length);
    }
    // trustStatus=expired is what the scan recorded: it misses the certificate that expired since.
    expect((await get(session, '/api/v1/certificates?trustStatus=expired')).json().data.map((c: { id: string }) => c.id)).toEqual([ids[1]]);
    // Filters combine; the window pages with its cursor.
    expect((await get(session, '/api/v1/certificates?expiring=expired&trustStatus=trusted')).json().data.map((c: { id: string }) => c.id)).toEqual([ids[0]]);
    const first = (await get(session, '/api/v1/certificates?expiring=30d&limit=3')).json();
    expect(first.hasMore).toBe(true);
    const second = (await get(session, `/api/v1/certificates?expiring=30d&limit=3&cursor=${first.nextCursor}`)).json();
    expect([...first.data, ...second.data].map((c: { id: string }) => c.id)).toEqual(expected['30d']);
    expectProblem(await get(session, `/api/v1/certificates?expiring=30d&limit=3&cursor=${first.nextCursor.replace(/^./, (c: string) => (c === 'e' ? 'f' : 'e'))}`), 400, 'invalid_cursor');
    expectProblem(await get(session, `/api/v1/certificates?expiring=7d&limit=3&cursor=${first.nextCursor}`), 400, 'invalid_cursor');
    expectProblem(await get(session, '/api/v1/certificates?expiring=2d'), 400, 'invalid_filter');
  });
});

describe('GET /api/v1/snapshots?order=desc', () => {
  it('lists the newest first, page by page, and keeps the oldest first by default', async () => {
    const taken: string[] = [];
    for (let i = 0; i < 5; i++) {
      const res = await asKey('POST', '/api/v1/snapshots', {});
      expect(res.statusCode, res.body).toBe(201);
      taken.push(res.json().id);
    }
    const walk = async (query: string) => {
      const seen: string[] = [];
      let cursor: string | null = null;
      do {
        const res = await get(viewer, `/api/v1/snapshots?${query}&limit=2${cursor ? `&cursor=${cursor}` : ''}`);
        expect(res.statusCode, res.body).toBe(200);
        seen.push(...res.json().data.map((s: { id: string }) => s.id));
        cursor = res.json().nextCursor;
      } while (cursor);
      return seen;
    };
    expect(await walk('order=desc')).toEqual([...taken].reverse());
    expect(await walk('order=asc')).toEqual(taken);
    expect(await walk('reason=manual')).toEqual(taken);
    expect(await walk('order=desc&reason=manual')).toEqual([...taken].reverse());
    // A cursor of one order is not one of the other.
    const page = (await get(viewer, '/api/v1/snapshots?order=desc&limit=2')).json();
    expectProblem(await get(viewer, `/api/v1/snapshots?limit=2&cursor=${page.nextCursor}`), 400, 'invalid_cursor');
    expectProblem(await get(viewer, '/api/v1/snapshots?order=newest'), 400, 'invalid_filter');
    // Another organisation's snapshots stay out.
    expect((await get(theirs, '/api/v1/snapshots?order=desc')).json().data).toEqual([]);
  });
});
