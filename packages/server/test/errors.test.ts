import net, { type AddressInfo } from 'node:net';
import { problemCodes } from '@surveyor/contract';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type TestApp, buildTestApp } from './helpers.js';

function expectProblem(res: { statusCode: number; headers: Record<string, unknown>; json(): any }, status: number, code: string) {
  expect(res.statusCode).toBe(status);
  expect(String(res.headers['content-type'])).toMatch(/^application\/problem\+json/);
  const body = res.json();
  expect(body).toMatchObject({ type: `http://surveyor.test/problems#${code}`, title: expect.any(String), status, code, detail: expect.any(String) });
  expect(body.requestId).toBe(res.headers['x-request-id']);
  return body;
}

describe('an HTTP request Node cannot parse', () => {
  it('gets a problem, and the log keeps no byte of it (it may carry a credential)', async () => {
    const t = await buildTestApp({ env: { SERVICE_LOG_LEVEL: 'trace' }, ready: false });
    try {
      await t.app.listen({ host: '127.0.0.1', port: 0 });
      const port = (t.app.server.address() as AddressInfo).port;
      const secret = 'svk_abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG';
      const response = await new Promise<string>((resolve, reject) => {
        const socket = net.connect(port, '127.0.0.1', () => {
          socket.write(`GET /api/health HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${secret}\r\nBad Header Line\r\n\r\n`);
        });
        let data = '';
        socket.on('data', (d) => (data += d));
        socket.on('end', () => resolve(data));
        socket.on('error', reject);
      });
      expect(response).toMatch(/^HTTP\/1\.1 400/);
      expect(response).toMatch(/application\/problem\+json/);
      expect(response).toMatch(/X-Request-Id: [0-9a-f-]{36}/);
      expect(response).toContain('"code":"validation_failed"');
      await new Promise((r) => setTimeout(r, 50));
      const log = t.logs.join('');
      expect(log).toContain('unparseable HTTP request');
      expect(log).not.toContain(secret);
      expect(log).not.toContain('rawPacket":{"type":"Buffer"');
    } finally {
      await t.close();
    }
  });
});

describe('problem details (spec 7)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await buildTestApp({ env: { SERVICE_BODY_LIMIT_BYTES: '2048' }, ready: false });
    // Two routes that fail the way production code can: a thrown error and a bad SQL statement.
    t.app.get('/test/throws', async () => {
      throw new Error('secret internal state at /srv/app.ts:42');
    });
    t.app.get('/test/bad-sql', async () => sql`select * from no_such_table_xyz`.execute(t.database.db));
    await t.app.ready();
  });
  afterAll(() => t.close());

  it('answers an unknown route with 404 not_found as a problem', async () => {
    expectProblem(await t.app.inject({ method: 'GET', url: '/api/v1/nothing-here' }), 404, 'not_found');
  });

  it('answers a known path with the wrong method with 405 and an Allow header', async () => {
    const res = await t.app.inject({ method: 'DELETE', url: '/api/health' });
    expectProblem(res, 405, 'method_not_allowed');
    expect(res.headers.allow).toBe('GET');
    const res2 = await t.app.inject({ method: 'GET', url: '/api/v1/auth/login' });
    expectProblem(res2, 405, 'method_not_allowed');
    expect(res2.headers.allow).toBe('POST');
  });

  it('refuses a body over the limit with 413 payload_too_large', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: 'a@b.c', password: 'x'.repeat(4096) } });
    expectProblem(res, 413, 'payload_too_large');
  });

  it('refuses a body that is not JSON with 415 unsupported_media_type', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/api/v1/auth/login', headers: { 'content-type': 'text/plain' }, payload: 'email=a' });
    expectProblem(res, 415, 'unsupported_media_type');
  });

  it('refuses malformed JSON with 400 validation_failed', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/api/v1/auth/login', headers: { 'content-type': 'application/json' }, payload: '{"email": "a@b.c",' });
    expectProblem(res, 400, 'validation_failed');
  });

  it('lists each validation issue with its field path', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: 'a@b.c', organisationId: 'not-a-uuid' } });
    const body = expectProblem(res, 400, 'validation_failed');
    const paths = body.issues.map((i: { path: string }) => i.path);
    expect(paths).toEqual(expect.arrayContaining(['body.password', 'body.organisationId']));
    for (const i of body.issues) expect(i.message).toEqual(expect.any(String));
  });

  it('refuses an unknown body field, organisationId smuggling included, on strict write bodies', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: 'a@b.c', password: 'pw', role: 'owner' } });
    const body = expectProblem(res, 400, 'validation_failed');
    expect(JSON.stringify(body.issues)).toContain('role');
  });

  it('answers an unexpected failure with 500 internal_error and no stack, path or SQL', async () => {
    for (const url of ['/test/throws', '/test/bad-sql']) {
      const res = await t.app.inject({ method: 'GET', url });
      const body = expectProblem(res, 500, 'internal_error');
      expect(res.body).not.toMatch(/secret internal state|srv\/app|no_such_table|select|at .*\.ts|stack/i);
      expect(body.detail).toContain('requestId');
    }
    // The operator still finds the cause in the log, under the request id.
    expect(t.logs.join('\n')).toContain('no_such_table_xyz');
  });

  it('answers an unparseable URL with a problem and a request id', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/api/%zz' });
    const body = expectProblem(res, 400, 'validation_failed');
    expect(body.detail).toMatch(/malformed/);
  });

  it('keeps a valid incoming X-Request-Id and replaces an invalid one', async () => {
    const kept = await t.app.inject({ method: 'GET', url: '/nowhere', headers: { 'x-request-id': 'trace-abc.123' } });
    expect(kept.headers['x-request-id']).toBe('trace-abc.123');
    expect(kept.json().requestId).toBe('trace-abc.123');
    const replaced = await t.app.inject({ method: 'GET', url: '/nowhere', headers: { 'x-request-id': 'bad id <script>' } });
    expect(replaced.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    expect(replaced.json().requestId).toBe(replaced.headers['x-request-id']);
  });

  it('puts X-Request-Id on every response, successes included', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/api/health' });
    expect(res.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('serves GET /problems listing every code, as HTML anchors and as JSON', async () => {
    const html = await t.app.inject({ method: 'GET', url: '/problems' });
    expect(html.statusCode).toBe(200);
    expect(html.headers['content-type']).toMatch(/^text\/html/);
    for (const code of Object.keys(problemCodes)) expect(html.body).toContain(`id="${code}"`);
    const json = await t.app.inject({ method: 'GET', url: '/problems', headers: { accept: 'application/json' } });
    expect(json.json().problems.map((p: { code: string }) => p.code).sort()).toEqual(Object.keys(problemCodes).sort());
    expect(json.json().problems.find((p: { code: string }) => p.code === 'forbidden')).toMatchObject({ status: 403, type: 'http://surveyor.test/problems#forbidden' });
  });
});
