import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as admin from '../src/admin/admin.service.js';
import { addHost, addService, addVulnerability } from './fixtures.js';
import { PASSWORD, type SeededOrg, type TestApp, bearer, buildTestApp, login, seedOrg } from './helpers.js';

// The console calls the inventory API with its session cookie (acceptsSession): as its user,
// capped by the user's role, with X-CSRF-Token on state changes, never across organisations.

describe('the session cookie on API-key routes', () => {
  let t: TestApp;
  let org: SeededOrg;
  let other: SeededOrg;
  const member = async (o: SeededOrg, role: string, password: string | undefined = PASSWORD) => {
    const email = `${role}-${Math.random().toString(36).slice(2, 8)}@${o.name}.test`;
    await admin.createUser(t.database.db, { type: 'cli' }, { org: o.organisationId, email, role, password });
    return email;
  };
  let vulnId: string;
  let otherHost: string;

  beforeAll(async () => {
    t = await buildTestApp();
    org = await seedOrg(t.database);
    other = await seedOrg(t.database);
    const host = await addHost(t.database.db, org.organisationId, { hostname: 'console-host' });
    const service = await addService(t.database.db, org.organisationId, host, { port: 443 });
    vulnId = await addVulnerability(t.database.db, org.organisationId, service, host, { cveId: 'CVE-2024-3094', severity: 'critical', score: 10 });
    otherHost = await addHost(t.database.db, other.organisationId, { hostname: 'elsewhere' });
  });
  afterAll(() => t.close());

  it('lets a viewer\'s session read the collections of its own organisation, and only those', async () => {
    const s = await login(t.app, await member(org, 'viewer'));
    const res = await t.app.inject({ method: 'GET', url: '/api/v1/hosts', headers: { cookie: s.cookie } });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().data.map((h: { hostname: string }) => h.hostname)).toEqual(['console-host']);
    const foreign = await t.app.inject({ method: 'GET', url: `/api/v1/hosts/${otherHost}/topology`, headers: { cookie: s.cookie } });
    expect(foreign.statusCode).toBe(404);
    expect(foreign.json().code).toBe('not_found');
  });

  it('refuses a write the role does not allow with 403 forbidden naming the scope', async () => {
    const s = await login(t.app, await member(org, 'viewer'));
    const res = await t.app.inject({ method: 'PATCH', url: `/api/v1/vulnerabilities/${vulnId}`, headers: { cookie: s.cookie, 'x-csrf-token': s.csrfToken }, payload: { state: 'acknowledged' } });
    expect(res.statusCode).toBe(403);
    expect(res.json()).toMatchObject({ code: 'forbidden', requiredScope: 'inventory:write' });
  });

  it('needs X-CSRF-Token for a state change, then acts as the user (audit row by the session\'s user)', async () => {
    const email = await member(org, 'editor');
    const s = await login(t.app, email);
    const bare = await t.app.inject({ method: 'PATCH', url: `/api/v1/vulnerabilities/${vulnId}`, headers: { cookie: s.cookie }, payload: { state: 'acknowledged' } });
    expect(bare.statusCode).toBe(403);
    expect(bare.json().code).toBe('csrf_failed');
    const ok = await t.app.inject({ method: 'PATCH', url: `/api/v1/vulnerabilities/${vulnId}`, headers: { cookie: s.cookie, 'x-csrf-token': s.csrfToken }, payload: { state: 'acknowledged', note: 'seen in the console' } });
    expect(ok.statusCode, ok.body).toBe(200);
    expect(ok.json()).toMatchObject({ state: 'acknowledged', note: 'seen in the console' });
    const audit = await t.database.db.selectFrom('audit_log').selectAll().where('target_id', '=', vulnId).execute();
    expect(audit).toEqual([expect.objectContaining({ actor_type: 'session', actor_key_id: null, actor_user_id: s.body.user.id, action: 'vulnerability.updated' })]);
  });

  it('refuses a session that must change its one-time password, and never takes the cookie for the metrics scrape', async () => {
    const email = await member(org, 'viewer');
    await t.database.db.updateTable('users').set({ must_change_password: true }).where('email', '=', email).execute();
    const fresh = await login(t.app, email);
    const refusedRead = await t.app.inject({ method: 'GET', url: '/api/v1/hosts', headers: { cookie: fresh.cookie } });
    expect(refusedRead.statusCode).toBe(403);
    expect(refusedRead.json()).toMatchObject({ code: 'forbidden', detail: expect.stringMatching(/one-time password/) });
    const admin1 = await login(t.app, await member(org, 'admin'));
    const metrics = await t.app.inject({ method: 'GET', url: '/api/v1/metrics', headers: { cookie: admin1.cookie } });
    expect(metrics.statusCode).toBe(401);
    expect(metrics.json().code).toBe('unauthorized');
  });

  it('takes the Authorization header over the cookie: a bad key with a good cookie is 401', async () => {
    const s = await login(t.app, await member(org, 'viewer'));
    const res = await t.app.inject({ method: 'GET', url: '/api/v1/hosts', headers: { cookie: s.cookie, ...bearer('svk_not_a_real_key_at_all_000000') } });
    expect(res.statusCode).toBe(401);
    expect(res.json().code).toBe('unauthorized');
  });

  it('lists the organisation\'s daemons to any member, quietest first, never another organisation\'s (GET /api/v1/daemons)', async () => {
    const { daemonKey, register, heartbeat } = await import('./daemon-client.js');
    const quiet = await register(t.app, await daemonKey(t, org), { name: 'quiet-one' });
    const loud = await register(t.app, await daemonKey(t, org), { name: 'loud-one' });
    const otherToken = await daemonKey(t, other);
    await heartbeat(t.app, otherToken, await register(t.app, otherToken, { name: 'elsewhere' }));
    const s = await login(t.app, await member(org, 'viewer'));
    const res = await t.app.inject({ method: 'GET', url: '/api/v1/daemons', headers: { cookie: s.cookie } });
    expect(res.statusCode, res.body).toBe(200);
    const names = res.json().data.map((d: { name: string }) => d.name);
    expect(names).toEqual(['quiet-one', 'loud-one']);
    expect(res.json().data[0]).toMatchObject({ id: quiet, status: 'pending', lastHeartbeatAt: null, flowsDropped: 0, capabilities: { nmap: true } });
    expect(res.json().data[1].id).toBe(loud);
    expect((await t.app.inject({ method: 'GET', url: '/api/v1/daemons' })).statusCode).toBe(401);
  });
});
