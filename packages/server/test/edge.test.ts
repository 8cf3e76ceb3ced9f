import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeConfig, loadConfig } from '../src/config.js';
import { onlineDaemon } from './scanning.js';
import { type SeededOrg, type TestApp, buildTestApp, login, seedOrg } from './helpers.js';

// The edges of HTTP (issue 18), over a real socket where the behaviour lives there: app.inject
// never sees Node's HTTP server (Host checks, 100-continue, how a connection is closed).

const BODY_LIMIT = 64 * 1024;
const INGEST_LIMIT = 256 * 1024;

let t: TestApp;
let port: number;
let org: SeededOrg;

beforeAll(async () => {
  t = await buildTestApp({ env: { SERVICE_BODY_LIMIT_BYTES: String(BODY_LIMIT), SERVICE_INGEST_BODY_LIMIT_BYTES: String(INGEST_LIMIT), SERVICE_SSE_HEARTBEAT_SECONDS: '1' }, ready: false });
  await t.app.listen({ host: '127.0.0.1', port: 0 });
  port = (t.app.server.address() as AddressInfo).port;
  org = await seedOrg(t.database);
});
afterAll(() => t?.close());

interface Exchange {
  /** Everything the server sent, as text. */
  received: string;
  /** The error the client's socket saw (EPIPE, ECONNRESET), if any. */
  error?: string;
  /** The server closed the connection (FIN or reset). */
  closed: boolean;
}

/**
 * A client on a raw socket: writes `head`, then (unless `waitFor` is set) `body` in 64 KB writes,
 * each after the previous drained, reading everything the server sends meanwhile. Resolves when
 * the connection closes, or after `timeoutMs`. With `waitFor`, the body is sent only if the
 * server's text matches it first (a client that asked for `100-continue`).
 */
function exchange(head: string, body: Buffer | ((write: (b: Buffer | string) => Promise<void>) => Promise<void>) | null, opts: { timeoutMs?: number; waitFor?: RegExp } = {}): Promise<Exchange> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    const result: Exchange = { received: '', closed: false };
    const done = () => {
      clearTimeout(timer);
      socket.destroy();
      resolve(result);
    };
    const timer = setTimeout(done, opts.timeoutMs ?? 10_000);
    socket.on('data', (d) => {
      result.received += d.toString('latin1');
      if (opts.waitFor && opts.waitFor.test(result.received) && !sending) void send();
    });
    socket.on('error', (e: NodeJS.ErrnoException) => (result.error ??= e.code ?? e.message));
    socket.on('close', () => {
      result.closed = true;
      done();
    });
    let sending = false;
    const write = (b: Buffer | string) =>
      new Promise<void>((ok) => {
        if (socket.destroyed) return ok();
        if (socket.write(b)) ok();
        else socket.once('drain', ok);
      });
    const send = async () => {
      sending = true;
      if (typeof body === 'function') return body(write);
      if (!body) return;
      for (let i = 0; i < body.length && !socket.destroyed; i += 65536) await write(body.subarray(i, i + 65536));
    };
    socket.on('connect', () => {
      socket.write(head);
      if (!opts.waitFor) void send();
    });
  });
}

/** The last response in `received` (after any `100 Continue`): status, headers, body. */
function lastResponse(received: string) {
  const starts = [...received.matchAll(/HTTP\/1\.[01] \d{3} /g)];
  const text = received.slice(starts.at(-1)?.index ?? 0);
  const [head, ...rest] = text.split('\r\n\r\n');
  const [statusLine, ...lines] = head!.split('\r\n');
  const headers = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
  return { status: Number(statusLine!.split(' ')[1]), headers, body: rest.join('\r\n\r\n') };
}

function expectProblem(received: string, status: number, code: string) {
  const res = lastResponse(received);
  expect(res.status, received.slice(0, 300)).toBe(status);
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  const body = JSON.parse(res.body);
  expect(body).toMatchObject({ status, code, requestId: res.headers['x-request-id'] });
  return { ...res, json: body };
}

const jsonOf = (bytes: number) => Buffer.from(JSON.stringify({ email: 'a@b.c', password: 'x'.repeat(bytes) }));

describe('an HTTP/1.1 request without Host', () => {
  it('gets a 400 validation_failed problem with X-Request-Id, not a bare 400', async () => {
    const r = await exchange('GET /api/health HTTP/1.1\r\n\r\n', null, { timeoutMs: 3000 });
    const res = expectProblem(r.received, 400, 'validation_failed');
    expect(res.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    expect(res.json.detail).toMatch(/Host/);
  });

  it('is still served over HTTP/1.0, where Host is optional', async () => {
    const r = await exchange('GET /api/health HTTP/1.0\r\n\r\n', null, { timeoutMs: 3000 });
    expect(lastResponse(r.received).status).toBe(200);
  });
});

describe('a body over the limit', () => {
  const big = jsonOf(16 * 1024 * 1024); // far beyond the socket buffers: the client is still writing when refused
  const post = (path: string, length: number | null, extra = '') =>
    `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n${length === null ? 'Transfer-Encoding: chunked' : `Content-Length: ${length}`}\r\n${extra}\r\n`;

  it('with Expect: 100-continue: the 413 comes instead of the continue, and the body is never sent', async () => {
    const r = await exchange(post('/api/v1/auth/login', big.length, 'Expect: 100-continue\r\n'), big, { waitFor: /^HTTP\/1\.1 100 /, timeoutMs: 5000 });
    expect(r.received).not.toMatch(/100 Continue/);
    const res = expectProblem(r.received, 413, 'payload_too_large');
    expect(res.json.detail).toContain(String(BODY_LIMIT));
    expect(r.closed).toBe(true);
    expect(r.error).toBeUndefined();
  });

  it('with Expect: 100-continue within the limit: the continue, then the answer', async () => {
    const body = jsonOf(100);
    const r = await exchange(post('/api/v1/auth/login', body.length, 'Expect: 100-continue\r\nConnection: close\r\n'), body, { waitFor: /^HTTP\/1\.1 100 Continue\r\n\r\n/, timeoutMs: 3000 });
    expect(r.received).toMatch(/^HTTP\/1\.1 100 Continue\r\n\r\n/);
    expectProblem(r.received, 401, 'unauthorized');
  });

  it('sent by a client that reads while it writes: a readable 413, then a clean close (no reset)', async () => {
    const r = await exchange(post('/api/v1/auth/login', big.length), big);
    expectProblem(r.received, 413, 'payload_too_large');
    expect(lastResponse(r.received).headers.connection).toBe('close');
    expect(r.error).toBeUndefined();
    expect(r.closed).toBe(true);
  });

  it('sent chunked (no Content-Length): the same', async () => {
    const r = await exchange(post('/api/v1/auth/login', null), async (write) => {
      for (let i = 0; i < big.length; i += 65536) {
        const chunk = big.subarray(i, i + 65536);
        await write(`${chunk.length.toString(16)}\r\n`);
        await write(chunk);
        await write('\r\n');
      }
      await write('0\r\n\r\n');
    });
    expectProblem(r.received, 413, 'payload_too_large');
    expect(r.error).toBeUndefined();
    expect(r.closed).toBe(true);
  });

  it('on the ingest routes, whose limit is larger: continue within it, 413 above it, readable either way', async () => {
    const daemon = await onlineDaemon(t, org, {});
    const auth = `Authorization: Bearer ${daemon.token}\r\nX-Daemon-ID: ${daemon.id}\r\n`;
    const within = Buffer.from(JSON.stringify({ flows: [], dropped: 0, pad: 'x'.repeat(BODY_LIMIT * 2) }));
    const continued = await exchange(post('/api/v1/daemon/flows', within.length, `${auth}Expect: 100-continue\r\nConnection: close\r\n`), within, { waitFor: /^HTTP\/1\.1 100 Continue\r\n\r\n/, timeoutMs: 5000 });
    expect(continued.received).toMatch(/^HTTP\/1\.1 100 Continue\r\n\r\n/);
    expect(lastResponse(continued.received).status).not.toBe(413); // past the limit check: the body itself is judged

    const refused = await exchange(post('/api/v1/daemon/flows', big.length, `${auth}Expect: 100-continue\r\n`), big, { waitFor: /^HTTP\/1\.1 100 /, timeoutMs: 5000 });
    expect(refused.received).not.toMatch(/100 Continue/);
    expect(expectProblem(refused.received, 413, 'payload_too_large').json.detail).toContain(String(INGEST_LIMIT));

    const streamed = await exchange(post('/api/v1/daemon/flows', big.length, auth), big);
    expectProblem(streamed.received, 413, 'payload_too_large');
    expect(streamed.error).toBeUndefined();
  });
});

describe('HEAD /api/sse', () => {
  it('answers the headers of the stream and ends', async () => {
    const owner = await login(t.app, org.ownerEmail);
    const started = Date.now();
    const res = await new Promise<http.IncomingMessage & { ended: boolean }>((resolve, reject) => {
      const req = http.request({ host: '127.0.0.1', port, method: 'HEAD', path: '/api/sse', headers: { cookie: owner.cookie }, agent: false }, (r) => {
        r.resume();
        r.on('end', () => resolve(Object.assign(r, { ended: true })));
      });
      req.setTimeout(3000, () => req.destroy(new Error('HEAD /api/sse did not end')));
      req.on('error', reject);
      req.end();
    });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/event-stream/);
    expect(res.headers['x-request-id']).toBeTruthy();
    expect(Date.now() - started).toBeLessThan(2000);
  });
});

describe('X-Request-Id', () => {
  it('is adopted only when short and plain: letters, digits, -, _, . and at most 128 characters', async () => {
    for (const id of ['trace-abc.123', 'A_b-C.9', 'x'.repeat(128)]) {
      const res = await t.app.inject({ method: 'GET', url: '/api/health', headers: { 'x-request-id': id } });
      expect(res.headers['x-request-id']).toBe(id);
    }
    for (const id of ['user@example.com', 'urn:trace:1', 'x'.repeat(129), 'a b', 'a/b', 'ü', '']) {
      const res = await t.app.inject({ method: 'GET', url: '/nowhere', headers: { 'x-request-id': id } });
      expect(res.headers['x-request-id'], id).toMatch(/^[0-9a-f-]{36}$/);
      expect(res.json().requestId).toBe(res.headers['x-request-id']);
      expect(t.logs.join('')).not.toContain(`"${id}"`);
    }
  });
});

describe('compression', () => {
  const get = (url: string, headers: Record<string, string> = {}) => t.app.inject({ method: 'GET', url, headers });

  it('answers br, else gzip, for JSON of 1 KB and more; the body decodes to the same document', async () => {
    const plain = await get('/openapi.json');
    expect(plain.headers['content-encoding']).toBeUndefined();
    const br = await get('/openapi.json', { 'accept-encoding': 'gzip, deflate, br' });
    expect(br.headers['content-encoding']).toBe('br');
    expect(br.headers.vary).toMatch(/accept-encoding/i);
    expect(br.rawPayload.length).toBeLessThan(plain.rawPayload.length / 5);
    expect(brotliDecompressSync(br.rawPayload).toString()).toBe(plain.body);
    const gz = await get('/openapi.json', { 'accept-encoding': 'gzip' });
    expect(gz.headers['content-encoding']).toBe('gzip');
    expect(gunzipSync(gz.rawPayload).toString()).toBe(plain.body);
    const problems = await get('/problems', { accept: 'application/json', 'accept-encoding': 'gzip' });
    expect(problems.headers['content-encoding']).toBe('gzip');
    expect(JSON.parse(gunzipSync(problems.rawPayload).toString()).problems.length).toBeGreaterThan(5);
    expect((await get('/openapi.json', { 'accept-encoding': 'br;q=0, gzip;q=0.5' })).headers['content-encoding']).toBe('gzip');
    // deflate is not offered: identity
    expect((await get('/openapi.json', { 'accept-encoding': 'deflate' })).headers['content-encoding']).toBeUndefined();
  });

  it('leaves responses under 1 KB, problems included, as they are', async () => {
    const health = await get('/api/health', { 'accept-encoding': 'br, gzip' });
    expect(health.rawPayload.length).toBeLessThan(1024);
    expect(health.headers['content-encoding']).toBeUndefined();
    const missing = await get('/api/v1/nothing', { 'accept-encoding': 'br, gzip' });
    expect(missing.statusCode).toBe(404);
    expect(missing.headers['content-encoding']).toBeUndefined();
    expect(missing.json().code).toBe('not_found');
  });

  it('never compresses the SSE stream, whatever the client accepts', async () => {
    const owner = await login(t.app, org.ownerEmail);
    const res = await new Promise<{ headers: http.IncomingHttpHeaders; first: string }>((resolve, reject) => {
      const req = http.request({ host: '127.0.0.1', port, path: '/api/sse', headers: { cookie: owner.cookie, accept: 'text/event-stream', 'accept-encoding': 'br, gzip' }, agent: false }, (r) => {
        r.once('data', (d: Buffer) => {
          resolve({ headers: r.headers, first: d.toString() });
          req.destroy();
        });
      });
      req.setTimeout(5000, () => req.destroy(new Error('no SSE bytes')));
      req.on('error', reject);
      req.end();
    });
    expect(res.headers['content-type']).toMatch(/^text\/event-stream/);
    expect(res.headers['content-encoding']).toBeUndefined();
    expect(res.first).toMatch(/^(:|retry:|id:|event:)/m);
  });
});

describe('GET /openapi.json revalidation', () => {
  it('carries an ETag and answers If-None-Match with 304 and no body', async () => {
    const first = await t.app.inject({ method: 'GET', url: '/openapi.json' });
    const etag = first.headers.etag as string;
    expect(etag).toMatch(/^W\/"[\w-]+"$/);
    const again = await t.app.inject({ method: 'GET', url: '/openapi.json', headers: { 'if-none-match': etag, 'accept-encoding': 'br' } });
    expect(again.statusCode).toBe(304);
    expect(again.rawPayload.length).toBe(0);
    expect(again.headers.etag).toBe(etag);
    // The strong form of the same tag, a list holding it, and * all match; another tag does not.
    for (const h of [etag.slice(2), `"other", ${etag}`, '*']) expect((await t.app.inject({ method: 'GET', url: '/openapi.json', headers: { 'if-none-match': h } })).statusCode, h).toBe(304);
    const stale = await t.app.inject({ method: 'GET', url: '/openapi.json', headers: { 'if-none-match': '"stale"' } });
    expect(stale.statusCode).toBe(200);
    expect(stale.body).toBe(first.body);
  });
});

describe('CORS', () => {
  const DASH = 'https://dash.example.com';
  const preflight = (app: TestApp['app'], origin: string, method = 'PATCH') =>
    app.inject({ method: 'OPTIONS', url: '/api/v1/vulnerabilities/00000000-0000-4000-8000-000000000000', headers: { origin, 'access-control-request-method': method, 'access-control-request-headers': 'content-type, x-csrf-token' } });
  const corsHeaders = (headers: Record<string, unknown>) => Object.keys(headers).filter((h) => h.startsWith('access-control-'));

  it('is off by default: no Access-Control header on any answer, and a preflight is not answered as one', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/api/health', headers: { origin: DASH } });
    expect(res.statusCode).toBe(200);
    expect(corsHeaders(res.headers)).toEqual([]);
    const pre = await preflight(t.app, DASH);
    expect(pre.statusCode).toBe(405);
    expect(pre.json().code).toBe('method_not_allowed');
    expect(corsHeaders(pre.headers)).toEqual([]);
  });

  describe('with SERVICE_CORS_ORIGINS', () => {
    let c: TestApp;
    let cOrg: SeededOrg;
    beforeAll(async () => {
      c = await buildTestApp({ env: { SERVICE_CORS_ORIGINS: `${DASH}, http://localhost:5173` } });
      cOrg = await seedOrg(c.database);
    });
    afterAll(() => c?.close());

    it('answers an allowed origin\'s preflight: methods, headers, credentials, max age', async () => {
      const res = await preflight(c.app, DASH);
      expect(res.statusCode).toBe(204);
      expect(res.headers['access-control-allow-origin']).toBe(DASH);
      expect(res.headers['access-control-allow-credentials']).toBe('true');
      expect(String(res.headers['access-control-allow-methods'])).toContain('PATCH');
      expect(String(res.headers['access-control-allow-headers'])).toMatch(/X-CSRF-Token/);
      expect(String(res.headers['access-control-allow-headers'])).toMatch(/Authorization/);
      expect(res.headers['access-control-max-age']).toBe('600');
      expect(String(res.headers.vary)).toMatch(/Origin/);
      expect((await preflight(c.app, 'http://localhost:5173', 'POST')).headers['access-control-allow-origin']).toBe('http://localhost:5173');
    });

    it('lets an allowed origin read answers, errors included, and the headers it needs', async () => {
      const ok = await c.app.inject({ method: 'GET', url: '/api/health', headers: { origin: DASH } });
      expect(ok.headers['access-control-allow-origin']).toBe(DASH);
      expect(ok.headers['access-control-allow-credentials']).toBe('true');
      expect(String(ok.headers['access-control-expose-headers'])).toMatch(/X-Request-Id/);
      expect(String(ok.headers['access-control-expose-headers'])).toMatch(/RateLimit-Remaining/);
      const refused = await c.app.inject({ method: 'GET', url: '/api/v1/hosts', headers: { origin: DASH } });
      expect(refused.statusCode).toBe(401);
      expect(refused.headers['access-control-allow-origin']).toBe(DASH);
    });

    it('still needs the CSRF token for a state change with the session cookie from an allowed origin', async () => {
      const owner = await login(c.app, cOrg.ownerEmail);
      const res = await c.app.inject({ method: 'POST', url: '/api/v1/auth/logout', headers: { origin: DASH, cookie: owner.cookie } });
      expect(res.statusCode).toBe(403);
      expect(res.json().code).toBe('csrf_failed');
      expect(res.headers['access-control-allow-origin']).toBe(DASH);
    });

    it('gives another origin nothing: no Access-Control header, and no preflight', async () => {
      for (const origin of ['https://evil.example', 'https://dash.example.com.evil.example', 'http://dash.example.com', 'null']) {
        const res = await c.app.inject({ method: 'GET', url: '/api/health', headers: { origin } });
        expect(res.statusCode).toBe(200);
        expect(corsHeaders(res.headers), origin).toEqual([]);
        expect(String(res.headers.vary)).toMatch(/Origin/);
        const pre = await preflight(c.app, origin);
        expect(pre.statusCode, origin).toBe(405);
        expect(corsHeaders(pre.headers), origin).toEqual([]);
      }
      // No Origin at all (curl, a daemon, the same origin): nothing either.
      expect(corsHeaders((await c.app.inject({ method: 'GET', url: '/api/health' })).headers)).toEqual([]);
    });
  });

  it('SERVICE_CORS_ORIGINS takes exact origins only, and is listed by surveyor config', () => {
    expect(loadConfig({ SERVICE_CORS_ORIGINS: 'https://a.example, http://b.example:8080' }).corsOrigins).toEqual(['https://a.example', 'http://b.example:8080']);
    expect(loadConfig({}).corsOrigins).toEqual([]);
    for (const bad of ['*', 'https://a.example/', 'https://a.example/app', 'a.example', 'ftp://a.example', 'https://*.example.com', 'https://A.example']) {
      expect(() => loadConfig({ SERVICE_CORS_ORIGINS: bad }), bad).toThrow(/SERVICE_CORS_ORIGINS/);
    }
    expect(describeConfig().find((v) => v.name === 'SERVICE_CORS_ORIGINS')?.description).toMatch(/CORS/);
  });
});
