import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { daemonHeaders } from './daemon-client.js';
import { type TestApp, bearer, buildTestApp, login, seedMemberWithKey } from './helpers.js';
import { type Scanning, observe, scanningSession } from './scanning.js';

// Issue 18: request values PostgreSQL cannot hold are refused at the edge with 400
// validation_failed naming the field, never a 500 from deep in a statement: text that is not
// well-formed Unicode (a lone UTF-16 surrogate), and timestamps outside what both drivers store
// and read back (0100-01-01T00:00:00Z to 9999-12-31T23:59:59Z). Flow buckets outside the 30-day
// window are stored nowhere and counted.

const LONE = 'host-\ud800';
const HOUR = 3_600_000;
const iso = (ms: number) => new Date(ms).toISOString();

let t: TestApp;
let s: Scanning;
let sessionId: string;
beforeAll(async () => {
  t = await buildTestApp();
  ({ s, sessionId } = await scanningSession(t));
});
afterAll(() => t.close());

describe('request text must be well-formed Unicode', () => {
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

describe('request timestamps must be storable', () => {
  const flow = (bucketStart: string, bytes = 1) => ({ bucketStart, srcIp: '10.0.0.1', dstIp: '10.0.0.2', dstPort: 80, protocol: 'tcp', packets: 1, bytes, source: 'ebpf' });
  const postFlows = (body: Record<string, unknown>) => t.app.inject({ method: 'POST', url: '/api/v1/daemon/flows', headers: daemonHeaders(s.daemon.token, s.daemon.id), payload: body });
  const paths = (res: { json(): any }) => (res.json().issues ?? []).map((i: { path: string }) => i.path);

  it.each(['0000-01-01T00:00:00Z', '0001-01-01T00:00:00+14:00', '0099-12-31T23:59:59Z', '9999-12-31T23:59:59-01:00', '9999-12-31T23:59:59.5Z'])(
    'refuses bucketStart %s with 400 naming the field, on both flow routes',
    async (at) => {
      const res = await postFlows({ flows: [flow(iso(Date.now())), flow(at)] });
      expect(res.statusCode, res.body).toBe(400);
      expect(res.json().code).toBe('validation_failed');
      expect(paths(res)).toContain('body.flows.1.bucketStart');
      const obs = await observe(t, s.daemon, { sessionId, flows: [flow(at)] });
      expect(obs.statusCode, obs.body).toBe(400);
      expect(paths(obs)).toContain('body.flows.0.bucketStart');
    },
  );

  it('refuses a UTC offset wider than PostgreSQL reads (±15:59) with 400 naming the field, read from the bytes or parsed as JSON, and stores one of +15:00', async () => {
    // The instant an hour ago written in another offset: local time = UTC + offset.
    const inOffset = (ms: number, hours: number) =>
      `${new Date(ms + hours * HOUR).toISOString().slice(0, 19)}${hours < 0 ? '-' : '+'}${String(Math.abs(hours)).padStart(2, '0')}:00`;
    const hourAgo = Date.now() - HOUR;
    for (const hours of [23, -16]) {
      const body = { flows: [flow(iso(hourAgo)), flow(inOffset(hourAgo, hours))] };
      // The plain form daemons send (read from its bytes) and the same with an escaped string (parsed as JSON).
      const escaped = JSON.stringify(body).replace('"ebpf"', '"\\u0065bpf"');
      for (const res of [await postFlows(body), await t.app.inject({ method: 'POST', url: '/api/v1/daemon/flows', headers: { ...daemonHeaders(s.daemon.token, s.daemon.id), 'content-type': 'application/json' }, payload: escaped })]) {
        expect(res.statusCode, res.body).toBe(400);
        expect(res.json().code).toBe('validation_failed');
        expect(paths(res)).toContain('body.flows.1.bucketStart');
      }
    }
    const ok = await postFlows({ flows: [flow(inOffset(hourAgo, 15), 4242)] });
    expect(ok.json(), ok.body).toEqual({ accepted: 1, outOfWindow: 0 });
  });

  it('refuses a certificate date PostgreSQL cannot hold, and stores the X.509 "no expiry" date 9999-12-31T23:59:59Z', async () => {
    const tls = (notAfter: string) => ({ fingerprint: 'fp-tls', address: '10.9.0.7', port: 443, notBefore: '2020-01-01T00:00:00Z', notAfter, sha256: 'ab'.repeat(32), subject: 'CN=x', issuer: 'CN=x' });
    const bad = await observe(t, s.daemon, { sessionId, ips: [{ hostFingerprint: 'fp-tls', address: '10.9.0.7' }], tls: [tls('0000-06-01T00:00:00Z')] });
    expect(bad.statusCode, bad.body).toBe(400);
    expect(paths(bad)).toContain('body.tls.0.notAfter');
    const ok = await observe(t, s.daemon, { sessionId, ips: [{ hostFingerprint: 'fp-tls', address: '10.9.0.7' }], tls: [tls('9999-12-31T23:59:59Z')] });
    expect(ok.statusCode, ok.body).toBe(200);
    const api = await t.app.inject({ method: 'GET', url: '/api/v1/certificates', headers: bearer(s.api) });
    expect(api.statusCode, api.body).toBe(200);
    expect(api.json().data.map((c: { notAfter: string }) => c.notAfter)).toContain('9999-12-31T23:59:59.000Z');
  });

  it('stores nothing of buckets outside the window and counts them in outOfWindow, never refusing the delivery', async () => {
    const now = Date.now();
    const before = Number((await sql<{ n: string }>`select count(*) as n from flows where organisation_id = ${s.org.organisationId}`.execute(t.database.db)).rows[0]!.n);
    const body = { flows: [flow(iso(now - HOUR), 11), flow(iso(now - 31 * 24 * HOUR), 12), flow('9999-12-31T23:59:59Z', 13), flow(iso(now + 2 * HOUR), 14), flow(iso(now + 60_000), 15)] };
    const res = await postFlows(body);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({ accepted: 2, outOfWindow: 3 });
    // A retry of the same delivery is still recognised.
    expect((await postFlows(body)).json()).toEqual({ accepted: 0, outOfWindow: 3 });
    const rows = (await sql<{ bytes: string }>`select bytes from flows where organisation_id = ${s.org.organisationId} order by bytes`.execute(t.database.db)).rows;
    expect(rows.length - before).toBe(2);
    expect(rows.map((r) => Number(r.bytes))).toEqual(expect.arrayContaining([11, 15]));
    // Only old buckets: answered, nothing stored.
    expect((await postFlows({ flows: [flow(iso(now - 40 * 24 * HOUR))] })).json()).toEqual({ accepted: 0, outOfWindow: 1 });
    // In an observation batch: the same window.
    const obs = await observe(t, s.daemon, { sessionId, flows: [flow(iso(now - 2 * HOUR), 21), flow('1970-01-01T00:00:00Z', 22)] });
    expect(obs.statusCode, obs.body).toBe(200);
    expect(obs.json()).toEqual({ accepted: 1, dedupHits: 0, outOfWindow: 1 });
  });
});
