import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type TestApp, buildTestApp } from './helpers.js';

// Issue 30: at the default level (info) a request writes one log line, when it completes, with
// what fastify's two lines (incoming, completed) said between them.

describe('request log lines', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await buildTestApp({ env: { SERVICE_LOG_LEVEL: 'info' } });
  });
  afterAll(() => t.close());

  it('a request at level info writes one line: method, path, client, status and time', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/api/health?x=1', headers: { 'x-request-id': 'one-line-1' } });
    expect(res.statusCode).toBe(200);
    const mine = t.logs.map((l) => JSON.parse(l)).filter((l) => l.requestId === 'one-line-1');
    expect(mine).toHaveLength(1);
    expect(mine[0]).toMatchObject({ level: 'info', msg: 'request completed', req: { method: 'GET', url: '/api/health?x=1' }, res: { statusCode: 200 }, responseTime: expect.any(Number) });
  });

  it('a refused request is logged once too, with its status', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/api/v1/hosts', headers: { 'x-request-id': 'one-line-2' } });
    expect(res.statusCode).toBe(401);
    const mine = t.logs.map((l) => JSON.parse(l)).filter((l) => l.requestId === 'one-line-2' && l.msg === 'request completed');
    expect(mine).toHaveLength(1);
    expect(mine[0]).toMatchObject({ req: { method: 'GET', url: '/api/v1/hosts' }, res: { statusCode: 401 } });
  });
});
