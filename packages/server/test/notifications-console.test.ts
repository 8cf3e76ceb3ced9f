import { randomBytes } from 'node:crypto';
import type { HTTPMethods } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { announceExpiringCertificates } from '../src/notifications/certificates.js';
import { type SeededOrg, type TestApp, buildTestApp, login, seedMemberWithKey, seedOrg } from './helpers.js';
import { createNetwork, ingest, scanningOrg, startSession } from './scanning.js';

// Issue 23, Settings → Notifications and → Members: a destination's event kinds edited (with its
// audit row), deliveries naming the host or certificate they concern, and a member's last sign-in
// surviving sign-out.

const ENV = { SERVICE_RATE_LIMIT_LOGIN_PER_MINUTE: '1000', SERVICE_RATE_LIMIT_KEY_PER_MINUTE: '100000', SERVICE_RATE_LIMIT_DAEMON_PER_MINUTE: '100000' };
const DESTINATIONS = '/api/v1/admin/notifications/destinations';
const DELIVERIES = '/api/v1/admin/notifications/deliveries';

let t: TestApp;
beforeAll(async () => {
  t = await buildTestApp({ env: ENV });
});
afterAll(() => t.close());

type Session = Awaited<ReturnType<typeof login>>;
function call(s: Session, method: HTTPMethods, url: string, payload?: unknown) {
  return t.app.inject({ method, url, headers: { cookie: s.cookie, 'x-csrf-token': s.csrfToken }, ...(payload === undefined ? {} : { payload: payload as object }) });
}

async function as(org: SeededOrg, role: string) {
  const m = await seedMemberWithKey(t.database, org, role, ['inventory:read']);
  return login(t.app, m.email);
}

const webhook = (name: string, events: string[]) => ({ kind: 'webhook', name, config: { url: 'https://hooks.example.test/in' }, events });

async function create(s: Session, body: object) {
  const res = await call(s, 'POST', DESTINATIONS, body);
  expect(res.statusCode, res.body).toBe(201);
  return res.json() as { id: string; name: string; events: string[] };
}

describe('editing a destination\'s event kinds (PATCH updateDestination)', () => {
  it('changes the kinds it receives and leaves an audit row saying from what to what', async () => {
    const org = await seedOrg(t.database);
    const owner = await login(t.app, org.ownerEmail);
    const d = await create(owner, webhook('Pager', ['tls.expiring']));
    const res = await call(owner, 'PATCH', `${DESTINATIONS}/${d.id}`, { events: ['tls.expiring', 'host.discovered'], minSeverity: 'warning', name: 'Pager duty' });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ id: d.id, name: 'Pager duty', events: ['tls.expiring', 'host.discovered'], minSeverity: 'warning' });
    const listed = (await call(owner, 'GET', DESTINATIONS)).json().data.find((x: { id: string }) => x.id === d.id);
    expect(listed.events).toEqual(['tls.expiring', 'host.discovered']);

    const rows = await t.database.db
      .selectFrom('audit_log')
      .select(['action', 'actor_type', 'actor_user_id', 'changes'])
      .where('organisation_id', '=', org.organisationId)
      .where('target_id', '=', d.id)
      .orderBy('occurred_at')
      .execute();
    expect(rows.map((r) => r.action)).toEqual(['notification_destination.created', 'notification_destination.updated']);
    expect(rows[1]).toMatchObject({ actor_type: 'session', actor_user_id: org.ownerId });
    expect(rows[1]!.changes).toEqual({
      name: { from: 'Pager', to: 'Pager duty' },
      events: { from: ['tls.expiring'], to: ['tls.expiring', 'host.discovered'] },
      minSeverity: { from: 'info', to: 'warning' },
    });
  });

  it('refuses an empty or unknown kind (400 validation_failed), another organisation\'s destination (404 not_found), a taken name (409 duplicate), and an editor (403 forbidden)', async () => {
    const org = await seedOrg(t.database);
    const owner = await login(t.app, org.ownerEmail);
    const d = await create(owner, webhook('A', ['tls.expiring']));
    await create(owner, webhook('B', ['tls.expiring']));
    const empty = await call(owner, 'PATCH', `${DESTINATIONS}/${d.id}`, { events: [] });
    expect([empty.statusCode, empty.json().code]).toEqual([400, 'validation_failed']);
    const unknown = await call(owner, 'PATCH', `${DESTINATIONS}/${d.id}`, { events: ['tls.exploded'] });
    expect([unknown.statusCode, unknown.json().code]).toEqual([400, 'validation_failed']);
    const taken = await call(owner, 'PATCH', `${DESTINATIONS}/${d.id}`, { name: 'b' });
    expect([taken.statusCode, taken.json().code]).toEqual([409, 'duplicate']);

    const other = await seedOrg(t.database);
    const theirs = await call(await login(t.app, other.ownerEmail), 'PATCH', `${DESTINATIONS}/${d.id}`, { events: ['job.failed'] });
    expect([theirs.statusCode, theirs.json().code]).toEqual([404, 'not_found']);
    const editor = await call(await as(org, 'editor'), 'PATCH', `${DESTINATIONS}/${d.id}`, { events: ['job.failed'] });
    expect([editor.statusCode, editor.json().code]).toEqual([403, 'forbidden']);
    // Nothing changed by the refusals.
    expect((await call(owner, 'GET', DESTINATIONS)).json().data.find((x: { id: string }) => x.id === d.id)).toMatchObject({ name: 'A', events: ['tls.expiring'] });
  });

  it('a delete leaves an audit row naming the destination', async () => {
    const org = await seedOrg(t.database);
    const owner = await login(t.app, org.ownerEmail);
    const d = await create(owner, webhook('Gone soon', ['job.failed']));
    expect((await call(owner, 'DELETE', `${DESTINATIONS}/${d.id}`)).statusCode).toBe(204);
    const rows = await t.database.db.selectFrom('audit_log').select(['action', 'changes']).where('organisation_id', '=', org.organisationId).where('target_id', '=', d.id).where('action', '=', 'notification_destination.deleted').execute();
    expect(rows).toEqual([{ action: 'notification_destination.deleted', changes: { name: 'Gone soon' } }]);
  });
});

describe('deliveries say which host or certificate they concern', () => {
  it('names a tls.expiring delivery by its certificate and endpoint, and a host.discovered one by its host', async () => {
    const s = await scanningOrg(t);
    const owner = await login(t.app, s.org.ownerEmail);
    const d = await create(owner, webhook('Everything', ['tls.expiring', 'host.discovered']));
    const sessionId = await startSession(t, s, await createNetwork(t, s, '10.71.0.0/24'));
    await ingest(t, s.daemon, {
      sessionId, final: true,
      hosts: [{ fingerprint: 'fp-mail', hostname: 'mail-1' }],
      ports: [{ fingerprint: 'fp-mail', address: '10.71.0.5', protocol: 'tcp', number: 993, state: 'open' }],
      tls: [{
        fingerprint: 'fp-mail', address: '10.71.0.5', port: 993, subject: 'CN=mail.example', issuer: 'CN=Example CA',
        notBefore: new Date(Date.now() - 30 * 86_400_000).toISOString(), notAfter: new Date(Date.now() + 3 * 86_400_000).toISOString(), sha256: randomBytes(32).toString('hex'),
      }],
    });
    await announceExpiringCertificates(t.database.db, s.org.organisationId, new Date());
    const res = await call(owner, 'GET', `${DELIVERIES}?destinationId=${d.id}`);
    expect(res.statusCode, res.body).toBe(200);
    const data = res.json().data as { eventKind: string; subject: { type: string; id: string; name: string | null; hostId: string | null } }[];
    const host = (await t.database.db.selectFrom('hosts').select('id').where('organisation_id', '=', s.org.organisationId).where('hostname', '=', 'mail-1').executeTakeFirstOrThrow()).id;
    const cert = (await t.database.db.selectFrom('certificates').select('id').where('organisation_id', '=', s.org.organisationId).executeTakeFirstOrThrow()).id;
    expect(data.map((x) => [x.eventKind, x.subject]).sort()).toEqual([
      ['host.discovered', { type: 'host', id: host, name: null, hostId: host }],
      ['tls.expiring', { type: 'certificate', id: cert, name: 'CN=mail.example on 10.71.0.5:993', hostId: host }],
    ]);
  });
});

describe('a member\'s last sign-in', () => {
  it('is the time of the last sign-in, still shown after signing out; null for a member who never signed in', async () => {
    const org = await seedOrg(t.database);
    const m = await seedMemberWithKey(t.database, org, 'editor', ['inventory:read']);
    const never = await seedMemberWithKey(t.database, org, 'viewer', ['inventory:read']);
    const before = Date.now();
    const session = await login(t.app, m.email);
    const after = Date.now();
    expect((await call(session, 'POST', '/api/v1/auth/logout')).statusCode).toBe(204);
    const owner = await login(t.app, org.ownerEmail);
    const res = await call(owner, 'GET', '/api/v1/admin/members');
    expect(res.statusCode, res.body).toBe(200);
    const members = res.json().data as { email: string; lastSignInAt: string | null }[];
    const at = Date.parse(members.find((x) => x.email === m.email)!.lastSignInAt!);
    expect(at).toBeGreaterThanOrEqual(before - 1000);
    expect(at).toBeLessThanOrEqual(after + 1000);
    expect(members.find((x) => x.email === never.email)!.lastSignInAt).toBeNull();
  });
});
