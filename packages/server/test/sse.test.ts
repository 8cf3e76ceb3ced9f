import { once } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import net from 'node:net';
import { EventSource } from 'eventsource';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import * as admin from '../src/admin/admin.service.js';
import { loadConfig } from '../src/config.js';
import { announceJobRun } from '../src/events/changes.js';
import { eventsPrune } from '../src/events/prune.job.js';
import { createLogger } from '../src/logger.js';
import { markQuietDaemonsOffline } from '../src/daemons/daemons.repo.js';
import { openDatabase } from '../src/db/database.js';
import { type SeededOrg, TEST_DATABASE_URL, type TestApp, type TestDatabase, bearer, buildTestApp, createTestDatabase, login, seedMemberWithKey, seedOrg } from './helpers.js';
import { heartbeat } from './daemon-client.js';
import { type Scanning, createNetwork, ingest, onlineDaemon, queueScan, startSession } from './scanning.js';
import { startTcpProxy } from './tcp-proxy.js';

// The live change stream, GET /api/sse (spec 4.9, 6; decisions.md "Events and alerts"; contract
// route `sse`), over a real port with the real EventSource client. Changes are made through the
// API (daemon observations) and straight into change_log with SQL; on PostgreSQL that SQL runs on
// a connection of its own, so each row reaches the stream only through LISTEN/NOTIFY.

const RFC3339_MS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const HIGH_LIMITS = { SERVICE_RATE_LIMIT_KEY_PER_MINUTE: '1000000', SERVICE_RATE_LIMIT_DAEMON_PER_MINUTE: '1000000', SERVICE_RATE_LIMIT_ANON_PER_MINUTE: '1000000' };
/** Every event name a test here listens for. */
const EVENT_NAMES = [
  'host.created', 'host.updated', 'host.deleted', 'service.created', 'service.updated', 'scan.created', 'scan.updated', 'network.created', 'network.updated',
  'snapshot.created', 'daemon.created', 'daemon.updated', 'overflow', 'reset', 'closing',
];

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function waitFor(what: string, cond: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(20);
  }
}

// ---------------------------------------------------------------------------------------------
// Writing the change log from outside the app.

interface Change {
  id: number;
  entityId: string;
  at: string;
}

/**
 * Writes change_log rows the way any other process would: on PostgreSQL through a connection of
 * its own (not the app's pool, not its listening connection); on PGlite, the embedded database
 * being one process by construction, through the app's database.
 */
interface Writer {
  query<R = Record<string, unknown>>(text: string, values?: unknown[]): Promise<R[]>;
  /** `n` rows for the organisation in ONE statement (one notification); ids ascending. */
  changes(organisationId: string, n: number, o?: { type?: string; action?: string; hoursAgo?: number }): Promise<Change[]>;
  close(): Promise<void>;
}

const INSERT_CHANGES = `
  insert into change_log (organisation_id, entity_type, entity_id, action, at)
  select $1::uuid, $2::text, gen_random_uuid(), $3::text, now() - make_interval(hours => $4::int) from generate_series(1, $5::int)
  returning id, entity_id, to_char(at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as at`;

async function openWriter(testDb: TestDatabase): Promise<Writer> {
  let query: Writer['query'];
  let close = async () => {};
  if (testDb.schema) {
    const client = new pg.Client({ connectionString: TEST_DATABASE_URL, options: `-c search_path=${testDb.schema}`, application_name: 'sse-test-writer' });
    await client.connect();
    query = async <R>(text: string, values: unknown[] = []) => (await client.query(text, values)).rows as R[];
    close = () => client.end();
  } else {
    query = async <R>(text: string, values: unknown[] = []) => (await testDb.database.prepared(text, text, values)) as R[];
  }
  return {
    query,
    async changes(organisationId, n, o = {}) {
      const rows = await query<{ id: number | string | bigint; entity_id: string; at: string }>(INSERT_CHANGES, [organisationId, o.type ?? 'host', o.action ?? 'updated', o.hoursAgo ?? 0, n]);
      return rows.map((r) => ({ id: Number(r.id), entityId: r.entity_id, at: r.at })).sort((a, b) => a.id - b.id);
    },
    close,
  };
}

const range = (changes: Change[]) => changes.map((c) => c.id);

// ---------------------------------------------------------------------------------------------
// Clients: the real EventSource, a raw fetch reader (sees headers and comment lines), a raw socket.

/** Everything one test opened, closed after it whatever happened. */
const opened: { close(): void }[] = [];
/** The apps still serving, and how many streams each held when the test began. */
const serving = new Set<Served>();
const atStart = new Map<Served, number>();
beforeEach(() => {
  for (const app of serving) atStart.set(app, app.t.app.changeStreams.size);
});
afterEach(async () => {
  for (const c of opened.splice(0)) c.close();
  // Every stream the test opened is forgotten once its client is gone.
  for (const app of serving) await waitFor('the streams of the test to be forgotten', () => app.t.app.changeStreams.size <= (atStart.get(app) ?? 0), 5_000);
});

interface Got {
  event: string;
  id: string;
  data: Record<string, unknown>;
}

/** An EventSource with the session cookie; records every event of EVENT_NAMES and the Last-Event-ID of each connect. */
class Listener {
  readonly got: Got[] = [];
  /** The Last-Event-ID header each connection attempt sent (null: none). */
  readonly sentLastEventIds: (string | null)[] = [];
  opens = 0;
  readonly es: EventSource;

  constructor(url: string, cookie: string, tag = 'es') {
    this.es = new EventSource(url, {
      fetch: (input, init) => {
        const headers: Record<string, string> = { ...(init?.headers as Record<string, string>), cookie, 'x-test-client': tag };
        this.sentLastEventIds.push(headers['Last-Event-ID'] ?? null);
        return fetch(input, { ...init, headers });
      },
    });
    this.es.addEventListener('open', () => void this.opens++);
    for (const event of EVENT_NAMES) {
      this.es.addEventListener(event, (e: MessageEvent) => void this.got.push({ event, id: e.lastEventId, data: e.data ? JSON.parse(String(e.data)) : {} }));
    }
    opened.push(this);
  }

  /** Ids of the change events received, in arrival order. */
  ids(): number[] {
    return this.got.filter((g) => g.id !== '').map((g) => Number(g.id));
  }

  of(event: string): Got[] {
    return this.got.filter((g) => g.event === event);
  }

  async opened(timeoutMs = 10_000): Promise<void> {
    await waitFor('the EventSource to open', () => this.opens > 0, timeoutMs);
  }

  /**
   * Waits until every id is in; by default stops early when the stream is told to overflow or
   * reset, so that the caller's assertions fail at once rather than after a timeout.
   */
  async receive(ids: number[], timeoutMs = 15_000, o: { untilAll?: boolean } = {}): Promise<void> {
    const want = new Set(ids);
    await waitFor(`${ids.length} change ids`, () => {
      if (!o.untilAll && this.got.some((g) => g.event === 'overflow' || g.event === 'reset')) return true;
      let n = 0;
      for (const id of this.ids()) if (want.has(id)) n++;
      return n >= want.size;
    }, timeoutMs);
  }

  close(): void {
    this.es.close();
  }
}

interface Frame {
  id?: string;
  event?: string;
  data?: string;
  retry?: string;
  comments: string[];
}

/** The complete frames of an event-stream text. */
function parseFrames(text: string): Frame[] {
  const blocks = text.split('\n\n');
  blocks.pop();
  return blocks.map((block) => {
    const f: Frame = { comments: [] };
    for (const line of block.split('\n')) {
      if (line.startsWith(':')) f.comments.push(line.slice(1).trim());
      else if (line) {
        const i = line.indexOf(':');
        const key = (i < 0 ? line : line.slice(0, i)) as 'id' | 'event' | 'data' | 'retry';
        f[key] = i < 0 ? '' : line.slice(i + 1).replace(/^ /, '');
      }
    }
    return f;
  });
}

/** GET with fetch, reading the body as it comes. */
class RawStream {
  text = '';
  ended = false;
  private constructor(
    readonly res: Response,
    private readonly ac: AbortController,
  ) {}

  static async open(url: string, headers: Record<string, string>): Promise<RawStream> {
    const ac = new AbortController();
    const res = await fetch(url, { headers, signal: ac.signal });
    const s = new RawStream(res, ac);
    opened.push(s);
    void s.pump();
    return s;
  }

  private async pump(): Promise<void> {
    const reader = this.res.body!.getReader();
    const decoder = new TextDecoder();
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        this.text += decoder.decode(value, { stream: true });
      }
    } catch {
      // aborted by close()
    } finally {
      this.ended = true;
    }
  }

  frames(): Frame[] {
    return parseFrames(this.text);
  }

  close(): void {
    this.ac.abort();
  }
}

/** A client that sends the GET and then never reads (its socket is paused from the start). */
async function slowClient(port: number, cookie: string): Promise<net.Socket> {
  const socket = net.connect(port, '127.0.0.1');
  socket.on('error', () => {});
  socket.pause();
  await once(socket, 'connect');
  socket.write(`GET /api/sse HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAccept: text/event-stream\r\nCookie: ${cookie}\r\n\r\n`);
  opened.push({ close: () => socket.destroy() });
  return socket;
}

// ---------------------------------------------------------------------------------------------
// An app on a real port.

interface Served {
  t: TestApp;
  testDb: TestDatabase;
  writer: Writer;
  port: number;
  base: string;
  /** Server side of each connection, by the client's port. */
  serverSockets: Map<number, net.Socket>;
  /** Each /api/sse exchange as the server saw it, in order. */
  requests: { req: IncomingMessage; res: ServerResponse }[];
  close(): Promise<void>;
}

async function serve(env: Record<string, string>, testDb?: TestDatabase): Promise<Served> {
  const db = testDb ?? (await createTestDatabase());
  const t = await buildTestApp({ env: { ...HIGH_LIMITS, ...env }, testDb: db });
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  const port = (t.app.server.address() as net.AddressInfo).port;
  const serverSockets = new Map<number, net.Socket>();
  const requests: Served['requests'] = [];
  t.app.server.on('connection', (socket: net.Socket) => serverSockets.set(socket.remotePort!, socket));
  t.app.server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    if (req.url?.startsWith('/api/sse')) requests.push({ req, res });
  });
  const writer = await openWriter(db);
  let closing: Promise<void> | null = null;
  const served: Served = {
    t,
    testDb: db,
    writer,
    port,
    base: `http://127.0.0.1:${port}`,
    serverSockets,
    requests,
    close() {
      serving.delete(served);
      closing ??= (async () => {
        await writer.close();
        await t.close();
        if (!testDb) await db.drop();
      })();
      return closing;
    },
  };
  serving.add(served);
  return served;
}

interface Party {
  org: SeededOrg;
  cookie: string;
}

/** An organisation and the session cookie of its owner. */
async function orgWithSession(s: Served): Promise<Party> {
  const org = await seedOrg(s.t.database);
  const { cookie } = await login(s.t.app, org.ownerEmail);
  return { org, cookie };
}

/** Opens an EventSource and waits until the server holds its stream. */
async function listen(s: Served, cookie: string, query = '', tag = 'es'): Promise<Listener> {
  const before = s.t.app.changeStreams.size;
  const l = new Listener(`${s.base}/api/sse${query}`, cookie, tag);
  await l.opened();
  await waitFor('the server to register the stream', () => s.t.app.changeStreams.size > before);
  return l;
}

/** Scanning as the organisation's owner: an API key, an online daemon reporting `cidr`. */
async function scanningAs(s: Served | TestApp, p: Party, cidr: string): Promise<Scanning> {
  const t = 'app' in s ? s : s.t;
  const key = await admin.createApiKey(t.database.db, { type: 'cli' }, { org: p.org.organisationId, userEmail: p.org.ownerEmail, scopes: ['scan:run', 'inventory:write', 'inventory:read'] });
  return { org: p.org, api: key.token, daemon: await onlineDaemon(t, p.org, { networkCidrs: [cidr] }), siteId: null };
}

const expectExactlyOnceInOrder = (got: number[], want: number[]) => {
  expect(got.length, 'no id received twice').toBe(new Set(got).size);
  expect(got).toEqual([...want].sort((x, y) => x - y));
};

// =============================================================================================
// One app for the file (PGlite apps are slow to build): keepalive every second, and a 4 KiB
// buffer limit, so that the slow-client tests need little data. The other tests write at most a
// few frames per statement, well under it. The last describe closes it.

let s: Served;
let a: Party;
let b: Party;
beforeAll(async () => {
  s = await serve({ SERVICE_SSE_HEARTBEAT_SECONDS: '1', SERVICE_SSE_MAX_BUFFER_BYTES: '4096' });
  [a, b] = await Promise.all([orgWithSession(s), orgWithSession(s)]);
});
afterAll(() => s.close());

describe('GET /api/sse: access and response (spec 4.9, contract route sse)', () => {
  it('refuses a request without a session with 401 problem unauthorized, also with an unknown cookie or only an API key', async () => {
    const key = await admin.createApiKey(s.t.database.db, { type: 'cli' }, { org: a.org.organisationId, userEmail: a.org.ownerEmail, scopes: ['inventory:read'] });
    for (const headers of [{}, { cookie: 'surveyor_session=svx_unknownunknownunknownunknownunknown1234' }, bearer(key.token)] as Record<string, string>[]) {
      const res = await fetch(`${s.base}/api/sse`, { headers: { accept: 'text/event-stream', ...headers } });
      expect(res.status, JSON.stringify(headers)).toBe(401);
      expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(((await res.json()) as { code: string }).code).toBe('unauthorized');
    }
    expect(s.t.app.changeStreams.size).toBe(atStart.get(s));
    // The real client gives up on a 401 (no reconnect loop).
    const es = new Listener(`${s.base}/api/sse`, '');
    await waitFor('the EventSource to fail', () => es.es.readyState === EventSource.CLOSED);
    expect(es.opens).toBe(0);
  });

  it('answers 200 text/event-stream; charset=utf-8 with cache-control no-cache and x-accel-buffering no', async () => {
    const raw = await RawStream.open(`${s.base}/api/sse`, { cookie: a.cookie, accept: 'text/event-stream' });
    expect(raw.res.status).toBe(200);
    expect(raw.res.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    expect(raw.res.headers.get('cache-control')).toContain('no-cache');
    expect(raw.res.headers.get('x-accel-buffering')).toBe('no');
  });

  it('is open to every role: a viewer\'s session streams its organisation\'s changes', async () => {
    const viewer = await seedMemberWithKey(s.t.database, a.org, 'viewer', ['inventory:read']);
    const { cookie } = await login(s.t.app, viewer.email);
    const es = await listen(s, cookie);
    const changes = await s.writer.changes(a.org.organisationId, 2);
    await es.receive(range(changes));
    expectExactlyOnceInOrder(es.ids(), range(changes));
  });

  it('sends a `: keepalive` comment every SERVICE_SSE_HEARTBEAT_SECONDS (15 by default)', async () => {
    expect(loadConfig({}).sse.heartbeatMs).toBe(15_000);
    expect(loadConfig({}).sse.maxBufferBytes).toBe(1024 * 1024);
    const raw = await RawStream.open(`${s.base}/api/sse`, { cookie: a.cookie });
    const keepalives = () => raw.frames().filter((f) => f.comments.includes('keepalive'));
    await waitFor('a keepalive comment', () => keepalives().length >= 1, 3_000);
    const started = Date.now();
    await waitFor('two more keepalive comments', () => keepalives().length >= 3, 4_000);
    expect(Date.now() - started).toBeGreaterThan(1_000);
    expect(Date.now() - started).toBeLessThan(3_500);
    // A keepalive is a comment only: no event, no id.
    for (const f of keepalives()) expect(f).toEqual({ comments: ['keepalive'] });
  });

  it('ends a stream at the next heartbeat once its session is over (signed out), with `event: closing`', async () => {
    const viewer = await seedMemberWithKey(s.t.database, a.org, 'viewer', ['inventory:read']);
    const session = await login(s.t.app, viewer.email);
    const raw = await RawStream.open(`${s.base}/api/sse`, { cookie: session.cookie });
    const base = s.t.app.changeStreams.size;
    const out = await s.t.app.inject({ method: 'POST', url: '/api/v1/auth/logout', headers: { cookie: session.cookie, 'x-csrf-token': session.csrfToken } });
    expect(out.statusCode, out.body).toBeLessThan(300);
    await waitFor('the stream to end', () => raw.ended, 4_000);
    expect(raw.frames().find((f) => f.event === 'closing')?.data).toBe(JSON.stringify({ reason: 'session ended' }));
    expect(s.t.app.changeStreams.size).toBe(base - 1);
  });

  it('counts open streams in app.changeStreams.size, and a client that leaves is forgotten', async () => {
    const base = s.t.app.changeStreams.size;
    const x = await listen(s, a.cookie);
    const y = await listen(s, b.cookie);
    expect(s.t.app.changeStreams.size).toBe(base + 2);
    x.close();
    await waitFor('one stream to be forgotten', () => s.t.app.changeStreams.size === base + 1);
    y.close();
    await waitFor('both streams to be forgotten', () => s.t.app.changeStreams.size === base);
    expect(s.t.app.changeStreams.size).toBe(base);
  });

  it('forgets a client that hangs up before its stream is set up (no stream left behind)', async () => {
    const base = s.t.app.changeStreams.size;
    const seen = s.requests.length;
    // Each hangs up as soon as the server has read its GET, while the session is being checked.
    for (let i = 0; i < 5; i++) {
      const socket = net.connect(s.port, '127.0.0.1');
      socket.on('error', () => {});
      await once(socket, 'connect');
      s.t.app.server.once('request', () => socket.destroy());
      socket.write(`GET /api/sse HTTP/1.1\r\nHost: 127.0.0.1\r\nCookie: ${a.cookie}\r\n\r\n`);
      await once(socket, 'close');
    }
    await waitFor('the server to see the five requests', () => s.requests.length >= seen + 5);
    await sleep(500);
    expect(s.t.app.changeStreams.size).toBe(base);
  });
});

// =============================================================================================

describe('GET /api/sse: live changes (decisions.md "Events and alerts")', () => {
  it('sends each change as `id: <change id>`, `event: <type>.<action>`, `data: {"type","id","action","at"}`, in order', async () => {
    const raw = await RawStream.open(`${s.base}/api/sse`, { cookie: a.cookie });
    await waitFor('the raw stream to start', () => raw.text.length > 0);
    const es = await listen(s, a.cookie);
    const updated = await s.writer.changes(a.org.organisationId, 3, { type: 'host', action: 'updated' });
    const deleted = await s.writer.changes(a.org.organisationId, 1, { type: 'host', action: 'deleted' });
    const all = [...updated, ...deleted];
    await es.receive(range(all));
    expectExactlyOnceInOrder(es.ids(), range(all));
    for (const c of updated) {
      const got = es.got.find((g) => Number(g.id) === c.id)!;
      expect(got).toEqual({ event: 'host.updated', id: String(c.id), data: { type: 'host', id: c.entityId, action: 'updated', at: c.at } });
      expect(c.at).toMatch(RFC3339_MS);
    }
    expect(es.of('host.deleted').map((g) => g.data)).toEqual([{ type: 'host', id: deleted[0]!.entityId, action: 'deleted', at: deleted[0]!.at }]);
    // Byte for byte on the wire, keys in the documented order.
    await waitFor('the raw stream to have every frame', () => all.every((c) => raw.text.includes(`id: ${c.id}\n`)));
    for (const c of updated) {
      expect(raw.text).toContain(`id: ${c.id}\nevent: host.updated\ndata: {"type":"host","id":"${c.entityId}","action":"updated","at":"${c.at}"}\n\n`);
    }
  });

  it('streams real inventory changes: hosts and services a daemon reports appear as host.created / service.created', async () => {
    const sc = await scanningAs(s, a, '10.7.0.0/16');
    const es = await listen(s, a.cookie);
    const { max } = (await s.writer.query<{ max: number | null }>('select max(id)::int as max from change_log where organisation_id = $1', [a.org.organisationId]))[0]!;
    const sessionId = await startSession(s.t, sc, await createNetwork(s.t, sc, '10.7.0.0/24'));
    await ingest(s.t, sc.daemon, {
      sessionId,
      hosts: [{ fingerprint: 'fp-sse-1', hostname: 'sse-web-1' }],
      ips: [{ hostFingerprint: 'fp-sse-1', address: '10.7.0.10', family: 4 }],
      ports: [{ fingerprint: 'fp-sse-1', address: '10.7.0.10', protocol: 'tcp', number: 22, state: 'open' }],
      services: [{ fingerprint: 'fp-sse-1', address: '10.7.0.10', protocol: 'tcp', port: 22, name: 'ssh' }],
    });
    const hosts = (await s.t.app.inject({ method: 'GET', url: '/api/v1/hosts?limit=500', headers: bearer(sc.api) })).json().data as { id: string; hostname: string }[];
    const host = hosts.find((h) => h.hostname === 'sse-web-1')!;
    const services = ((await s.t.app.inject({ method: 'GET', url: '/api/v1/services?limit=500', headers: bearer(sc.api) })).json().data as { id: string; hostId: string }[]).filter((x) => x.hostId === host.id);
    expect(services).toHaveLength(1);
    const log = await s.writer.query<{ id: string | number; entity_type: string; entity_id: string; action: string }>(
      'select id, entity_type, entity_id, action from change_log where organisation_id = $1 and id > $2 order by id',
      [a.org.organisationId, max ?? 0],
    );
    expect(log.length).toBeGreaterThanOrEqual(2);
    await es.receive(log.map((r) => Number(r.id)));
    // What the change log gained, in order, nothing else.
    expect(es.got.map((g) => ({ id: Number(g.id), event: g.event, entityId: g.data.id }))).toEqual(
      log.map((r) => ({ id: Number(r.id), event: `${r.entity_type}.${r.action}`, entityId: r.entity_id })),
    );
    expect(es.of('host.created').map((g) => g.data.id)).toEqual([host.id]);
    expect(es.of('service.created').map((g) => g.data.id)).toEqual([services[0]!.id]);
    for (const g of es.got) expect(g.data).toEqual({ type: expect.any(String), id: expect.stringMatching(UUID), action: expect.any(String), at: expect.stringMatching(RFC3339_MS) });
  });

  it('streams what an operator watches: a daemon registered and changing status, a network created, scans through every state, a snapshot', async () => {
    const p = await orgWithSession(s);
    const es = await listen(s, p.cookie);
    const sc = await scanningAs(s, p, '10.9.0.0/16'); // registers (created) and heartbeats online (updated)
    const daemonId = sc.daemon.id;
    await heartbeat(s.t.app, sc.daemon.token, daemonId); // still online: no change
    const networkId = await createNetwork(s.t, sc, '10.9.0.0/24');
    const first = await startSession(s.t, sc, networkId); // queued (created; the network's lastScanAt), dispatched
    await ingest(s.t, sc.daemon, { sessionId: first, stats: { hostsTotal: 256, hostsScanned: 10 } }); // running
    await ingest(s.t, sc.daemon, { sessionId: first, final: true, stats: { hostsTotal: 256, hostsScanned: 256 } }); // completed
    const second = (await queueScan(s.t, sc, networkId)).sessionId;
    expect((await s.t.app.inject({ method: 'POST', url: `/api/v1/scans/${second}/cancel`, headers: bearer(sc.api) })).statusCode).toBe(200);
    const snap = await s.t.app.inject({ method: 'POST', url: '/api/v1/snapshots', headers: bearer(sc.api), payload: {} });
    expect(snap.statusCode, snap.body).toBe(201);
    await heartbeat(s.t.app, sc.daemon.token, daemonId, 'degraded');
    await heartbeat(s.t.app, sc.daemon.token, daemonId, 'degraded'); // no change
    await heartbeat(s.t.app, sc.daemon.token, daemonId);
    // Quiet for more than 300 s: announced offline (scan.stall's minute check).
    await s.writer.query("update daemons set last_heartbeat_at = now() - interval '10 minutes' where id = $1", [daemonId]);
    expect((await markQuietDaemonsOffline(s.t.database.db, new Date())).map((d) => d.id)).toContain(daemonId);

    const want = [
      ['daemon.created', daemonId], ['daemon.updated', daemonId],
      ['network.created', networkId],
      ['scan.created', first], ['network.updated', networkId], ['scan.updated', first], ['scan.updated', first], ['scan.updated', first],
      ['scan.created', second], ['network.updated', networkId], ['scan.updated', second],
      ['snapshot.created', snap.json().id],
      ['daemon.updated', daemonId], ['daemon.updated', daemonId], ['daemon.updated', daemonId],
    ];
    const log = await s.writer.query<{ id: string | number; entity_type: string; entity_id: string; action: string }>(
      'select id, entity_type, entity_id, action from change_log where organisation_id = $1 order by id', [p.org.organisationId]);
    // Each written in the transaction of its change, in order.
    expect(log.map((r) => [`${r.entity_type}.${r.action}`, r.entity_id])).toEqual(want);
    await es.receive(log.map((r) => Number(r.id)));
    expect(es.got.map((g) => [g.event, g.data.id])).toEqual(want);
    for (const g of es.got) expect(g.data).toEqual({ type: g.event.split('.')[0], id: expect.stringMatching(UUID), action: g.event.split('.')[1], at: expect.stringMatching(RFC3339_MS) });
  });

  it('sends every stream of the organisation each change, and never another organisation\'s changes (also from one statement touching both)', async () => {
    const a1 = await listen(s, a.cookie);
    const a2 = await listen(s, a.cookie);
    const b1 = await listen(s, b.cookie);
    const onlyA = await s.writer.changes(a.org.organisationId, 3);
    // One statement writing rows of both organisations: one notification per organisation.
    const mixed = await s.writer.query<{ id: string | number; organisation_id: string }>(
      `insert into change_log (organisation_id, entity_type, entity_id, action)
       select case when g % 2 = 0 then $1::uuid else $2::uuid end, 'host', gen_random_uuid(), 'created' from generate_series(1, 6) g
       returning id, organisation_id`,
      [a.org.organisationId, b.org.organisationId],
    );
    const mixedA = mixed.filter((r) => r.organisation_id === a.org.organisationId).map((r) => Number(r.id));
    const mixedB = mixed.filter((r) => r.organisation_id === b.org.organisationId).map((r) => Number(r.id));
    const onlyB = await s.writer.changes(b.org.organisationId, 2);
    const wantA = [...range(onlyA), ...mixedA];
    const wantB = [...mixedB, ...range(onlyB)];
    await a1.receive(wantA);
    await a2.receive(wantA);
    await b1.receive(wantB);
    await sleep(300); // anything misrouted would have arrived by now
    expectExactlyOnceInOrder(a1.ids(), wantA);
    expectExactlyOnceInOrder(a2.ids(), wantA);
    expectExactlyOnceInOrder(b1.ids(), wantB);
  });

  it('resumes from the Last-Event-ID header: replays the later changes in order, then continues live', async () => {
    const before = await s.writer.changes(a.org.organisationId, 5);
    const raw = await RawStream.open(`${s.base}/api/sse`, { cookie: a.cookie, 'last-event-id': String(before[1]!.id) });
    expect(raw.res.status).toBe(200);
    const replayed = range(before.slice(2));
    await waitFor('the replay', () => replayed.every((id) => raw.frames().some((f) => f.id === String(id))));
    const live = await s.writer.changes(a.org.organisationId, 2);
    await waitFor('the live changes', () => range(live).every((id) => raw.frames().some((f) => f.id === String(id))));
    const ids = raw.frames().filter((f) => f.id !== undefined).map((f) => Number(f.id));
    expectExactlyOnceInOrder(ids, [...replayed, ...range(live)]);
  });

  it('resumes from ?lastEventId= as well, and the header wins over the query', async () => {
    const before = await s.writer.changes(a.org.organisationId, 4);
    const byQuery = await RawStream.open(`${s.base}/api/sse?lastEventId=${before[0]!.id}`, { cookie: a.cookie });
    const both = await RawStream.open(`${s.base}/api/sse?lastEventId=${before[0]!.id}`, { cookie: a.cookie, 'last-event-id': String(before[2]!.id) });
    await waitFor('the replays', () => byQuery.text.includes(`id: ${before[3]!.id}\n`) && both.text.includes(`id: ${before[3]!.id}\n`));
    await sleep(200);
    expect(byQuery.frames().filter((f) => f.id).map((f) => Number(f.id))).toEqual(range(before.slice(1)));
    expect(both.frames().filter((f) => f.id).map((f) => Number(f.id))).toEqual([before[3]!.id]);
  });

  it('sends `event: reset` instead of a replay when the first change after Last-Event-ID is older than 24 hours, then continues live', async () => {
    const old = await s.writer.changes(b.org.organisationId, 2, { hoursAgo: 25 });
    const recent = await s.writer.changes(b.org.organisationId, 2);
    const es = await listen(s, b.cookie, `?lastEventId=${old[0]!.id - 1}`);
    await waitFor('the reset', () => es.of('reset').length > 0);
    expect(es.ids()).toEqual([]);
    const live = await s.writer.changes(b.org.organisationId, 1);
    await es.receive(range(live), 10_000, { untilAll: true });
    expect(es.ids()).toEqual(range(live));
    expect(es.of('reset')).toHaveLength(1);
    // From the last old change on, everything is within the window: a plain replay, no reset.
    const raw = await RawStream.open(`${s.base}/api/sse`, { cookie: b.cookie, 'last-event-id': String(old[1]!.id) });
    await waitFor('the replay', () => [...range(recent), ...range(live)].every((id) => raw.text.includes(`id: ${id}\n`)));
    expect(raw.frames().some((f) => f.event === 'reset')).toBe(false);
    expect(raw.frames().filter((f) => f.id).map((f) => Number(f.id))).toEqual([...range(recent), ...range(live)]);
  });

  it('sends `event: reset` when changes after Last-Event-ID were pruned (events.prune), though what is left is recent; a resume from the last pruned id on replays', async () => {
    const c = await orgWithSession(s);
    // A stream open while the changes are written: once it has them live, their notifications have
    // been read here, and none can still reach the resumes below as a live frame.
    const watcher = await RawStream.open(`${s.base}/api/sse`, { cookie: c.cookie });
    await waitFor('the watcher', () => watcher.text.includes(': connected'));
    const old = await s.writer.changes(c.org.organisationId, 3, { hoursAgo: 24 * 8 });
    const recent = await s.writer.changes(c.org.organisationId, 2);
    await waitFor('the changes live', () => [...old, ...recent].every((x) => watcher.text.includes(`id: ${x.id}\n`)));
    const job = eventsPrune(loadConfig({}).retention);
    await job.run({ db: s.t.database.db, logger: createLogger('silent'), now: () => new Date(), signal: new AbortController().signal });
    const left = await s.writer.query<{ id: string }>('select id from change_log where organisation_id = $1 order by id', [c.org.organisationId]);
    expect(left.map((r) => Number(r.id))).toEqual(range(recent));
    // Resuming from before the pruned changes: the first change left is recent, but three are gone.
    const gap = await RawStream.open(`${s.base}/api/sse`, { cookie: c.cookie, 'last-event-id': String(old[0]!.id) });
    await waitFor('the reset', () => gap.frames().some((f) => f.event === 'reset'));
    expect(gap.frames().filter((f) => f.id)).toEqual([]);
    // From the last pruned change on, nothing was missed.
    const whole = await RawStream.open(`${s.base}/api/sse`, { cookie: c.cookie, 'last-event-id': String(old[2]!.id) });
    await waitFor('the replay', () => range(recent).every((id) => whole.text.includes(`id: ${id}\n`)));
    expect(whole.frames().some((f) => f.event === 'reset')).toBe(false);
  });

  it("carries a job run's start and end live, without an id (not stored, not replayed), to every stream of its scope; another schema's runs are not sent", async () => {
    const c = await orgWithSession(s);
    const other = await orgWithSession(s);
    const mine = await RawStream.open(`${s.base}/api/sse`, { cookie: c.cookie });
    const theirs = await RawStream.open(`${s.base}/api/sse`, { cookie: other.cookie });
    await waitFor('both streams', () => mine.text.includes(': connected') && theirs.text.includes(': connected'));
    const at = new Date();
    await announceJobRun(s.t.database.db, 'scan.schedule', null, 'started', at);
    await announceJobRun(s.t.database.db, 'cve.match', c.org.organisationId, 'finished', at);
    await s.writer.query(`select pg_notify('surveyor_changes', 'job another_schema * scan.stall started ${at.toISOString()}')`);
    const jobFrames = (r: RawStream) => r.frames().filter((f) => f.event?.startsWith('job.'));
    await waitFor('the notices', () => jobFrames(mine).length >= 2 && jobFrames(theirs).length >= 1);
    await sleep(300); // anything misrouted would have arrived by now
    const frame = (job: string, action: string) => ({ event: `job.${action}`, data: JSON.stringify({ type: 'job', id: job, action, at: at.toISOString() }), comments: [] });
    expect(jobFrames(mine)).toEqual([frame('scan.schedule', 'started'), frame('cve.match', 'finished')]);
    expect(jobFrames(theirs)).toEqual([frame('scan.schedule', 'started')]);
    const stored = await s.writer.query<{ n: number }>("select count(*)::int as n from change_log where organisation_id = $1 and entity_type = 'job'", [c.org.organisationId]);
    expect(stored[0]!.n).toBe(0);
  });

  it('an EventSource the server drops reconnects by itself with Last-Event-ID and misses nothing, repeats nothing', async () => {
    const base = s.t.app.changeStreams.size;
    const es = await listen(s, a.cookie, '', 'drop-me');
    const all: number[] = [];
    const write = async (statements: number) => {
      for (let i = 0; i < statements; i++) {
        all.push(...range(await s.writer.changes(a.org.organisationId, 5)));
        await sleep(10);
      }
    };
    await write(4);
    await es.receive(all);
    const lastBefore = es.ids().at(-1)!;
    // The server drops the connection under the client.
    s.requests.filter((r) => r.req.headers['x-test-client'] === 'drop-me').at(-1)!.req.socket.destroy();
    await waitFor('the server to forget the dropped stream', () => s.t.app.changeStreams.size === base);
    // Changes committed while the client is away (it waits the 3 s retry the server announced).
    await write(4);
    await waitFor('the EventSource to reconnect', () => es.opens === 2, 10_000);
    await write(4);
    await es.receive(all);
    expect(es.sentLastEventIds).toEqual([null, String(lastBefore)]);
    expect(s.requests.filter((r) => r.req.headers['x-test-client'] === 'drop-me').map((r) => r.req.headers['last-event-id'] ?? null)).toEqual([null, String(lastBefore)]);
    expect(all).toHaveLength(60);
    expectExactlyOnceInOrder(es.ids(), all);
  });
});

// =============================================================================================

describe('GET /api/sse: slow clients and the buffer limit (SERVICE_SSE_MAX_BUFFER_BYTES, 4096 here)', () => {
  it('closes a client that leaves more than the limit unread with `event: overflow` and keeps nothing for it, while a reading client of the same organisation gets everything', async () => {
    const base = s.t.app.changeStreams.size;
    const es = await listen(s, a.cookie);
    const readsLater = await slowClient(s.port, a.cookie);
    const neverReads = await slowClient(s.port, a.cookie);
    await waitFor('three streams', () => s.t.app.changeStreams.size === base + 3);
    const responseOf = (client: net.Socket) => s.requests.find((r) => r.req.socket === s.serverSockets.get(client.localPort!))!.res;
    const slowResponses = [responseOf(readsLater), responseOf(neverReads)];
    const dropped = (r: ServerResponse) => r.writableEnded || r.destroyed;
    const slowDropped = () => slowResponses.every(dropped);
    // The first starts reading the moment the server gives up on it (before its socket is destroyed).
    let received = '';
    readsLater.on('data', (d: Buffer) => void (received += d.toString('latin1')));
    const resumer = setInterval(() => {
      if (!dropped(slowResponses[0]!)) return;
      clearInterval(resumer);
      readsLater.resume();
    }, 5);
    opened.push({ close: () => clearInterval(resumer) });

    // 20,000 changes in one statement (~2.7 MB of frames), again until both slow clients are
    // dropped: a paused loopback socket can soak up a few MB in kernel buffers before anything
    // stays unread in the process (the 1 s keepalives then find the backlog).
    const changes: Change[] = [];
    for (let round = 0; round < 5 && !slowDropped(); round++) {
      changes.push(...(await s.writer.changes(a.org.organisationId, 20_000)));
      await waitFor('a slow-client check', slowDropped, 2_500).catch(() => {});
    }
    expect(slowDropped(), 'both slow clients dropped').toBe(true);

    // The one that reads after being dropped finds the overflow frame, then the end of the response.
    await waitFor('the end of the slow response', () => received.endsWith('\r\n0\r\n\r\n'), 10_000);
    expect(received).toMatch(/^HTTP\/1\.1 200/);
    expect(received).toContain('event: overflow\ndata: ');
    expect(received.lastIndexOf('event: overflow')).toBeGreaterThan(received.lastIndexOf('id: '));

    // The one that never reads holds nothing in the process: its response is flushed out or destroyed.
    await waitFor('nothing buffered for the client that never reads', () => slowResponses[1]!.writableFinished || slowResponses[1]!.destroyed, 10_000);

    // The well-behaved EventSource got every change, once each, in order, without being dropped.
    await es.receive(range(changes), 30_000);
    expect(es.of('overflow')).toEqual([]);
    expect(es.of('reset')).toEqual([]);
    expect(es.opens).toBe(1);
    expectExactlyOnceInOrder(es.ids(), range(changes));
    expect(s.t.app.changeStreams.size).toBe(base + 1);
  });

  it('does not drop a client that reads when one statement writes more than the limit in frames', async () => {
    const es = await listen(s, b.cookie);
    const changes = await s.writer.changes(b.org.organisationId, 100); // ~14 KB of frames, over 4096
    await es.receive(range(changes));
    expect(es.of('overflow')).toEqual([]);
    expectExactlyOnceInOrder(es.ids(), range(changes));
  });

  it('replays a resume larger than the limit instead of overflowing (and reconnecting into the same overflow forever)', async () => {
    const changes = await s.writer.changes(b.org.organisationId, 100);
    const es = new Listener(`${s.base}/api/sse?lastEventId=${changes[0]!.id - 1}`, b.cookie);
    await es.receive(range(changes));
    expect(es.of('overflow')).toEqual([]);
    expectExactlyOnceInOrder(es.ids(), range(changes));
  });
});

// =============================================================================================

describe('GET /api/sse: app.close() ends open streams', () => {
  it('sends `event: closing` to every stream and ends it; close does not hang, even with a client that never reads', async () => {
    const base = s.t.app.changeStreams.size;
    const es = await listen(s, a.cookie);
    const raw = await RawStream.open(`${s.base}/api/sse`, { cookie: a.cookie });
    await slowClient(s.port, a.cookie);
    await waitFor('three streams', () => s.t.app.changeStreams.size === base + 3);
    const started = Date.now();
    await s.close();
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(s.t.app.changeStreams.size).toBe(0);
    await waitFor('the raw stream to end', () => raw.ended);
    expect(raw.frames().at(-1)).toEqual({ event: 'closing', data: '{}', comments: [] });
    await waitFor('the EventSource to hear it', () => es.of('closing').length === 1);
  });
});

// =============================================================================================

if (process.env.TEST_DATABASE_URL) {
  describe('GET /api/sse on PostgreSQL: LISTEN/NOTIFY across connections and processes', () => {
    let p: Served;
    let party: Party;
    beforeAll(async () => {
      p = await serve({});
      party = await orgWithSession(p);
    });
    afterAll(() => p.close());

    it('sends a transaction\'s changes only once it commits, and never those of a rolled-back one', async () => {
      const es = await listen(p, party.cookie);
      await p.writer.query('begin');
      const pending = await p.writer.changes(party.org.organisationId, 3);
      await sleep(400);
      expect(es.ids()).toEqual([]);
      await p.writer.query('commit');
      await es.receive(range(pending));
      await p.writer.query('begin');
      const rolledBack = await p.writer.changes(party.org.organisationId, 2);
      await p.writer.query('rollback');
      const marker = await p.writer.changes(party.org.organisationId, 1);
      await es.receive(range(marker));
      await sleep(200);
      expect(es.ids().some((id) => range(rolledBack).includes(id))).toBe(false);
      expectExactlyOnceInOrder(es.ids(), [...range(pending), ...range(marker)]);
    });

    it('sends each change once when two statements interleave their ids and commit out of order', async () => {
      const es = await listen(p, party.cookie);
      const other = new pg.Client({ connectionString: TEST_DATABASE_URL, options: `-c search_path=${p.testDb.schema}` });
      await other.connect();
      try {
        // A slow statement takes an id, sleeps, takes more; meanwhile another connection commits
        // one in between, so the slow statement's notified range [first, last] covers it.
        const slow = p.writer.query<{ id: number }>(
          `insert into change_log (organisation_id, entity_type, entity_id, action)
           select $1::uuid, 'host', gen_random_uuid(), 'updated'
           from generate_series(1, 3) g, lateral (select pg_sleep(case when g = 1 then 0 else 0.3 end)) z
           returning id`,
          [party.org.organisationId],
        );
        await sleep(150);
        const between = (await other.query<{ id: number }>(`insert into change_log (organisation_id, entity_type, entity_id, action) values ($1, 'host', gen_random_uuid(), 'created') returning id`, [party.org.organisationId])).rows.map((r) => Number(r.id));
        const slowIds = (await slow).map((r) => Number(r.id)).sort((x, y) => x - y);
        expect(between[0]!).toBeGreaterThan(slowIds[0]!);
        expect(between[0]!).toBeLessThan(slowIds[2]!);
        const all = [...slowIds, ...between];
        await es.receive(all);
        await sleep(300);
        const got = es.ids();
        expect(got.length, 'no id twice').toBe(new Set(got).size);
        expect([...got].sort((x, y) => x - y)).toEqual([...all].sort((x, y) => x - y));
      } finally {
        await other.end();
      }
    });

    it('streams changes made through another web process on the same database', async () => {
      const second = await openDatabase({ url: TEST_DATABASE_URL, poolMax: 2, searchPath: p.testDb.schema });
      const other = await buildTestApp({ env: HIGH_LIMITS, testDb: { database: second, schema: p.testDb.schema, drop: () => second.close() } });
      try {
        const sc = await scanningAs(other, party, '10.9.0.0/16');
        const es = await listen(p, party.cookie);
        const sessionId = await startSession(other, sc, await createNetwork(other, sc, '10.9.0.0/24'));
        await ingest(other, sc.daemon, { sessionId, hosts: [{ fingerprint: 'fp-other', hostname: 'other-1' }], ips: [{ hostFingerprint: 'fp-other', address: '10.9.0.1', family: 4 }] });
        const hosts = (await other.app.inject({ method: 'GET', url: '/api/v1/hosts?limit=500', headers: bearer(sc.api) })).json().data as { id: string; hostname: string }[];
        const host = hosts.find((h) => h.hostname === 'other-1')!;
        await waitFor('host.created from the other process', () => es.of('host.created').length > 0);
        expect(es.of('host.created').map((g) => g.data.id)).toEqual([host.id]);
        expect(other.app.changeStreams.size).toBe(0);
      } finally {
        await other.close();
        await second.close();
      }
    });
  });

  describe('GET /api/sse on PostgreSQL: the listening connection is lost and comes back', () => {
    let p: Served;
    let party: Party;
    let proxy: Awaited<ReturnType<typeof startTcpProxy>>;
    let viaProxy: URL;
    beforeAll(async () => {
      const target = new URL(TEST_DATABASE_URL!);
      proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port || 5432) });
      viaProxy = new URL(TEST_DATABASE_URL!);
      viaProxy.hostname = '127.0.0.1';
      viaProxy.port = String(proxy.port);
      const testDb = await createTestDatabase({ url: viaProxy.toString() });
      p = await serve({}, testDb);
      party = await orgWithSession(p);
    });
    afterAll(async () => {
      proxy.start();
      await p.close();
      await p.testDb.drop();
      await proxy.close();
    });

    it('delivers the changes committed while it was down once it is back, each once', async () => {
      const es = await listen(p, party.cookie);
      const first = await p.writer.changes(party.org.organisationId, 2);
      await es.receive(range(first));
      proxy.stop(); // every connection of the app to the database drops, the listening one included
      const meanwhile = await p.writer.changes(party.org.organisationId, 3); // the writer connects directly
      await sleep(200);
      proxy.start();
      await es.receive([...range(first), ...range(meanwhile)], 10_000);
      const after = await p.writer.changes(party.org.organisationId, 2);
      await es.receive([...range(first), ...range(meanwhile), ...range(after)], 10_000);
      expectExactlyOnceInOrder(es.ids(), [...range(first), ...range(meanwhile), ...range(after)]);
    });

    it('after the outage replays only what changed since the stream opened, not the organisation\'s older changes', async () => {
      const fresh = await orgWithSession(p);
      const older = await p.writer.changes(fresh.org.organisationId, 3); // before any stream of the organisation
      const es = await listen(p, fresh.cookie);
      proxy.stop();
      const meanwhile = await p.writer.changes(fresh.org.organisationId, 2);
      await sleep(200);
      proxy.start();
      await es.receive(range(meanwhile), 10_000);
      await sleep(300);
      expectExactlyOnceInOrder(es.ids(), range(meanwhile));
      for (const id of range(older)) expect(es.ids()).not.toContain(id);
    });

    it('sends a new stream no change committed before it opened, however late that change\'s notification comes', async () => {
      const fresh = await orgWithSession(p);
      const before = p.t.app.changeStreams.size;
      await p.t.app.changeStreams.start(); // listening on the channel already, as once any stream has opened
      const release = proxy.hold('surveyor-listen'); // the app's listening connection hears nothing for now
      const older = await p.writer.changes(fresh.org.organisationId, 3); // committed; its notification waits in the proxy
      const es = new Listener(`${p.base}/api/sse`, fresh.cookie);
      await waitFor('the stream to wait for its opening notice', () => p.t.app.changeStreams.waiting > 0);
      await sleep(200);
      expect(p.t.app.changeStreams.size, 'the stream waits for its opening notice, behind the older notification').toBe(before);
      expect(es.opens, 'nothing is sent before the stream has joined').toBe(0);
      release();
      await es.opened();
      expect(p.t.app.changeStreams.size).toBe(before + 1);
      const after = await p.writer.changes(fresh.org.organisationId, 2);
      await es.receive(range(after));
      await sleep(300);
      expectExactlyOnceInOrder(es.ids(), range(after));
      for (const id of range(older)) expect(es.ids()).not.toContain(id);
    });

    it('opens a stream all the same when its opening notice does not come (5 s), and streams what follows', async () => {
      const fresh = await orgWithSession(p);
      const before = p.t.app.changeStreams.size;
      await p.t.app.changeStreams.start();
      const release = proxy.hold('surveyor-listen');
      const es = new Listener(`${p.base}/api/sse`, fresh.cookie);
      try {
        await es.opened();
        await waitFor('the stream to be placed without its notice', () => p.t.app.changeStreams.size > before, 8_000);
      } finally {
        release();
      }
      const after = await p.writer.changes(fresh.org.organisationId, 2);
      await es.receive(range(after));
      expectExactlyOnceInOrder(es.ids(), range(after));
    });

    it('ends a stream still waiting for its opening notice when the process stops, with `event: closing`', async () => {
      // A second web process on the same database, through the proxy, so that stopping it leaves this one serving.
      const second = await openDatabase({ url: viaProxy.toString(), poolMax: 2, searchPath: p.testDb.schema });
      const other = await buildTestApp({ env: HIGH_LIMITS, testDb: { database: second, schema: p.testDb.schema, drop: () => second.close() } });
      try {
        await other.app.listen({ port: 0, host: '127.0.0.1' });
        const port = (other.app.server.address() as net.AddressInfo).port;
        await other.app.changeStreams.start();
        const release = proxy.hold('surveyor-listen');
        try {
          const opening = RawStream.open(`http://127.0.0.1:${port}/api/sse`, { cookie: party.cookie });
          await waitFor('the stream to wait for its opening notice', () => other.app.changeStreams.waiting > 0);
          expect(other.app.changeStreams.size).toBe(0);
          // Not awaited yet: its UNLISTEN is answered on the held connection.
          const stopping = other.app.changeStreams.stop();
          const raw = await opening;
          await waitFor('the stream to end', () => raw.ended);
          expect(other.app.changeStreams.waiting).toBe(0);
          expect(raw.frames().map((f) => f.event)).toContain('closing');
          release();
          await stopping;
        } finally {
          release();
        }
      } finally {
        await other.close();
        await second.close();
      }
    });

    it('keeps streaming live changes after an outage longer than the first reconnect attempt', async () => {
      const es = await listen(p, party.cookie);
      const first = await p.writer.changes(party.org.organisationId, 1);
      await es.receive(range(first));
      proxy.stop();
      await sleep(2_500); // the listener's reconnect (after 1 s) finds the database still away
      proxy.start();
      const after = await p.writer.changes(party.org.organisationId, 2);
      await es.receive([...range(first), ...range(after)], 10_000).catch(() => {});
      expectExactlyOnceInOrder(es.ids(), [...range(first), ...range(after)]);
    });
  });
}
