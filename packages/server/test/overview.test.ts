import { readFileSync } from 'node:fs';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { importAdvisories } from '../src/advisories/import.service.js';
import { addCertificate, addHost } from './fixtures.js';
import { type TestApp, bearer, buildTestApp, login, seedMemberWithKey, seedOrg } from './helpers.js';
import { createNetwork, queueScan, scanningOrg, startSession } from './scanning.js';

const NVD = JSON.parse(readFileSync(new URL('./fixtures/advisories/nvd-CVE-2024-6387.json', import.meta.url), 'utf8'));

describe('GET /api/v1/overview (the console overview\'s figures)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await buildTestApp();
  });
  afterAll(() => t.close());

  const overview = async (email: string) => {
    const { cookie } = await login(t.app, email);
    const res = await t.app.inject({ method: 'GET', url: '/api/v1/overview', headers: { cookie } });
    expect(res.statusCode, res.body).toBe(200);
    return res.json();
  };

  it('lists every session state and window with 0, and nulls for no snapshot and an empty mirror', async () => {
    const org = await seedOrg(t.database);
    const o = await overview(org.ownerEmail);
    expect(o).toEqual({
      hosts: { present: 0, gone: 0 },
      sessions: { queued: 0, dispatched: 0, running: 0, completed: 0, failed: 0, cancelled: 0, stalled: 0 },
      lastSnapshotAt: null,
      lastSnapshotAgeSeconds: null,
      advisoryFeed: null,
      certificatesExpiring: { expired: 0, '1d': 0, '7d': 0, '14d': 0, '30d': 0 },
    });
  });

  it('counts sessions per state, the latest snapshot, and certificates per window at their edges, for its own organisation only', async () => {
    const s = await scanningOrg(t);
    const db = t.database.db;
    const o = s.org.organisationId;
    await startSession(t, s, await createNetwork(t, s, '10.41.0.0/24'));
    await queueScan(t, s, await createNetwork(t, s, '10.42.0.0/24'));
    const stalled = (await queueScan(t, s, await createNetwork(t, s, '10.43.0.0/24'))).sessionId;
    await sql`update scan_sessions set state = 'stalled' where id = ${stalled}`.execute(db);

    const h = await addHost(db, o, { hostname: 'edge', addresses: ['10.41.0.1'] });
    // Fixed at the start of the test: the request's now is a little later, so a certificate at
    // exactly now + N days (minus a margin) is inside the N-day window and one just after is not.
    const now = Date.now();
    const at = (ms: number) => new Date(now + ms);
    const day = 86_400_000;
    const certs: [string, Date][] = [
      ['past', at(-1000)],
      ['inside 1d', at(day - 60_000)],
      ['just past 1d', at(day + 60_000)],
      ['inside 7d', at(7 * day - 60_000)],
      ['just past 14d', at(14 * day + 60_000)],
      ['inside 30d', at(30 * day - 60_000)],
      ['past 30d', at(30 * day + 60_000)],
    ];
    for (const [i, [, notAfter]] of certs.entries()) {
      const id = await addCertificate(db, o, h, { trustStatus: 'trusted', port: 2000 + i });
      await sql`update certificates set not_after = ${notAfter} where id = ${id}`.execute(db);
    }
    const editor = await seedMemberWithKey(t.database, s.org, 'editor', ['inventory:write']);
    const snap = await t.app.inject({ method: 'POST', url: '/api/v1/snapshots', headers: bearer(editor.token), payload: {} });
    expect(snap.statusCode, snap.body).toBe(201);

    // Another organisation's rows must not show.
    const other = await scanningOrg(t);
    await queueScan(t, other, await createNetwork(t, other, '10.44.0.0/24'));
    const theirs = await addHost(db, other.org.organisationId, { hostname: 'theirs' });
    await addCertificate(db, other.org.organisationId, theirs, { trustStatus: 'trusted' });

    const v = await overview(s.org.ownerEmail);
    expect(v.sessions).toEqual({ queued: 1, dispatched: 1, running: 0, completed: 0, failed: 0, cancelled: 0, stalled: 1 });
    expect(v.certificatesExpiring).toEqual({ expired: 1, '1d': 1, '7d': 3, '14d': 3, '30d': 5 });
    expect(Date.parse(v.lastSnapshotAt)).toBe(Date.parse(snap.json().capturedAt));
    expect(v.lastSnapshotAgeSeconds).toBeGreaterThanOrEqual(0);
    expect(v.lastSnapshotAgeSeconds).toBeLessThan(60);

    const theirView = await overview(other.org.ownerEmail);
    expect(theirView.sessions.queued).toBe(1);
    expect(theirView.sessions.dispatched).toBe(0);
    expect(theirView.lastSnapshotAt).toBeNull();
    expect(theirView.certificatesExpiring).toEqual({ expired: 0, '1d': 0, '7d': 0, '14d': 0, '30d': 0 });
  });

  it('gives the advisory mirror\'s age once it holds an advisory', async () => {
    const org = await seedOrg(t.database);
    await importAdvisories(t.database.db, [NVD]);
    const v = await overview(org.ownerEmail);
    expect(v.advisoryFeed).not.toBeNull();
    expect(v.advisoryFeed.ageSeconds).toBeGreaterThanOrEqual(0);
    expect(v.advisoryFeed.ageSeconds).toBeLessThan(60);
    expect(Number.isNaN(Date.parse(v.advisoryFeed.confirmedAt))).toBe(false);
  });

  it('answers any role of the organisation, and 401 without a session', async () => {
    const org = await seedOrg(t.database);
    const viewer = await seedMemberWithKey(t.database, org, 'viewer', ['inventory:read']);
    expect((await overview(viewer.email)).sessions.running).toBe(0);
    const anon = await t.app.inject({ method: 'GET', url: '/api/v1/overview' });
    expect(anon.statusCode).toBe(401);
    expect(anon.json().code).toBe('unauthorized');
  });
});
