import type { RouteDef } from '@surveyor/contract';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import * as admin from '../src/admin/admin.service.js';
import { CREDENTIALS_CHANNEL } from '../src/auth/credential-cache.js';
import { addRoute } from '../src/http/route.js';
import { PASSWORD, type SeededOrg, type TestApp, bearer, buildTestApp, login, seedMemberWithKey, seedOrg } from './helpers.js';

const Ok = z.object({ organisationId: z.string(), daemonId: z.string().nullable().optional() });
const probe = (method: RouteDef['method'], url: string, auth: RouteDef['auth']): RouteDef => ({ method, url, operationId: url, summary: 'probe', tags: [], internal: true, auth, response: { 200: Ok } });

/** Routes guarded the way later domains will be: a write needing inventory:write, an admin session surface, a daemon call. */
async function appWithProbes(env: Record<string, string> = {}) {
  const t = await buildTestApp({ ready: false, env });
  const echo = async (req: any) => ({ organisationId: req.principal.organisationId, daemonId: req.principal.daemonId });
  addRoute(t.app, probe('POST', '/test/write', { kind: 'apiKey', scope: 'inventory:write' }), echo);
  addRoute(t.app, probe('GET', '/test/read', { kind: 'apiKey', scope: 'inventory:read' }), echo);
  addRoute(t.app, probe('POST', '/test/admin', { kind: 'session', minRole: 'admin' }), echo);
  addRoute(t.app, probe('POST', '/api/v1/daemon/test-heartbeat', { kind: 'daemon', daemonId: true }), echo);
  addRoute(t.app, probe('POST', '/api/v1/daemon/test-register', { kind: 'daemon', daemonId: false }), echo);
  await t.app.ready();
  return t;
}

describe('API keys (spec 5)', () => {
  let t: TestApp;
  let org: SeededOrg;
  beforeAll(async () => {
    t = await appWithProbes();
    org = await seedOrg(t.database);
  });
  afterAll(() => t.close());

  it('refuses a request without a credential with 401 unauthorized', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/test/read' });
    expect(res.statusCode).toBe(401);
    expect(res.json().code).toBe('unauthorized');
  });

  it('refuses a malformed, an unknown and a non-bearer credential with 401', async () => {
    for (const authorization of ['Bearer nonsense', `Bearer svk_${'A'.repeat(43)}`, 'Basic dXNlcjpwdw==', 'Bearer']) {
      const res = await t.app.inject({ method: 'GET', url: '/test/read', headers: { authorization } });
      expect(res.statusCode, authorization).toBe(401);
      expect(res.json().code).toBe('unauthorized');
    }
  });

  it('mints tokens with a recognisable prefix and stores only their SHA-256', async () => {
    const m = await seedMemberWithKey(t.database, org, 'viewer', ['inventory:read']);
    expect(m.token).toMatch(/^svk_[A-Za-z0-9_-]{43}$/);
    const rows = await sql<{ token_hash: string; token_prefix: string }>`select token_hash, token_prefix from keys where id = ${m.keyId}`.execute(t.database.db);
    expect(rows.rows[0]!.token_hash).toMatch(/^[0-9a-f]{64}$/);
    expect(JSON.stringify(rows.rows)).not.toContain(m.token.slice(4));
    const daemon = await admin.createDaemonKey(t.database.db, { type: 'cli' }, { org: org.organisationId });
    expect(daemon.token).toMatch(/^svd_/);
  });

  it('takes the organisation from the key, never from the request', async () => {
    const other = await seedOrg(t.database);
    const m = await seedMemberWithKey(t.database, org, 'viewer', ['inventory:read']);
    const res = await t.app.inject({ method: 'GET', url: `/test/read?organisationId=${other.organisationId}`, headers: { ...bearer(m.token), 'x-organisation-id': other.organisationId } });
    expect(res.statusCode).toBe(200);
    expect(res.json().organisationId).toBe(org.organisationId);
  });

  it('refuses a key without the scope with 403 forbidden naming requiredScope', async () => {
    const m = await seedMemberWithKey(t.database, org, 'editor', ['inventory:read']);
    const res = await t.app.inject({ method: 'POST', url: '/test/write', headers: bearer(m.token) });
    expect(res.statusCode).toBe(403);
    expect(res.json()).toMatchObject({ code: 'forbidden', requiredScope: 'inventory:write' });
  });

  it('caps a key by the current role: lowering the role removes write power on the next request, raising restores it', async () => {
    const m = await seedMemberWithKey(t.database, org, 'editor', ['inventory:read', 'inventory:write']);
    expect((await t.app.inject({ method: 'POST', url: '/test/write', headers: bearer(m.token) })).statusCode).toBe(200);

    await admin.setRole(t.database.db, { type: 'cli' }, { org: org.organisationId, userEmail: m.email, role: 'viewer' });
    const refused = await t.app.inject({ method: 'POST', url: '/test/write', headers: bearer(m.token) });
    expect(refused.statusCode).toBe(403);
    expect(refused.json()).toMatchObject({ code: 'forbidden', requiredScope: 'inventory:write' });
    expect((await t.app.inject({ method: 'GET', url: '/test/read', headers: bearer(m.token) })).statusCode).toBe(200);
    const intro = await t.app.inject({ method: 'GET', url: '/api/v1/auth/key', headers: bearer(m.token) });
    expect(intro.json()).toMatchObject({ role: 'viewer', scopes: ['inventory:read', 'inventory:write'], effectiveScopes: ['inventory:read'] });

    await admin.setRole(t.database.db, { type: 'cli' }, { org: org.organisationId, userEmail: m.email, role: 'editor' });
    expect((await t.app.inject({ method: 'POST', url: '/test/write', headers: bearer(m.token) })).statusCode).toBe(200);
  });

  it('refuses a revoked key with 401 from the next request on', async () => {
    const m = await seedMemberWithKey(t.database, org, 'viewer', ['inventory:read']);
    expect((await t.app.inject({ method: 'GET', url: '/test/read', headers: bearer(m.token) })).statusCode).toBe(200);
    await admin.revokeKey(t.database.db, { type: 'cli' }, { id: m.keyId });
    const res = await t.app.inject({ method: 'GET', url: '/test/read', headers: bearer(m.token) });
    expect(res.statusCode).toBe(401);
    expect(res.json().code).toBe('unauthorized');
  });

  it('refuses a key revoked by another process from the request after the database announces it', async () => {
    const m = await seedMemberWithKey(t.database, org, 'viewer', ['inventory:read']);
    expect((await t.app.inject({ method: 'GET', url: '/test/read', headers: bearer(m.token) })).statusCode).toBe(200);
    // Another process: plain SQL on a connection of its own, unseen by this process's write watch.
    // The app's handler of the channel was subscribed first, so it has run when this one resolves.
    let announced!: () => void;
    const heard = new Promise<void>((resolve) => (announced = resolve));
    const stop = await t.database.listen(CREDENTIALS_CHANNEL, () => announced());
    await t.database.withRawSession((exec) => exec(`update keys set revoked_at = now() where id = '${m.keyId}'`));
    await heard;
    await stop();
    expect((await t.app.inject({ method: 'GET', url: '/test/read', headers: bearer(m.token) })).statusCode).toBe(401);
  });

  it('keeps a verified key for reads only: a change the database does not announce shows on the next write at once', async () => {
    const m = await seedMemberWithKey(t.database, org, 'editor', ['inventory:read', 'inventory:write']);
    expect((await t.app.inject({ method: 'GET', url: '/test/read', headers: bearer(m.token) })).statusCode).toBe(200);
    // Revoked behind every trigger's back (replica mode fires none): only a fresh lookup sees it.
    await t.database.withRawSession((exec) => exec(`set session_replication_role = replica; update keys set revoked_at = now() where id = '${m.keyId}'; set session_replication_role = origin`));
    expect((await t.app.inject({ method: 'GET', url: '/test/read', headers: bearer(m.token) })).statusCode).toBe(200);
    expect((await t.app.inject({ method: 'POST', url: '/test/write', headers: bearer(m.token) })).statusCode).toBe(401);
  });

  it('looks a key up afresh after this process changes its owner\'s membership', async () => {
    const m = await seedMemberWithKey(t.database, org, 'viewer', ['inventory:read']);
    expect((await t.app.inject({ method: 'GET', url: '/test/read', headers: bearer(m.token) })).statusCode).toBe(200);
    await sql`update memberships set deactivated_at = now() where organisation_id = ${org.organisationId} and user_id = ${m.userId}`.execute(t.database.db);
    expect((await t.app.inject({ method: 'GET', url: '/test/read', headers: bearer(m.token) })).statusCode).toBe(401);
  });

  it('refuses an expired key with 401', async () => {
    const m = await seedMemberWithKey(t.database, org, 'viewer', ['inventory:read']);
    await sql`update keys set expires_at = now() - interval '1 second' where id = ${m.keyId}`.execute(t.database.db);
    expect((await t.app.inject({ method: 'GET', url: '/test/read', headers: bearer(m.token) })).statusCode).toBe(401);
  });

  it('refuses a key that expires while this process keeps it with 401', async () => {
    const m = await seedMemberWithKey(t.database, org, 'viewer', ['inventory:read']);
    await sql`update keys set expires_at = now() + interval '1500 milliseconds' where id = ${m.keyId}`.execute(t.database.db);
    // Used twice: looked up and marked used, then read from the kept row without a round trip.
    expect((await t.app.inject({ method: 'GET', url: '/test/read', headers: bearer(m.token) })).statusCode).toBe(200);
    expect((await t.app.inject({ method: 'GET', url: '/test/read', headers: bearer(m.token) })).statusCode).toBe(200);
    await new Promise((r) => setTimeout(r, 1600));
    expect((await t.app.inject({ method: 'GET', url: '/test/read', headers: bearer(m.token) })).statusCode).toBe(401);
  });

  it('refuses the key of a disabled user with 401', async () => {
    const m = await seedMemberWithKey(t.database, org, 'viewer', ['inventory:read']);
    await sql`update users set disabled_at = now() where id = ${m.userId}`.execute(t.database.db);
    expect((await t.app.inject({ method: 'GET', url: '/test/read', headers: bearer(m.token) })).statusCode).toBe(401);
  });

  it('records when a key was last used', async () => {
    const m = await seedMemberWithKey(t.database, org, 'viewer', ['inventory:read']);
    await t.app.inject({ method: 'GET', url: '/test/read', headers: bearer(m.token) });
    const row = await t.database.db.selectFrom('keys').select('last_used_at').where('id', '=', m.keyId).executeTakeFirstOrThrow();
    expect(row.last_used_at).toBeInstanceOf(Date);
  });

  it('does not accept a daemon key where an API key is needed, nor an API key on daemon endpoints', async () => {
    const daemon = await admin.createDaemonKey(t.database.db, { type: 'cli' }, { org: org.organisationId });
    expect((await t.app.inject({ method: 'GET', url: '/test/read', headers: bearer(daemon.token) })).statusCode).toBe(401);
    const m = await seedMemberWithKey(t.database, org, 'owner', ['inventory:read']);
    expect((await t.app.inject({ method: 'POST', url: '/api/v1/daemon/test-register', headers: bearer(m.token) })).statusCode).toBe(401);
  });
});

describe('daemon keys guard /api/v1/daemon/*', () => {
  let t: TestApp;
  let org: SeededOrg;
  beforeAll(async () => {
    t = await appWithProbes();
    org = await seedOrg(t.database);
  });
  afterAll(() => t.close());

  it('accepts a daemon key, with the organisation from the key', async () => {
    const d = await admin.createDaemonKey(t.database.db, { type: 'cli' }, { org: org.organisationId });
    const res = await t.app.inject({ method: 'POST', url: '/api/v1/daemon/test-register', headers: bearer(d.token) });
    expect(res.statusCode).toBe(200);
    expect(res.json().organisationId).toBe(org.organisationId);
  });

  it('requires X-Daemon-ID after registration, refusing a missing or malformed one with 401', async () => {
    const d = await admin.createDaemonKey(t.database.db, { type: 'cli' }, { org: org.organisationId });
    for (const headers of [bearer(d.token), { ...bearer(d.token), 'x-daemon-id': 'daemon-1' }]) {
      const res = await t.app.inject({ method: 'POST', url: '/api/v1/daemon/test-heartbeat', headers });
      expect(res.statusCode).toBe(401);
      expect(res.json().code).toBe('unauthorized');
    }
    const id = '7d1f4a52-8c55-4f7e-9b8e-3a1f2b3c4d5e';
    const ok = await t.app.inject({ method: 'POST', url: '/api/v1/daemon/test-heartbeat', headers: { ...bearer(d.token), 'x-daemon-id': id } });
    expect(ok.statusCode).toBe(200);
    expect(ok.json().daemonId).toBe(id);
  });

  it('refuses a missing or revoked daemon key with 401', async () => {
    expect((await t.app.inject({ method: 'POST', url: '/api/v1/daemon/test-register' })).statusCode).toBe(401);
    const d = await admin.createDaemonKey(t.database.db, { type: 'cli' }, { org: org.organisationId });
    await admin.revokeKey(t.database.db, { type: 'cli' }, { id: d.id });
    expect((await t.app.inject({ method: 'POST', url: '/api/v1/daemon/test-register', headers: bearer(d.token) })).statusCode).toBe(401);
  });
});

describe('browser sessions', () => {
  let t: TestApp;
  let org: SeededOrg;
  beforeAll(async () => {
    t = await appWithProbes({ SERVICE_RATE_LIMIT_LOGIN_PER_MINUTE: '1000' });
    org = await seedOrg(t.database);
  });
  afterAll(() => t.close());

  it('signs in with email and password and sets an HttpOnly, SameSite=Lax cookie (not Secure on http)', async () => {
    const s = await login(t.app, org.ownerEmail.toUpperCase());
    expect(s.setCookie).toMatch(/^surveyor_session=svx_[A-Za-z0-9_-]+;/);
    expect(s.setCookie).toMatch(/HttpOnly/i);
    expect(s.setCookie).toMatch(/SameSite=Lax/i);
    expect(s.setCookie).toMatch(/Path=\//);
    expect(s.setCookie).not.toMatch(/Secure/i);
    expect(s.body).toMatchObject({ user: { email: org.ownerEmail }, organisation: { id: org.organisationId, name: org.name }, role: 'owner', csrfToken: expect.any(String) });
  });

  it('marks the cookie Secure when the base URL is https', async () => {
    const https = await buildTestApp({ env: { SERVICE_BASE_URL: 'https://surveyor.example' } });
    try {
      const o = await seedOrg(https.database);
      const s = await login(https.app, o.ownerEmail);
      expect(s.setCookie).toMatch(/; Secure/i);
    } finally {
      await https.close();
    }
  });

  it('gives no hint whether the email exists', async () => {
    const wrongPassword = await t.app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: org.ownerEmail, password: 'not the password' } });
    const unknownEmail = await t.app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: 'nobody@nowhere.test', password: 'not the password' } });
    expect(wrongPassword.statusCode).toBe(401);
    expect(unknownEmail.statusCode).toBe(401);
    const strip = (b: Record<string, unknown>) => ({ ...b, requestId: undefined });
    expect(strip(wrongPassword.json())).toEqual(strip(unknownEmail.json()));
    expect(wrongPassword.headers['set-cookie']).toBeUndefined();
  });

  it('answers GET /api/v1/auth/me for a session and 401 without one', async () => {
    const s = await login(t.app, org.ownerEmail);
    const me = await t.app.inject({ method: 'GET', url: '/api/v1/auth/me', headers: { cookie: s.cookie } });
    expect(me.statusCode).toBe(200);
    expect(me.json()).toMatchObject({ role: 'owner', csrfToken: s.csrfToken, memberships: [{ organisationId: org.organisationId, role: 'owner' }] });
    expect(me.json().expiresAt).toMatch(/(Z|[+-]\d\d:\d\d)$/);
    expect((await t.app.inject({ method: 'GET', url: '/api/v1/auth/me' })).statusCode).toBe(401);
    expect((await t.app.inject({ method: 'GET', url: '/api/v1/auth/me', headers: { cookie: 'surveyor_session=svx_forged_value_that_is_long_enough' } })).statusCode).toBe(401);
  });

  it('refuses a cookie-authenticated state change without the CSRF token with 403 csrf_failed', async () => {
    const s = await login(t.app, org.ownerEmail);
    const missing = await t.app.inject({ method: 'POST', url: '/api/v1/auth/logout', headers: { cookie: s.cookie } });
    expect(missing.statusCode).toBe(403);
    expect(missing.json().code).toBe('csrf_failed');
    const wrong = await t.app.inject({ method: 'POST', url: '/api/v1/auth/logout', headers: { cookie: s.cookie, 'x-csrf-token': 'x'.repeat(43) } });
    expect(wrong.statusCode).toBe(403);
    expect(wrong.json().code).toBe('csrf_failed');
    // The refused requests changed nothing: the session still works.
    expect((await t.app.inject({ method: 'GET', url: '/api/v1/auth/me', headers: { cookie: s.cookie } })).statusCode).toBe(200);
  });

  it('logs out with the CSRF token: the session ends and the cookie is cleared', async () => {
    const s = await login(t.app, org.ownerEmail);
    const out = await t.app.inject({ method: 'POST', url: '/api/v1/auth/logout', headers: { cookie: s.cookie, 'x-csrf-token': s.csrfToken } });
    expect(out.statusCode).toBe(204);
    expect(String(out.headers['set-cookie'])).toMatch(/surveyor_session=;.*Max-Age=0/);
    expect((await t.app.inject({ method: 'GET', url: '/api/v1/auth/me', headers: { cookie: s.cookie } })).statusCode).toBe(401);
  });

  it('exempts API keys from CSRF', async () => {
    const m = await seedMemberWithKey(t.database, org, 'editor', ['inventory:write']);
    const res = await t.app.inject({ method: 'POST', url: '/test/write', headers: bearer(m.token) });
    expect(res.statusCode).toBe(200);
  });

  it('lets only admins and owners into admin surfaces, reading the role on every request', async () => {
    const viewer = await seedMemberWithKey(t.database, org, 'viewer', ['inventory:read']);
    const s = await login(t.app, viewer.email);
    const refused = await t.app.inject({ method: 'POST', url: '/test/admin', headers: { cookie: s.cookie, 'x-csrf-token': s.csrfToken } });
    expect(refused.statusCode).toBe(403);
    expect(refused.json()).toMatchObject({ code: 'forbidden', requiredScope: 'role:admin' });
    await admin.setRole(t.database.db, { type: 'cli' }, { org: org.organisationId, userEmail: viewer.email, role: 'admin' });
    const allowed = await t.app.inject({ method: 'POST', url: '/test/admin', headers: { cookie: s.cookie, 'x-csrf-token': s.csrfToken } });
    expect(allowed.statusCode).toBe(200);
    expect(allowed.json().organisationId).toBe(org.organisationId);
  });

  it('mints an API key for the session user, refusing scopes above the role', async () => {
    const viewer = await seedMemberWithKey(t.database, org, 'viewer', ['inventory:read']);
    const s = await login(t.app, viewer.email);
    const headers = { cookie: s.cookie, 'x-csrf-token': s.csrfToken };
    const refused = await t.app.inject({ method: 'POST', url: '/api/v1/auth/keys', headers, payload: { name: 'ci', scopes: ['inventory:write'] } });
    expect(refused.statusCode).toBe(403);
    expect(refused.json()).toMatchObject({ code: 'forbidden', requiredScope: 'inventory:write' });
    const created = await t.app.inject({ method: 'POST', url: '/api/v1/auth/keys', headers, payload: { name: 'reporting', scopes: ['inventory:read', 'metrics:read'], expiresInDays: 30 } });
    expect(created.statusCode).toBe(201);
    const key = created.json();
    expect(key).toMatchObject({ name: 'reporting', kind: 'api', scopes: ['inventory:read', 'metrics:read'], userEmail: viewer.email, revokedAt: null });
    expect(key.token).toMatch(/^svk_/);
    expect(key.tokenPrefix).toBe(key.token.slice(0, 8));
    expect((await t.app.inject({ method: 'GET', url: '/test/read', headers: bearer(key.token) })).statusCode).toBe(200);
    const list = await t.app.inject({ method: 'GET', url: '/api/v1/auth/keys', headers: { cookie: s.cookie } });
    expect(list.json().data.map((k: { id: string }) => k.id)).toContain(key.id);
    expect(JSON.stringify(list.json())).not.toContain(key.token);
  });

  it('answers another organisation\'s key with 404, never 403, and leaves it working', async () => {
    const other = await seedOrg(t.database);
    const theirs = await seedMemberWithKey(t.database, other, 'viewer', ['inventory:read']);
    const s = await login(t.app, org.ownerEmail);
    const res = await t.app.inject({ method: 'DELETE', url: `/api/v1/auth/keys/${theirs.keyId}`, headers: { cookie: s.cookie, 'x-csrf-token': s.csrfToken } });
    expect(res.statusCode).toBe(404);
    expect(res.json().code).toBe('not_found');
    const list = await t.app.inject({ method: 'GET', url: '/api/v1/auth/keys', headers: { cookie: s.cookie } });
    expect(list.json().data.map((k: { id: string }) => k.id)).not.toContain(theirs.keyId);
    expect((await t.app.inject({ method: 'GET', url: '/test/read', headers: bearer(theirs.token) })).statusCode).toBe(200);
  });

  it('lets a member revoke their own key but not a colleague\'s; an owner revokes any', async () => {
    const a = await seedMemberWithKey(t.database, org, 'editor', ['inventory:read']);
    const b = await seedMemberWithKey(t.database, org, 'editor', ['inventory:read']);
    const sa = await login(t.app, a.email);
    const ha = { cookie: sa.cookie, 'x-csrf-token': sa.csrfToken };
    expect((await t.app.inject({ method: 'DELETE', url: `/api/v1/auth/keys/${b.keyId}`, headers: ha })).statusCode).toBe(404);
    expect((await t.app.inject({ method: 'DELETE', url: `/api/v1/auth/keys/${a.keyId}`, headers: ha })).statusCode).toBe(204);
    expect((await t.app.inject({ method: 'GET', url: '/test/read', headers: bearer(a.token) })).statusCode).toBe(401);
    const so = await login(t.app, org.ownerEmail);
    expect((await t.app.inject({ method: 'DELETE', url: `/api/v1/auth/keys/${b.keyId}`, headers: { cookie: so.cookie, 'x-csrf-token': so.csrfToken } })).statusCode).toBe(204);
    const audit = await t.database.db.selectFrom('audit_log').selectAll().where('action', '=', 'key.revoked').where('target_id', '=', b.keyId).execute();
    expect(audit).toHaveLength(1);
    expect(audit[0]).toMatchObject({ actor_type: 'session', actor_user_id: org.ownerId, organisation_id: org.organisationId });
  });

  it('changes the password after checking the current one, ending the user\'s other sessions', async () => {
    const m = await seedMemberWithKey(t.database, org, 'viewer', ['inventory:read']);
    const s1 = await login(t.app, m.email);
    const s2 = await login(t.app, m.email);
    const h1 = { cookie: s1.cookie, 'x-csrf-token': s1.csrfToken };
    const wrong = await t.app.inject({ method: 'POST', url: '/api/v1/auth/password', headers: h1, payload: { currentPassword: 'nope', newPassword: 'a brand new passphrase' } });
    expect(wrong.statusCode).toBe(400);
    expect(wrong.json().code).toBe('validation_failed');
    const short = await t.app.inject({ method: 'POST', url: '/api/v1/auth/password', headers: h1, payload: { currentPassword: PASSWORD, newPassword: 'short' } });
    expect(short.statusCode).toBe(400);
    const ok = await t.app.inject({ method: 'POST', url: '/api/v1/auth/password', headers: h1, payload: { currentPassword: PASSWORD, newPassword: 'a brand new passphrase' } });
    expect(ok.statusCode).toBe(204);
    expect((await t.app.inject({ method: 'GET', url: '/api/v1/auth/me', headers: { cookie: s1.cookie } })).statusCode).toBe(200);
    expect((await t.app.inject({ method: 'GET', url: '/api/v1/auth/me', headers: { cookie: s2.cookie } })).statusCode).toBe(401);
    await login(t.app, m.email, 'a brand new passphrase');
  });
});

describe('session edge cases', () => {
  let t: TestApp;
  let org: SeededOrg;
  beforeAll(async () => {
    t = await appWithProbes({ SERVICE_RATE_LIMIT_LOGIN_PER_MINUTE: '1000' });
    org = await seedOrg(t.database);
  });
  afterAll(() => t.close());

  it('does not accept a session cookie, even with its CSRF token, where only an API key will do (a route without a scope, the metrics scrape)', async () => {
    const s = await login(t.app, org.ownerEmail);
    for (const url of ['/api/v1/auth/key', '/api/v1/metrics']) {
      const res = await t.app.inject({ method: 'GET', url, headers: { cookie: s.cookie, 'x-csrf-token': s.csrfToken } });
      expect(res.statusCode, url).toBe(401);
      expect(res.json().code).toBe('unauthorized');
    }
  });

  it('accepts the console\'s session cookie on a scoped API-key route, as its user (console-session.test.ts has the rest)', async () => {
    const s = await login(t.app, org.ownerEmail);
    const res = await t.app.inject({ method: 'POST', url: '/test/write', headers: { cookie: s.cookie, 'x-csrf-token': s.csrfToken } });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ organisationId: org.organisationId });
  });

  it('refuses the CSRF token of another session', async () => {
    const mine = await login(t.app, org.ownerEmail);
    const theirs = await login(t.app, org.ownerEmail);
    const res = await t.app.inject({ method: 'POST', url: '/api/v1/auth/logout', headers: { cookie: mine.cookie, 'x-csrf-token': theirs.csrfToken } });
    expect(res.statusCode).toBe(403);
    expect(res.json().code).toBe('csrf_failed');
  });

  it('refuses an expired session with 401', async () => {
    const s = await login(t.app, org.ownerEmail);
    await sql`update sessions set expires_at = now() - interval '1 second' where user_id = ${org.ownerId}`.execute(t.database.db);
    expect((await t.app.inject({ method: 'GET', url: '/api/v1/auth/me', headers: { cookie: s.cookie } })).statusCode).toBe(401);
  });

  it('reads the session role on every request: lowering it closes the admin surface at once', async () => {
    const m = await seedMemberWithKey(t.database, org, 'admin', ['inventory:read']);
    const s = await login(t.app, m.email);
    const headers = { cookie: s.cookie, 'x-csrf-token': s.csrfToken };
    expect((await t.app.inject({ method: 'POST', url: '/test/admin', headers })).statusCode).toBe(200);
    await admin.setRole(t.database.db, { type: 'cli' }, { org: org.organisationId, userEmail: m.email, role: 'editor' });
    const refused = await t.app.inject({ method: 'POST', url: '/test/admin', headers });
    expect(refused.statusCode).toBe(403);
    expect(refused.json()).toMatchObject({ code: 'forbidden', requiredScope: 'role:admin' });
  });

  it('keeps a one-time password session to me, logout and the password change until the password is changed', async () => {
    const { userId, generatedPassword } = await admin.createUser(t.database.db, { type: 'cli' }, { org: org.organisationId, email: 'first@owner.test', role: 'owner' });
    expect(generatedPassword).toBeDefined();
    const s = await login(t.app, 'first@owner.test', generatedPassword!);
    expect(s.body.user).toMatchObject({ id: userId, mustChangePassword: true });
    const headers = { cookie: s.cookie, 'x-csrf-token': s.csrfToken };
    const blocked = await t.app.inject({ method: 'POST', url: '/api/v1/auth/keys', headers, payload: { name: 'k', scopes: ['inventory:read'] } });
    expect(blocked.statusCode).toBe(403);
    expect(blocked.json().code).toBe('forbidden');
    expect((await t.app.inject({ method: 'GET', url: '/api/v1/auth/me', headers })).statusCode).toBe(200);
    const changed = await t.app.inject({ method: 'POST', url: '/api/v1/auth/password', headers, payload: { currentPassword: generatedPassword, newPassword: 'now a real passphrase' } });
    expect(changed.statusCode).toBe(204);
    expect((await t.app.inject({ method: 'POST', url: '/api/v1/auth/keys', headers, payload: { name: 'k', scopes: ['inventory:read'] } })).statusCode).toBe(201);
  });
});

describe('key kinds', () => {
  let t: TestApp;
  let org: SeededOrg;
  beforeAll(async () => {
    t = await buildTestApp();
    org = await seedOrg(t.database);
  });
  afterAll(() => t.close());

  it('mints a metrics key holding metrics:read only, and a SCIM token holding scim:manage only', async () => {
    const metrics = await admin.createApiKey(t.database.db, { type: 'cli' }, { org: org.organisationId, userEmail: org.ownerEmail, scopes: ['metrics:read'], kind: 'metrics' });
    expect(metrics.token).toMatch(/^svm_/);
    const scim = await admin.createApiKey(t.database.db, { type: 'cli' }, { org: org.organisationId, userEmail: org.ownerEmail, scopes: ['scim:manage'], kind: 'scim' });
    expect(scim.token).toMatch(/^svs_/);
    for (const [kind, scopes] of [['metrics', ['metrics:read', 'inventory:write']], ['scim', ['inventory:read']], ['metrics', ['scan:run']]] as const) {
      await expect(admin.createApiKey(t.database.db, { type: 'cli' }, { org: org.organisationId, userEmail: org.ownerEmail, scopes: [...scopes], kind })).rejects.toMatchObject({ code: 'validation_failed' });
    }
  });
});

describe('login rate limit', () => {
  it('refuses sign-in attempts over the per-address limit with 429 rate_limited, right password included', async () => {
    const t = await buildTestApp({ env: { SERVICE_RATE_LIMIT_LOGIN_PER_MINUTE: '3' } });
    try {
      const org = await seedOrg(t.database);
      for (let i = 0; i < 3; i++) {
        expect((await t.app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: org.ownerEmail, password: 'wrong' } })).statusCode).toBe(401);
      }
      const limited = await t.app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: org.ownerEmail, password: PASSWORD } });
      expect(limited.statusCode).toBe(429);
      expect(limited.json().code).toBe('rate_limited');
      expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
      expect(limited.headers['set-cookie']).toBeUndefined();
      // Another client address has its own budget.
      const elsewhere = await t.app.inject({ method: 'POST', url: '/api/v1/auth/login', remoteAddress: '10.9.8.7', payload: { email: org.ownerEmail, password: PASSWORD } });
      expect(elsewhere.statusCode).toBe(200);
    } finally {
      await t.close();
    }
  });
});
