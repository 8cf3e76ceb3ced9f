import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { daemonHeaders } from './daemon-client.js';
import { type TestApp, bearer, buildTestApp } from './helpers.js';
import { type Scanning, createNetwork, observe, scanningOrg, startSession } from './scanning.js';

// Issue 18: every timestamp the contract accepts is one both drivers store and read back
// (0100-01-01T00:00:00Z to 9999-12-31T23:59:59Z); outside, 400 validation_failed naming the field,
// never a 500 from PostgreSQL. Flow buckets outside the 30-day window are stored nowhere and counted.

const HOUR = 3_600_000;
const iso = (ms: number) => new Date(ms).toISOString();

describe('request timestamps must be storable', () => {
  let t: TestApp;
  let s: Scanning;
  let sessionId: string;
  beforeAll(async () => {
    t = await buildTestApp();
    s = await scanningOrg(t);
    sessionId = await startSession(t, s, await createNetwork(t, s, '10.9.0.0/24'));
  });
  afterAll(() => t.close());

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
