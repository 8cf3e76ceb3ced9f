import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import { type IncomingHttpHeaders, createServer } from 'node:http';
import net, { type AddressInfo } from 'node:net';
import type { HTTPMethods, LightMyRequestResponse } from 'fastify';
import { sql } from 'kysely';
import { SMTPServer } from 'smtp-server';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../src/db/database.js';
import { jobDefinitions } from '../src/main.js';
import { type JobContext, JobRunner, type TickResult } from '../src/jobs/runner.js';
import { createLogger } from '../src/logger.js';
import { notifyDeliver } from '../src/notifications/deliver.js';
import { isPrivateAddress, sendOptions } from '../src/notifications/senders.js';
import { type SeededOrg, type TestApp, type TestDatabase, TEST_DATABASE_URL, bearer, buildTestApp, createTestDatabase, login, seedMemberWithKey, seedOrg } from './helpers.js';

// Alerts (spec 4.6, 5, 6, 7; decisions.md "Events and alerts"): notification destinations through
// the admin API as an administrator uses them, events inserted with SQL as the emitters write
// them (the `route_events` trigger queues the deliveries), and notify.deliver ticked through the
// real JobRunner with an injected clock against real local HTTP and SMTP servers.

const SECOND = 1000;
const MINUTE = 60 * SECOND;

const ENV = {
  SERVICE_RATE_LIMIT_DAEMON_PER_MINUTE: '1000000',
  SERVICE_RATE_LIMIT_KEY_PER_MINUTE: '1000000',
  SERVICE_RATE_LIMIT_ANON_PER_MINUTE: '1000000',
  SERVICE_RATE_LIMIT_LOGIN_PER_MINUTE: '1000',
  // One second per attempt, so that the "server never answers" case is quick.
  SERVICE_NOTIFY_TIMEOUT_SECONDS: '1',
};

const DESTINATIONS = '/api/v1/admin/notifications/destinations';
const DELIVERIES = '/api/v1/admin/notifications/deliveries';
const DEFAULT_EVENTS = ['tls.expiring', 'daemon.offline', 'daemon.online', 'scan.failed', 'scan.stalled', 'vulnerability.opened', 'job.failed'];

type Severity = 'info' | 'warning' | 'critical';

interface DestinationView {
  id: string;
  name: string;
  kind: 'webhook' | 'slack' | 'email';
  enabled: boolean;
  events: string[];
  minSeverity: Severity;
  target: string;
  createdAt: string;
  updatedAt: string;
  signingSecret?: string;
}

interface AttemptView {
  attempt: number;
  at: string;
  durationMs: number;
  statusCode: number | null;
  error: string | null;
}

interface DeliveryView {
  id: string;
  eventId: string;
  eventKind: string;
  destinationId: string;
  state: 'pending' | 'delivered' | 'dead';
  attempts: number;
  nextAttemptAt: string | null;
  lastStatus: number | null;
  lastError: string | null;
  createdAt: string;
  deliveredAt: string | null;
  attemptLog: AttemptView[];
}

interface Session {
  cookie: string;
  csrfToken: string;
}

let testDb: TestDatabase;
let t: TestApp;
/** Servers a test started: closed after it. */
let cleanups: (() => Promise<void>)[] = [];
/** Every secret any test handed the service: none may ever reach a log line. */
const secretsSeen = new Set<string>();

beforeAll(async () => {
  testDb = await createTestDatabase();
  t = await buildTestApp({ env: ENV, testDb });
  [main, second] = await Promise.all([seedMainOrg(), seedOtherOrg()]);
});

afterAll(async () => {
  await t?.close();
  await testDb?.drop();
});

afterEach(async () => {
  for (const close of cleanups.reverse()) await close();
  cleanups = [];
  // A test's queued deliveries must not be sent by the next test's ticks (the job serves every organisation).
  await sql`delete from notification_destinations`.execute(t.database.db);
});

// ---------------------------------------------------------------------------------------------
// Helpers

const hex = (n = 8) => randomBytes(n).toString('hex');
const later = (at: Date, ms: number) => new Date(at.getTime() + ms);
const delay = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

async function member(org: SeededOrg, role: 'viewer' | 'editor' | 'admin'): Promise<Session & { token: string }> {
  const m = await seedMemberWithKey(t.database, org, role, ['inventory:read']);
  return { ...(await login(t.app, m.email)), token: m.token };
}

/** The organisation of most tests, with a session per role (scrypt is slow: made once, in parallel). */
async function seedMainOrg() {
  const org = await seedOrg(t.database);
  const [admin, viewer, editor, owner] = await Promise.all([member(org, 'admin'), member(org, 'viewer'), member(org, 'editor'), login(t.app, org.ownerEmail)]);
  return { org, s: admin, viewer, editor, owner };
}

async function seedOtherOrg() {
  const org = await seedOrg(t.database);
  return { org, s: await member(org, 'admin') };
}

let main: Awaited<ReturnType<typeof seedMainOrg>>;
let second: Awaited<ReturnType<typeof seedOtherOrg>>;

/** The main organisation and its admin session (its destinations, hence deliveries, are removed after each test). */
const adminOrg = async () => main;
/** A second organisation and its admin session. */
const otherOrg = async () => second;

async function call(s: Session | null, method: HTTPMethods, url: string, payload?: unknown, opts: { csrf?: boolean } = {}): Promise<LightMyRequestResponse> {
  const headers: Record<string, string> = {};
  if (s) {
    headers.cookie = s.cookie;
    if (opts.csrf !== false) headers['x-csrf-token'] = s.csrfToken;
  }
  return t.app.inject({ method, url, headers, ...(payload !== undefined ? { payload: payload as Record<string, unknown> } : {}) });
}

function expectProblem(res: LightMyRequestResponse, status: number, code: string): void {
  expect(res.statusCode, res.body).toBe(status);
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  expect(res.json().code).toBe(code);
}

async function createDestination(s: Session, body: Record<string, unknown>): Promise<DestinationView> {
  const res = await call(s, 'POST', DESTINATIONS, body);
  expect(res.statusCode, res.body).toBe(201);
  const created = res.json() as DestinationView;
  if (created.signingSecret) secretsSeen.add(created.signingSecret);
  return created;
}

async function patchDestination(s: Session, id: string, body: Record<string, unknown>): Promise<DestinationView> {
  const res = await call(s, 'PATCH', `${DESTINATIONS}/${id}`, body);
  expect(res.statusCode, res.body).toBe(200);
  return res.json() as DestinationView;
}

async function listDeliveries(s: Session, query = ''): Promise<DeliveryView[]> {
  const res = await call(s, 'GET', `${DELIVERIES}${query}`);
  expect(res.statusCode, res.body).toBe(200);
  return res.json().data as DeliveryView[];
}

async function deliveryOf(s: Session, eventId: string, destinationId: string): Promise<DeliveryView> {
  const all = (await listDeliveries(s, `?destinationId=${destinationId}&limit=200`)).filter((d) => d.eventId === eventId);
  expect(all).toHaveLength(1);
  return all[0]!;
}

/** Writes an event as the emitters do (a row in `events`); the routing trigger queues its deliveries. */
async function emit(organisationId: string, kind: string, severity: Severity = 'warning', data: Record<string, unknown> = {}, subjectType = 'daemon'): Promise<string> {
  const r = await sql<{ id: string }>`
    insert into events (organisation_id, kind, severity, subject_type, subject_id, data)
    values (${organisationId}, ${kind}, ${severity}, ${subjectType}, ${randomUUID()}, ${JSON.stringify(data)}::jsonb)
    returning id`.execute(t.database.db);
  return r.rows[0]!.id;
}

async function emitMany(organisationId: string, n: number, kind = 'daemon.offline', severity: Severity = 'critical'): Promise<string[]> {
  const r = await sql<{ id: string }>`
    insert into events (organisation_id, kind, severity, subject_type, subject_id, data)
    select ${organisationId}::uuid, ${kind}::text, ${severity}::text, 'daemon', gen_random_uuid()::text, jsonb_build_object('n', g)
    from generate_series(1, ${n}::int) g
    returning id`.execute(t.database.db);
  return r.rows.map((x) => x.id);
}

async function deliveryRows(organisationId: string): Promise<{ event_id: string; destination_id: string; state: string }[]> {
  const r = await sql<{ event_id: string; destination_id: string; state: string }>`
    select event_id, destination_id, state from notification_deliveries where organisation_id = ${organisationId}`.execute(t.database.db);
  return r.rows;
}

/** A clock a little ahead of the database's: deliveries queued before it are due. */
const soon = () => new Date(Date.now() + 2 * SECOND);

/** Runs the notify.deliver tick at `at` through the real runner; its log lines go to t.logs. */
async function tickAt(at: Date): Promise<TickResult> {
  const logger = createLogger('debug', { write: (line: string) => void t.logs.push(line) });
  const runner = new JobRunner({ database: t.database, logger, jobs: jobDefinitions({ config: t.config, secretKey: t.secretKey }), now: () => at });
  return runner.tick('notify.deliver');
}

/** One tick that must run and succeed; returns its totals. */
async function tick(at: Date): Promise<{ delivered: number; retry: number; dead: number }> {
  const r = await tickAt(at);
  expect(r, JSON.stringify(r)).toMatchObject({ job: 'notify.deliver', ran: true, outcome: 'ok' });
  return r.result!.detail as { delivered: number; retry: number; dead: number };
}

interface Hit {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

type Answer = number | 'hang' | { status: number; delayMs?: number; body?: string };

/** A real HTTP server on 127.0.0.1 recording every request it receives. */
async function httpServer(answer: (hit: Hit) => Answer = () => 200) {
  const hits: Hit[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (body += c));
    req.on('end', () => {
      const hit = { path: req.url ?? '', headers: req.headers, body };
      hits.push(hit);
      const a = answer(hit);
      if (a === 'hang') return;
      const { status, delayMs = 0, body: text = '' } = typeof a === 'number' ? { status: a } : a;
      setTimeout(() => {
        res.writeHead(status, { 'content-type': 'text/plain' });
        res.end(text);
      }, delayMs);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  cleanups.push(close);
  return { url: `http://127.0.0.1:${port}`, port, hits };
}

/** An address nobody listens on (connection refused). */
async function refusedUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}`;
}

interface Mail {
  from: string | null;
  to: string[];
  user: unknown;
  raw: string;
}

/** A real SMTP server (AUTH required, no STARTTLS) on 127.0.0.1 collecting messages; `busy…@` recipients get 451. */
async function smtpServer(username: string, password: string) {
  const messages: Mail[] = [];
  const auths: { username: string | null | undefined; password: string | null | undefined }[] = [];
  const server = new SMTPServer({
    authOptional: false,
    allowInsecureAuth: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    closeTimeout: 500,
    onAuth(auth, _session, callback) {
      auths.push({ username: auth.username, password: auth.password });
      if (auth.username === username && auth.password === password) return callback(null, { user: username });
      return callback(Object.assign(new Error('Authentication credentials invalid'), { responseCode: 535 }));
    },
    onRcptTo(address, _session, callback) {
      if (address.address.startsWith('busy')) return callback(Object.assign(new Error('Mailbox busy, try again later'), { responseCode: 451 }));
      return callback();
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        messages.push({
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : null,
          to: session.envelope.rcptTo.map((r) => r.address),
          user: session.user,
          raw: Buffer.concat(chunks).toString('utf8'),
        });
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const port = (server.server.address() as AddressInfo).port;
  cleanups.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return { port, messages, auths };
}

/** A header of a raw message, unfolded. */
function header(raw: string, name: string): string | undefined {
  const head = raw.split(/\r?\n\r?\n/)[0]!.replace(/\r?\n[ \t]+/g, ' ');
  return new RegExp(`^${name}:\\s*(.*)$`, 'im').exec(head)?.[1]?.trim();
}

/** Checks `X-Signature: t=<unix>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>` on a received request. */
function expectSigned(hit: Hit, secret: string): void {
  const m = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(String(hit.headers['x-signature']));
  expect(m, String(hit.headers['x-signature'])).not.toBeNull();
  const [, ts, mac] = m!;
  expect(mac).toBe(createHmac('sha256', secret).update(`${ts}.${hit.body}`).digest('hex'));
  expect(Math.abs(Number(ts) - Date.now() / 1000)).toBeLessThan(300);
}

/** A webhook destination body with a signing secret of its own (remembered for the log check). */
function webhook(url: string, extra: Record<string, unknown> = {}, name = `hook-${hex(3)}`) {
  const secret = `s3cret-${hex(12)}`;
  secretsSeen.add(secret);
  return { kind: 'webhook', name, config: { url, secret }, ...extra };
}

// ---------------------------------------------------------------------------------------------

describe('who may manage notification destinations (spec 4.6, 5)', () => {
  it('refuses without a session (401 unauthorized), also to an API key', async () => {
    const { s: admin } = await adminOrg(); // its API key, on endpoints that take a session
    const id = randomUUID();
    for (const [method, url, payload] of [
      ['GET', DESTINATIONS, undefined],
      ['POST', DESTINATIONS, webhook('http://127.0.0.1:9/x')],
      ['PATCH', `${DESTINATIONS}/${id}`, { enabled: false }],
      ['DELETE', `${DESTINATIONS}/${id}`, undefined],
      ['POST', `${DESTINATIONS}/${id}/test`, undefined],
      ['GET', DELIVERIES, undefined],
    ] as const) {
      expectProblem(await call(null, method, url, payload), 401, 'unauthorized');
      const withKey = await t.app.inject({ method, url, headers: bearer(admin.token), ...(payload ? { payload } : {}) });
      expectProblem(withKey, 401, 'unauthorized');
    }
  });

  it('refuses viewer and editor sessions (403 forbidden), whatever the endpoint', async () => {
    const { s: admin } = await adminOrg();
    const hook = await httpServer();
    const d = await createDestination(admin, webhook(`${hook.url}/x`));
    for (const s of [main.viewer, main.editor]) {
      for (const [method, url, payload] of [
        ['GET', DESTINATIONS, undefined],
        ['POST', DESTINATIONS, webhook(`${hook.url}/y`)],
        ['PATCH', `${DESTINATIONS}/${d.id}`, { enabled: false }],
        ['DELETE', `${DESTINATIONS}/${d.id}`, undefined],
        ['POST', `${DESTINATIONS}/${d.id}/test`, undefined],
        ['GET', DELIVERIES, undefined],
      ] as const) {
        const res = await call(s, method, url, payload);
        expectProblem(res, 403, 'forbidden');
        expect(res.json().requiredScope).toBe('role:admin');
      }
    }
    // Nothing changed, nothing was sent.
    expect(hook.hits).toHaveLength(0);
    const [still] = (await call(admin, 'GET', DESTINATIONS)).json().data as DestinationView[];
    expect(still).toMatchObject({ id: d.id, enabled: true });
  });

  it('refuses state changes of a session without X-CSRF-Token (403 csrf_failed), or with a wrong one', async () => {
    const { s } = await adminOrg();
    const hook = await httpServer();
    const d = await createDestination(s, webhook(`${hook.url}/x`));
    for (const [method, url, payload] of [
      ['POST', DESTINATIONS, webhook(`${hook.url}/y`)],
      ['PATCH', `${DESTINATIONS}/${d.id}`, { enabled: false }],
      ['DELETE', `${DESTINATIONS}/${d.id}`, undefined],
      ['POST', `${DESTINATIONS}/${d.id}/test`, undefined],
    ] as const) {
      expectProblem(await call(s, method, url, payload, { csrf: false }), 403, 'csrf_failed');
      expectProblem(await call({ ...s, csrfToken: `${s.csrfToken}x` }, method, url, payload), 403, 'csrf_failed');
    }
    expect(hook.hits).toHaveLength(0);
    const list = (await call(s, 'GET', DESTINATIONS)).json().data as DestinationView[];
    expect(list).toEqual([expect.objectContaining({ id: d.id, enabled: true })]);
  });

  it('lets an admin and an owner manage destinations', async () => {
    const { s: admin, owner } = await adminOrg();
    const hook = await httpServer();
    const a = await createDestination(admin, webhook(`${hook.url}/a`, {}, 'By admin'));
    const o = await createDestination(owner, webhook(`${hook.url}/o`, {}, 'By owner'));
    for (const s of [admin, owner]) {
      const res = await call(s, 'GET', DESTINATIONS);
      expect(res.statusCode).toBe(200);
      expect((res.json().data as DestinationView[]).map((d) => d.name)).toEqual(['By admin', 'By owner']);
      expect((await call(s, 'GET', DELIVERIES)).statusCode).toBe(200);
    }
    expect((await patchDestination(owner, a.id, { enabled: false })).enabled).toBe(false);
    expect((await call(admin, 'POST', `${DESTINATIONS}/${o.id}/test`)).statusCode).toBe(200);
    expect((await call(admin, 'DELETE', `${DESTINATIONS}/${o.id}`)).statusCode).toBe(204);
    expect((await call(owner, 'DELETE', `${DESTINATIONS}/${a.id}`)).statusCode).toBe(204);
    expect((await call(admin, 'GET', DESTINATIONS)).json().data).toEqual([]);
  });
});

describe('destination requests', () => {
  it('creates with the documented defaults, and returns a generated signing secret once', async () => {
    const { s } = await adminOrg();
    const created = await createDestination(s, { kind: 'webhook', name: '  Ops hook  ', config: { url: 'https://hooks.example.test/in' } });
    expect(created).toMatchObject({ name: 'Ops hook', kind: 'webhook', enabled: true, minSeverity: 'info', events: DEFAULT_EVENTS, target: 'https://hooks.example.test/…' });
    expect(created.signingSecret).toMatch(/^[A-Za-z0-9_-]{32,}$/);
    const given = await createDestination(s, webhook('https://hooks.example.test/other', { events: ['scan.completed'], minSeverity: 'warning', enabled: false }));
    expect(given).toMatchObject({ events: ['scan.completed'], minSeverity: 'warning', enabled: false });
    expect(given).not.toHaveProperty('signingSecret');
    const list = (await call(s, 'GET', DESTINATIONS)).json().data as DestinationView[];
    expect(list).toHaveLength(2);
    for (const d of list) expect(d).not.toHaveProperty('signingSecret');
  });

  it('refuses invalid bodies with 400 validation_failed', async () => {
    const { s } = await adminOrg();
    const email = { host: '127.0.0.1', port: 2525, secure: false, requireTls: false, from: 'surveyor@example.test', to: ['ops@example.test'] };
    const bad: Record<string, unknown>[] = [
      { kind: 'ftp', name: 'x', config: { url: 'https://example.test/' } },
      { kind: 'webhook', name: 'x', config: { url: 'ftp://example.test/in' } },
      { kind: 'slack', name: 'x', config: { url: 'ftp://hooks.slack.test/services/a/b/c' } },
      { kind: 'webhook', name: 'x', config: { url: 'not a url' } },
      { kind: 'webhook', name: 'x', config: { url: 'https://example.test/', secret: 'short' } },
      { kind: 'email', name: 'x', config: { ...email, to: [] } },
      { kind: 'email', name: 'x', config: { ...email, to: ['not-an-address'] } },
      { kind: 'webhook', name: 'x', config: { url: 'https://example.test/' }, colour: 'red' },
      { kind: 'webhook', name: 'x', config: { url: 'https://example.test/' }, events: ['daemon.exploded'] },
      { kind: 'webhook', name: 'x', config: { url: 'https://example.test/' }, events: [] },
      { kind: 'webhook', name: 'x', config: { url: 'https://example.test/' }, minSeverity: 'fatal' },
      { kind: 'webhook', name: '   ', config: { url: 'https://example.test/' } },
      { kind: 'webhook', name: 'x' },
    ];
    for (const body of bad) {
      const res = await call(s, 'POST', DESTINATIONS, body);
      expectProblem(res, 400, 'validation_failed');
      expect(res.json().issues?.length, JSON.stringify(body)).toBeGreaterThan(0);
    }
    expect((await call(s, 'GET', DESTINATIONS)).json().data).toEqual([]);
  });

  it('refuses a PATCH whose config does not fit the destination\'s kind (400 validation_failed) and keeps the destination as it was', async () => {
    const { s } = await adminOrg();
    const hook = await createDestination(s, webhook('https://hooks.example.test/in'));
    const slack = await createDestination(s, { kind: 'slack', name: 'Slack', config: { url: 'https://hooks.slack.test/services/T1/B1/abc' } });
    const mail = await createDestination(s, {
      kind: 'email', name: 'Mail', config: { host: 'smtp.example.test', port: 587, secure: false, requireTls: true, from: 'surveyor@example.test', to: ['ops@example.test'] },
    });
    for (const [d, config] of [
      [hook, { url: 'ftp://hooks.example.test/in' }],
      [hook, { host: 'smtp.example.test', from: 'a@example.test', to: ['b@example.test'] }],
      [hook, {}],
      [slack, { url: 'ftp://hooks.slack.test/x' }],
      [mail, { url: 'https://hooks.example.test/in' }],
      [mail, { host: 'smtp.example.test', from: 'surveyor@example.test', to: [] }],
    ] as const) {
      const res = await call(s, 'PATCH', `${DESTINATIONS}/${d.id}`, { config });
      expectProblem(res, 400, 'validation_failed');
      expect(res.json().issues.length).toBeGreaterThan(0);
    }
    expectProblem(await call(s, 'PATCH', `${DESTINATIONS}/${hook.id}`, { colour: 'red' }), 400, 'validation_failed');
    expectProblem(await call(s, 'PATCH', `${DESTINATIONS}/${hook.id}`, { events: ['daemon.exploded'] }), 400, 'validation_failed');
    expectProblem(await call(s, 'PATCH', `${DESTINATIONS}/${hook.id}`, { kind: 'slack' }), 400, 'validation_failed');
    expectProblem(await call(s, 'PATCH', `${DESTINATIONS}/not-a-uuid`, { enabled: false }), 400, 'validation_failed');
    const list = (await call(s, 'GET', DESTINATIONS)).json().data as DestinationView[];
    expect(list.find((d) => d.id === hook.id)).toEqual(hook);
    expect(list.find((d) => d.id === mail.id)).toEqual(mail);
    expect(list.find((d) => d.id === slack.id)).toEqual(slack);
  });

  it('refuses a second destination with the same name, case-insensitively (409 duplicate), within one organisation only', async () => {
    const { s } = await adminOrg();
    const first = await createDestination(s, webhook('https://hooks.example.test/a', {}, 'Pager'));
    expectProblem(await call(s, 'POST', DESTINATIONS, webhook('https://hooks.example.test/b', {}, 'pAGER')), 409, 'duplicate');
    expectProblem(await call(s, 'POST', DESTINATIONS, { kind: 'slack', name: ' PAGER ', config: { url: 'https://hooks.slack.test/services/x' } }), 409, 'duplicate');
    const another = await createDestination(s, webhook('https://hooks.example.test/b', {}, 'Other'));
    expectProblem(await call(s, 'PATCH', `${DESTINATIONS}/${another.id}`, { name: 'pager' }), 409, 'duplicate');
    // Renaming a destination to another case of its own name is no conflict.
    expect((await patchDestination(s, first.id, { name: 'PAGER' })).name).toBe('PAGER');
    // Another organisation may use the name.
    const other = await otherOrg();
    await createDestination(other.s, webhook('https://hooks.example.test/c', {}, 'Pager'));
    expect(((await call(s, 'GET', DESTINATIONS)).json().data as DestinationView[]).map((d) => d.name)).toEqual(['Other', 'PAGER']);
  });

  it('answers 404 not_found for another organisation\'s destination (and an unknown id) on PATCH, DELETE and test, touching nothing', async () => {
    const mine = await adminOrg();
    const theirs = await otherOrg();
    const hook = await httpServer();
    const d = await createDestination(theirs.s, webhook(`${hook.url}/theirs`, {}, 'Theirs'));
    for (const id of [d.id, randomUUID()]) {
      expectProblem(await call(mine.s, 'PATCH', `${DESTINATIONS}/${id}`, { name: 'Mine now', enabled: false }), 404, 'not_found');
      expectProblem(await call(mine.s, 'PATCH', `${DESTINATIONS}/${id}`, { config: { url: `${hook.url}/stolen` } }), 404, 'not_found');
      expectProblem(await call(mine.s, 'DELETE', `${DESTINATIONS}/${id}`), 404, 'not_found');
      expectProblem(await call(mine.s, 'POST', `${DESTINATIONS}/${id}/test`), 404, 'not_found');
    }
    expect(hook.hits).toHaveLength(0);
    expect((await call(mine.s, 'GET', DESTINATIONS)).json().data).toEqual([]);
    expect((await call(theirs.s, 'GET', DESTINATIONS)).json().data).toEqual([expect.objectContaining({ id: d.id, name: 'Theirs', enabled: true, target: `${hook.url}/…` })]);
  });
});

describe('secrets of destinations', () => {
  it('never stores, shows or logs a webhook secret, a Slack URL path, a URL query or an SMTP password; PATCH without them keeps them', async () => {
    const { org, s } = await adminOrg();
    const hook = await httpServer();
    const moved = await httpServer();
    const slackServer = await httpServer();
    const SMTP_PASSWORD = `smtp-pw-${hex()}`;
    const smtp = await smtpServer('alerts', SMTP_PASSWORD);
    const WEBHOOK_SECRET = `whsec-${hex(12)}`;
    const QUERY_TOKEN = `qtok${hex()}`;
    const SLACK_TOKEN = `slk${hex(10)}`;
    const SLACK_PATH = `/services/T${hex(4)}/B${hex(4)}/${SLACK_TOKEN}`;

    const web = await createDestination(s, { kind: 'webhook', name: 'Hook', config: { url: `${hook.url}/in/alerts?token=${QUERY_TOKEN}`, secret: WEBHOOK_SECRET }, events: ['daemon.offline'] });
    const generated = await createDestination(s, { kind: 'webhook', name: 'Generated', config: { url: `${hook.url}/generated` }, events: ['daemon.offline'] });
    const slack = await createDestination(s, { kind: 'slack', name: 'Slack', config: { url: `${slackServer.url}${SLACK_PATH}` }, events: ['daemon.offline'] });
    const mailConfig = { host: '127.0.0.1', port: smtp.port, secure: false, requireTls: false, username: 'alerts', from: 'surveyor@example.test', to: ['ops@example.test'] };
    const mail = await createDestination(s, { kind: 'email', name: 'Mail', config: { ...mailConfig, password: SMTP_PASSWORD }, events: ['daemon.offline'] });
    const SIGNING_SECRET = generated.signingSecret!;
    expect(SIGNING_SECRET).toBeTruthy();
    const secrets = [WEBHOOK_SECRET, QUERY_TOKEN, SLACK_TOKEN, SLACK_PATH, SMTP_PASSWORD, SIGNING_SECRET];
    for (const x of secrets) secretsSeen.add(x);
    const leaks = (text: string, except: string[] = []) => secrets.filter((x) => !except.includes(x) && text.includes(x));

    // Redacted targets, no secret in any create response but the generated one, once.
    expect(web.target).toBe(`${hook.url}/…`); // the path may be the token: scheme and host only
    expect(slack.target).toBe(`${slackServer.url}/…`);
    expect(mail.target).toBe(`smtp://127.0.0.1:${smtp.port} → ops@example.test`);
    for (const d of [web, slack, mail]) expect(leaks(JSON.stringify(d))).toEqual([]);
    expect(leaks(JSON.stringify(generated), [SIGNING_SECRET])).toEqual([]);

    // The stored rows: sealed.
    const stored = await sql`select * from notification_destinations where organisation_id = ${org.organisationId}`.execute(t.database.db);
    expect(stored.rows).toHaveLength(4);
    expect(leaks(JSON.stringify(stored.rows))).toEqual([]);

    // GET shows none of them.
    const listed = await call(s, 'GET', DESTINATIONS);
    expect(leaks(listed.body)).toEqual([]);
    expect((listed.json().data as DestinationView[]).map((d) => d.target).sort()).toEqual([web.target, `${hook.url}/…`, slack.target, mail.target].sort());

    // PATCH of the config without the secret and the password: the stored ones are kept.
    const MOVED_TOKEN = `mtok${hex()}`;
    secrets.push(MOVED_TOKEN);
    secretsSeen.add(MOVED_TOKEN);
    const patchedWeb = await patchDestination(s, web.id, { config: { url: `${moved.url}/moved?token=${MOVED_TOKEN}` } });
    expect(patchedWeb.target).toBe(`${moved.url}/…`);
    const patchedMail = await patchDestination(s, mail.id, { config: { ...mailConfig, to: ['oncall@example.test', 'ops@example.test'] } });
    expect(patchedMail.target).toBe(`smtp://127.0.0.1:${smtp.port} → oncall@example.test, ops@example.test`);
    for (const d of [patchedWeb, patchedMail]) expect(leaks(JSON.stringify(d))).toEqual([]);
    const storedAfter = await sql`select * from notification_destinations where organisation_id = ${org.organisationId}`.execute(t.database.db);
    expect(leaks(JSON.stringify(storedAfter.rows))).toEqual([]);

    const eventId = await emit(org.organisationId, 'daemon.offline', 'critical', { name: 'edge-1', quietSeconds: 420 });
    expect(await tick(soon())).toEqual({ delivered: 4, retry: 0, dead: 0 });
    // The webhook went to the new URL, still signed with the secret given on create.
    expect(hook.hits.map((h) => h.path)).toEqual(['/generated']);
    expectSigned(hook.hits[0]!, SIGNING_SECRET);
    expect(moved.hits.map((h) => h.path)).toEqual([`/moved?token=${MOVED_TOKEN}`]);
    expectSigned(moved.hits[0]!, WEBHOOK_SECRET);
    expect(slackServer.hits.map((h) => h.path)).toEqual([SLACK_PATH]);
    // The mail server still got the password given on create.
    expect(smtp.auths).toEqual([{ username: 'alerts', password: SMTP_PASSWORD }]);
    expect(smtp.messages).toHaveLength(1);
    expect(smtp.messages[0]!.to.sort()).toEqual(['oncall@example.test', 'ops@example.test']);

    // Failures: the Slack server answers 500, the webhook refuses connections, the SMTP password is now wrong.
    const slackFailing = await httpServer(() => ({ status: 500, body: 'upstream unavailable' }));
    await patchDestination(s, slack.id, { config: { url: `${slackFailing.url}${SLACK_PATH}` } });
    await patchDestination(s, web.id, { config: { url: `${await refusedUrl()}/gone?token=${MOVED_TOKEN}` } });
    const WRONG_PASSWORD = `wrong-pw-${hex()}`;
    secrets.push(WRONG_PASSWORD);
    secretsSeen.add(WRONG_PASSWORD);
    await patchDestination(s, mail.id, { config: { ...mailConfig, password: WRONG_PASSWORD } });
    await emit(org.organisationId, 'daemon.offline', 'critical', { name: 'edge-2', quietSeconds: 999 });
    expect(await tick(soon())).toEqual({ delivered: 1, retry: 2, dead: 1 });
    for (const id of [web.id, slack.id, mail.id]) {
      const test = await call(s, 'POST', `${DESTINATIONS}/${id}/test`);
      expect(test.statusCode).toBe(200);
      expect(test.json().ok).toBe(false);
      expect(leaks(test.body)).toEqual([]);
    }
    expect(smtp.auths.at(-1)).toEqual({ username: 'alerts', password: WRONG_PASSWORD });

    // The deliveries list carries no secret either.
    const deliveries = await call(s, 'GET', `${DELIVERIES}?limit=200`);
    expect(JSON.parse(deliveries.body).data).toHaveLength(8);
    expect(leaks(deliveries.body)).toEqual([]);
    expect((await deliveryOf(s, eventId, web.id)).state).toBe('delivered');

    // The failures were logged, and no line holds a secret.
    const logText = t.logs.join('\n');
    expect(logText).toContain('alert delivery failed');
    expect(leaks(logText)).toEqual([]);
  });

  it('replaces the webhook secret when a PATCH gives one', async () => {
    const { org, s } = await adminOrg();
    const hook = await httpServer();
    const d = await createDestination(s, webhook(`${hook.url}/in`, { events: ['scan.failed'] }));
    const NEW_SECRET = `rotated-${hex(12)}`;
    secretsSeen.add(NEW_SECRET);
    await patchDestination(s, d.id, { config: { url: `${hook.url}/in`, secret: NEW_SECRET } });
    await emit(org.organisationId, 'scan.failed', 'warning');
    await tick(soon());
    expect(hook.hits).toHaveLength(1);
    expectSigned(hook.hits[0]!, NEW_SECRET);
  });

  it('delivers to a webhook URL with user info (as Basic credentials), and never shows or logs its password or query', async () => {
    const { org, s } = await adminOrg();
    const hook = await httpServer();
    const PASSWORD = `hookpw${hex()}`;
    const QUERY_TOKEN = `qtok${hex()}`;
    secretsSeen.add(PASSWORD);
    secretsSeen.add(QUERY_TOKEN);
    const url = `http://hookuser:${PASSWORD}@127.0.0.1:${hook.port}/in?token=${QUERY_TOKEN}`;
    const d = await createDestination(s, webhook(url, { events: ['scan.failed'] }));
    expect(d.target).toBe(`${hook.url}/…`);
    const eventId = await emit(org.organisationId, 'scan.failed', 'warning');
    await tick(soon());
    const delivery = await deliveryOf(s, eventId, d.id);
    const shown = JSON.stringify(delivery);
    expect(shown).not.toContain(PASSWORD);
    expect(shown).not.toContain(QUERY_TOKEN);
    expect(t.logs.join('\n')).not.toContain(QUERY_TOKEN);
    expect(t.logs.join('\n')).not.toContain(PASSWORD);
    // Accepted on create, so it must be deliverable: the credentials as HTTP Basic authentication.
    expect(delivery, JSON.stringify(delivery)).toMatchObject({ state: 'delivered', lastStatus: 200 });
    expect(hook.hits).toHaveLength(1);
    expect(hook.hits[0]!.headers.authorization).toBe(`Basic ${Buffer.from(`hookuser:${PASSWORD}`).toString('base64')}`);
  });
});

describe('routing of events to destinations (route_events)', () => {
  it('queues a delivery only for enabled destinations taking the kind at or above their minimum severity', async () => {
    const { org, s } = await adminOrg();
    const url = 'https://hooks.example.test/in';
    const scans = await createDestination(s, webhook(url, { events: ['scan.failed', 'host.discovered'] }));
    const critical = await createDestination(s, webhook(url, { minSeverity: 'critical' }));
    const warning = await createDestination(s, webhook(url, { minSeverity: 'warning', events: ['scan.failed', 'daemon.offline'] }));
    const disabled = await createDestination(s, webhook(url, { enabled: false, events: ['scan.failed', 'daemon.offline', 'host.discovered'] }));
    const other = await otherOrg();
    await createDestination(other.s, webhook(url, { events: ['scan.failed', 'daemon.offline', 'host.discovered'] }));

    const scanFailed = await emit(org.organisationId, 'scan.failed', 'warning');
    const offline = await emit(org.organisationId, 'daemon.offline', 'critical');
    const discovered = await emit(org.organisationId, 'host.discovered', 'info');
    const vulnWarning = await emit(org.organisationId, 'vulnerability.opened', 'warning');
    const vulnCritical = await emit(org.organisationId, 'vulnerability.opened', 'critical');
    const unknownKind = await emit(org.organisationId, 'something.else', 'critical');

    const routed = (await deliveryRows(org.organisationId)).map((r) => `${r.event_id}→${r.destination_id}`).sort();
    expect(routed).toEqual(
      [
        `${scanFailed}→${scans.id}`,
        `${scanFailed}→${warning.id}`, // warning ≥ warning
        `${offline}→${critical.id}`,
        `${offline}→${warning.id}`,
        `${discovered}→${scans.id}`, // info ≥ info
        `${vulnCritical}→${critical.id}`,
      ].sort(),
    );
    for (const id of [vulnWarning, unknownKind]) expect(routed.some((r) => r.startsWith(id))).toBe(false);
    expect(routed.some((r) => r.endsWith(disabled.id))).toBe(false);
    // The other organisation's destination got nothing of this organisation's events.
    expect(await deliveryRows(other.org.organisationId)).toEqual([]);
    // The same through the API.
    const listed = await listDeliveries(s, '?limit=200');
    expect(listed.map((d) => `${d.eventId}→${d.destinationId}`).sort()).toEqual(routed);
    expect(listed.every((d) => d.state === 'pending' && d.attempts === 0 && d.attemptLog.length === 0)).toBe(true);
    expect(await listDeliveries(other.s)).toEqual([]);
  });

  it('routes per the events and minSeverity set by PATCH, from then on', async () => {
    const { org, s } = await adminOrg();
    const d = await createDestination(s, webhook('https://hooks.example.test/in', { events: ['scan.failed'] }));
    const before = await emit(org.organisationId, 'daemon.online', 'info');
    await patchDestination(s, d.id, { events: ['daemon.online'], minSeverity: 'warning' });
    const info = await emit(org.organisationId, 'daemon.online', 'info');
    const warn = await emit(org.organisationId, 'daemon.online', 'warning');
    const failed = await emit(org.organisationId, 'scan.failed', 'critical');
    const routed = (await deliveryRows(org.organisationId)).map((r) => r.event_id);
    expect(routed).toEqual([warn]);
    for (const id of [before, info, failed]) expect(routed).not.toContain(id);
  });

  it('does not send the pending delivery of a destination disabled after it was queued', async () => {
    const { org, s } = await adminOrg();
    const hook = await httpServer();
    const d = await createDestination(s, webhook(`${hook.url}/in`, { events: ['scan.stalled'] }));
    const eventId = await emit(org.organisationId, 'scan.stalled', 'warning');
    expect(await deliveryRows(org.organisationId)).toHaveLength(1);
    await patchDestination(s, d.id, { enabled: false });
    expect(await tick(soon())).toEqual({ delivered: 0, retry: 0, dead: 0 });
    expect(await tick(later(soon(), 60 * MINUTE))).toEqual({ delivered: 0, retry: 0, dead: 0 });
    expect(hook.hits).toHaveLength(0);
    expect(await deliveryOf(s, eventId, d.id)).toMatchObject({ state: 'pending', attempts: 0, attemptLog: [] });
    // And a disabled destination gets no new deliveries.
    await emit(org.organisationId, 'scan.stalled', 'warning');
    expect(await deliveryRows(org.organisationId)).toHaveLength(1);
  });

  it('removes the deliveries (and their attempts) of a deleted destination', async () => {
    const { org, s } = await adminOrg();
    const failing = await httpServer(() => 500);
    const gone = await createDestination(s, webhook(`${failing.url}/in`, { events: ['job.failed'] }));
    const kept = await createDestination(s, webhook(`${failing.url}/kept`, { events: ['job.failed'] }));
    await emit(org.organisationId, 'job.failed', 'warning', { error: 'boom' }, 'job');
    await emit(org.organisationId, 'job.failed', 'warning', { error: 'bang' }, 'job');
    expect(await tick(soon())).toMatchObject({ retry: 4 });
    expect(await listDeliveries(s, `?destinationId=${gone.id}`)).toHaveLength(2);
    expect((await call(s, 'DELETE', `${DESTINATIONS}/${gone.id}`)).statusCode).toBe(204);
    expect(await listDeliveries(s, `?destinationId=${gone.id}`)).toEqual([]);
    const rows = await deliveryRows(org.organisationId);
    expect(rows.map((r) => r.destination_id)).toEqual([kept.id, kept.id]);
    const attempts = await sql<{ n: number }>`
      select count(*)::int as n from notification_attempts a
      where a.organisation_id = ${org.organisationId}
        and not exists (select 1 from notification_deliveries d where d.organisation_id = a.organisation_id and d.id = a.delivery_id)`.execute(t.database.db);
    expect(attempts.rows[0]!.n).toBe(0);
    expectProblem(await call(s, 'DELETE', `${DESTINATIONS}/${gone.id}`), 404, 'not_found');
  });

  it('finishes its tick normally when a destination is deleted while one of its alerts is being sent', async () => {
    const { org, s } = await adminOrg();
    const fast = await httpServer();
    const held = await httpServer(() => ({ status: 200, delayMs: 400 }));
    const d = await createDestination(s, webhook(`${held.url}/in`, { events: ['scan.failed'] }));
    const other = await createDestination(s, webhook(`${fast.url}/in`, { events: ['scan.failed'] }));
    await emit(org.organisationId, 'scan.failed', 'warning');
    const running = tickAt(soon());
    // Delete the destination while its request is in flight (the server answers after 400 ms).
    const until = Date.now() + 5 * SECOND;
    while (held.hits.length === 0 && Date.now() < until) await delay(5);
    expect(held.hits).toHaveLength(1);
    expect((await call(s, 'DELETE', `${DESTINATIONS}/${d.id}`)).statusCode).toBe(204);
    const r = await running;
    expect(r, JSON.stringify(r)).toMatchObject({ ran: true, outcome: 'ok' });
    expect(fast.hits).toHaveLength(1);
    expect(await listDeliveries(s)).toEqual([expect.objectContaining({ destinationId: other.id, state: 'delivered' })]);
  });
});

describe('webhook delivery', () => {
  it('POSTs the event payload, signed with the destination\'s secret, once per event and destination', async () => {
    const { org, s } = await adminOrg();
    const hook = await httpServer();
    const given = webhook(`${hook.url}/given`, { events: ['daemon.offline', 'scan.failed'] });
    const a = await createDestination(s, given);
    const b = await createDestination(s, { kind: 'webhook', name: 'Generated', config: { url: `${hook.url}/generated` }, events: ['daemon.offline', 'scan.failed'] });
    const secrets: Record<string, string> = { '/given': given.config.secret, '/generated': b.signingSecret! };
    const events = [
      await emit(org.organisationId, 'daemon.offline', 'critical', { name: 'edge-1', quietSeconds: 420 }),
      await emit(org.organisationId, 'scan.failed', 'warning', { reason: 'nmap exited 1', nested: { list: [1, 2] } }, 'scan_session'),
      await emit(org.organisationId, 'daemon.offline', 'critical', { name: 'edge-2' }),
    ];
    const at = soon();
    expect(await tick(at)).toEqual({ delivered: 6, retry: 0, dead: 0 });
    // More ticks send nothing again.
    expect(await tick(later(at, MINUTE))).toEqual({ delivered: 0, retry: 0, dead: 0 });
    expect(await tick(later(at, 24 * 60 * MINUTE))).toEqual({ delivered: 0, retry: 0, dead: 0 });
    expect(hook.hits).toHaveLength(6);

    const stored = await sql<{ id: string; kind: string; severity: string; occurred_at: string; subject_type: string; subject_id: string; data: Record<string, unknown> }>`
      select id, kind, severity, to_char(occurred_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as occurred_at, subject_type, subject_id, data
      from events where organisation_id = ${org.organisationId}`.execute(t.database.db);
    const byId = new Map(stored.rows.map((e) => [e.id, e]));
    const seen = new Set<string>();
    for (const hit of hook.hits) {
      expect(hit.headers['content-type']).toMatch(/^application\/json/);
      expectSigned(hit, secrets[hit.path]!);
      const body = JSON.parse(hit.body) as Record<string, unknown>;
      const e = byId.get(body.id as string)!;
      expect(e).toBeDefined();
      expect(body).toStrictEqual({
        id: e.id,
        kind: e.kind,
        severity: e.severity,
        occurredAt: e.occurred_at,
        organisationId: org.organisationId,
        subject: { type: e.subject_type, id: e.subject_id },
        data: e.data,
      });
      seen.add(`${body.id as string}${hit.path}`);
    }
    expect(seen.size).toBe(6);
    expect([...seen].sort()).toEqual(events.flatMap((id) => [`${id}/given`, `${id}/generated`]).sort());

    for (const eventId of events) {
      for (const d of [a, b]) {
        const delivery = await deliveryOf(s, eventId, d.id);
        expect(delivery).toMatchObject({ state: 'delivered', attempts: 1, lastStatus: 200, lastError: null, nextAttemptAt: null, deliveredAt: at.toISOString() });
        expect(delivery.attemptLog).toEqual([{ attempt: 1, at: at.toISOString(), durationMs: expect.any(Number), statusCode: 200, error: null }]);
      }
    }
    const counts = await sql<{ n: number }>`
      select count(*)::int as n from notification_deliveries where organisation_id = ${org.organisationId} group by event_id, destination_id having count(*) > 1`.execute(t.database.db);
    expect(counts.rows).toEqual([]);
  });

  it('POSTs {text} naming the kind and what happened to a Slack-compatible URL', async () => {
    const { org, s } = await adminOrg();
    const slack = await httpServer();
    await createDestination(s, { kind: 'slack', name: 'Slack', config: { url: `${slack.url}/services/T1/B2/xyz` }, events: ['daemon.offline'] });
    await emit(org.organisationId, 'daemon.offline', 'critical', { name: 'edge-7', quietSeconds: 420 });
    expect(await tick(soon())).toEqual({ delivered: 1, retry: 0, dead: 0 });
    expect(slack.hits).toHaveLength(1);
    const hit = slack.hits[0]!;
    expect(hit.path).toBe('/services/T1/B2/xyz');
    expect(hit.headers['content-type']).toMatch(/^application\/json/);
    expect(hit.headers['x-signature']).toBeUndefined();
    const body = JSON.parse(hit.body) as Record<string, unknown>;
    expect(Object.keys(body)).toEqual(['text']);
    expect(body.text).toContain('daemon.offline');
    expect(body.text).toContain('Daemon edge-7 is offline: no heartbeat for 420 s');
  });
});

describe('email delivery over SMTP', () => {
  it('sends a mail with the configured From and To, the summary in the subject and the event in the body', async () => {
    const { org, s } = await adminOrg();
    const PASSWORD = `smtp-${hex()}`;
    secretsSeen.add(PASSWORD);
    const smtp = await smtpServer('alerts@example.test', PASSWORD);
    const d = await createDestination(s, {
      kind: 'email', name: 'Mail',
      config: { host: '127.0.0.1', port: smtp.port, secure: false, requireTls: false, username: 'alerts@example.test', password: PASSWORD, from: 'surveyor@example.test', to: ['ops@example.test', 'oncall@example.test'] },
      events: ['daemon.offline'],
    });
    const eventId = await emit(org.organisationId, 'daemon.offline', 'critical', { name: 'edge-9', quietSeconds: 420 });
    expect(await tick(soon())).toEqual({ delivered: 1, retry: 0, dead: 0 });
    expect(smtp.auths).toEqual([{ username: 'alerts@example.test', password: PASSWORD }]);
    expect(smtp.messages).toHaveLength(1);
    const m = smtp.messages[0]!;
    expect(m.user).toBe('alerts@example.test');
    expect(m.from).toBe('surveyor@example.test');
    expect(m.to).toEqual(['ops@example.test', 'oncall@example.test']);
    expect(header(m.raw, 'From')).toBe('surveyor@example.test');
    expect(header(m.raw, 'To')).toBe('ops@example.test, oncall@example.test');
    const subject = header(m.raw, 'Subject')!;
    expect(subject).toContain('Daemon edge-9 is offline: no heartbeat for 420 s');
    expect(subject).toContain('critical');
    const body = m.raw.split(/\r?\n\r?\n/).slice(1).join('\n\n');
    expect(body).toContain('Daemon edge-9 is offline: no heartbeat for 420 s');
    expect(body).toContain('daemon.offline');
    expect(body).toContain('"name": "edge-9"');
    expect(await deliveryOf(s, eventId, d.id)).toMatchObject({ state: 'delivered', attempts: 1, lastStatus: 250 });
  });

  it('makes a delivery dead after one attempt when the server refuses the login (SMTP 535), and retries an SMTP 4xx', async () => {
    const { org, s } = await adminOrg();
    const smtp = await smtpServer('alerts', 'right-password-123');
    const base = { host: '127.0.0.1', port: smtp.port, secure: false, requireTls: false, username: 'alerts', from: 'surveyor@example.test' };
    const wrong = await createDestination(s, { kind: 'email', name: 'Wrong', config: { ...base, password: 'wrong-password-456', to: ['ops@example.test'] }, events: ['job.failed'] });
    const busy = await createDestination(s, { kind: 'email', name: 'Busy', config: { ...base, password: 'right-password-123', to: ['busy@example.test'] }, events: ['job.failed'] });
    secretsSeen.add('wrong-password-456');
    secretsSeen.add('right-password-123');
    const eventId = await emit(org.organisationId, 'job.failed', 'warning', { error: 'boom' }, 'job');
    const at = soon();
    expect(await tick(at)).toEqual({ delivered: 0, retry: 1, dead: 1 });
    const dead = await deliveryOf(s, eventId, wrong.id);
    expect(dead).toMatchObject({ state: 'dead', attempts: 1, lastStatus: 535, nextAttemptAt: null });
    expect(dead.attemptLog).toEqual([expect.objectContaining({ attempt: 1, statusCode: 535, error: expect.stringContaining('535') })]);
    const retried = await deliveryOf(s, eventId, busy.id);
    expect(retried).toMatchObject({ state: 'pending', attempts: 1, lastStatus: 451, nextAttemptAt: later(at, MINUTE).toISOString() });
    // Much later: only the 4xx is tried again.
    expect(await tick(later(at, 2 * MINUTE))).toEqual({ delivered: 0, retry: 1, dead: 0 });
    expect((await deliveryOf(s, eventId, wrong.id)).attempts).toBe(1);
    expect((await deliveryOf(s, eventId, busy.id)).attempts).toBe(2);
    expect(smtp.messages).toEqual([]);
  });
});

describe('retries (decisions.md: 1, 5, 15, 60, 360 minutes, then dead)', () => {
  it('retries a 500 after 1, 5, 15, 60 and 360 minutes, and then gives up: dead with 6 attempts', async () => {
    const { org, s } = await adminOrg();
    const failing = await httpServer(() => ({ status: 500, body: 'internal trouble' }));
    const d = await createDestination(s, webhook(`${failing.url}/in`, { events: ['scan.failed'] }));
    const eventId = await emit(org.organisationId, 'scan.failed', 'warning');
    const T = soon();
    expect(await tick(T)).toEqual({ delivered: 0, retry: 1, dead: 0 });
    expect(failing.hits).toHaveLength(1);
    const first = await deliveryOf(s, eventId, d.id);
    expect(first).toMatchObject({ state: 'pending', attempts: 1, lastStatus: 500, nextAttemptAt: later(T, MINUTE).toISOString(), deliveredAt: null });
    expect(first.lastError).toMatch(/^HTTP 500/);
    // The status only: the answer's body is never read back (it could be any internal service's).
    expect(first.lastError).toBe('HTTP 500');

    let at = T;
    const times = [T];
    for (const [i, wait] of [1, 5, 15, 60, 360].entries()) {
      const due = later(at, wait * MINUTE);
      // One second early: not due yet.
      expect(await tick(later(due, -SECOND))).toEqual({ delivered: 0, retry: 0, dead: 0 });
      expect(failing.hits).toHaveLength(i + 1);
      const last = i === 4;
      expect(await tick(due)).toEqual({ delivered: 0, retry: last ? 0 : 1, dead: last ? 1 : 0 });
      expect(failing.hits).toHaveLength(i + 2);
      at = due;
      times.push(due);
    }
    const dead = await deliveryOf(s, eventId, d.id);
    expect(dead).toMatchObject({ state: 'dead', attempts: 6, lastStatus: 500, nextAttemptAt: null, deliveredAt: null });
    expect(dead.attemptLog).toEqual(times.map((when, i) => ({ attempt: i + 1, at: when.toISOString(), durationMs: expect.any(Number), statusCode: 500, error: expect.stringMatching(/^HTTP 500/) })));
    // Dead is final.
    expect(await tick(later(at, 7 * 24 * 60 * MINUTE))).toEqual({ delivered: 0, retry: 0, dead: 0 });
    expect(failing.hits).toHaveLength(6);
  });

  it('does not retry a 4xx (dead after one attempt), but retries 408 and 429', async () => {
    const { org, s } = await adminOrg();
    const status: Record<string, number> = { '/404': 404, '/400': 400, '/401': 401, '/408': 408, '/429': 429 };
    const server = await httpServer((hit) => status[hit.path] ?? 200);
    const dests = Object.fromEntries(await Promise.all(Object.keys(status).map(async (path) => [path, await createDestination(s, webhook(`${server.url}${path}`, { events: ['scan.failed'] }))] as const)));
    const eventId = await emit(org.organisationId, 'scan.failed', 'warning');
    const T = soon();
    expect(await tick(T)).toEqual({ delivered: 0, retry: 2, dead: 3 });
    for (const path of ['/404', '/400', '/401']) {
      const d = await deliveryOf(s, eventId, dests[path]!.id);
      expect(d).toMatchObject({ state: 'dead', attempts: 1, lastStatus: status[path], nextAttemptAt: null });
      expect(d.attemptLog).toHaveLength(1);
    }
    for (const path of ['/408', '/429']) {
      expect(await deliveryOf(s, eventId, dests[path]!.id)).toMatchObject({ state: 'pending', attempts: 1, lastStatus: status[path], nextAttemptAt: later(T, MINUTE).toISOString() });
    }
    // The servers recover: the 408 and 429 deliveries go out at their retry; the 4xx ones are never tried again.
    for (const path of Object.keys(status)) status[path] = 200;
    expect(await tick(later(T, MINUTE))).toEqual({ delivered: 2, retry: 0, dead: 0 });
    expect(await tick(later(T, 24 * 60 * MINUTE))).toEqual({ delivered: 0, retry: 0, dead: 0 });
    const hits = server.hits.map((h) => h.path).sort();
    expect(hits).toEqual(['/400', '/401', '/404', '/408', '/408', '/429', '/429']);
    for (const path of ['/408', '/429']) {
      const d = await deliveryOf(s, eventId, dests[path]!.id);
      expect(d).toMatchObject({ state: 'delivered', attempts: 2, lastStatus: 200, deliveredAt: later(T, MINUTE).toISOString() });
      expect(d.attemptLog.map((x) => x.statusCode)).toEqual([Number(path.slice(1)), 200]);
    }
  });

  it('counts a server that never answers within SERVICE_NOTIFY_TIMEOUT_SECONDS as a failed attempt, and retries it', async () => {
    const { org, s } = await adminOrg();
    const silent = await httpServer(() => 'hang');
    const d = await createDestination(s, webhook(`${silent.url}/in`, { events: ['scan.failed'] }));
    const eventId = await emit(org.organisationId, 'scan.failed', 'warning');
    const T = soon();
    const started = Date.now();
    expect(await tick(T)).toEqual({ delivered: 0, retry: 1, dead: 0 });
    const took = Date.now() - started;
    expect(took).toBeGreaterThanOrEqual(900);
    expect(took).toBeLessThan(5 * SECOND);
    expect(silent.hits).toHaveLength(1);
    const first = await deliveryOf(s, eventId, d.id);
    expect(first).toMatchObject({ state: 'pending', attempts: 1, lastStatus: null, nextAttemptAt: later(T, MINUTE).toISOString() });
    expect(first.lastError).toMatch(/1000 ms/);
    expect(first.attemptLog[0]!.durationMs).toBeGreaterThanOrEqual(900);
    expect(await tick(later(T, MINUTE))).toEqual({ delivered: 0, retry: 1, dead: 0 });
    expect(silent.hits).toHaveLength(2);
    expect((await deliveryOf(s, eventId, d.id)).attemptLog.map((a) => a.statusCode)).toEqual([null, null]);
  });

  it('retries when the connection is refused', async () => {
    const { org, s } = await adminOrg();
    const d = await createDestination(s, webhook(`${await refusedUrl()}/in`, { events: ['scan.failed'] }));
    const eventId = await emit(org.organisationId, 'scan.failed', 'warning');
    const T = soon();
    expect(await tick(T)).toEqual({ delivered: 0, retry: 1, dead: 0 });
    const first = await deliveryOf(s, eventId, d.id);
    expect(first).toMatchObject({ state: 'pending', attempts: 1, lastStatus: null, lastError: 'ECONNREFUSED', nextAttemptAt: later(T, MINUTE).toISOString() });
    expect(await tick(later(T, MINUTE))).toEqual({ delivered: 0, retry: 1, dead: 0 });
    expect(await deliveryOf(s, eventId, d.id)).toMatchObject({ attempts: 2, nextAttemptAt: later(T, 6 * MINUTE).toISOString() });
  });
});

if (TEST_DATABASE_URL) describe('two workers in separate PostgreSQL sessions', () => {
  it('never send one delivery twice: row locks alone (no job lock) keep them apart', async () => {
    const { org, s } = await adminOrg();
    const hook = await httpServer(() => ({ status: 200, delayMs: 15 }));
    const d = await createDestination(s, webhook(`${hook.url}/in`, { events: ['daemon.offline'] }));
    // More than two claim batches (50), so the workers claim while the other one sends.
    const events = await emitMany(org.organisationId, 120);
    const other = await openDatabase({ url: TEST_DATABASE_URL, poolMax: 5, searchPath: testDb.schema });
    try {
      const at = soon();
      const ctx = (db: typeof other.db): JobContext => ({ db, logger: createLogger('silent'), now: () => at, signal: new AbortController().signal });
      const job = notifyDeliver({ secretKey: t.secretKey, send: { ...sendOptions(t.config), timeoutMs: 5 * SECOND } });
      const [ra, rb] = await Promise.all([job.run(ctx(t.database.db)), job.run(ctx(other.db))]);
      const ta = ra!.detail as { delivered: number; retry: number; dead: number };
      const tb = rb!.detail as { delivered: number; retry: number; dead: number };
      expect(ta.delivered + tb.delivered).toBe(120);
      // Both took part (each claims at most 50 at a time while the other is sending), so the test did race them.
      expect(ta.delivered).toBeGreaterThan(0);
      expect(tb.delivered).toBeGreaterThan(0);
      expect(ta.retry + ta.dead + tb.retry + tb.dead).toBe(0);
      const arrived = hook.hits.map((h) => (JSON.parse(h.body) as { id: string }).id);
      expect(arrived).toHaveLength(120);
      expect(new Set(arrived).size).toBe(120);
      expect([...arrived].sort()).toEqual([...events].sort());
      // Each delivery was attempted once.
      const attempts = await sql<{ n: number; max: number }>`
        select count(*)::int as n, max(attempt)::int as max from notification_attempts where organisation_id = ${org.organisationId}`.execute(t.database.db);
      expect(attempts.rows[0]).toEqual({ n: 120, max: 1 });
      expect((await listDeliveries(s, `?destinationId=${d.id}&state=delivered&limit=200`)).length).toBe(120);
      // Nothing is left for either of them.
      const again = await Promise.all([job.run(ctx(t.database.db)), job.run(ctx(other.db))]);
      expect(again.map((r) => r!.detail)).toEqual([{ delivered: 0, retry: 0, dead: 0 }, { delivered: 0, retry: 0, dead: 0 }]);
      expect(hook.hits).toHaveLength(120);
    } finally {
      await other.close();
    }
  });
});

describe('POST …/destinations/:id/test', () => {
  it('sends a notification.test event now and reports what the server answered, queueing nothing', async () => {
    const { org, s } = await adminOrg();
    const ok = await httpServer();
    const failing = await httpServer(() => ({ status: 500, body: 'nope' }));
    const good = webhook(`${ok.url}/in`);
    const working = await createDestination(s, good);
    const broken = await createDestination(s, webhook(`${failing.url}/in`));
    const refused = await createDestination(s, webhook(`${await refusedUrl()}/in`));
    const countRows = async () => {
      const r = await sql<{ events: number; deliveries: number }>`
        select (select count(*)::int from events where organisation_id = ${org.organisationId}) as events,
               (select count(*)::int from notification_deliveries where organisation_id = ${org.organisationId}) as deliveries`.execute(t.database.db);
      return r.rows[0];
    };
    const before = await countRows();
    expect(before!.deliveries).toBe(0);

    const a = await call(s, 'POST', `${DESTINATIONS}/${working.id}/test`);
    expect(a.statusCode, a.body).toBe(200);
    expect(a.json()).toEqual({ ok: true, statusCode: 200, error: null, durationMs: expect.any(Number) });
    expect(a.json().durationMs).toBeGreaterThanOrEqual(0);
    expect(ok.hits).toHaveLength(1);
    expectSigned(ok.hits[0]!, good.config.secret);
    expect(JSON.parse(ok.hits[0]!.body)).toMatchObject({ kind: 'notification.test', organisationId: org.organisationId, subject: { type: 'notification_destination', id: working.id } });

    const b = await call(s, 'POST', `${DESTINATIONS}/${broken.id}/test`);
    expect(b.statusCode, b.body).toBe(200);
    expect(b.json()).toEqual({ ok: false, statusCode: 500, error: expect.stringMatching(/^HTTP 500/), durationMs: expect.any(Number) });
    expect(failing.hits).toHaveLength(1);

    const c = await call(s, 'POST', `${DESTINATIONS}/${refused.id}/test`);
    expect(c.statusCode, c.body).toBe(200);
    expect(c.json()).toEqual({ ok: false, statusCode: null, error: 'ECONNREFUSED', durationMs: expect.any(Number) });

    // Nothing queued, nothing retried.
    expect(await countRows()).toEqual(before);
    expect(await listDeliveries(s)).toEqual([]);
    expect(await tick(later(soon(), 10 * MINUTE))).toEqual({ delivered: 0, retry: 0, dead: 0 });
    expect(failing.hits).toHaveLength(1);
    expect(ok.hits).toHaveLength(1);
  });
});

describe('GET …/deliveries', () => {
  it('lists newest first, filtered by state and destinationId, within limit', async () => {
    const { org, s } = await adminOrg();
    const server = await httpServer((hit) => ({ '/ok': 200, '/gone': 404, '/down': 503 })[hit.path] ?? 200);
    const ok = await createDestination(s, webhook(`${server.url}/ok`, { events: ['scan.failed'] }));
    const gone = await createDestination(s, webhook(`${server.url}/gone`, { events: ['scan.failed'] }));
    const down = await createDestination(s, webhook(`${server.url}/down`, { events: ['scan.failed'] }));
    const e1 = await emit(org.organisationId, 'scan.failed', 'warning');
    await delay(5);
    const e2 = await emit(org.organisationId, 'scan.failed', 'warning');
    expect(await tick(soon())).toEqual({ delivered: 2, retry: 2, dead: 2 });
    const other = await otherOrg();
    await createDestination(other.s, webhook(`${server.url}/ok`, { events: ['scan.failed'] }));
    await emit(other.org.organisationId, 'scan.failed', 'warning');

    const all = await listDeliveries(s);
    expect(all).toHaveLength(6);
    expect(all.slice(0, 3).every((d) => d.eventId === e2)).toBe(true);
    expect(all.slice(3).every((d) => d.eventId === e1)).toBe(true);
    expect(all.every((d) => d.eventKind === 'scan.failed')).toBe(true);

    const delivered = await listDeliveries(s, '?state=delivered');
    expect(delivered.map((d) => d.destinationId)).toEqual([ok.id, ok.id]);
    expect(delivered.map((d) => d.eventId)).toEqual([e2, e1]);
    expect((await listDeliveries(s, '?state=dead')).map((d) => d.destinationId)).toEqual([gone.id, gone.id]);
    const pending = await listDeliveries(s, '?state=pending');
    expect(pending.map((d) => d.destinationId)).toEqual([down.id, down.id]);
    expect(pending.every((d) => d.lastStatus === 503 && d.nextAttemptAt !== null)).toBe(true);
    expect((await listDeliveries(s, `?destinationId=${gone.id}`)).map((d) => d.state)).toEqual(['dead', 'dead']);
    expect(await listDeliveries(s, `?destinationId=${ok.id}&state=pending`)).toEqual([]);
    expect(await listDeliveries(s, `?destinationId=${down.id}&state=pending`)).toHaveLength(2);
    expect(await listDeliveries(s, `?destinationId=${randomUUID()}`)).toEqual([]);
    const one = await listDeliveries(s, '?limit=1');
    expect(one).toHaveLength(1);
    expect(one[0]!.eventId).toBe(e2);
    expect(await listDeliveries(s, '?limit=200')).toHaveLength(6);
    // The other organisation sees only its own.
    expect((await listDeliveries(other.s)).map((d) => d.state)).toEqual(['pending']);

    for (const query of ['?limit=201', '?limit=0', '?limit=abc', '?state=failed', '?destinationId=not-a-uuid']) {
      const res = await call(s, 'GET', `${DELIVERIES}${query}`);
      expectProblem(res, 400, 'validation_failed');
    }
  });
});

describe('logs', () => {
  it('hold no secret given to any destination in this file, after all the deliveries and failures above', () => {
    expect(secretsSeen.size).toBeGreaterThan(5);
    expect(t.logs.length).toBeGreaterThan(0);
    const text = t.logs.join('\n');
    expect([...secretsSeen].filter((x) => text.includes(x))).toEqual([]);
  });
});

// =============================================================================================

describe('what a destination can reach and what it is sent (review of issue 6)', () => {
  it('escapes Slack\'s control characters, so text from the network cannot mention @channel or hide a link', async () => {
    const { org, s } = await adminOrg();
    const slack = await httpServer();
    await createDestination(s, { kind: 'slack', name: `slack-${hex(3)}`, config: { url: `${slack.url}/services/T/B/x` } });
    await emit(org.organisationId, 'tls.expiring', 'warning', { subject: 'CN=<!channel> <https://evil.test|click> & co', address: '10.0.0.1', port: 443, thresholdDays: 7, notAfter: '2026-12-01T00:00:00Z' }, 'certificate');
    expect(await tick(soon())).toMatchObject({ delivered: 1 });
    const text = JSON.parse(slack.hits[0]!.body).text as string;
    expect(text).toContain('CN=&lt;!channel&gt; &lt;https://evil.test|click&gt; &amp; co');
    expect(text).not.toContain('<!channel>');
  });

  it('retries a redirect (decisions.md makes only a 4xx other than 408 and 429 final) and never follows it', async () => {
    const { org, s } = await adminOrg();
    const elsewhere = await httpServer();
    const hook = await httpServer(() => ({ status: 302, body: '' }));
    const d = await createDestination(s, webhook(`${hook.url}/in`));
    const eventId = await emit(org.organisationId, 'daemon.offline', 'critical');
    expect(await tick(soon())).toMatchObject({ retry: 1, dead: 0 });
    expect(await deliveryOf(s, eventId, d.id)).toMatchObject({ state: 'pending', attempts: 1, lastStatus: 302, lastError: 'HTTP 302' });
    expect(elsewhere.hits).toHaveLength(0);
  });

  it('bounds a whole SMTP exchange by SERVICE_NOTIFY_TIMEOUT_SECONDS, even with a server that answers a byte at a time', async () => {
    const { org, s } = await adminOrg();
    // Greets, then answers EHLO with continuation lines forever: never idle, never done.
    const sockets: net.Socket[] = [];
    const drip = net.createServer((socket) => {
      sockets.push(socket);
      socket.write('220 drip.test ESMTP\r\n');
      socket.once('data', () => {
        const timer = setInterval(() => socket.write('250-still thinking\r\n'), 200);
        socket.on('close', () => clearInterval(timer));
        socket.on('error', () => clearInterval(timer));
      });
    });
    await new Promise<void>((resolve) => drip.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => new Promise<void>((resolve) => {
      for (const x of sockets) x.destroy();
      drip.close(() => resolve());
    }));
    const port = (drip.address() as AddressInfo).port;
    const d = await createDestination(s, { kind: 'email', name: `mail-${hex(3)}`, config: { host: '127.0.0.1', port, from: 'surveyor@example.test', to: ['ops@example.test'] } });
    const eventId = await emit(org.organisationId, 'daemon.offline', 'critical');
    const t0 = Date.now();
    expect(await tick(soon())).toMatchObject({ retry: 1 });
    expect(Date.now() - t0).toBeLessThan(5_000);
    const delivery = await deliveryOf(s, eventId, d.id);
    expect(delivery).toMatchObject({ state: 'pending', attempts: 1, lastError: 'no answer within 1000 ms' });
    expect(delivery.attemptLog[0]!.durationMs).toBeLessThan(3_000);
  });
});

describe('SERVICE_NOTIFY_PRIVATE_TARGETS=deny: destinations inside the service\'s network are refused', () => {
  let app: TestApp;
  let admin: Session;
  let organisationId: string;
  beforeAll(async () => {
    app = await buildTestApp({ env: { ...ENV, SERVICE_NOTIFY_PRIVATE_TARGETS: 'deny' } });
    const org = await seedOrg(app.database);
    organisationId = org.organisationId;
    admin = await login(app.app, org.ownerEmail);
  });
  afterAll(() => app.close());

  it('classifies loopback, private, link-local, CGNAT and unique-local addresses (IPv4, IPv6, mapped) as private, public ones not', () => {
    for (const a of ['127.0.0.1', '10.1.2.3', '172.16.0.1', '172.31.255.255', '192.168.1.1', '169.254.169.254', '100.64.0.1', '0.0.0.0', '::1', '::', 'fe80::1', 'fd00::1', '::ffff:127.0.0.1', '::ffff:10.0.0.1']) {
      expect(isPrivateAddress(a), a).toBe(true);
    }
    for (const a of ['8.8.8.8', '172.32.0.1', '192.0.2.10', '2001:db8::1', '2606:4700::1111', '::ffff:8.8.8.8']) expect(isPrivateAddress(a), a).toBe(false);
  });

  it('refuses a webhook on 127.0.0.1 and an SMTP server named localhost: no connection, the delivery dead at once, the test endpoint says why', async () => {
    const hook = await httpServer();
    const post = (url: string, payload?: Record<string, unknown>) =>
      app.app.inject({ method: 'POST', url, headers: { cookie: admin.cookie, 'x-csrf-token': admin.csrfToken }, ...(payload ? { payload } : {}) });
    const created = await post(DESTINATIONS, { kind: 'webhook', name: 'inside', config: { url: `${hook.url}/in`, secret: 'a-secret-of-16-chars-or-more' } });
    expect(created.statusCode, created.body).toBe(201);
    const test = await post(`${DESTINATIONS}/${created.json().id}/test`);
    expect(test.json()).toMatchObject({ ok: false, statusCode: null, error: expect.stringContaining('127.0.0.1, a private or loopback address') });
    // A name is checked at connect time, against the address the connection then uses.
    const named = await post(DESTINATIONS, { kind: 'webhook', name: 'named', config: { url: `http://localhost:${hook.port}/in`, secret: 'a-secret-of-16-chars-or-more' } });
    expect((await post(`${DESTINATIONS}/${named.json().id}/test`)).json()).toMatchObject({ ok: false, error: expect.stringMatching(/^localhost resolves to (127\.0\.0\.1|::1), a private/) });
    await app.app.inject({ method: 'DELETE', url: `${DESTINATIONS}/${named.json().id}`, headers: { cookie: admin.cookie, 'x-csrf-token': admin.csrfToken } });
    const mail = await post(DESTINATIONS, { kind: 'email', name: 'mail', config: { host: 'localhost', port: 25, from: 'surveyor@example.test', to: ['ops@example.test'] } });
    expect(mail.statusCode, mail.body).toBe(201);

    await sql`insert into events (organisation_id, kind, severity, subject_type, subject_id) values (${organisationId}, 'daemon.offline', 'critical', 'daemon', ${randomUUID()})`.execute(app.database.db);
    const runner = new JobRunner({ database: app.database, logger: createLogger('silent'), jobs: jobDefinitions({ config: app.config, secretKey: app.secretKey }), now: soon });
    expect((await runner.tick('notify.deliver')).result?.detail).toMatchObject({ delivered: 0, dead: 2 });
    expect(hook.hits).toHaveLength(0);
    const list = await app.app.inject({ method: 'GET', url: DELIVERIES, headers: { cookie: admin.cookie } });
    const errors = (list.json().data as DeliveryView[]).map((d) => [d.state, d.attempts, d.lastError]);
    expect(errors).toEqual(
      expect.arrayContaining([
        ['dead', 1, expect.stringContaining('resolves to 127.0.0.1, a private or loopback address')],
        ['dead', 1, expect.stringMatching(/^localhost resolves to (127\.0\.0\.1|::1), a private or loopback address/)],
      ]),
    );
  });
});
