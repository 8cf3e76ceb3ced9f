import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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
  t = await buildTestApp({ env: { SERVICE_BODY_LIMIT_BYTES: String(BODY_LIMIT), SERVICE_INGEST_BODY_LIMIT_BYTES: String(INGEST_LIMIT) }, ready: false });
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

