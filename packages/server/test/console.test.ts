import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type TestApp, buildTestApp } from './helpers.js';

// The web console's files (issue 14): index.html at / and for every client route a browser asks
// for, hashed assets cached for a year, and the API's own 404/405 left as they were.

const INDEX = '<!doctype html><html><head><script type="module" src="/assets/index-3f9a1c.js"></script></head><body><div id="root"></div></body></html>';
const html = { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' };

describe('the web console\'s files', () => {
  let dir: string;
  let t: TestApp;

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'surveyor-console-'));
    mkdirSync(path.join(dir, 'assets'));
    writeFileSync(path.join(dir, 'index.html'), INDEX);
    writeFileSync(path.join(dir, 'assets', 'index-3f9a1c.js'), 'console.log("surveyor");'.repeat(10));
    writeFileSync(path.join(dir, 'secret.txt'), 'not an asset');
    t = await buildTestApp({ env: { SERVICE_CONSOLE_DIR: dir } });
  });
  afterAll(async () => {
    await t.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('serves index.html at / with a strict Content-Security-Policy, never cached without a check', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/', headers: html });
    expect(res.statusCode).toBe(200);
    expect(res.body).toBe(INDEX);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.headers['cache-control']).toBe('no-cache');
    expect(res.headers['content-security-policy']).toMatch(/default-src 'self'; script-src 'self';.*frame-ancestors 'none'/);
    expect(res.headers['x-content-type-options']).toBe('nosniff');
  });

  it('answers every client-side route a browser asks for with the same page', async () => {
    for (const url of ['/hosts', '/hosts/1b4e28ba-2fa1-4d2b-8000-000000000001', '/settings/jobs?x=1']) {
      const res = await t.app.inject({ method: 'GET', url, headers: html });
      expect(res.statusCode, url).toBe(200);
      expect(res.body).toBe(INDEX);
    }
  });

  it('leaves the API\'s answers alone: an unknown API path is a 404 problem and a POST-only path a 405, even to a browser', async () => {
    const unknown = await t.app.inject({ method: 'GET', url: '/api/v1/nothing-here', headers: html });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json().code).toBe('not_found');
    const postOnly = await t.app.inject({ method: 'GET', url: '/api/v1/auth/login', headers: html });
    expect(postOnly.statusCode).toBe(405);
    expect(postOnly.json().code).toBe('method_not_allowed');
    expect(postOnly.headers.allow).toBe('POST');
    // A client not asking for HTML gets the 404 of an unknown route, not the page.
    const api = await t.app.inject({ method: 'GET', url: '/hosts' });
    expect(api.statusCode).toBe(404);
    expect(api.json().code).toBe('not_found');
    const del = await t.app.inject({ method: 'DELETE', url: '/hosts', headers: html });
    expect(del.statusCode).toBe(404);
  });

  it('serves hashed assets for a year, immutable, and nothing outside assets/', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/assets/index-3f9a1c.js' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^(text|application)\/javascript/);
    expect(res.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    for (const url of ['/assets/missing.js', '/assets/../secret.txt', '/assets/%2e%2e/secret.txt', '/assets/']) {
      const miss = await t.app.inject({ method: 'GET', url });
      expect(miss.statusCode, url).toBe(404);
      expect(miss.body).not.toContain('not an asset');
    }
  });

  it('says how to build the console when it is not built (503 naming npm run build)', async () => {
    const bare = await buildTestApp({ env: { SERVICE_CONSOLE_DIR: path.join(dir, 'nowhere') } });
    try {
      const res = await bare.app.inject({ method: 'GET', url: '/', headers: html });
      expect(res.statusCode).toBe(503);
      expect(res.json()).toMatchObject({ code: 'service_unavailable', detail: expect.stringMatching(/npm run build/) });
    } finally {
      await bare.close();
    }
  });
});
