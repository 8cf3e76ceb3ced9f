import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { importAdvisories } from '../src/advisories/import.service.js';
import { type SeededOrg, type TestApp, bearer, buildTestApp, createTestDatabase, login, seedMemberWithKey, seedOrg, type TestDatabase } from './helpers.js';

// The advisory mirror's state for the console (issue 23): counts, the feed's last pull and error,
// whether uploads are allowed; any member's session may read it, nothing else.

const fixture = (name: string) => JSON.parse(readFileSync(new URL(`./fixtures/advisories/${name}`, import.meta.url), 'utf8'));

describe('GET /api/v1/advisories', () => {
  let testDb: TestDatabase;
  let t: TestApp;
  let org: SeededOrg;
  let viewer: { cookie: string };
  let token: string;
  beforeAll(async () => {
    testDb = await createTestDatabase();
    t = await buildTestApp({ testDb });
    org = await seedOrg(t.database);
    const member = await seedMemberWithKey(t.database, org, 'viewer', ['inventory:read']);
    viewer = await login(t.app, member.email);
    token = member.token;
  });
  afterAll(async () => {
    await t.close();
    await testDb.drop();
  });
  const mirror = async (headers: Record<string, string> = { cookie: viewer.cookie }) => t.app.inject({ method: 'GET', url: '/api/v1/advisories', headers });

  it('gives any member the counts of the mirror and says uploads are allowed by default', async () => {
    const empty = await mirror();
    expect(empty.statusCode, empty.body).toBe(200);
    expect(empty.json()).toEqual({ advisories: 0, nvd: 0, osv: 0, withdrawn: 0, feed: { url: null, confirmedAt: null, lastAttemptAt: null, lastError: null }, uploadsAllowed: true });
    await importAdvisories(t.database.db, [fixture('nvd-CVE-2024-6387.json'), fixture('osv-GHSA-c2qf-rxjj-qqgw.json')]);
    expect((await mirror()).json()).toMatchObject({ advisories: 2, nvd: 1, osv: 1, withdrawn: 0, feed: { confirmedAt: expect.any(String) } });
  });

  it('shows the feed last pulled without its credentials, and its last error', async () => {
    await t.database.db
      .insertInto('advisory_feed')
      .values({ id: true, url: 'https://user:secret@feed.example/nvd.json.gz?apiKey=k-123', last_attempt_at: new Date(), last_error: 'HTTP 503 from the feed' })
      .onConflict((oc) => oc.column('id').doUpdateSet({ url: 'https://user:secret@feed.example/nvd.json.gz?apiKey=k-123', last_attempt_at: new Date(), last_error: 'HTTP 503 from the feed' }))
      .execute();
    const body = (await mirror()).json();
    expect(body.feed).toMatchObject({ url: 'https://feed.example/nvd.json.gz', lastAttemptAt: expect.any(String), lastError: 'HTTP 503 from the feed' });
    expect(JSON.stringify(body)).not.toMatch(/secret|k-123/);
  });

  it('refuses an API key and no credential with 401 unauthorized', async () => {
    for (const headers of [bearer(token), {}]) {
      const res = await mirror(headers);
      expect(res.statusCode).toBe(401);
      expect(res.json().code).toBe('unauthorized');
    }
  });

  it('says uploads are off where SERVICE_ADVISORY_UPLOAD=deny', async () => {
    const denied = await buildTestApp({ testDb, env: { SERVICE_ADVISORY_UPLOAD: 'deny' } });
    try {
      const owner = await login(denied.app, org.ownerEmail);
      const res = await denied.app.inject({ method: 'GET', url: '/api/v1/advisories', headers: { cookie: owner.cookie } });
      expect(res.json().uploadsAllowed).toBe(false);
    } finally {
      await denied.close();
    }
  });
});
