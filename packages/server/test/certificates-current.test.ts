import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { refreshHostSummaries } from '../src/inventory/host-summaries.js';
import { announceExpiringCertificates } from '../src/notifications/certificates.js';
import { addCertificate, addHost } from './fixtures.js';
import { type TestApp, bearer, buildTestApp, login, seedMemberWithKey } from './helpers.js';
import { type Scanning, createNetwork, ingest, scanningOrg, startSession } from './scanning.js';

// Issue 23: one definition of a "current" certificate (view `certificate_states`): the latest
// certificate seen on its endpoint (host, address, port) while the service on that port is there.
// The certificates list (`current`, `state`), the overview's counts, the metric and the
// notify.certificates job all read it (stored on the certificate by its writers since migration
// 0045: host-page-columns.test.ts holds the stored state to the view after every kind of write).

const ENV = { SERVICE_RATE_LIMIT_DAEMON_PER_MINUTE: '1000000', SERVICE_RATE_LIMIT_KEY_PER_MINUTE: '1000000', SERVICE_RATE_LIMIT_LOGIN_PER_MINUTE: '1000' };
const DAY = 86_400_000;
const hex64 = () => randomBytes(32).toString('hex');
const inDays = (d: number) => new Date(Date.now() + d * DAY).toISOString();

let t: TestApp;
beforeAll(async () => {
  t = await buildTestApp({ env: ENV });
});
afterAll(() => t.close());

type Cert = { id: string; subject: string; port: number; state: string; fingerprint: string; hostId: string };

async function certificates(s: Scanning, query = ''): Promise<Cert[]> {
  const res = await t.app.inject({ method: 'GET', url: `/api/v1/certificates?limit=500${query}`, headers: bearer(s.api) });
  expect(res.statusCode, res.body).toBe(200);
  return res.json().data;
}

async function overviewWindows(s: Scanning) {
  const { cookie } = await login(t.app, s.org.ownerEmail);
  const res = await t.app.inject({ method: 'GET', url: '/api/v1/overview', headers: { cookie } });
  expect(res.statusCode, res.body).toBe(200);
  return res.json().certificatesExpiring;
}

const port = (n: number) => ({ fingerprint: 'fp-web', address: '10.61.0.10', protocol: 'tcp', number: n, state: 'open' });
const tls = (n: number, subject: string, sha256: string, notAfterDays: number) => ({
  fingerprint: 'fp-web', address: '10.61.0.10', port: n, subject, issuer: 'CN=Example CA', notBefore: inDays(-30), notAfter: inDays(notAfterDays), sha256,
});

/**
 * Two complete scans of one host. The first sees 443 (old certificate, 5 days left), 8443 (5 days
 * left) and 993 (10 days left); the second sees 443 with a new certificate (200 days) and 993 with
 * the same one, and no 8443 any more (its service is gone).
 */
async function replacedAndGone() {
  const s = await scanningOrg(t);
  const net = await createNetwork(t, s, '10.61.0.0/24');
  const sha = { old: hex64(), gone: hex64(), kept: hex64(), next: hex64() };
  const host = { fingerprint: 'fp-web', hostname: 'web-1' };
  const first = await startSession(t, s, net);
  await ingest(t, s.daemon, {
    sessionId: first, final: true, hosts: [host], ports: [port(443), port(8443), port(993)],
    tls: [tls(443, 'CN=old.example', sha.old, 5), tls(8443, 'CN=admin.example', sha.gone, 5), tls(993, 'CN=mail.example', sha.kept, 10)],
  });
  const before = await overviewWindows(s);
  const second = await startSession(t, s, net);
  await ingest(t, s.daemon, {
    sessionId: second, final: true, hosts: [host], ports: [port(443), port(993)],
    tls: [tls(443, 'CN=new.example', sha.next, 200), tls(993, 'CN=mail.example', sha.kept, 10)],
  });
  const all = await certificates(s);
  const by = (sha256: string) => all.find((c) => c.fingerprint === sha256)!;
  return { s, before, ids: { old: by(sha.old).id, gone: by(sha.gone).id, kept: by(sha.kept).id, next: by(sha.next).id }, all };
}

describe('a current certificate (one definition: view certificate_states)', () => {
  it('marks a certificate replaced on its endpoint `replaced`, one whose service is gone `gone`, and the rest `current`', async () => {
    const { all, ids } = await replacedAndGone();
    const state = Object.fromEntries(all.map((c) => [c.id, c.state]));
    expect(state).toEqual({ [ids.old]: 'replaced', [ids.gone]: 'gone', [ids.kept]: 'current', [ids.next]: 'current' });
  });

  it('GET /api/v1/certificates?current=true lists the current ones, false the others, absent every one', async () => {
    const { s, ids, all } = await replacedAndGone();
    expect(all).toHaveLength(4);
    expect((await certificates(s, '&current=true')).map((c) => c.id).sort()).toEqual([ids.kept, ids.next].sort());
    expect((await certificates(s, '&current=false')).map((c) => c.id).sort()).toEqual([ids.old, ids.gone].sort());
    // Combined with the other filters, and paged with its cursor.
    expect((await certificates(s, '&current=true&expiring=14d')).map((c) => c.id)).toEqual([ids.kept]);
    const page1 = await t.app.inject({ method: 'GET', url: '/api/v1/certificates?limit=1&current=true', headers: bearer(s.api) });
    const page2 = await t.app.inject({ method: 'GET', url: `/api/v1/certificates?limit=1&current=true&cursor=${page1.json().nextCursor}`, headers: bearer(s.api) });
    expect([...page1.json().data, ...page2.json().data].map((c: Cert) => c.id).sort()).toEqual([ids.kept, ids.next].sort());
    expect(page2.json().nextCursor).toBeNull();
  });

  it('refuses a `current` that is not true or false: 400 invalid_filter', async () => {
    const s = await scanningOrg(t);
    for (const v of ['yes', '1', '']) {
      const res = await t.app.inject({ method: 'GET', url: `/api/v1/certificates?current=${v}`, headers: bearer(s.api) });
      expect(res.statusCode, v).toBe(400);
      expect(res.json().code, v).toBe('invalid_filter');
    }
  });

  it('the overview counts only current certificates: the replaced and the gone one no longer need attention', async () => {
    const { s, before } = await replacedAndGone();
    expect(before).toEqual({ expired: 0, '1d': 0, '7d': 2, '14d': 3, '30d': 3 });
    expect(await overviewWindows(s)).toEqual({ expired: 0, '1d': 0, '7d': 0, '14d': 1, '30d': 1 });
  });

  it('the metric service_certificates_expiring counts what the overview counts', async () => {
    const { s } = await replacedAndGone();
    const { token } = await seedMemberWithKey(t.database, s.org, 'viewer', ['metrics:read']);
    const res = await t.app.inject({ method: 'GET', url: '/api/v1/metrics', headers: bearer(token) });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.body).toContain('service_certificates_expiring{window="7d"} 0');
    expect(res.body).toContain('service_certificates_expiring{window="14d"} 1');
  });

  it('notify.certificates announces tls.expiring for the current certificate only, never for the replaced or the gone one', async () => {
    const { s, ids } = await replacedAndGone();
    const db = t.database.db;
    const r = await announceExpiringCertificates(db, s.org.organisationId, new Date());
    expect(r.announced).toBe(1);
    const events = await sql<{ subject_id: string; threshold: number }>`
      select subject_id::text, (data->>'thresholdDays')::int as threshold from events where organisation_id = ${s.org.organisationId} and kind = 'tls.expiring'`.execute(db);
    expect(events.rows).toEqual([{ subject_id: ids.kept, threshold: 14 }]);
  });

  it('a certificate on a port no scan listed (no service row) stays current: absence is observed, never assumed', async () => {
    const s = await scanningOrg(t);
    const db = t.database.db;
    const h = await addHost(db, s.org.organisationId, { hostname: 'bare', addresses: ['10.62.0.1'] });
    const id = await addCertificate(db, s.org.organisationId, h, { trustStatus: 'trusted', port: 636 });
    expect((await certificates(s, '&current=true')).map((c) => c.id)).toEqual([id]);
  });

  it('two addresses of one host serving one port are two endpoints: the certificate of each is current', async () => {
    const s = await scanningOrg(t);
    const db = t.database.db;
    const h = await addHost(db, s.org.organisationId, { hostname: 'dual', addresses: ['10.63.0.1', '10.63.0.2'] });
    const a = await addCertificate(db, s.org.organisationId, h, { trustStatus: 'trusted', port: 443 });
    const b = await addCertificate(db, s.org.organisationId, h, { trustStatus: 'trusted', port: 443 });
    await sql`update certificates set address = '10.63.0.1', last_seen_at = now() - interval '1 hour' where id = ${a}`.execute(db);
    await sql`update certificates set address = '10.63.0.2' where id = ${b}`.execute(db);
    await refreshHostSummaries(db, s.org.organisationId, [], [h]); // as the writers do after writing certificates
    expect((await certificates(s, '&current=true')).map((c) => c.id).sort()).toEqual([a, b].sort());
  });
});
