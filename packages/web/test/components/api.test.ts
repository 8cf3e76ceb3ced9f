import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createClient, routes } from '@surveyor/contract';
import { ApiError, consoleTransport, setCsrfToken, setUnauthorizedHandler } from '../../src/lib/api';

// The console's transport for the contract's client against a small local HTTP server answering as the API does:
// RFC 9457 problems become errors carrying the problem's detail (what the console shows), a 401
// goes to the sign-in handler unless the caller keeps it, and the CSRF token rides on writes only.

describe('the console API client', () => {
  let server: Server;
  let base = '';
  let call = createClient(consoleTransport());
  const seen: { method: string; url: string; csrf: string | undefined; body: string }[] = [];

  beforeAll(async () => {
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        seen.push({ method: req.method ?? '', url: req.url ?? '', csrf: req.headers['x-csrf-token'] as string | undefined, body });
        const problem = (status: number, code: string, detail: string) => {
          res.writeHead(status, { 'content-type': 'application/problem+json' });
          res.end(JSON.stringify({ type: `https://surveyor.dev/problems/${code}`, title: code, status, detail, code }));
        };
        if (req.url === '/api/v1/scans') return problem(409, 'scan_already_active', 'A scan of this network is already queued or running.');
        if (req.url === '/api/v1/daemons') return problem(401, 'unauthenticated', 'Sign in again.');
        if (req.url === '/api/v1/overview') {
          res.writeHead(502, { 'content-type': 'text/html' });
          return res.end('<h1>Bad gateway</h1>');
        }
        if (req.url?.startsWith('/api/v1/auth/keys/')) {
          res.writeHead(204);
          return res.end();
        }
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ ok: true, url: req.url }));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    call = createClient(consoleTransport(base));
  });
  afterEach(() => {
    setCsrfToken(null);
    setUnauthorizedHandler(() => {});
    seen.length = 0;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('turns a problem into an ApiError whose message is its detail, with status, code and the problem', async () => {
    const e = await call(routes.createScan, { body: { networkId: '00000000-0000-4000-8000-000000000001' } }).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(ApiError);
    const err = e as ApiError;
    expect(err.message).toBe('A scan of this network is already queued or running.');
    expect(err.status).toBe(409);
    expect(err.code).toBe('scan_already_active');
    expect(err.problem?.type).toBe('https://surveyor.dev/problems/scan_already_active');
  });

  it('says the status when the answer is not a problem (a proxy page)', async () => {
    const err = (await call(routes.getOverview).catch((x: unknown) => x)) as ApiError;
    expect(err.status).toBe(502);
    expect(err.message).toBe('502 Bad Gateway');
    expect(err.code).toBeUndefined();
  });

  it('says the server cannot be reached when nothing answers', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const err = (await createClient(consoleTransport(`http://127.0.0.1:${port}`))(routes.getOverview).catch((x: unknown) => x)) as ApiError;
    expect(err.status).toBe(0);
    expect(err.message).toMatch(/cannot be reached/);
  });

  it('sends a 401 to the sign-in handler, unless the caller keeps it (a wrong password)', async () => {
    const told: string[] = [];
    setUnauthorizedHandler((path) => told.push(path));
    await expect(call(routes.listDaemons)).rejects.toMatchObject({ status: 401, message: 'Sign in again.' });
    expect(told).toEqual(['/api/v1/daemons']);
    await expect(call(routes.listDaemons, {}, { no401Redirect: true })).rejects.toMatchObject({ status: 401 });
    expect(told).toHaveLength(1);
  });

  it('sends the CSRF token with writes only, JSON bodies, and the query without empty values', async () => {
    setCsrfToken('token-1');
    expect(await call(routes.listHosts, { query: { search: 'web', siteId: '', limit: 50, cursor: null } })).toEqual({ ok: true, url: '/api/v1/hosts?search=web&limit=50' });
    expect(await call(routes.revokeApiKey, { params: { id: 'k1' } })).toBeUndefined();
    await call(routes.createSite, { body: { code: 'lon', name: 'office LAN' } });
    expect(seen.map((s) => [s.method, s.url, s.csrf ?? null])).toEqual([['GET', '/api/v1/hosts?search=web&limit=50', null], ['DELETE', '/api/v1/auth/keys/k1', 'token-1'], ['POST', '/api/v1/sites', 'token-1']]);
    expect(JSON.parse(seen[2]?.body ?? '')).toEqual({ code: 'lon', name: 'office LAN' });
  });
});
