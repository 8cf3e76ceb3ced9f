import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { daemonHeaders } from './daemon-client.js';
import { type TestApp, bearer, buildTestApp, login, seedMemberWithKey } from './helpers.js';
import { type Scanning, createNetwork, observe, scanningOrg, startSession } from './scanning.js';

// Issue 18: text that is not well-formed Unicode (a lone UTF-16 surrogate) is refused at the edge
// with 400 validation_failed naming the field, never a 500 from deep in a statement.

const LONE = 'host-\ud800';

describe('request text must be well-formed Unicode', () => {
  let t: TestApp;
  let s: Scanning;
  let sessionId: string;
  beforeAll(async () => {
    t = await buildTestApp();
    s = await scanningOrg(t);
    sessionId = await startSession(t, s, await createNetwork(t, s, '10.9.0.0/24'));
  });
  afterAll(() => t.close());

  const expectRefused = (res: { statusCode: number; body: string; json(): any }, path: string) => {
    expect(res.statusCode, res.body).toBe(400);
    expect(res.json().code).toBe('validation_failed');
    expect(res.json().issues.map((i: { path: string }) => i.path)).toContain(path);
  };

  it.each([
    ['ips', { hostFingerprint: LONE, address: '10.9.0.5' }, 'body.ips.0.hostFingerprint'],
    ['neighbors', { fingerprint: LONE, localInterface: 'eth0', remoteChassisId: 'aa' }, 'body.neighbors.0.fingerprint'],
    ['vlans', { fingerprint: LONE, vlanId: 10 }, 'body.vlans.0.fingerprint'],
    ['routes', { fingerprint: LONE, destination: '10.0.0.0/8' }, 'body.routes.0.fingerprint'],
    ['hosts', { fingerprint: 'h1', hostname: 'a\udc00b' }, 'body.hosts.0.hostname'],
    ['services', { fingerprint: 'h1', address: '10.9.0.5', protocol: 'tcp', port: 22, product: '\udfff' }, 'body.services.0.product'],
  ])('observations: a lone surrogate in %s is 400 naming the field', async (kind, item, path) => {
    expectRefused(await observe(t, s.daemon, { sessionId, [kind]: [item] }), path);
  });

  it('refuses a lone surrogate in other bodies, in record keys and in free-form JSON', async () => {
    expectRefused(await t.app.inject({ method: 'POST', url: '/api/v1/networks', headers: bearer(s.api), payload: { name: 'net \ud83d', cidr: '10.8.0.0/24' } }), 'body.name');
    expectRefused(await t.app.inject({ method: 'POST', url: '/api/v1/daemon/flows', headers: daemonHeaders(s.daemon.token, s.daemon.id), payload: { flows: [{ bucketStart: new Date().toISOString(), srcIp: '10.0.0.1', dstIp: '10.0.0.2', dstPort: 80, protocol: 'tcp', packets: 1, bytes: 1, source: 'x\ud800' }] } }), 'body.flows.0.source');
    const hb = await t.app.inject({ method: 'POST', url: '/api/v1/daemon/heartbeat', headers: daemonHeaders(s.daemon.token, s.daemon.id), payload: { status: 'online', loadedSignatures: { ['c\ud800']: 1 } } });
    expect(hb.statusCode, hb.body).toBe(400);
    expect(hb.json().issues[0].path).toMatch(/^body\.loadedSignatures/);
    const reg = await t.app.inject({ method: 'POST', url: '/api/v1/daemon/register', headers: bearer(s.daemon.token), payload: { name: 'd1', bootId: crypto.randomUUID(), metadata: { nested: ['ok', { deep: '\udbff' }] } } });
    expect(reg.statusCode, reg.body).toBe(400);
    expect(reg.json().issues[0].path).toMatch(/^body\.metadata/);
  });

  it('refuses a lone surrogate in session bodies; a query cannot spell one', async () => {
    const viewer = await seedMemberWithKey(t.database, s.org, 'viewer', ['inventory:read']);
    // Percent-encoded UTF-8 cannot spell a lone surrogate (its bytes ED A0 80 are not UTF-8): it is never a 5xx.
    const res = await t.app.inject({ method: 'GET', url: '/api/v1/hosts?search=ab%ED%A0%80', headers: bearer(viewer.token) });
    expect(res.statusCode, res.body).toBeLessThan(500);
    const l = await t.app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: 'x\ud800@example.test', password: 'p' } });
    expectRefused(l, 'body.email');
    const { cookie, csrfToken } = await login(t.app, viewer.email);
    expectRefused(await t.app.inject({ method: 'POST', url: '/api/v1/auth/keys', headers: { cookie, 'x-csrf-token': csrfToken }, payload: { name: '\ud800', scopes: ['inventory:read'] } }), 'body.name');
  });
});
