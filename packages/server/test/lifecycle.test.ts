import type { HTTPMethods, LightMyRequestResponse } from 'fastify';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { markQuietDaemonsOffline } from '../src/daemons/daemons.repo.js';
import { createSnapshot } from '../src/snapshots/snapshots.service.js';
import { createLogger } from '../src/logger.js';
import { JobRunner } from '../src/jobs/runner.js';
import { jobDefinitions } from '../src/main.js';
import { daemonHeaders, heartbeat, poll, register } from './daemon-client.js';
import { addHost, addTopology } from './fixtures.js';
import { type SeededOrg, type TestApp, bearer, buildTestApp, login, seedMemberWithKey, seedOrg } from './helpers.js';
import { type Scanning, createNetwork, ingest, onlineDaemon, queueScan, scanningOrg, siteIdOf, startSession } from './scanning.js';

// Issue 23, the lifecycle the console was missing: a network edited and deleted (with the overlap
// warning of its forms and the scheduler's session), an empty site deleted, a daemon disabled,
// re-enabled and removed, and a daemon's own page.

let t: TestApp;
type Session = { cookie: string; csrfToken: string };

beforeAll(async () => {
  t = await buildTestApp({ env: { SERVICE_RATE_LIMIT_DAEMON_PER_MINUTE: '1000000', SERVICE_RATE_LIMIT_KEY_PER_MINUTE: '1000000', SERVICE_RATE_LIMIT_LOGIN_PER_MINUTE: '10000' } });
});
afterAll(async () => t?.close());

function call(s: Session, method: HTTPMethods, url: string, payload?: unknown): Promise<LightMyRequestResponse> {
  return t.app.inject({ method, url, headers: { cookie: s.cookie, 'x-csrf-token': s.csrfToken }, ...(payload !== undefined ? { payload: payload as Record<string, unknown> } : {}) });
}

function expectProblem(res: LightMyRequestResponse, status: number, code: string) {
  expect(res.statusCode, res.body).toBe(status);
  expect(res.json().code, res.body).toBe(code);
  return res.json() as { detail: string; [k: string]: unknown };
}

const member = async (org: SeededOrg, role: string): Promise<Session> => login(t.app, (await seedMemberWithKey(t.database, org, role, ['inventory:read'])).email);

const audit = (organisationId: string, action: string, targetId: string) =>
  t.database.db.selectFrom('audit_log').select(['actor_type', 'actor_user_id', 'actor_key_id', 'changes']).where('organisation_id', '=', organisationId).where('action', '=', action).where('target_id', '=', targetId).execute();

async function network(s: Scanning, id: string) {
  const res = await t.app.inject({ method: 'GET', url: `/api/v1/lookup?networks=${id}`, headers: { cookie: (await ownerSession(s)).cookie } });
  expect(res.statusCode, res.body).toBe(200);
  return res.json().networks[0] as Record<string, any> | undefined;
}

const owners = new Map<string, Session>();
async function ownerSession(s: Scanning): Promise<Session> {
  const known = owners.get(s.org.organisationId);
  if (known) return known;
  const session = await login(t.app, s.org.ownerEmail);
  owners.set(s.org.organisationId, session);
  return session;
}

describe('PATCH /api/v1/networks/{id} (internal): edit a network', () => {
  let s: Scanning;
  let editor: Session;
  let viewer: Session;
  beforeAll(async () => {
    s = await scanningOrg(t);
    [editor, viewer] = await Promise.all([member(s.org, 'editor'), member(s.org, 'viewer')]);
  });

  it('changes the fields given, leaves the others, and records each change from → to in an audit row', async () => {
    const id = await createNetwork(t, s, '10.60.0.0/24', { scanIntervalMinutes: 60, topPortsTcp: 100 });
    const site = await call(await ownerSession(s), 'POST', '/api/v1/sites', { code: 'edit-site', name: 'Edit site' });
    expect(site.statusCode, site.body).toBe(201);
    const res = await call(editor, 'PATCH', `/api/v1/networks/${id}`, {
      name: 'renamed', siteId: site.json().id, scanIntervalMinutes: null, excludeCidrs: ['10.60.0.128/25'], topPortsUdp: 20, nmap: { enabled: true, scripts: ['safe', 'vuln'] },
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({
      id, name: 'renamed', cidr: '10.60.0.0/24', siteId: site.json().id, scanIntervalMinutes: null, excludeCidrs: ['10.60.0.128/25'], topPortsTcp: 100, topPortsUdp: 20,
      nmap: { enabled: true, scripts: ['safe', 'vuln'] },
    });
    const [row] = await audit(s.org.organisationId, 'network.updated', id);
    expect(row!.actor_type).toBe('session');
    expect(row!.changes).toMatchObject({ name: { from: 'net 10.60.0.0/24', to: 'renamed' }, scanIntervalMinutes: { from: 60, to: null }, topPortsUdp: { from: 0, to: 20 } });
    expect(row!.changes).not.toHaveProperty('topPortsTcp');

    // An empty body changes nothing but still answers the network.
    const same = await call(editor, 'PATCH', `/api/v1/networks/${id}`, {});
    expect(same.json()).toMatchObject({ name: 'renamed', topPortsTcp: 100 });

    // nmap switched off without its categories keeps them (a field left out stays as it is).
    const off = await call(editor, 'PATCH', `/api/v1/networks/${id}`, { nmap: { enabled: false } });
    expect(off.statusCode, off.body).toBe(200);
    expect(off.json().nmap).toEqual({ enabled: false, scripts: ['safe', 'vuln'] });
  });

  it('keeps the CIDR: a cidr field is refused (400 validation_failed), as is any unknown field or a bad value', async () => {
    const id = await createNetwork(t, s, '10.61.0.0/24');
    for (const body of [{ cidr: '10.62.0.0/24' }, { organisationId: s.org.organisationId }, { scanIntervalMinutes: 14 }, { scanIntervalMinutes: 10081 }, { excludeCidrs: ['10.61.0.1/24'] }, { topPortsTcp: 65536 }, { name: '' }, { nmap: { enabled: true, scripts: ['external'] } }]) {
      expectProblem(await call(editor, 'PATCH', `/api/v1/networks/${id}`, body), 400, 'validation_failed');
    }
    expect((await network(s, id))!.cidr).toBe('10.61.0.0/24');
  });

  it('is 404 not_found for another organisation\'s network or site, and 403 for a viewer', async () => {
    const id = await createNetwork(t, s, '10.63.0.0/24');
    const other = await scanningOrg(t);
    const otherEditor = await member(other.org, 'editor');
    expectProblem(await call(otherEditor, 'PATCH', `/api/v1/networks/${id}`, { name: 'stolen' }), 404, 'not_found');
    const otherSite = await call(await ownerSession(other), 'POST', '/api/v1/sites', { code: 'theirs', name: 'Theirs' });
    expectProblem(await call(editor, 'PATCH', `/api/v1/networks/${id}`, { siteId: otherSite.json().id }), 404, 'not_found');
    expectProblem(await call(viewer, 'PATCH', `/api/v1/networks/${id}`, { name: 'x' }), 403, 'forbidden');
    expect((await network(s, id))!.name).toBe('net 10.63.0.0/24');
  });

  it('is open to an API key with inventory:write (and refused to one without)', async () => {
    const id = await createNetwork(t, s, '10.64.0.0/24');
    const res = await t.app.inject({ method: 'PATCH', url: `/api/v1/networks/${id}`, headers: bearer(s.api), payload: { name: 'by key' } });
    expect(res.statusCode, res.body).toBe(200);
    const [row] = await audit(s.org.organisationId, 'network.updated', id);
    expect(row!.actor_type).toBe('key');
    const reader = await seedMemberWithKey(t.database, s.org, 'editor', ['inventory:read']);
    expectProblem(await t.app.inject({ method: 'PATCH', url: `/api/v1/networks/${id}`, headers: bearer(reader.token), payload: { name: 'no' } }), 403, 'forbidden');
  });
});

describe('DELETE /api/v1/networks/{id} (internal)', () => {
  it('deletes the network and its sessions; its hosts stay; an audit row says how many sessions went', async () => {
    const s = await scanningOrg(t);
    const id = await createNetwork(t, s, '10.70.0.0/24');
    const sessionId = await startSession(t, s, id);
    await ingest(t, s.daemon, { sessionId, final: true, hosts: [{ fingerprint: 'fp-del', hostname: 'stays' }], ips: [{ hostFingerprint: 'fp-del', address: '10.70.0.5' }], stats: { hostsTotal: 1, hostsScanned: 1 } });
    const editor = await member(s.org, 'editor');
    const res = await call(editor, 'DELETE', `/api/v1/networks/${id}`);
    expect(res.statusCode, res.body).toBe(204);
    expect(await network(s, id)).toBeUndefined();
    expect(await t.database.db.selectFrom('scan_sessions').select('id').where('id', '=', sessionId).execute()).toEqual([]);
    const hosts = await t.app.inject({ method: 'GET', url: '/api/v1/hosts?search=10.70.0.0/24', headers: bearer(s.api) });
    expect(hosts.json().data.map((h: { hostname: string }) => h.hostname)).toEqual(['stays']);
    const [row] = await audit(s.org.organisationId, 'network.deleted', id);
    expect(row!.changes).toMatchObject({ before: { cidr: '10.70.0.0/24' }, sessionsDeleted: 1 });
    expectProblem(await call(editor, 'DELETE', `/api/v1/networks/${id}`), 404, 'not_found');
  });

  it('is refused while a session is queued or running (409 scan_already_active naming it), allowed once it ended', async () => {
    const s = await scanningOrg(t);
    const id = await createNetwork(t, s, '10.71.0.0/24');
    const { sessionId } = await queueScan(t, s, id);
    const editor = await member(s.org, 'editor');
    const refused = expectProblem(await call(editor, 'DELETE', `/api/v1/networks/${id}`), 409, 'scan_already_active');
    expect(refused.sessionId).toBe(sessionId);
    expect(refused.detail).toContain(sessionId);
    expect(await network(s, id)).toBeDefined();
    expect((await t.app.inject({ method: 'POST', url: `/api/v1/scans/${sessionId}/cancel`, headers: bearer(s.api) })).statusCode).toBe(200);
    expect((await call(editor, 'DELETE', `/api/v1/networks/${id}`)).statusCode).toBe(204);
  });

  it('is 404 not_found for another organisation\'s network and 403 for a viewer', async () => {
    const s = await scanningOrg(t);
    const id = await createNetwork(t, s, '10.72.0.0/24');
    const other = await scanningOrg(t);
    expectProblem(await call(await member(other.org, 'admin'), 'DELETE', `/api/v1/networks/${id}`), 404, 'not_found');
    expectProblem(await call(await member(s.org, 'viewer'), 'DELETE', `/api/v1/networks/${id}`), 403, 'forbidden');
    expect(await network(s, id)).toBeDefined();
  });
});

describe('GET /api/v1/networks/overlaps (internal): the forms\' warning', () => {
  it('names the networks that contain the CIDR or lie within it, the widest first, never the same CIDR or another organisation\'s', async () => {
    const s = await scanningOrg(t);
    const wide = await createNetwork(t, s, '10.80.0.0/16', { name: 'campus' });
    const narrow = await createNetwork(t, s, '10.80.1.0/28', { name: 'printers' });
    const same = await createNetwork(t, s, '10.80.1.0/24', { name: 'floor 1' });
    await createNetwork(t, s, '10.81.0.0/24', { name: 'elsewhere' });
    const other = await scanningOrg(t);
    await createNetwork(t, other, '10.80.1.0/25');
    const session = await ownerSession(s);
    const res = await call(session, 'GET', '/api/v1/networks/overlaps?cidr=10.80.1.0/24');
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().data).toEqual([
      { id: wide, name: 'campus', cidr: '10.80.0.0/16', relation: 'contains' },
      { id: narrow, name: 'printers', cidr: '10.80.1.0/28', relation: 'within' },
    ]);
    const except = await call(session, 'GET', `/api/v1/networks/overlaps?cidr=10.80.0.0/20&exceptId=${wide}`);
    expect(except.json().data.map((n: { id: string }) => n.id)).toEqual([same, narrow]);
    expect((await call(session, 'GET', '/api/v1/networks/overlaps?cidr=2001:db8::/48')).json().data).toEqual([]);
    expectProblem(await call(session, 'GET', '/api/v1/networks/overlaps?cidr=10.80.1.1/24'), 400, 'validation_failed');
  });
});

describe('the networks list: the scheduler\'s session and daemon, and the session in progress', () => {
  it('schedule names the session and daemon the scheduler queued; activeSessionId the session running, null once it ended', async () => {
    const s = await scanningOrg(t);
    const id = await createNetwork(t, s, '10.90.0.0/24', { scanIntervalMinutes: 15 });
    const runner = new JobRunner({ database: t.database, logger: createLogger('silent'), jobs: jobDefinitions({ config: t.config, secretKey: t.secretKey }) });
    const r = await runner.tick('scan.schedule');
    expect(r.outcome).toBe('ok');
    const n = (await network(s, id))!;
    expect(n.schedule).toMatchObject({ outcome: 'queued', daemonId: s.daemon.id });
    expect(n.activeSessionId).toBe(n.schedule.sessionId);
    const page = await t.app.inject({ method: 'GET', url: '/api/v1/networks', headers: bearer(s.api) });
    expect(page.json().data[0]).toMatchObject({ id, activeSessionId: n.schedule.sessionId });
    const job = await poll(t.app, s.daemon.token, s.daemon.id);
    expect(job.json().sessionId).toBe(n.schedule.sessionId);
    await ingest(t, s.daemon, { sessionId: n.schedule.sessionId, final: true, stats: { hostsTotal: 0 } });
    expect((await network(s, id))!.activeSessionId).toBeNull();
  });

  it('the history of a network names each session\'s daemon', async () => {
    const s = await scanningOrg(t);
    const id = await createNetwork(t, s, '10.91.0.0/24');
    await startSession(t, s, id);
    const res = await call(await ownerSession(s), 'GET', `/api/v1/scans?networkId=${id}`);
    const daemon = await t.database.db.selectFrom('daemons').select('name').where('id', '=', s.daemon.id).executeTakeFirstOrThrow();
    expect(res.json().data[0]).toMatchObject({ daemonId: s.daemon.id, daemonName: daemon.name, daemonRemoved: false, networkName: 'net 10.91.0.0/24' });
  });
});

describe('DELETE /api/v1/sites/{id} (internal, admins)', () => {
  it('deletes an empty site with its topology views, leaving an audit row', async () => {
    const org = await seedOrg(t.database);
    const admin = await member(org, 'admin');
    const site = (await call(admin, 'POST', '/api/v1/sites', { code: 'empty', name: 'Empty' })).json();
    const view = await addTopology(t.database.db, org.organisationId, { kind: 'network', siteId: site.id });
    const res = await call(admin, 'DELETE', `/api/v1/sites/${site.id}`);
    expect(res.statusCode, res.body).toBe(204);
    expect((await call(admin, 'GET', '/api/v1/sites')).json().data).toEqual([]);
    expect(await t.database.db.selectFrom('topologies').select('id').where('id', '=', view).execute()).toEqual([]);
    expect(await audit(org.organisationId, 'site.deleted', site.id)).toMatchObject([{ actor_type: 'session', changes: { code: 'empty', name: 'Empty' } }]);
    expectProblem(await call(admin, 'DELETE', `/api/v1/sites/${site.id}`), 404, 'not_found');
  });

  it('refuses a site that holds hosts, networks or daemons (409 conflict saying what it holds)', async () => {
    const s = await scanningOrg(t, { siteCode: 'busy' });
    const admin = await member(s.org, 'admin');
    await createNetwork(t, s, '10.95.0.0/24');
    await addHost(t.database.db, s.org.organisationId, { hostname: 'h1', siteId: s.siteId!, addresses: ['10.95.0.1'] });
    await addHost(t.database.db, s.org.organisationId, { hostname: 'h2', siteId: s.siteId!, addresses: ['10.95.0.2'] });
    const refused = expectProblem(await call(admin, 'DELETE', `/api/v1/sites/${s.siteId}`), 409, 'conflict');
    expect(refused.detail).toBe('Site busy still holds 2 hosts, 1 network and 1 daemon; move or delete them first, then delete the site.');
    expect((await call(admin, 'GET', '/api/v1/sites')).json().data.map((x: { id: string }) => x.id)).toContain(s.siteId);
  });

  it('refuses a site with snapshots (409 conflict): a snapshot keeps its site\'s scope, and snapshots are never deleted', async () => {
    const org = await seedOrg(t.database);
    const admin = await member(org, 'admin');
    const site = (await call(admin, 'POST', '/api/v1/sites', { code: 'kept', name: 'Kept' })).json();
    await createSnapshot(t.database.db, { type: 'cli', organisationId: org.organisationId }, { reason: 'audit', siteId: site.id });
    const refused = expectProblem(await call(admin, 'DELETE', `/api/v1/sites/${site.id}`), 409, 'conflict');
    expect(refused.detail).toBe("Site kept has 1 snapshot taken of it; snapshots keep their site's scope and are never deleted, so the site stays.");
    expect((await t.database.db.selectFrom('snapshots').select('site_id').where('organisation_id', '=', org.organisationId).execute())).toEqual([{ site_id: site.id }]);
  });

  it('is 404 for another organisation\'s site and 403 for an editor', async () => {
    const org = await seedOrg(t.database);
    const admin = await member(org, 'admin');
    const site = (await call(admin, 'POST', '/api/v1/sites', { code: 'mine', name: 'Mine' })).json();
    expectProblem(await call(await member(await seedOrg(t.database), 'admin'), 'DELETE', `/api/v1/sites/${site.id}`), 404, 'not_found');
    expectProblem(await call(await member(org, 'editor'), 'DELETE', `/api/v1/sites/${site.id}`), 403, 'forbidden');
  });
});

describe('a daemon disabled, enabled again and removed (internal, admins)', () => {
  it('a disabled daemon takes no scan: its site\'s scans go to another online daemon, or are refused with 409 no_daemon_online', async () => {
    const s = await scanningOrg(t, { siteCode: 'dis' });
    const admin = await member(s.org, 'admin');
    const id = await createNetwork(t, s, '10.100.0.0/24');
    const res = await call(admin, 'PUT', `/api/v1/daemons/${s.daemon.id}/enabled`, { enabled: false });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ id: s.daemon.id, disabledAt: expect.any(String) });
    expectProblem(await t.app.inject({ method: 'POST', url: '/api/v1/scans', headers: bearer(s.api), payload: { networkId: id } }), 409, 'no_daemon_online');

    const second = await onlineDaemon(t, s.org, { siteCode: 'dis' });
    const { daemonId } = await queueScan(t, s, id);
    expect(daemonId).toBe(second.id);
    expect((await poll(t.app, s.daemon.token, s.daemon.id)).statusCode).toBe(204);
    expect([...(await audit(s.org.organisationId, 'daemon.disabled', s.daemon.id))]).toHaveLength(1);
  });

  it('disabling fails its queued sessions at once, hands it no job it had queued, and enabling gives it scans again', async () => {
    const s = await scanningOrg(t);
    const admin = await member(s.org, 'admin');
    const id = await createNetwork(t, s, '10.101.0.0/24');
    const { sessionId } = await queueScan(t, s, id);
    await call(admin, 'PUT', `/api/v1/daemons/${s.daemon.id}/enabled`, { enabled: false });
    const session = await t.app.inject({ method: 'GET', url: `/api/v1/scans/${sessionId}`, headers: bearer(s.api) });
    expect(session.json().state).toBe('failed');
    expect((await poll(t.app, s.daemon.token, s.daemon.id)).statusCode).toBe(204);
    // Disabling twice is a no-op (no second audit row).
    await call(admin, 'PUT', `/api/v1/daemons/${s.daemon.id}/enabled`, { enabled: false });
    expect(await audit(s.org.organisationId, 'daemon.disabled', s.daemon.id)).toHaveLength(1);

    const enabled = await call(admin, 'PUT', `/api/v1/daemons/${s.daemon.id}/enabled`, { enabled: true });
    expect(enabled.json().disabledAt).toBeNull();
    expect(await audit(s.org.organisationId, 'daemon.enabled', s.daemon.id)).toHaveLength(1);
    const again = await queueScan(t, s, id);
    expect((await poll(t.app, s.daemon.token, s.daemon.id)).json()).toMatchObject({ kind: 'network', sessionId: again.sessionId });
  });

  it('a disabled daemon quiet for long is never silent nor announced with daemon.offline', async () => {
    const s = await scanningOrg(t);
    const admin = await member(s.org, 'admin');
    await call(admin, 'PUT', `/api/v1/daemons/${s.daemon.id}/enabled`, { enabled: false });
    await sql`update daemons set last_heartbeat_at = now() - interval '1 hour' where id = ${s.daemon.id}`.execute(t.database.db);
    const offline = await markQuietDaemonsOffline(t.database.db, new Date());
    expect(offline.map((d) => d.id)).not.toContain(s.daemon.id);
    const list = await call(admin, 'GET', '/api/v1/daemons');
    expect(list.json().data.find((d: { id: string }) => d.id === s.daemon.id)).toMatchObject({ silent: false, status: 'online' });
    const metrics = await seedMemberWithKey(t.database, s.org, 'viewer', ['metrics:read']);
    const text = (await t.app.inject({ method: 'GET', url: '/api/v1/metrics', headers: bearer(metrics.token) })).body;
    expect(text).toContain('service_daemons{status="online"} 0');
  });

  it('removing revokes its key at once (its next request is 401), drops it from the list, fails its running session and keeps its past sessions\' history', async () => {
    const s = await scanningOrg(t);
    const admin = await member(s.org, 'admin');
    const net = await createNetwork(t, s, '10.102.0.0/24');
    const past = await startSession(t, s, net);
    await ingest(t, s.daemon, { sessionId: past, final: true, stats: { hostsTotal: 0 } });
    const running = await startSession(t, s, net);
    const name = (await t.database.db.selectFrom('daemons').select('name').where('id', '=', s.daemon.id).executeTakeFirstOrThrow()).name;

    const res = await call(admin, 'DELETE', `/api/v1/daemons/${s.daemon.id}`);
    expect(res.statusCode, res.body).toBe(204);
    const hb = await t.app.inject({ method: 'POST', url: '/api/v1/daemon/heartbeat', headers: daemonHeaders(s.daemon.token, s.daemon.id), payload: { status: 'online' } });
    expectProblem(hb, 401, 'unauthorized');
    expect((await call(admin, 'GET', '/api/v1/daemons')).json().data).toEqual([]);
    expectProblem(await call(admin, 'GET', `/api/v1/daemons/${s.daemon.id}`), 404, 'not_found');
    expectProblem(await call(admin, 'DELETE', `/api/v1/daemons/${s.daemon.id}`), 404, 'not_found');

    const history = (await call(admin, 'GET', `/api/v1/scans?networkId=${net}`)).json().data;
    expect(history.map((x: { sessionId: string; state: string }) => [x.sessionId, x.state])).toEqual([[running, 'failed'], [past, 'completed']]);
    expect(history[1]).toMatchObject({ daemonName: name, daemonRemoved: true });
    expect(await audit(s.org.organisationId, 'daemon.removed', s.daemon.id)).toMatchObject([{ actor_type: 'session', changes: { name, sessionsFailed: [running] } }]);

    // A daemon of the same name with a new key is a new daemon.
    const token = (await seedDaemonKey(s.org));
    const again = await register(t.app, token, { name });
    expect(again).not.toBe(s.daemon.id);
    await heartbeat(t.app, token, again);
  });

  it('is for admins of the organisation: 404 for another organisation\'s daemon, 403 for an editor', async () => {
    const s = await scanningOrg(t);
    const other = await scanningOrg(t);
    const otherAdmin = await member(other.org, 'admin');
    expectProblem(await call(otherAdmin, 'PUT', `/api/v1/daemons/${s.daemon.id}/enabled`, { enabled: false }), 404, 'not_found');
    expectProblem(await call(otherAdmin, 'DELETE', `/api/v1/daemons/${s.daemon.id}`), 404, 'not_found');
    expectProblem(await call(otherAdmin, 'GET', `/api/v1/daemons/${s.daemon.id}`), 404, 'not_found');
    const editor = await member(s.org, 'editor');
    expectProblem(await call(editor, 'PUT', `/api/v1/daemons/${s.daemon.id}/enabled`, { enabled: false }), 403, 'forbidden');
    expectProblem(await call(editor, 'DELETE', `/api/v1/daemons/${s.daemon.id}`), 403, 'forbidden');
    expectProblem(await call(await member(s.org, 'admin'), 'PUT', `/api/v1/daemons/${s.daemon.id}/enabled`, { enabled: false, extra: 1 }), 400, 'validation_failed');
    expect((await poll(t.app, s.daemon.token, s.daemon.id)).statusCode).toBe(204);
  });
});

describe('GET /api/v1/daemons/{id} (internal): a daemon\'s page', () => {
  it('answers the summary with its key prefix, signatures and recent sessions (network named)', async () => {
    const s = await scanningOrg(t, { networkCidrs: ['10.110.0.0/16'] });
    const net = await createNetwork(t, s, '10.110.0.0/24', { name: 'lab' });
    const sessionId = await startSession(t, s, net);
    const viewer = await member(s.org, 'viewer');
    const res = await call(viewer, 'GET', `/api/v1/daemons/${s.daemon.id}`);
    expect(res.statusCode, res.body).toBe(200);
    const key = await t.database.db.selectFrom('keys').innerJoin('daemons', 'daemons.key_id', 'keys.id').select('keys.token_prefix').where('daemons.id', '=', s.daemon.id).executeTakeFirstOrThrow();
    expect(res.json()).toMatchObject({
      id: s.daemon.id, status: 'online', networkCidrs: ['10.110.0.0/16'], keyPrefix: key.token_prefix, loadedSignatures: { core: 120, custom: 3 }, disabledAt: null,
      recentSessions: [{ sessionId, state: 'dispatched', networkName: 'lab' }],
    });
    expect(s.daemon.token.startsWith(key.token_prefix)).toBe(true);
  });
});

async function seedDaemonKey(org: SeededOrg) {
  const { daemonKey } = await import('./daemon-client.js');
  return daemonKey(t, org);
}

void siteIdOf;
void register;
