import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as admin from '../src/admin/admin.service.js';
import { createLogger, redact, redactText } from '../src/logger.js';
import { PASSWORD, type TestApp, bearer, buildTestApp, login, seedMemberWithKey, seedOrg } from './helpers.js';

describe('log redaction (spec 5 rule 7)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await buildTestApp({ env: { SERVICE_LOG_LEVEL: 'trace' } });
  });
  afterAll(() => t.close());

  it('never writes API keys, daemon keys, session cookies, CSRF tokens or passwords to the log', async () => {
    const org = await seedOrg(t.database);
    const m = await seedMemberWithKey(t.database, org, 'viewer', ['inventory:read']);
    const daemon = await admin.createDaemonKey(t.database.db, { type: 'cli' }, { org: org.organisationId });
    const s = await login(t.app, org.ownerEmail);
    const sessionToken = s.cookie.split('=')[1]!;

    await t.app.inject({ method: 'GET', url: '/api/v1/auth/key', headers: bearer(m.token) });
    await t.app.inject({ method: 'GET', url: `/api/v1/auth/key?token=${m.token}`, headers: bearer(daemon.token) });
    await t.app.inject({ method: 'GET', url: `/nowhere/${m.token}` });
    await t.app.inject({ method: 'POST', url: '/api/v1/auth/logout', headers: { cookie: s.cookie } }); // refused: no CSRF
    await t.app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: org.ownerEmail, password: `${PASSWORD}-wrong` } });
    t.app.log.warn({ snmp: { community: 'public-secret-community' }, headers: { authorization: `Bearer ${m.token}` } }, `retrying with ${daemon.token}`);
    t.app.log.error({ err: new Error(`failed with key ${m.token}`) }, 'boom');

    const log = t.logs.join('');
    expect(log.length).toBeGreaterThan(0);
    expect(log).toContain('/nowhere/'); // the request was logged…
    for (const secret of [m.token, daemon.token, sessionToken, s.csrfToken, PASSWORD, 'public-secret-community']) {
      expect(log).not.toContain(secret); // …without the secrets
      expect(log).not.toContain(secret.slice(4, 20));
    }
    expect(log).toContain('[redacted]');
  });

  it('writes JSON lines with level, time and the request id', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/api/health', headers: { 'x-request-id': 'log-check-1' } });
    expect(res.statusCode).toBe(200);
    const lines = t.logs.map((l) => JSON.parse(l));
    const mine = lines.filter((l) => l.requestId === 'log-check-1');
    expect(mine.length).toBeGreaterThan(0);
    for (const l of mine) expect(l).toMatchObject({ level: expect.any(String), time: expect.any(String), service: 'surveyor' });
    expect(mine.some((l) => l.req?.method === 'GET' && l.req?.url === '/api/health')).toBe(true);
    expect(mine.some((l) => l.res?.statusCode === 200)).toBe(true);
  });
});

describe('redact', () => {
  it('masks secret-named keys at any depth and token-shaped text, leaving the rest', () => {
    const out = redact({
      user: 'alice',
      nested: { deeper: { password: 'hunter2', apiKey: 'abc', snmpCommunity: 'private' } },
      list: [{ token: 't' }, 'Bearer abc.def.ghi', 'key svm_abcdefghijklmnopqrstuvwxyz'],
      sessionId: '7f0c', // not a secret: session ids of scans are logged
    }) as any;
    expect(out.user).toBe('alice');
    expect(out.nested.deeper).toEqual({ password: '[redacted]', apiKey: '[redacted]', snmpCommunity: '[redacted]' });
    expect(out.list).toEqual([{ token: '[redacted]' }, 'Bearer [redacted]', 'key [redacted]']);
    expect(out.sessionId).toBe('7f0c');
  });

  it('masks Bearer values and Basic credentials in free text whatever the case, and leaves the words alone', () => {
    expect(redactText('authorization: bearer abc.def-123 then BEARER xyz')).toBe('authorization: bearer [redacted] then BEARER [redacted]');
    expect(redactText('sent Authorization: Basic dXNlcjpwYXNzd29yZA== to the hook')).toBe('sent Authorization: Basic [redacted] to the hook');
    expect(redactText('basic auth failed for the relay')).toBe('basic auth failed for the relay');
    expect(redactText('postgres://svc:hunter2@db/x')).toBe('postgres://svc:[redacted]@db/x');
  });

  it('masks secrets in a logger built for another process too', () => {
    const lines: string[] = [];
    const logger = createLogger('info', { write: (l: string) => void lines.push(l) });
    logger.info({ cloud: { secretAccessKey: 'AKIAXXXXSECRET' } }, 'sync');
    expect(lines.join('')).not.toContain('AKIAXXXXSECRET');
  });
});
