import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../src/db/database.js';
import { migrate } from '../src/db/migrate.js';
import { TEST_DATABASE_URL, type TestApp, buildTestApp, createTestDatabase } from './helpers.js';
import { startTcpProxy } from './tcp-proxy.js';

describe('GET /api/health', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await buildTestApp({ env: { SERVICE_VERSION: '1.2.3-test', SERVICE_RATE_LIMIT_ANON_PER_MINUTE: '2' } });
  });
  afterAll(() => t.close());

  it('answers ok, the configured version and an RFC 3339 timestamp with offset', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/api/health' });
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body).toEqual({ ok: true, version: '1.2.3-test', ts: expect.any(String) });
    expect(body.ts).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/);
    expect(Math.abs(Date.parse(body.ts) - Date.now())).toBeLessThan(60_000);
  });

  it('needs no credential and is never rate limited', async () => {
    for (let i = 0; i < 5; i++) {
      const res = await t.app.inject({ method: 'GET', url: '/api/health' });
      expect(res.statusCode).toBe(200);
      expect(res.headers['ratelimit-limit']).toBeUndefined();
    }
  });
});

describe('GET /api/health when the database goes away under a running app', () => {
  it('answers non-200 with ok: false, and ok again once the database is back', async () => {
    if (TEST_DATABASE_URL) {
      // PostgreSQL: the app reaches the server through a relay that the test cuts.
      const target = new URL(TEST_DATABASE_URL);
      const proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port || 5432) });
      const viaProxy = new URL(TEST_DATABASE_URL);
      viaProxy.hostname = '127.0.0.1';
      viaProxy.port = String(proxy.port);
      const testDb = await createTestDatabase({ url: viaProxy.toString() });
      const t = await buildTestApp({ testDb });
      try {
        expect((await t.app.inject({ method: 'GET', url: '/api/health' })).statusCode).toBe(200);
        proxy.stop();
        const down = await t.app.inject({ method: 'GET', url: '/api/health' });
        expect(down.statusCode).toBe(503);
        expect(down.json()).toMatchObject({ ok: false, version: '0.1.0-dev' });
        proxy.start();
        const back = await t.app.inject({ method: 'GET', url: '/api/health' });
        expect(back.statusCode).toBe(200);
        expect(back.json().ok).toBe(true);
      } finally {
        await t.app.close();
        proxy.start();
        await testDb.drop();
        await proxy.close();
      }
    } else {
      // PGlite: the embedded database is shut down under the app.
      const database = await openDatabase({ poolMax: 1 });
      await migrate(database);
      const t = await buildTestApp({ testDb: { database, drop: () => database.close() } });
      try {
        expect((await t.app.inject({ method: 'GET', url: '/api/health' })).statusCode).toBe(200);
        await database.close();
        const down = await t.app.inject({ method: 'GET', url: '/api/health' });
        expect(down.statusCode).toBe(503);
        expect(down.json()).toMatchObject({ ok: false });
      } finally {
        await t.app.close();
      }
    }
  });
});
