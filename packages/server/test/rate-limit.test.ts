import type { RouteDef } from '@surveyor/contract';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import * as admin from '../src/admin/admin.service.js';
import { addRoute } from '../src/http/route.js';
import { RateLimiter } from '../src/http/rate-limit.js';
import { type SeededOrg, type TestApp, bearer, buildTestApp, seedMemberWithKey, seedOrg } from './helpers.js';

const probe = (url: string, auth: RouteDef['auth']): RouteDef => ({ method: 'GET', url, operationId: url, summary: 'probe', tags: [], internal: true, auth, response: { 200: z.object({ ok: z.boolean() }) } });

describe('rate limits (decisions.md)', () => {
  let t: TestApp;
  let org: SeededOrg;
  beforeAll(async () => {
    t = await buildTestApp({
      ready: false,
      env: { SERVICE_RATE_LIMIT_KEY_PER_MINUTE: '3', SERVICE_RATE_LIMIT_DAEMON_PER_MINUTE: '2', SERVICE_RATE_LIMIT_ANON_PER_MINUTE: '4' },
    });
    addRoute(t.app, probe('/test/read', { kind: 'apiKey', scope: 'inventory:read' }), async () => ({ ok: true }));
    addRoute(t.app, probe('/api/v1/daemon/test', { kind: 'daemon', daemonId: false }), async () => ({ ok: true }));
    await t.app.ready();
    org = await seedOrg(t.database);
  });
  afterAll(() => t.close());

  it('limits each API key separately, with RateLimit-* headers and 429 rate_limited carrying Retry-After', async () => {
    const a = await seedMemberWithKey(t.database, org, 'viewer', ['inventory:read']);
    const b = await seedMemberWithKey(t.database, org, 'viewer', ['inventory:read']);
    const remaining: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await t.app.inject({ method: 'GET', url: '/test/read', headers: bearer(a.token), remoteAddress: '192.0.2.10' });
      expect(res.statusCode).toBe(200);
      expect(res.headers['ratelimit-limit']).toBe('3');
      remaining.push(String(res.headers['ratelimit-remaining']));
    }
    expect(remaining).toEqual(['2', '1', '0']);
    const limited = await t.app.inject({ method: 'GET', url: '/test/read', headers: bearer(a.token), remoteAddress: '192.0.2.10' });
    expect(limited.statusCode).toBe(429);
    expect(limited.json().code).toBe('rate_limited');
    const retry = Number(limited.headers['retry-after']);
    expect(retry).toBeGreaterThan(0);
    expect(retry).toBeLessThanOrEqual(60);
    expect(limited.headers['ratelimit-remaining']).toBe('0');
    // Same address, another key: its own budget.
    expect((await t.app.inject({ method: 'GET', url: '/test/read', headers: bearer(b.token), remoteAddress: '192.0.2.10' })).statusCode).toBe(200);
  });

  it('limits each daemon key at its own rate', async () => {
    const d = await admin.createDaemonKey(t.database.db, { type: 'cli' }, { org: org.organisationId });
    for (let i = 0; i < 2; i++) expect((await t.app.inject({ method: 'GET', url: '/api/v1/daemon/test', headers: bearer(d.token) })).statusCode).toBe(200);
    const limited = await t.app.inject({ method: 'GET', url: '/api/v1/daemon/test', headers: bearer(d.token) });
    expect(limited.statusCode).toBe(429);
    expect(limited.headers['ratelimit-limit']).toBe('2');
  });

  it('counts requests without a valid credential, 401s included, per client address', async () => {
    const ip = '198.51.100.7';
    const codes: number[] = [];
    for (let i = 0; i < 5; i++) {
      const res = await t.app.inject({ method: 'GET', url: '/test/read', headers: bearer('svk_not_a_real_token_at_all_xxxxxxxxxxxx'), remoteAddress: ip });
      codes.push(res.statusCode);
    }
    expect(codes).toEqual([401, 401, 401, 401, 429]);
    // Unauthenticated requests to open routes share the same per-address budget.
    expect((await t.app.inject({ method: 'GET', url: '/problems', remoteAddress: ip })).statusCode).toBe(429);
    // Another address is unaffected, and so is a valid key from the limited address.
    expect((await t.app.inject({ method: 'GET', url: '/problems', remoteAddress: '198.51.100.8' })).statusCode).toBe(200);
    const k = await seedMemberWithKey(t.database, org, 'viewer', ['inventory:read']);
    expect((await t.app.inject({ method: 'GET', url: '/test/read', headers: bearer(k.token), remoteAddress: ip })).statusCode).toBe(200);
  });

  it('never limits /api/health', async () => {
    const ip = '203.0.113.9';
    for (let i = 0; i < 10; i++) expect((await t.app.inject({ method: 'GET', url: '/api/health', remoteAddress: ip })).statusCode).toBe(200);
  });
});

describe('RateLimiter windows', () => {
  it('opens a fresh window once the minute has passed', () => {
    let now = 1_000_000;
    const limiter = new RateLimiter(60_000, () => now);
    expect(limiter.hit('k', 1).allowed).toBe(true);
    const refused = limiter.hit('k', 1);
    expect(refused).toMatchObject({ allowed: false, remaining: 0, resetSeconds: 60 });
    now += 59_000;
    expect(limiter.hit('k', 1)).toMatchObject({ allowed: false, resetSeconds: 1 });
    now += 1_000;
    expect(limiter.hit('k', 1).allowed).toBe(true);
  });
});
