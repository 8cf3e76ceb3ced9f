import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type TestApp, buildTestApp, login } from './helpers.js';
import { type Scanning, createNetwork, ingest, scanningOrg, startSession } from './scanning.js';

// GET /api/v1/scans?networkId=: a network's scan sessions for the console (internal, session
// cookie), newest first, within the session's organisation.

describe('a network\'s scan history (GET /api/v1/scans)', () => {
  let t: TestApp;
  let s: Scanning;
  let network: string;
  let first: string;
  let second: string;
  let cookie: string;

  beforeAll(async () => {
    t = await buildTestApp({ env: { SERVICE_RATE_LIMIT_DAEMON_PER_MINUTE: '1000000', SERVICE_RATE_LIMIT_KEY_PER_MINUTE: '1000000' } });
    s = await scanningOrg(t);
    network = await createNetwork(t, s, '10.42.0.0/24');
    first = await startSession(t, s, network);
    await ingest(t, s.daemon, { sessionId: first, final: true, hosts: [{ fingerprint: 'fp-a' }], stats: { hostsTotal: 2, hostsScanned: 2 } });
    second = await startSession(t, s, network);
    await ingest(t, s.daemon, { sessionId: second, hosts: [{ fingerprint: 'fp-b' }], stats: { hostsTotal: 4, hostsScanned: 1 } });
    cookie = (await login(t.app, s.org.ownerEmail)).cookie;
  });
  afterAll(() => t.close());

  const history = (query: string, headers: Record<string, string> = { cookie }) => t.app.inject({ method: 'GET', url: `/api/v1/scans?${query}`, headers });

  it('lists the network\'s sessions newest first, with their state and progress', async () => {
    const res = await history(`networkId=${network}`);
    expect(res.statusCode, res.body).toBe(200);
    const data = res.json().data;
    expect(data.map((x: { sessionId: string }) => x.sessionId)).toEqual([second, first]);
    expect(data[0]).toMatchObject({ state: 'running', networkId: network, progress: { hostsTotal: 4, hostsScanned: 1, batches: 1, percent: 25 } });
    expect(data[1]).toMatchObject({ state: 'completed', progress: { hostsTotal: 2, hostsScanned: 2, percent: 100 } });
    const one = await history(`networkId=${network}&limit=1`);
    expect(one.json().data.map((x: { sessionId: string }) => x.sessionId)).toEqual([second]);
  });

  it('is scoped to the session\'s organisation: another organisation\'s network is 404 not_found', async () => {
    const other = await scanningOrg(t);
    const otherCookie = (await login(t.app, other.org.ownerEmail)).cookie;
    const res = await history(`networkId=${network}`, { cookie: otherCookie });
    expect(res.statusCode).toBe(404);
    expect(res.json().code).toBe('not_found');
    const own = await createNetwork(t, other, '10.43.0.0/24');
    const empty = await history(`networkId=${own}`, { cookie: otherCookie });
    expect(empty.statusCode, empty.body).toBe(200);
    expect(empty.json()).toEqual({ data: [] });
  });

  it('needs a session: 401 without one (an API key is not a session)', async () => {
    expect((await history(`networkId=${network}`, {})).statusCode).toBe(401);
    expect((await history(`networkId=${network}`, { authorization: `Bearer ${s.api}` })).statusCode).toBe(401);
  });

  it('answers 400 validation_failed for a bad networkId or limit', async () => {
    for (const q of ['networkId=not-a-uuid', '', `networkId=${network}&limit=0`, `networkId=${network}&limit=101`]) {
      const res = await history(q);
      expect(res.statusCode, q).toBe(400);
      expect(res.json().code, q).toBe('validation_failed');
    }
  });
});
