import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { daemonHeaders, daemonKey, heartbeat, poll, register } from './daemon-client.js';
import { type SeededOrg, type TestApp, bearer, buildTestApp, createTestDatabase, login, seedMemberWithKey, seedOrg, type TestDatabase } from './helpers.js';
import { markQuietDaemonsOffline } from '../src/daemons/daemons.repo.js';
import { addSite } from './fixtures.js';



describe('daemon registration and heartbeat (spec 3.3, 4.4)', () => {
  let t: TestApp;
  let org: SeededOrg;
  let token: string;
  beforeAll(async () => {
    t = await buildTestApp();
    org = await seedOrg(t.database);
    token = await daemonKey(t, org);
  });
  afterAll(() => t.close());

  it('registers and answers the daemon id with the default config', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/api/v1/daemon/register', headers: bearer(token), payload: { name: 'edge-1', bootId: randomUUID(), capabilities: { nmap: true } } });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ daemonId: expect.stringMatching(/^[0-9a-f-]{36}$/), config: { heartbeatIntervalSeconds: 30, jobPollTimeoutSeconds: 30 } });
  });

  it('is idempotent by name: a restarting daemon keeps its id, its facts are refreshed and a new boot id counts a restart', async () => {
    const boot = randomUUID();
    const id = await register(t.app, token, { name: 'Edge-Restart', bootId: boot, version: '1.0.0' });
    expect(await register(t.app, token, { name: 'edge-restart', bootId: boot, version: '1.0.0' })).toBe(id);
    expect(await register(t.app, token, { name: 'EDGE-RESTART', bootId: randomUUID(), version: '1.1.0', capabilities: { nmap: false } })).toBe(id);
    const row = await t.database.db.selectFrom('daemons').select(['version', 'restart_count', 'capabilities']).where('id', '=', id).executeTakeFirstOrThrow();
    expect(row).toMatchObject({ version: '1.1.0', restart_count: 1, capabilities: { nmap: false } });
    expect(await t.database.db.selectFrom('daemons').select('id').where('organisation_id', '=', org.organisationId).where(sql`lower(name)`, '=', 'edge-restart').execute()).toHaveLength(1);
  });

  it('binds a site by siteCode on first registration only, creating the site when no site has the code', async () => {
    const id = await register(t.app, token, { name: 'site-binder', siteCode: 'ams-1' });
    const site = await t.database.db.selectFrom('sites').select(['id', 'name']).where('organisation_id', '=', org.organisationId).where('code', '=', 'ams-1').executeTakeFirstOrThrow();
    expect(site.name).toBe('ams-1');
    const siteOf = async () => (await t.database.db.selectFrom('daemons').select('site_id').where('id', '=', id).executeTakeFirstOrThrow()).site_id;
    expect(await siteOf()).toBe(site.id);
    await register(t.app, token, { name: 'site-binder', siteCode: 'fra-1' });
    expect(await siteOf()).toBe(site.id);
    const existing = await addSite(t.database.db, org.organisationId, 'LON-1');
    const other = await register(t.app, token, { name: 'second', siteCode: 'lon-1' });
    expect((await t.database.db.selectFrom('daemons').select('site_id').where('id', '=', other).executeTakeFirstOrThrow()).site_id).toBe(existing.id);
  });

  it('keeps a site set in the UI when the daemon registers again with another siteCode', async () => {
    const id = await register(t.app, token, { name: 'ui-placed', siteCode: 'ams-2' });
    const chosen = await addSite(t.database.db, org.organisationId, 'UI-CHOSEN');
    // What the UI does: set the site and remember that a person chose it.
    await t.database.db.updateTable('daemons').set({ site_id: chosen.id, site_set_in_ui: true }).where('id', '=', id).execute();
    expect(await register(t.app, token, { name: 'ui-placed', siteCode: 'ams-2' })).toBe(id);
    await register(t.app, token, { name: 'ui-placed', siteCode: 'zrh-9' });
    const row = await t.database.db.selectFrom('daemons').select(['site_id', 'site_set_in_ui']).where('id', '=', id).executeTakeFirstOrThrow();
    expect(row).toEqual({ site_id: chosen.id, site_set_in_ui: true });
    expect(await t.database.db.selectFrom('sites').select('id').where('organisation_id', '=', org.organisationId).where('code', '=', 'zrh-9').executeTakeFirst()).toBeUndefined();
  });

  it('refuses a malformed registration with 400 and ignores unknown fields (newer daemons)', async () => {
    const bad = await t.app.inject({ method: 'POST', url: '/api/v1/daemon/register', headers: bearer(token), payload: { name: 'x', bootId: 'not-a-uuid', networkCidrs: ['10.0.0.1/8'] } });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().code).toBe('validation_failed');
    expect(bad.json().issues.map((i: { path: string }) => i.path)).toEqual(expect.arrayContaining(['body.bootId', 'body.networkCidrs.0']));
    await register(t.app, token, { name: 'future', somethingNew: { a: 1 } });
  });

  it('refuses an API key and a missing key with 401', async () => {
    const m = await seedMemberWithKey(t.database, org, 'owner', ['inventory:read']);
    for (const headers of [bearer(m.token), {}]) {
      const res = await t.app.inject({ method: 'POST', url: '/api/v1/daemon/register', headers, payload: { name: 'x', bootId: randomUUID() } });
      expect(res.statusCode).toBe(401);
    }
  });

  it('maps heartbeat status: online is online, degraded and anything else degraded; a daemon never heard from is pending', async () => {
    const id = await register(t.app, token);
    const status = async () => (await t.database.db.selectFrom('daemons').select(['status', 'loaded_signatures', 'last_heartbeat_at']).where('id', '=', id).executeTakeFirstOrThrow());
    expect((await status()).status).toBe('pending');
    expect((await heartbeat(t.app, token, id, 'online')).status).toBe('online');
    expect(await status()).toMatchObject({ status: 'online', loaded_signatures: { core: 120, custom: 3 }, last_heartbeat_at: expect.any(Date) });
    expect((await heartbeat(t.app, token, id, 'degraded')).status).toBe('degraded');
    expect((await heartbeat(t.app, token, id, 'on fire')).status).toBe('degraded');
    expect((await heartbeat(t.app, token, id, 'online')).status).toBe('online');
  });

  it('lists an online daemon quiet for more than 300 s as silent, as daemon.offline counts it (issue 23), and a degraded or recently heard one not', async () => {
    const viewer = await seedMemberWithKey(t.database, org, 'viewer', ['inventory:read']);
    const session = await login(t.app, viewer.email);
    const listed = async (id: string) => {
      const res = await t.app.inject({ method: 'GET', url: '/api/v1/daemons', headers: { cookie: session.cookie } });
      expect(res.statusCode, res.body).toBe(200);
      return (res.json().data as { id: string; status: string; silent: boolean; quietSeconds: number }[]).find((d) => d.id === id)!;
    };
    const quietFor = (id: string, s: number) => sql`update daemons set last_heartbeat_at = now() - make_interval(secs => ${s}) where id = ${id}`.execute(t.database.db);
    const online = await register(t.app, token, { name: 'silent-one' });
    await heartbeat(t.app, token, online, 'online');
    expect(await listed(online)).toMatchObject({ status: 'online', silent: false });
    await quietFor(online, 299);
    expect(await listed(online)).toMatchObject({ status: 'online', silent: false });
    await quietFor(online, 301);
    expect(await listed(online)).toMatchObject({ status: 'online', silent: true, quietSeconds: 301 });
    // Announced offline (daemon.offline sent): silent, whatever the clock says.
    await sql`update daemons set offline_since = now(), last_heartbeat_at = now() - make_interval(secs => 200) where id = ${online}`.execute(t.database.db);
    expect(await listed(online)).toMatchObject({ silent: true });
    // Its next heartbeat ends it.
    await heartbeat(t.app, token, online, 'online');
    expect(await listed(online)).toMatchObject({ status: 'online', silent: false });
    const degraded = await register(t.app, token, { name: 'degraded-quiet' });
    await heartbeat(t.app, token, degraded, 'degraded');
    await quietFor(degraded, 900);
    expect(await listed(degraded)).toMatchObject({ status: 'degraded', silent: false });
  });

  it('keeps the reason of a degraded heartbeat, lists it to the console, ignores it with online and clears it on the next online heartbeat (issue #16)', async () => {
    const id = await register(t.app, token, { name: 'reasoned' });
    const beat = (payload: Record<string, unknown>) => t.app.inject({ method: 'POST', url: '/api/v1/daemon/heartbeat', headers: daemonHeaders(token, id), payload });
    const viewer = await seedMemberWithKey(t.database, org, 'viewer', ['inventory:read']);
    const session = await login(t.app, viewer.email);
    const listed = async () => {
      const res = await t.app.inject({ method: 'GET', url: '/api/v1/daemons', headers: { cookie: session.cookie } });
      expect(res.statusCode, res.body).toBe(200);
      return (res.json().data as { id: string; status: string; reason: string | null }[]).find((d) => d.id === id);
    };
    expect(await listed()).toMatchObject({ status: 'pending', reason: null });
    const reason = 'flow collector: cannot bind 0.0.0.0:2055 (address in use)';
    expect((await beat({ status: 'degraded', reason: `  ${reason} ` })).json().status).toBe('degraded');
    expect(await listed()).toMatchObject({ status: 'degraded', reason });
    // Any status but online is degraded, and its reason kept; a blank reason is none.
    await beat({ status: 'maintenance', reason: 'disk full' });
    expect(await listed()).toMatchObject({ status: 'degraded', reason: 'disk full' });
    await beat({ status: 'degraded', reason: '   ' });
    expect(await listed()).toMatchObject({ status: 'degraded', reason: null });
    await beat({ status: 'degraded', reason });
    // Online clears it; a reason sent with online is ignored (an online daemon has none).
    expect((await beat({ status: 'online' })).statusCode).toBe(200);
    expect(await listed()).toMatchObject({ status: 'online', reason: null });
    await beat({ status: 'online', reason: 'left over' });
    expect(await listed()).toMatchObject({ status: 'online', reason: null });
    expect((await t.database.db.selectFrom('daemons').select('status_reason').where('id', '=', id).executeTakeFirstOrThrow()).status_reason).toBeNull();

    // Refused, nothing recorded: a reason over 500 characters, and one that is not well-formed text.
    await beat({ status: 'degraded', reason: 'x'.repeat(500) });
    expect((await listed())!.reason).toHaveLength(500);
    for (const bad of ['x'.repeat(501), 'nmap \ud800 missing']) {
      const res = await beat({ status: 'degraded', reason: bad });
      expect(res.statusCode, res.body).toBe(400);
      expect(res.json().code).toBe('validation_failed');
      expect(res.json().issues.map((i: { path: string }) => i.path)).toEqual(['body.reason']);
    }
    expect((await listed())!.reason).toHaveLength(500);
  });

  it('carries the reason in daemon.online when a daemon announced offline comes back degraded', async () => {
    const id = await register(t.app, token, { name: 'back-degraded' });
    await heartbeat(t.app, token, id, 'online');
    await sql`update daemons set last_heartbeat_at = now() - interval '1 hour' where id = ${id}`.execute(t.database.db);
    expect(await markQuietDaemonsOffline(t.database.db, new Date())).toContainEqual({ organisation_id: org.organisationId, id });
    const res = await t.app.inject({ method: 'POST', url: '/api/v1/daemon/heartbeat', headers: daemonHeaders(token, id), payload: { status: 'degraded', reason: 'eBPF probe failed to load' } });
    expect(res.statusCode, res.body).toBe(200);
    const events = await t.database.db.selectFrom('events').select('data').where('kind', '=', 'daemon.online').where('subject_id', '=', id).execute();
    expect(events.map((e) => e.data)).toEqual([expect.objectContaining({ name: 'back-degraded', status: 'degraded', reason: 'eBPF probe failed to load' })]);
  });

  it('refuses an X-Daemon-ID that is not the caller\'s own daemon: another key\'s or another organisation\'s is 404', async () => {
    const id = await register(t.app, token);
    const otherKey = await daemonKey(t, org);
    const res = await t.app.inject({ method: 'POST', url: '/api/v1/daemon/heartbeat', headers: daemonHeaders(otherKey, id), payload: { status: 'online' } });
    expect(res.statusCode).toBe(404);
    expect(res.json().code).toBe('not_found');
    const elsewhere = await seedOrg(t.database);
    const theirKey = await daemonKey(t, elsewhere);
    expect((await t.app.inject({ method: 'POST', url: '/api/v1/daemon/heartbeat', headers: daemonHeaders(theirKey, id), payload: { status: 'online' } })).statusCode).toBe(404);
    expect((await poll(t.app, theirKey, id)).statusCode).toBe(404);
    expect((await t.app.inject({ method: 'POST', url: '/api/v1/daemon/heartbeat', headers: bearer(token), payload: { status: 'online' } })).statusCode).toBe(401);
  });
});

describe('scans and the job poll (spec 3.2, 4.3, 4.4; decisions.md "Scan sessions")', () => {
  let t: TestApp;
  let org: SeededOrg;
  let token: string;
  let scanner: { token: string };
  beforeAll(async () => {
    t = await buildTestApp();
    org = await seedOrg(t.database);
    token = await daemonKey(t, org);
    scanner = await seedMemberWithKey(t.database, org, 'editor', ['scan:run', 'inventory:write', 'inventory:read']);
  });
  afterAll(() => t.close());

  let n = 0;
  async function network(body: Record<string, unknown> = {}) {
    n++;
    const res = await t.app.inject({ method: 'POST', url: '/api/v1/networks', headers: bearer(scanner.token), payload: { name: `net ${n}`, cidr: `10.${n}.0.0/16`, ...body } });
    expect(res.statusCode, res.body).toBe(201);
    return res.json() as { id: string; cidr: string };
  }
  const scan = (payload: Record<string, unknown>, tok = scanner.token) => t.app.inject({ method: 'POST', url: '/api/v1/scans', headers: bearer(tok), payload });
  const sessions = async () => (await sql<{ n: number }>`select count(*)::int as n from scan_sessions where organisation_id = ${org.organisationId}`.execute(t.database.db)).rows[0]!.n;

  it('queues a scan on an online daemon of the network\'s site: 202 with the session, handed over at the next poll', async () => {
    const site = await addSite(t.database.db, org.organisationId, `s-${randomUUID().slice(0, 6)}`);
    const net = await network({ siteId: site.id, excludeCidrs: [] });
    const d = await register(t.app, token, { siteCode: (await t.database.db.selectFrom('sites').select('code').where('id', '=', site.id).executeTakeFirstOrThrow()).code });
    await heartbeat(t.app, token, d);
    const res = await scan({ networkId: net.id });
    expect(res.statusCode, res.body).toBe(202);
    expect(res.json()).toMatchObject({ sessionId: expect.any(String), state: 'queued', networkId: net.id, daemonId: d, progress: { hostsTotal: null, percent: null } });
    const sessionId = res.json().sessionId;

    const job = await poll(t.app, token, d);
    expect(job.statusCode).toBe(200);
    expect(job.json()).toEqual({ kind: 'network', sessionId, target: { cidr: net.cidr, excludeCidrs: [], topPortsTcp: 1000, topPortsUdp: 0, nmap: { enabled: false, scripts: [] } } });
    const read = await t.app.inject({ method: 'GET', url: `/api/v1/scans/${sessionId}`, headers: bearer(scanner.token) });
    expect(read.json()).toMatchObject({ state: 'dispatched', dispatchedAt: expect.any(String) });
    expect((await poll(t.app, token, d)).statusCode).toBe(204);

    const audit = await t.database.db.selectFrom('audit_log').selectAll().where('action', '=', 'scan.created').where('target_id', '=', sessionId).execute();
    expect(audit).toHaveLength(1);
  });

  it('refuses a second scan of a network with an active session: 409 scan_already_active naming it', async () => {
    const net = await network();
    const d = await register(t.app, token, { networkCidrs: [net.cidr] });
    await heartbeat(t.app, token, d);
    const first = await scan({ networkId: net.id });
    expect(first.statusCode).toBe(202);
    const second = await scan({ networkId: net.id });
    expect(second.statusCode).toBe(409);
    expect(second.json()).toMatchObject({ code: 'scan_already_active', sessionId: first.json().sessionId });
  });

  it('refuses with 409 no_daemon_online, queueing nothing, when no daemon may scan the network', async () => {
    const before = await sessions();
    const net = await network();
    const pending = await register(t.app, token, { networkCidrs: [net.cidr] }); // registered, never heard from
    const res = await scan({ networkId: net.id });
    expect(res.statusCode).toBe(409);
    expect(res.json().code).toBe('no_daemon_online');
    // Online, but its CIDRs do not contain the network (a network without a site).
    const elsewhere = await register(t.app, token, { networkCidrs: ['192.168.0.0/16'] });
    await heartbeat(t.app, token, elsewhere);
    expect((await scan({ networkId: net.id })).json().code).toBe('no_daemon_online');
    // Degraded daemons take no scans either.
    await heartbeat(t.app, token, pending, 'degraded');
    expect((await scan({ networkId: net.id })).json().code).toBe('no_daemon_online');
    expect(await sessions()).toBe(before);
  });

  it('refuses nmap without a capable daemon with 409 nmap_unavailable, queueing nothing', async () => {
    const before = await sessions();
    const net = await network();
    const d = await register(t.app, token, { networkCidrs: [net.cidr], capabilities: { nmap: false } });
    await heartbeat(t.app, token, d);
    const res = await scan({ networkId: net.id, nmap: { enabled: true, scripts: ['default'] } });
    expect(res.statusCode).toBe(409);
    expect(res.json().code).toBe('nmap_unavailable');
    expect(await sessions()).toBe(before);
    expect((await scan({ networkId: net.id, nmap: { enabled: false } })).statusCode).toBe(202);
  });

  it('re-checks nmap against the daemon\'s capabilities at hand-over', async () => {
    const net = await network();
    const name = `nmap-${randomUUID().slice(0, 6)}`;
    const d = await register(t.app, token, { name, networkCidrs: [net.cidr], capabilities: { nmap: true } });
    await heartbeat(t.app, token, d);
    const res = await scan({ networkId: net.id, nmap: { enabled: true, scripts: ['safe', 'vuln'] } });
    expect(res.statusCode).toBe(202);
    expect(res.json().nmap).toEqual({ enabled: true, scripts: ['safe', 'vuln'] });
    await register(t.app, token, { name, networkCidrs: [net.cidr], capabilities: { nmap: false } }); // nmap uninstalled
    const job = await poll(t.app, token, d);
    expect(job.json().target.nmap).toEqual({ enabled: false, scripts: [] });
  });

  it('refuses nmap script names, paths and the external category with 400', async () => {
    const net = await network();
    for (const scripts of [['http-title'], ['/tmp/x.nse'], ['external']]) {
      const res = await scan({ networkId: net.id, nmap: { enabled: true, scripts } });
      expect(res.statusCode).toBe(400);
      expect(res.json().code).toBe('validation_failed');
    }
  });

  it('needs scan:run: inventory:write is not enough (403), and another organisation\'s network is 404', async () => {
    const net = await network();
    const writer = await seedMemberWithKey(t.database, org, 'editor', ['inventory:write']);
    const res = await scan({ networkId: net.id }, writer.token);
    expect(res.statusCode).toBe(403);
    expect(res.json()).toMatchObject({ code: 'forbidden', requiredScope: 'scan:run' });
    const other = await seedOrg(t.database);
    const theirs = await seedMemberWithKey(t.database, other, 'editor', ['scan:run', 'inventory:read']);
    expect((await scan({ networkId: net.id }, theirs.token)).statusCode).toBe(404);
    expect((await scan({ networkId: randomUUID() })).json().code).toBe('not_found');
  });

  it('answers another organisation\'s session with 404', async () => {
    const net = await network();
    const d = await register(t.app, token, { networkCidrs: [net.cidr] });
    await heartbeat(t.app, token, d);
    const sessionId = (await scan({ networkId: net.id })).json().sessionId;
    const other = await seedOrg(t.database);
    const theirs = await seedMemberWithKey(t.database, other, 'editor', ['scan:run', 'inventory:read']);
    expect((await t.app.inject({ method: 'GET', url: `/api/v1/scans/${sessionId}`, headers: bearer(theirs.token) })).statusCode).toBe(404);
    expect((await t.app.inject({ method: 'POST', url: `/api/v1/scans/${sessionId}/cancel`, headers: bearer(theirs.token) })).statusCode).toBe(404);
  });

  it('cancels a queued session before hand-over (the poll then gets nothing) and tells a daemon holding one with a cancel job', async () => {
    const net = await network();
    const d = await register(t.app, token, { networkCidrs: [net.cidr] });
    await heartbeat(t.app, token, d);
    const queued = (await scan({ networkId: net.id })).json().sessionId;
    const c1 = await t.app.inject({ method: 'POST', url: `/api/v1/scans/${queued}/cancel`, headers: bearer(scanner.token) });
    expect(c1.statusCode).toBe(200);
    expect(c1.json()).toMatchObject({ state: 'cancelled', finishedAt: expect.any(String) });
    expect((await poll(t.app, token, d)).statusCode).toBe(204);

    const held = (await scan({ networkId: net.id })).json().sessionId;
    expect((await poll(t.app, token, d)).json()).toMatchObject({ kind: 'network', sessionId: held });
    expect((await t.app.inject({ method: 'POST', url: `/api/v1/scans/${held}/cancel`, headers: bearer(scanner.token) })).statusCode).toBe(200);
    expect((await poll(t.app, token, d)).json()).toEqual({ kind: 'cancel', sessionId: held });
    const again = await t.app.inject({ method: 'POST', url: `/api/v1/scans/${held}/cancel`, headers: bearer(scanner.token) });
    expect(again.statusCode).toBe(409);
    expect(again.json().code).toBe('conflict');
  });

  it('caps the long poll at 60 seconds: waitSeconds 61 or negative is 400', async () => {
    const d = await register(t.app, token);
    for (const waitSeconds of [61, -1, 1.5]) {
      const res = await poll(t.app, token, d, waitSeconds);
      expect(res.statusCode).toBe(400);
      expect(res.json().code).toBe('validation_failed');
    }
  });

  it('answers 204 with an empty body after the wait when nothing is queued', async () => {
    const d = await register(t.app, token);
    const t0 = Date.now();
    const res = await poll(t.app, token, d, 1);
    expect(res.statusCode).toBe(204);
    expect(res.body).toBe('');
    expect(Date.now() - t0).toBeGreaterThanOrEqual(900);
  });

  it('wakes a waiting poll the moment a scan is queued for its daemon', async () => {
    const net = await network();
    const d = await register(t.app, token, { networkCidrs: [net.cidr] });
    await heartbeat(t.app, token, d);
    const t0 = Date.now();
    const waiting = poll(t.app, token, d, 20);
    await new Promise((r) => setTimeout(r, 200));
    const queued = await scan({ networkId: net.id });
    const res = await waiting;
    expect(res.statusCode).toBe(200);
    expect(res.json().sessionId).toBe(queued.json().sessionId);
    expect(Date.now() - t0).toBeLessThan(10_000);
  });

  it('releases a waiting poll at once when its client hangs up', async () => {
    const d = await register(t.app, token);
    await t.app.listen({ host: '127.0.0.1', port: 0 });
    const port = (t.app.server.address() as import('node:net').AddressInfo).port;
    const http = await import('node:http');
    const body = JSON.stringify({ waitSeconds: 30 });
    const req = http.request({ host: '127.0.0.1', port, path: '/api/v1/daemon/jobs/poll', method: 'POST', headers: { ...daemonHeaders(token, d), 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } });
    req.on('error', () => {});
    req.end(body);
    const until = async (cond: () => boolean) => {
      for (let i = 0; i < 100 && !cond(); i++) await new Promise((r) => setTimeout(r, 20));
      return cond();
    };
    expect(await until(() => t.app.jobWaiters.size === 1)).toBe(true);
    req.destroy();
    const t0 = Date.now();
    expect(await until(() => t.app.jobWaiters.size === 0)).toBe(true);
    expect(Date.now() - t0).toBeLessThan(1000);
  });

  it('hands a job to exactly one of many concurrent polls', async () => {
    const net = await network();
    const d = await register(t.app, token, { networkCidrs: [net.cidr] });
    await heartbeat(t.app, token, d);
    const polls = Array.from({ length: 6 }, () => poll(t.app, token, d, 2));
    await new Promise((r) => setTimeout(r, 100));
    expect((await scan({ networkId: net.id })).statusCode).toBe(202);
    const results = await Promise.all(polls);
    expect(results.filter((r) => r.statusCode === 200)).toHaveLength(1);
    expect(results.filter((r) => r.statusCode === 204)).toHaveLength(5);
  });
});

describe('long-poll wake-up across two web processes on one database', () => {
  let testDb: TestDatabase;
  let a: TestApp;
  let b: TestApp;
  beforeAll(async () => {
    testDb = await createTestDatabase();
    a = await buildTestApp({ testDb });
    b = await buildTestApp({ testDb });
  });
  afterAll(async () => {
    await a.close();
    await b.close();
    await testDb.drop();
  });

  it('wakes a poll held by one app when another app queues the scan', async () => {
    const org = await seedOrg(a.database);
    const token = await daemonKey(a, org);
    const scanner = await seedMemberWithKey(a.database, org, 'editor', ['scan:run', 'inventory:write']);
    const net = await a.app.inject({ method: 'POST', url: '/api/v1/networks', headers: bearer(scanner.token), payload: { name: 'n', cidr: '10.200.0.0/16' } });
    const d = await register(a.app, token, { networkCidrs: ['10.0.0.0/8'] });
    await heartbeat(a.app, token, d);
    const t0 = Date.now();
    const waiting = poll(a.app, token, d, 20);
    await new Promise((r) => setTimeout(r, 200));
    const queued = await b.app.inject({ method: 'POST', url: '/api/v1/scans', headers: bearer(scanner.token), payload: { networkId: net.json().id } });
    expect(queued.statusCode, queued.body).toBe(202);
    const res = await waiting;
    expect(res.statusCode).toBe(200);
    expect(res.json().sessionId).toBe(queued.json().sessionId);
    expect(Date.now() - t0).toBeLessThan(10_000);
  });
});
