import { randomBytes, randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { emit } from '../src/events/emit.js';
import { type EventPayload, eventsSince } from '../src/events/events.js';
import { refreshHostSummaries } from '../src/inventory/host-summaries.js';
import { perOrganisation } from '../src/jobs/per-organisation.js';
import { jobDefinitions } from '../src/main.js';
import { type JobDefinition, type JobResult, JobRunner, type OrganisationOutcome, type TickResult } from '../src/jobs/runner.js';
import { createLogger } from '../src/logger.js';
import { announceExpiringCertificates } from '../src/notifications/certificates.js';
import { daemonKey, heartbeat, register } from './daemon-client.js';
import { addHost, addService, addVulnerability, nonConformingEvents } from './fixtures.js';
import { type SeededOrg, type TestApp, bearer, buildTestApp, login, seedMemberWithKey, seedOrg } from './helpers.js';
import { type Scanning, scanningOrg } from './scanning.js';

// Events (spec 1.1, 3.3, 6; decisions.md "Events and alerts"): tls.expiring, daemon.offline /
// daemon.online, vulnerability.opened and job.failed as their emitters write them, and the
// internal events list GET /api/v1/admin/events. Jobs tick through the real JobRunner with an
// injected clock; the timestamps the rules depend on are set with SQL.

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

const ENV = {
  SERVICE_RATE_LIMIT_DAEMON_PER_MINUTE: '1000000',
  SERVICE_RATE_LIMIT_KEY_PER_MINUTE: '1000000',
  SERVICE_RATE_LIMIT_ANON_PER_MINUTE: '1000000',
  SERVICE_RATE_LIMIT_LOGIN_PER_MINUTE: '1000',
};

let t: TestApp;
beforeAll(async () => {
  t = await buildTestApp({ env: ENV });
});
afterAll(() => t.close());

const db = () => t.database.db;
const ago = (at: Date, ms: number) => new Date(at.getTime() - ms);
const later = (at: Date, ms: number) => new Date(at.getTime() + ms);

/** The organisation's events of `kind` (all kinds when absent), oldest first. */
async function eventsOf(organisationId: string, kind?: string): Promise<(EventPayload & { seq: number })[]> {
  return eventsSince(db(), organisationId, 0, 500, kind);
}

/** One tick of a core job, its clock fixed at `at`; the tick must run and succeed. */
async function tickCore(job: string, at: Date): Promise<JobResult> {
  const runner = new JobRunner({ database: t.database, logger: createLogger('silent'), jobs: jobDefinitions({ config: t.config, secretKey: t.secretKey }), now: () => at });
  const r = await runner.tick(job);
  expect(r, JSON.stringify(r)).toMatchObject({ job, ran: true, outcome: 'ok', attempts: 1 });
  expect(r.result).toBeDefined();
  return r.result!;
}

// =============================================================================================

describe('tls.expiring (job notify.certificates; decisions.md: thresholds 30, 14, 7, 1 days and 0)', () => {
  const hex64 = () => randomBytes(32).toString('hex');

  /** A certificate served on `hostId`:`port`, straight into the table. */
  async function certificate(
    organisationId: string,
    hostId: string,
    c: { notAfter: Date; port?: number | null; address?: string | null; lastSeenAt?: Date; subject?: string; issuer?: string; sha256?: string },
  ): Promise<string> {
    const r = await sql<{ id: string }>`
      insert into certificates (organisation_id, host_id, address, port, subject, issuer, not_before, not_after, sha256, trust_status, first_seen_at, last_seen_at)
      values (${organisationId}, ${hostId}, ${c.address ?? null}::inet, ${c.port === undefined ? 443 : c.port}, ${c.subject ?? 'CN=svc.example.test'}, ${c.issuer ?? 'CN=Example CA'},
              ${new Date(c.notAfter.getTime() - 365 * DAY)}, ${c.notAfter}, ${c.sha256 ?? hex64()}, 'trusted',
              ${c.lastSeenAt ?? new Date()}, ${c.lastSeenAt ?? new Date()})
      returning id`.execute(db());
    // As the writers do: the state of the host's certificates (replaced by a later one?), stored on them.
    await refreshHostSummaries(db(), organisationId, [], [hostId]);
    return r.rows[0]!.id;
  }

  const tlsOf = async (organisationId: string) => eventsOf(organisationId, 'tls.expiring');
  const thresholdsOf = async (organisationId: string, certificateId: string) =>
    (await tlsOf(organisationId)).filter((e) => e.subject.id === certificateId).map((e) => e.data.thresholdDays);

  it('announces each threshold once as it is crossed: 30 and 14 days info, 7 and 1 warning, expiry critical with expired true', async () => {
    const org = await seedOrg(t.database);
    const hostId = await addHost(db(), org.organisationId, { hostname: 'web-1' });
    const notAfter = new Date('2031-06-30T12:00:00.000Z');
    const sha256 = hex64();
    const id = await certificate(org.organisationId, hostId, { notAfter, port: 8443, address: '10.20.0.5', subject: 'CN=web-1.example.test', issuer: 'CN=Issuing CA 2', sha256 });
    const left = (days: number, ms = 0) => new Date(notAfter.getTime() - days * DAY - ms);
    const run = async (at: Date) => (await announceExpiringCertificates(db(), org.organisationId, at)).announced;

    expect(await run(left(45))).toBe(0);
    // 30 days and one millisecond left: the first threshold is not crossed yet; exactly 30 days: it is.
    expect(await run(left(30, 1))).toBe(0);
    expect(await tlsOf(org.organisationId)).toEqual([]);
    expect(await run(left(30))).toBe(1);
    // The same threshold is not announced again, however often the hourly job looks.
    expect(await run(left(30))).toBe(0);
    expect(await run(left(29))).toBe(0);
    expect(await run(left(15))).toBe(0);
    expect(await run(left(14))).toBe(1);
    expect(await run(left(10))).toBe(0);
    expect(await run(left(7))).toBe(1);
    expect(await run(left(2))).toBe(0);
    expect(await run(left(1))).toBe(1);
    expect(await run(left(0, HOUR))).toBe(0);
    expect(await run(left(0))).toBe(1);
    expect(await run(left(-1))).toBe(0);
    expect(await run(left(-90))).toBe(0);

    const events = await tlsOf(org.organisationId);
    expect(events.map((e) => [e.data.thresholdDays, e.severity, e.data.expired, e.data.daysLeft])).toEqual([
      [30, 'info', false, 30],
      [14, 'info', false, 14],
      [7, 'warning', false, 7],
      [1, 'warning', false, 1],
      [0, 'critical', true, 0],
    ]);
    for (const e of events) {
      expect(e).toMatchObject({
        kind: 'tls.expiring',
        organisationId: org.organisationId,
        subject: { type: 'certificate', id },
        data: { subject: 'CN=web-1.example.test', issuer: 'CN=Issuing CA 2', sha256, hostId, address: '10.20.0.5', port: 8443 },
      });
      expect(Object.keys(e.data).sort()).toEqual(['address', 'daysLeft', 'expired', 'hostId', 'issuer', 'notAfter', 'port', 'sha256', 'subject', 'thresholdDays']);
      expect(Date.parse(String(e.data.notAfter))).toBe(notAfter.getTime());
    }
    const stored = await sql<{ expiry_notified_days: number }>`select expiry_notified_days from certificates where id = ${id}`.execute(db());
    expect(stored.rows[0]!.expiry_notified_days).toBe(0);
  });

  it('announces a certificate first evaluated past several thresholds once, at the smallest crossed; later crossings each once more', async () => {
    const org = await seedOrg(t.database);
    const hostId = await addHost(db(), org.organisationId);
    const notAfter = new Date('2031-03-10T00:00:00.000Z');
    const id = await certificate(org.organisationId, hostId, { notAfter });
    const left = (days: number) => new Date(notAfter.getTime() - days * DAY);

    // First seen with 5 days left: one event, at 7 days (not three: 30, 14 and 7).
    expect((await announceExpiringCertificates(db(), org.organisationId, left(5))).announced).toBe(1);
    let events = await tlsOf(org.organisationId);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ severity: 'warning', subject: { type: 'certificate', id }, data: { thresholdDays: 7, expired: false, daysLeft: 5 } });
    expect((await announceExpiringCertificates(db(), org.organisationId, left(3))).announced).toBe(0);

    // 12 hours left: the 1-day threshold.
    expect((await announceExpiringCertificates(db(), org.organisationId, left(0.5))).announced).toBe(1);
    // Expired: the last one.
    expect((await announceExpiringCertificates(db(), org.organisationId, left(-1))).announced).toBe(1);
    expect((await announceExpiringCertificates(db(), org.organisationId, left(-2))).announced).toBe(0);
    events = await tlsOf(org.organisationId);
    expect(events.map((e) => [e.data.thresholdDays, e.severity, e.data.expired, e.data.daysLeft])).toEqual([
      [7, 'warning', false, 5],
      [1, 'warning', false, 0],
      [0, 'critical', true, -1],
    ]);
  });

  it('maps the days left at first evaluation to the smallest threshold crossed, for many certificates in one pass', async () => {
    const org = await seedOrg(t.database);
    const hostId = await addHost(db(), org.organisationId);
    const at = new Date('2031-01-15T08:00:00.000Z');
    const cases: [daysLeft: number, threshold: number | null, severity: string | null][] = [
      [45, null, null],
      [30.5, null, null],
      [30, 30, 'info'],
      [20, 30, 'info'],
      [14, 14, 'info'],
      [10, 14, 'info'],
      [7, 7, 'warning'],
      [3, 7, 'warning'],
      [1, 1, 'warning'],
      [0.25, 1, 'warning'],
      [0, 0, 'critical'],
      [-3, 0, 'critical'],
      [-400, 0, 'critical'],
    ];
    const ids: string[] = [];
    for (const [i, [daysLeft]] of cases.entries()) {
      ids.push(await certificate(org.organisationId, hostId, { notAfter: new Date(at.getTime() + daysLeft * DAY), port: 9000 + i }));
    }
    expect((await announceExpiringCertificates(db(), org.organisationId, at)).announced).toBe(cases.filter((c) => c[1] !== null).length);
    const events = await tlsOf(org.organisationId);
    for (const [i, [daysLeft, threshold, severity]] of cases.entries()) {
      const mine = events.filter((e) => e.subject.id === ids[i]);
      if (threshold === null) {
        expect(mine, `${daysLeft} days left`).toEqual([]);
        continue;
      }
      expect(mine, `${daysLeft} days left`).toHaveLength(1);
      expect(mine[0], `${daysLeft} days left`).toMatchObject({ severity, data: { thresholdDays: threshold, expired: threshold === 0, daysLeft: Math.floor(daysLeft), port: 9000 + i } });
    }
    // Nothing is new an hour later.
    expect((await announceExpiringCertificates(db(), org.organisationId, later(at, HOUR))).announced).toBe(0);
    expect(await tlsOf(org.organisationId)).toHaveLength(events.length);
  });

  it('does not announce a certificate replaced by a later-seen one on the same host and port; other ports and hosts are announced', async () => {
    const org = await seedOrg(t.database);
    const o = org.organisationId;
    const at = new Date('2031-09-01T00:00:00.000Z');
    const seen = (daysAgo: number) => ago(new Date(), daysAgo * DAY);
    const h1 = await addHost(db(), o, { hostname: 'h1' });
    const h2 = await addHost(db(), o, { hostname: 'h2' });

    // h1:443 was renewed: the old certificate (about to expire) was last seen before the new one.
    const replaced = await certificate(o, h1, { port: 443, notAfter: later(at, 5 * DAY), lastSeenAt: seen(3) });
    const renewed = await certificate(o, h1, { port: 443, notAfter: later(at, 400 * DAY), lastSeenAt: seen(1) });
    // Another port of the same host, and the same port of another host (seen before the renewal).
    const otherPort = await certificate(o, h1, { port: 8443, notAfter: later(at, 5 * DAY), lastSeenAt: seen(3) });
    const otherHost = await certificate(o, h2, { port: 443, notAfter: later(at, 5 * DAY), lastSeenAt: seen(3) });
    // A certificate with no port on h1 is not the one on port 443.
    const noPort = await certificate(o, h1, { port: null, notAfter: later(at, 5 * DAY), lastSeenAt: seen(3) });
    // h2:8443: the newer certificate expires too; only it is announced.
    const older = await certificate(o, h2, { port: 8443, notAfter: later(at, 3 * DAY), lastSeenAt: seen(2) });
    const newer = await certificate(o, h2, { port: 8443, notAfter: later(at, 10 * DAY), lastSeenAt: seen(1) });

    expect((await announceExpiringCertificates(db(), o, at)).announced).toBe(4);
    expect(await thresholdsOf(o, replaced)).toEqual([]);
    expect(await thresholdsOf(o, renewed)).toEqual([]);
    expect(await thresholdsOf(o, otherPort)).toEqual([7]);
    expect(await thresholdsOf(o, otherHost)).toEqual([7]);
    expect(await thresholdsOf(o, noPort)).toEqual([7]);
    expect(await thresholdsOf(o, older)).toEqual([]);
    expect(await thresholdsOf(o, newer)).toEqual([14]);

    // Even when it expires, the replaced certificate stays silent.
    expect((await announceExpiringCertificates(db(), o, later(at, 6 * DAY))).announced).toBe(4);
    expect(await thresholdsOf(o, replaced)).toEqual([]);
    expect(await thresholdsOf(o, older)).toEqual([]);
    expect(await thresholdsOf(o, otherPort)).toEqual([7, 0]);
    expect(await thresholdsOf(o, otherHost)).toEqual([7, 0]);
    expect(await thresholdsOf(o, noPort)).toEqual([7, 0]);
    expect(await thresholdsOf(o, newer)).toEqual([14, 7]);
  });

  it('stops announcing a certificate once it is replaced, after earlier thresholds were announced', async () => {
    const org = await seedOrg(t.database);
    const o = org.organisationId;
    const hostId = await addHost(db(), o);
    const at = new Date('2031-11-01T00:00:00.000Z');
    const first = await certificate(o, hostId, { notAfter: later(at, 25 * DAY), lastSeenAt: ago(new Date(), 2 * DAY) });
    expect((await announceExpiringCertificates(db(), o, at)).announced).toBe(1);
    expect(await thresholdsOf(o, first)).toEqual([30]);
    await certificate(o, hostId, { notAfter: later(at, 500 * DAY), lastSeenAt: new Date() });
    expect((await announceExpiringCertificates(db(), o, later(at, 20 * DAY))).announced).toBe(0);
    expect((await announceExpiringCertificates(db(), o, later(at, 30 * DAY))).announced).toBe(0);
    expect(await thresholdsOf(o, first)).toEqual([30]);
  });

  it('runs hourly as job notify.certificates for every organisation, each event in its own organisation only', async () => {
    const a = await seedOrg(t.database);
    const b = await seedOrg(t.database);
    const at = new Date();
    const hostA = await addHost(db(), a.organisationId);
    const hostB = await addHost(db(), b.organisationId);
    const certA = await certificate(a.organisationId, hostA, { notAfter: later(at, 5 * DAY + HOUR) });
    const certB = await certificate(b.organisationId, hostB, { notAfter: ago(at, DAY) });

    const result = await tickCore('notify.certificates', at);
    expect(result.organisations?.get(a.organisationId)).toEqual({ ok: true, detail: { announced: 1 } });
    expect(result.organisations?.get(b.organisationId)).toEqual({ ok: true, detail: { announced: 1 } });
    const evA = await tlsOf(a.organisationId);
    const evB = await tlsOf(b.organisationId);
    expect(evA).toHaveLength(1);
    expect(evA[0]).toMatchObject({ organisationId: a.organisationId, severity: 'warning', subject: { type: 'certificate', id: certA }, data: { thresholdDays: 7, daysLeft: 5, hostId: hostA } });
    expect(evB).toHaveLength(1);
    expect(evB[0]).toMatchObject({ organisationId: b.organisationId, severity: 'critical', subject: { type: 'certificate', id: certB }, data: { thresholdDays: 0, expired: true, daysLeft: -1, hostId: hostB } });

    // The next hour: nothing new for either.
    const next = await tickCore('notify.certificates', later(at, HOUR));
    expect(next.organisations?.get(a.organisationId)).toEqual({ ok: true, detail: { announced: 0 } });
    expect(await tlsOf(a.organisationId)).toHaveLength(1);
    expect(await tlsOf(b.organisationId)).toHaveLength(1);
  });
});

// =============================================================================================

describe('daemon.offline and daemon.online (spec 3.3, 6; decisions.md: once per quiet episode of more than 300 s)', () => {
  async function setHeartbeat(daemonId: string, at: Date) {
    await sql`update daemons set last_heartbeat_at = ${at} where id = ${daemonId}`.execute(db());
  }
  async function daemonRow(daemonId: string) {
    return (await sql<{ status: string; offline_since: Date | null }>`select status, offline_since from daemons where id = ${daemonId}`.execute(db())).rows[0]!;
  }
  const offlineOf = (s: Scanning) => eventsOf(s.org.organisationId, 'daemon.offline');
  const onlineOf = (s: Scanning) => eventsOf(s.org.organisationId, 'daemon.online');

  it('announces an online daemon quiet for 301 s once (critical), not one quiet for exactly 300 s, and not again on later ticks', async () => {
    const boundary = await scanningOrg(t);
    const quiet = await scanningOrg(t);
    const at = new Date();
    await setHeartbeat(boundary.daemon.id, ago(at, 300 * SECOND));
    await setHeartbeat(quiet.daemon.id, ago(at, 301 * SECOND));

    const result = await tickCore('scan.stall', at);
    expect(await offlineOf(boundary)).toEqual([]);
    expect((await daemonRow(boundary.daemon.id)).offline_since).toBeNull();
    expect(result.organisations?.has(boundary.org.organisationId)).toBe(false);
    expect(result.organisations?.get(quiet.org.organisationId)).toEqual({ ok: true, detail: { stalled: 0, offline: 1 } });
    expect(result.detail).toMatchObject({ daemons: expect.arrayContaining([quiet.daemon.id]) });
    expect((result.detail as { daemons: string[] }).daemons).not.toContain(boundary.daemon.id);

    const events = await offlineOf(quiet);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({
      kind: 'daemon.offline',
      severity: 'critical',
      organisationId: quiet.org.organisationId,
      subject: { type: 'daemon', id: quiet.daemon.id },
      data: { quietSeconds: 301 },
    });
    expect(Date.parse(String(events[0]!.data.lastHeartbeatAt))).toBe(at.getTime() - 301 * SECOND);
    expect(events[0]!.data.name).toEqual(expect.any(String));
    expect(new Date((await daemonRow(quiet.daemon.id)).offline_since!).getTime()).toBe(at.getTime());

    // A minute later the boundary daemon has been quiet 360 s: its turn. The quiet one is not repeated.
    await tickCore('scan.stall', later(at, MINUTE));
    await tickCore('scan.stall', later(at, 10 * MINUTE));
    expect(await offlineOf(quiet)).toHaveLength(1);
    const boundaryEvents = await offlineOf(boundary);
    expect(boundaryEvents).toHaveLength(1);
    expect(boundaryEvents[0]).toMatchObject({ severity: 'critical', subject: { type: 'daemon', id: boundary.daemon.id }, data: { quietSeconds: 360 } });
  });

  it('announces daemon.online (info) once at the next heartbeat, and a later quiet episode gets a new daemon.offline', async () => {
    const s = await scanningOrg(t);
    const at = new Date();
    await setHeartbeat(s.daemon.id, ago(at, 10 * MINUTE));
    await tickCore('scan.stall', at);
    await tickCore('scan.stall', later(at, MINUTE));
    expect(await offlineOf(s)).toHaveLength(1);
    expect(await onlineOf(s)).toEqual([]);

    // Back: its heartbeat ends the episode.
    await heartbeat(t.app, s.daemon.token, s.daemon.id);
    expect((await daemonRow(s.daemon.id)).offline_since).toBeNull();
    const online = await onlineOf(s);
    expect(online).toHaveLength(1);
    expect(online[0]).toMatchObject({ kind: 'daemon.online', severity: 'info', organisationId: s.org.organisationId, subject: { type: 'daemon', id: s.daemon.id }, data: { status: 'online' } });
    expect(Date.parse(String(online[0]!.data.offlineSince))).toBe(at.getTime());
    expect(online[0]!.data.quietSeconds).toBeGreaterThanOrEqual(600);

    // Further heartbeats and ticks: nothing more.
    await heartbeat(t.app, s.daemon.token, s.daemon.id);
    await tickCore('scan.stall', new Date());
    expect(await onlineOf(s)).toHaveLength(1);
    expect(await offlineOf(s)).toHaveLength(1);

    // A new quiet episode.
    const at2 = new Date();
    await setHeartbeat(s.daemon.id, ago(at2, 6 * MINUTE));
    await tickCore('scan.stall', at2);
    await tickCore('scan.stall', later(at2, MINUTE));
    expect(await offlineOf(s)).toHaveLength(2);
    await heartbeat(t.app, s.daemon.token, s.daemon.id);
    expect(await onlineOf(s)).toHaveLength(2);
    expect((await eventsOf(s.org.organisationId)).map((e) => e.kind).filter((k) => k.startsWith('daemon.'))).toEqual(['daemon.offline', 'daemon.online', 'daemon.offline', 'daemon.online']);
  });

  it('ends the episode with a degraded heartbeat too (daemon.online naming status degraded); the degraded daemon is then not announced again', async () => {
    const s = await scanningOrg(t);
    const at = new Date();
    await setHeartbeat(s.daemon.id, ago(at, 7 * MINUTE));
    await tickCore('scan.stall', at);
    expect(await offlineOf(s)).toHaveLength(1);
    expect(await heartbeat(t.app, s.daemon.token, s.daemon.id, 'degraded')).toMatchObject({ status: 'degraded' });
    const online = await onlineOf(s);
    expect(online).toHaveLength(1);
    expect(online[0]).toMatchObject({ severity: 'info', subject: { type: 'daemon', id: s.daemon.id }, data: { status: 'degraded' } });
    expect(await daemonRow(s.daemon.id)).toMatchObject({ status: 'degraded', offline_since: null });
    const at2 = new Date();
    await setHeartbeat(s.daemon.id, ago(at2, HOUR));
    await tickCore('scan.stall', at2);
    expect(await offlineOf(s)).toHaveLength(1);
  });

  it('never announces a degraded or a pending daemon, however long it is quiet, nor daemon.online when it comes back', async () => {
    const s = await scanningOrg(t);
    const o = s.org.organisationId;
    // The scanning daemon reports degraded (any status but online is degraded).
    expect(await heartbeat(t.app, s.daemon.token, s.daemon.id, 'maintenance')).toMatchObject({ status: 'degraded' });
    // A daemon registered but never heartbeated: pending.
    const pendingToken = await daemonKey(t, s.org);
    const pending = await register(t.app, pendingToken, {});
    const at = new Date();
    await setHeartbeat(s.daemon.id, ago(at, 2 * HOUR));
    await sql`update daemons set registered_at = ${ago(at, 2 * HOUR)}, last_seen_at = ${ago(at, 2 * HOUR)} where id = ${pending}`.execute(db());
    expect((await daemonRow(s.daemon.id)).status).toBe('degraded');
    expect((await daemonRow(pending)).status).toBe('pending');

    const result = await tickCore('scan.stall', at);
    await tickCore('scan.stall', later(at, 30 * MINUTE));
    expect(result.organisations?.has(o)).toBe(false);
    expect(await eventsOf(o, 'daemon.offline')).toEqual([]);
    expect((await daemonRow(s.daemon.id)).offline_since).toBeNull();
    expect((await daemonRow(pending)).offline_since).toBeNull();

    // Both come back online: nothing was announced offline, so nothing is announced online.
    await heartbeat(t.app, s.daemon.token, s.daemon.id);
    await heartbeat(t.app, pendingToken, pending);
    expect(await eventsOf(o, 'daemon.online')).toEqual([]);
  });
});

// =============================================================================================

describe('vulnerability.opened (decisions.md: critical or high; migration 0011 triggers)', () => {
  let org: SeededOrg;
  let editor: string;
  let hostId: string;
  let serviceId: string;
  let cve = 0;
  const nextCve = () => `CVE-2031-${String(10_000 + ++cve)}`;
  beforeAll(async () => {
    org = await seedOrg(t.database);
    editor = (await seedMemberWithKey(t.database, org, 'editor', ['inventory:read', 'inventory:write'])).token;
    hostId = await addHost(db(), org.organisationId, { hostname: 'vuln-host' });
    serviceId = await addService(db(), org.organisationId, hostId, { port: 443, name: 'https' });
  });

  const openedFor = async (id: string) => (await eventsOf(org.organisationId, 'vulnerability.opened')).filter((e) => e.subject.id === id);
  const patch = (id: string, body: Record<string, unknown>) =>
    t.app.inject({ method: 'PATCH', url: `/api/v1/vulnerabilities/${id}`, headers: bearer(editor), payload: body });
  async function move(id: string, state: string, note?: string) {
    const res = await patch(id, { state, ...(note !== undefined ? { note } : {}) });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().state).toBe(state);
  }

  it('announces a new open finding of severity critical (critical) or high (warning), and not medium, low or none', async () => {
    const critical = await addVulnerability(db(), org.organisationId, serviceId, hostId, { cveId: nextCve(), severity: 'critical', score: 9.8 });
    const high = await addVulnerability(db(), org.organisationId, serviceId, hostId, { cveId: nextCve(), severity: 'high', score: 7.5 });
    const quiet = [];
    for (const severity of ['medium', 'low', 'none']) quiet.push(await addVulnerability(db(), org.organisationId, serviceId, hostId, { cveId: nextCve(), severity, score: 4 }));

    const c = await openedFor(critical);
    expect(c).toHaveLength(1);
    expect(c[0]).toMatchObject({
      kind: 'vulnerability.opened',
      severity: 'critical',
      organisationId: org.organisationId,
      subject: { type: 'vulnerability', id: critical },
      data: { severity: 'critical', score: 9.8, hostId, serviceId },
    });
    expect(c[0]!.data.cveId).toMatch(/^CVE-2031-\d+$/);
    expect(c[0]!.data).not.toHaveProperty('reopened');
    const h = await openedFor(high);
    expect(h).toHaveLength(1);
    expect(h[0]).toMatchObject({ severity: 'warning', subject: { type: 'vulnerability', id: high }, data: { severity: 'high', score: 7.5 } });
    for (const id of quiet) expect(await openedFor(id)).toEqual([]);
  });

  it('does not announce a critical or high finding created in another state than open', async () => {
    const ids = [];
    for (const state of ['acknowledged', 'resolved', 'false_positive']) {
      ids.push(await addVulnerability(db(), org.organisationId, serviceId, hostId, { cveId: nextCve(), severity: 'critical', score: 9.1, state }));
    }
    for (const id of ids) expect(await openedFor(id)).toEqual([]);
  });

  it('announces every qualifying row of a multi-row insert, once each', async () => {
    const cves = [nextCve(), nextCve(), nextCve()];
    const r = await sql<{ id: string; cve_id: string }>`
      insert into vulnerabilities (organisation_id, service_id, host_id, cve_id, severity, score, state)
      values (${org.organisationId}, ${serviceId}, ${hostId}, ${cves[0]}, 'critical', 9.0, 'open'),
             (${org.organisationId}, ${serviceId}, ${hostId}, ${cves[1]}, 'high', 8.0, 'open'),
             (${org.organisationId}, ${serviceId}, ${hostId}, ${cves[2]}, 'medium', 5.0, 'open')
      returning id, cve_id`.execute(db());
    const idOf = (c: string) => r.rows.find((x) => x.cve_id === c)!.id;
    expect((await openedFor(idOf(cves[0]!))).map((e) => e.severity)).toEqual(['critical']);
    expect((await openedFor(idOf(cves[1]!))).map((e) => e.severity)).toEqual(['warning']);
    expect(await openedFor(idOf(cves[2]!))).toEqual([]);
  });

  it('announces a critical finding again (reopened) each time a PATCH moves it back to open, and not for moves that keep it open or leave open', async () => {
    const id = await addVulnerability(db(), org.organisationId, serviceId, hostId, { cveId: nextCve(), severity: 'critical', score: 9.3 });
    expect(await openedFor(id)).toHaveLength(1);

    await move(id, 'acknowledged');
    expect(await openedFor(id)).toHaveLength(1);
    await move(id, 'open');
    let events = await openedFor(id);
    expect(events).toHaveLength(2);
    expect(events[1]).toMatchObject({ severity: 'critical', subject: { type: 'vulnerability', id }, data: { reopened: true, severity: 'critical', hostId, serviceId } });

    // Open to open: a no-op; a note on an open finding: an update that keeps it open.
    await move(id, 'open');
    await move(id, 'open', 'triaged by the security team');
    expect(await openedFor(id)).toHaveLength(2);

    await move(id, 'false_positive');
    expect(await openedFor(id)).toHaveLength(2);
    await move(id, 'open');
    events = await openedFor(id);
    expect(events).toHaveLength(3);
    expect(events.map((e) => e.data.reopened ?? false)).toEqual([false, true, true]);
  });

  it('announces a high finding reopened by the matcher (resolved → open) as warning; PATCH cannot reopen it (409 invalid_transition, no event)', async () => {
    const id = await addVulnerability(db(), org.organisationId, serviceId, hostId, { cveId: nextCve(), severity: 'high', score: 8.1 });
    await sql`update vulnerabilities set state = 'resolved', resolved_at = now() where id = ${id}`.execute(db());
    expect(await openedFor(id)).toHaveLength(1);

    const refused = await patch(id, { state: 'open' });
    expect(refused.statusCode, refused.body).toBe(409);
    expect(refused.json().code).toBe('invalid_transition');
    expect(await openedFor(id)).toHaveLength(1);

    await sql`update vulnerabilities set state = 'open', resolved_at = null where id = ${id}`.execute(db());
    const events = await openedFor(id);
    expect(events).toHaveLength(2);
    expect(events[1]).toMatchObject({ severity: 'warning', data: { reopened: true, severity: 'high' } });
  });

  it('does not announce updates of open findings that keep them open, nor a medium finding moved back to open', async () => {
    const before = (await eventsOf(org.organisationId, 'vulnerability.opened')).length;
    await sql`update vulnerabilities set last_seen_at = now(), updated_at = now() where organisation_id = ${org.organisationId} and state = 'open'`.execute(db());
    const medium = await addVulnerability(db(), org.organisationId, serviceId, hostId, { cveId: nextCve(), severity: 'medium', score: 5.5 });
    await move(medium, 'acknowledged');
    await move(medium, 'open');
    expect(await eventsOf(org.organisationId, 'vulnerability.opened')).toHaveLength(before);
  });

  it('does not announce one organisation\'s finding to another', async () => {
    const other = await seedOrg(t.database);
    const h = await addHost(db(), other.organisationId);
    const sv = await addService(db(), other.organisationId, h, { port: 22 });
    const id = await addVulnerability(db(), other.organisationId, sv, h, { cveId: nextCve(), severity: 'critical', score: 10 });
    expect((await eventsOf(other.organisationId, 'vulnerability.opened')).map((e) => e.subject.id)).toEqual([id]);
    expect(await openedFor(id)).toEqual([]);
  });
});

// =============================================================================================

describe('job.failed (decisions.md; once per failure episode, error text redacted)', () => {
  const runnerFor = (job: JobDefinition) => new JobRunner({ database: t.database, logger: createLogger('silent'), jobs: [job] });
  const failedOf = async (organisationId: string, job: string) => (await eventsOf(organisationId, 'job.failed')).filter((e) => e.subject.id === job);
  const countAll = async (job: string) =>
    (await sql<{ n: number }>`select count(*)::int as n from events where kind = 'job.failed' and subject_id = ${job}`.execute(db())).rows[0]!.n;
  const organisationCount = async () => (await sql<{ n: number }>`select count(*)::int as n from organisations`.execute(db())).rows[0]!.n;

  const TOKEN = 'abcDEF0123456789secretish';
  const URL_PASSWORD = 'hunter2-url-pass';

  it('announces a job failing as a whole to every organisation once per failure episode, critical, with the error redacted', async () => {
    const a = await seedOrg(t.database);
    const b = await seedOrg(t.database);
    const name = `test.whole-${randomUUID().slice(0, 8)}`;
    let fail = true;
    const job: JobDefinition = {
      name,
      intervalMs: MINUTE,
      run: async () => {
        if (fail) throw new Error(`feed refused Authorization: Bearer ${TOKEN} from https://feeduser:${URL_PASSWORD}@feed.example.test/v1`);
        return { detail: { fine: true } };
      },
    };
    const runner = runnerFor(job);
    const first: TickResult = await runner.tick(name);
    expect(first).toMatchObject({ ran: true, outcome: 'failed', attempts: 1 });

    const organisations = await organisationCount();
    expect(await countAll(name)).toBe(organisations);
    for (const org of [a, b]) {
      const events = await failedOf(org.organisationId, name);
      expect(events).toHaveLength(1);
      expect(events[0]).toMatchObject({
        kind: 'job.failed',
        severity: 'critical',
        organisationId: org.organisationId,
        subject: { type: 'job', id: name },
        data: { job: name, scope: 'job', attempts: 1, error: expect.any(String) },
      });
      const error = String(events[0]!.data.error);
      expect(error).toContain('feed refused');
      expect(error).toContain('feed.example.test');
      expect(error).not.toContain(TOKEN);
      expect(error).not.toContain(URL_PASSWORD);
      expect(JSON.stringify(events[0])).not.toContain(TOKEN);
    }

    // Failing again: the same episode.
    expect(await runner.tick(name)).toMatchObject({ outcome: 'failed' });
    expect(await countAll(name)).toBe(organisations);
    // A success ends it; the next failure is a new episode.
    fail = false;
    expect(await runner.tick(name)).toMatchObject({ outcome: 'ok' });
    expect(await countAll(name)).toBe(organisations);
    fail = true;
    expect(await runner.tick(name)).toMatchObject({ outcome: 'failed' });
    expect(await countAll(name)).toBe(2 * organisations);
    for (const org of [a, b]) expect(await failedOf(org.organisationId, name)).toHaveLength(2);
  });

  it('redacts a bearer token whatever the case of the scheme name (bearer, BEARER), as the service itself accepts them', async () => {
    const org = await seedOrg(t.database);
    const name = `test.case-${randomUUID().slice(0, 8)}`;
    const job: JobDefinition = {
      name,
      intervalMs: MINUTE,
      run: async () => {
        throw new Error(`provider answered 401 to authorization: bearer ${TOKEN}; retried with BEARER ${TOKEN}x`);
      },
    };
    expect(await runnerFor(job).tick(name)).toMatchObject({ ran: true, outcome: 'failed' });
    const events = await failedOf(org.organisationId, name);
    expect(events).toHaveLength(1);
    expect(String(events[0]!.data.error)).toContain('provider answered 401');
    expect(String(events[0]!.data.error)).not.toContain(TOKEN);
  });

  it('when every organisation\'s part fails, announces the job as failed to all without any one organisation\'s error text, records each part, and does not announce the parts again', async () => {
    const a = await seedOrg(t.database);
    const b = await seedOrg(t.database);
    const name = `test.all-${randomUUID().slice(0, 8)}`;
    let failing = new Set([a.organisationId, b.organisationId]);
    const job: JobDefinition = {
      name,
      intervalMs: MINUTE,
      run: () =>
        perOrganisation([a.organisationId, b.organisationId], async (id) => {
          if (failing.has(id)) throw new Error(`customer data of ${id} is broken`);
          return { detail: { done: 1 } };
        }),
    };
    const runner = runnerFor(job);
    expect(await runner.tick(name)).toMatchObject({ ran: true, outcome: 'failed', attempts: 1 });
    for (const org of [a, b]) {
      const events = await failedOf(org.organisationId, name);
      expect(events).toHaveLength(1);
      expect(events[0]!.data).toMatchObject({ scope: 'job', error: expect.stringContaining('failed for every organisation (2)') });
      expect(JSON.stringify(events[0])).not.toContain('customer data');
    }
    const parts = await sql<{ organisation_id: string | null; outcome: string; error: string | null }>`
      select organisation_id, outcome, error from job_status where job = ${name} and organisation_id is not null order by error`.execute(db());
    expect(parts.rows.map((r) => [r.organisation_id, r.outcome, r.error])).toEqual(
      [a, b].map((o) => [o.organisationId, 'failed', `customer data of ${o.organisationId} is broken`]).sort((x, y) => String(x[2]).localeCompare(String(y[2]))),
    );
    const before = await countAll(name);
    // The next tick: only a still fails (the job as a whole is ok). That episode goes on: no new event.
    failing = new Set([a.organisationId]);
    expect(await runner.tick(name)).toMatchObject({ outcome: 'ok' });
    expect(await countAll(name)).toBe(before);
    // Everyone ok, then a fails on its own: a new episode, for a only.
    failing = new Set();
    await runner.tick(name);
    failing = new Set([a.organisationId]);
    await runner.tick(name);
    expect(await countAll(name)).toBe(before + 1);
    expect((await failedOf(a.organisationId, name)).at(-1)!.data).toMatchObject({ scope: 'organisation', error: `customer data of ${a.organisationId} is broken` });
    expect(await failedOf(b.organisationId, name)).toHaveLength(1);
  });

  it('announces one organisation\'s part failing to that organisation only (scope organisation), once per episode, redacted', async () => {
    const good = await seedOrg(t.database);
    const bad = await seedOrg(t.database);
    const name = `test.part-${randomUUID().slice(0, 8)}`;
    let badFails = true;
    const job: JobDefinition = {
      name,
      intervalMs: 2 * MINUTE,
      run: async () => ({
        detail: { organisations: 2 },
        organisations: new Map<string, OrganisationOutcome>([
          [good.organisationId, { ok: true, detail: { done: 1 } }],
          [bad.organisationId, badFails ? { ok: false, error: `provider said 401 for Bearer ${TOKEN} via postgres://svc:${URL_PASSWORD}@db.internal/x` } : { ok: true }],
        ]),
      }),
    };
    const runner = runnerFor(job);
    expect(await runner.tick(name)).toMatchObject({ ran: true, outcome: 'ok', attempts: 1 });

    expect(await countAll(name)).toBe(1);
    expect(await failedOf(good.organisationId, name)).toEqual([]);
    const events = await failedOf(bad.organisationId, name);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({
      kind: 'job.failed',
      severity: 'critical',
      organisationId: bad.organisationId,
      subject: { type: 'job', id: name },
      data: { job: name, scope: 'organisation', attempts: 1 },
    });
    const error = String(events[0]!.data.error);
    expect(error).toContain('provider said 401');
    expect(error).not.toContain(TOKEN);
    expect(error).not.toContain(URL_PASSWORD);

    // The same part failing again: no new event; ok, then failing: a new one.
    await runner.tick(name);
    expect(await countAll(name)).toBe(1);
    badFails = false;
    await runner.tick(name);
    expect(await countAll(name)).toBe(1);
    badFails = true;
    await runner.tick(name);
    expect(await countAll(name)).toBe(2);
    expect(await failedOf(bad.organisationId, name)).toHaveLength(2);
    expect(await failedOf(good.organisationId, name)).toEqual([]);
  });
});

// =============================================================================================

describe('GET /api/v1/admin/events (internal; session, admin or owner)', () => {
  let org: SeededOrg;
  let other: SeededOrg;
  let ownerCookie: string;
  let adminCookie: string;
  let adminToken: string;
  let viewerCookie: string;
  let editorCookie: string;
  let otherOwnerCookie: string;
  const subject = () => randomUUID();

  beforeAll(async () => {
    org = await seedOrg(t.database);
    other = await seedOrg(t.database);
    const adminMember = await seedMemberWithKey(t.database, org, 'admin', ['inventory:read']);
    adminToken = adminMember.token;
    adminCookie = (await login(t.app, adminMember.email)).cookie;
    ownerCookie = (await login(t.app, org.ownerEmail)).cookie;
    viewerCookie = (await login(t.app, (await seedMemberWithKey(t.database, org, 'viewer', ['inventory:read'])).email)).cookie;
    editorCookie = (await login(t.app, (await seedMemberWithKey(t.database, org, 'editor', ['inventory:read'])).email)).cookie;
    otherOwnerCookie = (await login(t.app, other.ownerEmail)).cookie;

    // Interleaved: the organisations' events share one sequence.
    const offline = (n: unknown) => ({ subjectId: subject(), data: { name: 'edge-1', siteId: null, lastHeartbeatAt: null, quietSeconds: 301, n } });
    const completed = (n: unknown) => ({ subjectId: subject(), data: { cidr: '10.0.0.0/24', daemonId: randomUUID(), goneServices: 0, n } });
    await emit(db(), org.organisationId, 'daemon.offline', [offline(1)]);
    await emit(db(), other.organisationId, 'daemon.offline', [offline('other-1')]);
    await emit(db(), org.organisationId, 'scan.completed', [completed(2)]);
    await emit(db(), org.organisationId, 'daemon.online', [{ subjectId: subject(), data: { name: 'edge-1', status: 'online', offlineSince: null, lastHeartbeatAt: null, quietSeconds: 301, n: 3 } }]);
    await emit(db(), other.organisationId, 'scan.completed', [completed('other-2')]);
    await emit(db(), org.organisationId, 'daemon.offline', [offline(4)]);
    // A real emitter too: the finding trigger.
    const hostId = await addHost(db(), org.organisationId);
    const serviceId = await addService(db(), org.organisationId, hostId, { port: 80 });
    await addVulnerability(db(), org.organisationId, serviceId, hostId, { cveId: 'CVE-2031-0005', severity: 'critical', score: 9.9 });
  });

  const list = (query: string, cookie?: string, headers: Record<string, string> = {}) =>
    t.app.inject({ method: 'GET', url: `/api/v1/admin/events${query}`, headers: { ...(cookie ? { cookie } : {}), ...headers } });

  async function ok(query: string, cookie = adminCookie) {
    const res = await list(query, cookie);
    expect(res.statusCode, res.body).toBe(200);
    return res.json() as { data: (EventPayload & { seq: number })[]; nextAfter: number | null };
  }

  it('lists the caller\'s organisation\'s events only, oldest first, as the decisions.md payload plus severity and seq', async () => {
    const body = await ok('');
    expect(body.nextAfter).toBeNull();
    expect(body.data.map((e) => e.data.n ?? e.kind)).toEqual([1, 2, 3, 4, 'vulnerability.opened']);
    expect(body.data.map((e) => e.kind)).toEqual(['daemon.offline', 'scan.completed', 'daemon.online', 'daemon.offline', 'vulnerability.opened']);
    const seqs = body.data.map((e) => e.seq);
    expect([...seqs].sort((x, y) => x - y)).toEqual(seqs);
    expect(new Set(seqs).size).toBe(seqs.length);
    for (const e of body.data) {
      expect(Object.keys(e).sort()).toEqual(['data', 'id', 'kind', 'occurredAt', 'organisationId', 'seq', 'severity', 'subject']);
      expect(e.organisationId).toBe(org.organisationId);
      expect(e.id).toMatch(/^[0-9a-f-]{36}$/);
      expect(e.occurredAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/);
      expect(Object.keys(e.subject).sort()).toEqual(['id', 'type']);
    }
    expect(body.data[0]).toMatchObject({ severity: 'critical', subject: { type: 'daemon' } });
    expect(body.data[4]).toMatchObject({ severity: 'critical', subject: { type: 'vulnerability' }, data: { cveId: 'CVE-2031-0005' } });
    // The same list through the domain function, and for the owner.
    expect(body.data).toEqual(await eventsOf(org.organisationId));
    expect((await ok('', ownerCookie)).data).toEqual(body.data);
    // The other organisation sees only its own two.
    expect((await ok('', otherOwnerCookie)).data.map((e) => e.data.n)).toEqual(['other-1', 'other-2']);
  });

  it('pages with after and limit, nextAfter naming the seq to continue after until the last page', async () => {
    const all = (await ok('')).data;
    const p1 = await ok('?limit=2');
    expect(p1.data.map((e) => e.id)).toEqual(all.slice(0, 2).map((e) => e.id));
    expect(p1.nextAfter).toBe(all[1]!.seq);
    const p2 = await ok(`?after=${p1.nextAfter}&limit=2`);
    expect(p2.data.map((e) => e.id)).toEqual(all.slice(2, 4).map((e) => e.id));
    expect(p2.nextAfter).toBe(all[3]!.seq);
    const p3 = await ok(`?after=${p2.nextAfter}&limit=2`);
    expect(p3.data.map((e) => e.id)).toEqual([all[4]!.id]);
    expect(p3.nextAfter).toBeNull();
    // After the last event: an empty page.
    expect(await ok(`?after=${all[4]!.seq}`)).toEqual({ data: [], nextAfter: null, nextBefore: null });
    // after is exclusive.
    expect((await ok(`?after=${all[0]!.seq}`)).data.map((e) => e.id)).toEqual(all.slice(1).map((e) => e.id));
    // Walking a full page boundary ends with an empty page and no nextAfter.
    const q1 = await ok('?limit=5');
    expect(q1.data).toHaveLength(5);
    expect(q1.nextAfter).toBe(all[4]!.seq);
    expect(await ok(`?after=${q1.nextAfter}&limit=5`)).toEqual({ data: [], nextAfter: null, nextBefore: null });
  });

  it('filters by kind, together with after and limit', async () => {
    const all = (await ok('')).data;
    const offline = await ok('?kind=daemon.offline');
    expect(offline.data.map((e) => e.data.n)).toEqual([1, 4]);
    expect(offline.data.every((e) => e.kind === 'daemon.offline')).toBe(true);
    const paged = await ok('?kind=daemon.offline&limit=1');
    expect(paged.data.map((e) => e.data.n)).toEqual([1]);
    expect(paged.nextAfter).toBe(all[0]!.seq);
    const rest = await ok(`?kind=daemon.offline&limit=1&after=${paged.nextAfter}`);
    expect(rest.data.map((e) => e.data.n)).toEqual([4]);
    expect((await ok('?kind=job.failed')).data).toEqual([]);
  });

  it('refuses a viewer or an editor (403 forbidden), and a caller without a session, an API key included (401 unauthorized)', async () => {
    for (const cookie of [viewerCookie, editorCookie]) {
      const res = await list('', cookie);
      expect(res.statusCode, res.body).toBe(403);
      expect(res.json().code).toBe('forbidden');
    }
    const anonymous = await list('');
    expect(anonymous.statusCode, anonymous.body).toBe(401);
    expect(anonymous.json().code).toBe('unauthorized');
    const byKey = await list('', undefined, bearer(adminToken));
    expect(byKey.statusCode, byKey.body).toBe(401);
    expect(byKey.json().code).toBe('unauthorized');
    const badCookie = await list('', 'surveyor_session=not-a-session');
    expect(badCookie.statusCode, badCookie.body).toBe(401);
    expect(badCookie.json().code).toBe('unauthorized');
  });

  it('refuses limit outside 1..500, an unknown kind and a negative or non-numeric after (400 validation_failed)', async () => {
    for (const query of ['?limit=501', '?limit=0', '?limit=abc', '?kind=nope', '?kind=notification.test', '?after=-1', '?after=x']) {
      const res = await list(query, adminCookie);
      expect(res.statusCode, `${query}: ${res.body}`).toBe(400);
      expect(res.json().code, query).toBe('validation_failed');
    }
    // The bounds themselves are accepted.
    expect((await ok('?limit=500')).data).toHaveLength(5);
    expect((await ok('?limit=1')).data).toHaveLength(1);
  });
});

describe('event payloads (contract events.ts)', () => {
  it('every event the emitters wrote in this file has data matching its kind\'s schema in the contract', async () => {
    const count = await sql<{ kinds: number }>`select count(distinct kind)::int as kinds from events`.execute(t.database.db);
    expect(count.rows[0]!.kinds).toBeGreaterThanOrEqual(4);
    expect(await nonConformingEvents(t.database.db)).toEqual([]);
  });
});
