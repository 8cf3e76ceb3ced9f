import { randomUUID } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { type Kysely, sql } from 'kysely';
import type { Logger } from 'pino';
import type { Database } from '../db/database.js';
import type { DB } from '../db/schema.js';
import { rfc3339 } from '../db/sql.js';
import { CHANGES_CHANNEL, type JobRunNotice, parseJobRun } from './changes.js';

export { CHANGES_CHANNEL };

export interface SseOptions {
  /** Comment line interval (decisions.md: 15 s). */
  heartbeatMs: number;
  /** Bytes a client may leave unread before it is dropped. */
  maxBufferBytes: number;
  /** How far back `Last-Event-ID` can resume (SERVICE_CHANGE_LOG_RETENTION_DAYS is at least a day, so the window is always kept). */
  resumeWindowHours: number;
  /** Most changes replayed on resume; more, and the client is told to reload. */
  maxReplay: number;
  /** How long a new stream waits for its opening notice before it joins anyway (see open). */
  openTimeoutMs: number;
}

export const defaultSseOptions: SseOptions = { heartbeatMs: 15_000, maxBufferBytes: 1 << 20, resumeWindowHours: 24, maxReplay: 10_000, openTimeoutMs: 5_000 };

interface ChangeRow {
  id: number;
  entity_type: string;
  entity_id: string;
  action: string;
  at: string;
}

/** decisions.md: `id: <monotonic id>`, `event: <type>.<action>`, `data: {"type","id","action","at"}`. */
function frame(r: ChangeRow): string {
  return `id: ${r.id}\nevent: ${r.entity_type}.${r.action}\ndata: ${JSON.stringify({ type: r.entity_type, id: r.entity_id, action: r.action, at: r.at })}\n\n`;
}

/** A job run's start or end, live only: the same event and data, without `id:` (it is not stored, so not replayable). */
function jobFrame(n: JobRunNotice): string {
  return `event: job.${n.action}\ndata: ${JSON.stringify({ type: 'job', id: n.job, action: n.action, at: n.at })}\n\n`;
}

interface Stream {
  organisationId: string;
  /** The browser session behind the stream: re-checked at each heartbeat, the stream ends with it. */
  sessionId: string;
  res: ServerResponse;
  /** Set while a resume replays the change log: live frames wait here, then go out without repeats. */
  held: ChangeRow[] | null;
  /** Ids a resume replayed, skipped if a late notification brings them again (kept a short while). */
  replayed: Set<number> | null;
  closed: boolean;
}

/** A stream waiting for the notice that places it in the change stream (see open). */
interface Opening {
  organisationId: string;
  res: ServerResponse;
  /** Places the stream, run in its organisation's chain (once: later calls do nothing). */
  attach: () => Promise<void>;
  /** Ends the wait without placing it (the process is stopping). */
  cancel: () => void;
}

/** Per organisation: the change ids sent recently (a notified range can overlap another statement's rows). */
class RecentIds {
  private readonly set = new Set<number>();
  private readonly order: number[] = [];
  constructor(
    /** The largest id sent (or, before any, the organisation's last change when its first stream opened). */
    public max = 0,
    private readonly cap = 50_000,
  ) {}
  /** True when `id` is new (and remembers it). */
  add(id: number): boolean {
    if (this.set.has(id)) return false;
    this.set.add(id);
    this.order.push(id);
    if (id > this.max) this.max = id;
    // Trimmed in chunks (down to `cap` once it holds 2 × `cap`): amortised O(1) per id.
    if (this.order.length >= 2 * this.cap) for (const old of this.order.splice(0, this.order.length - this.cap)) this.set.delete(old);
    return true;
  }
}

/**
 * The live change streams of this web process (GET /api/sse). One LISTEN subscription feeds them
 * all: each notification names an organisation and the range of change-log ids one committed
 * statement wrote; the hub reads those rows once (only for organisations with a stream open here)
 * and writes the frames to every stream of that organisation. Notifications arrive in commit
 * order, so a stream sees changes in the order they became visible.
 */
export class ChangeStreams {
  private readonly byOrg = new Map<string, Set<Stream>>();
  private readonly recent = new Map<string, RecentIds>();
  /** One read at a time per organisation, so frames keep the notification order. */
  private readonly chains = new Map<string, Promise<void>>();
  /** Streams opened and not yet placed, by the token of their opening notice. */
  private readonly opening = new Map<string, Opening>();
  private unsubscribe: (() => Promise<void>) | null = null;
  private starting: Promise<void> | null = null;
  private heartbeat: NodeJS.Timeout | null = null;
  /** The schema this service's tables are in: a job notice from another schema of the database is not ours. */
  private schema: string | null = null;
  private stopped = false;
  readonly options: SseOptions;

  constructor(
    private readonly database: Database,
    private readonly logger: Logger,
    options: Partial<SseOptions> = {},
  ) {
    this.options = { ...defaultSseOptions, ...options };
  }

  get db(): Kysely<DB> {
    return this.database.db;
  }

  /** Streams waiting for their opening notice (for tests). */
  get waiting(): number {
    return this.opening.size;
  }

  /** Streams open in this process (for tests and the benchmark). */
  get size(): number {
    let n = 0;
    for (const s of this.byOrg.values()) n += s.size;
    return n;
  }

  /**
   * Subscribes on first use: a process nobody streams from does not listen to the change log.
   * Called before a stream is answered, so a database that cannot be reached gives a problem
   * response rather than a stream that never sends anything.
   */
  start(): Promise<void> {
    this.starting ??= (async () => {
      this.schema = (await sql<{ s: string }>`select current_schema() as s`.execute(this.db)).rows[0]?.s ?? null;
      this.unsubscribe = await this.database.listen(CHANGES_CHANNEL, (payload) => this.notified(payload));
      this.heartbeat = setInterval(() => this.beat(), this.options.heartbeatMs);
      this.heartbeat.unref();
    })().catch((e) => {
      this.starting = null;
      throw e;
    });
    return this.starting;
  }

  private notified(payload: string): void {
    if (payload === '*') {
      // The listening connection was lost and is back. A stream waiting for its opening notice is
      // placed now (the notice may have been lost with the connection); then every organisation
      // re-reads what may have been missed since the last change sent (or since its first stream
      // opened).
      for (const o of this.opening.values()) this.after(o.organisationId, o.attach);
      const orgs = new Set([...this.byOrg.keys(), ...[...this.opening.values()].map((o) => o.organisationId)]);
      for (const org of orgs) this.enqueue(org, () => this.readAfter(org, this.recent.get(org)?.max ?? 0), true);
      return;
    }
    const job = parseJobRun(payload);
    if (job) return this.jobRun(job);
    const [org, lo, hi] = payload.split(' ');
    if (org === 'open' && lo === this.schema && hi) {
      const o = this.opening.get(hi);
      if (o) this.after(o.organisationId, o.attach);
      return;
    }
    if (!org || !this.byOrg.has(org)) return;
    this.enqueue(org, () => this.readRange(org, Number(lo), Number(hi)));
  }

  /**
   * A job run's notice goes to every stream of its organisation (every stream here, for a run of
   * the job as a whole) after what is queued for it, so it never overtakes a stored change. A
   * stream replaying a resume skips it: it is not stored, and the resume is brief.
   */
  private jobRun(n: JobRunNotice): void {
    if (n.schema !== this.schema) return;
    const text = jobFrame(n);
    for (const org of n.organisationId === null ? [...this.byOrg.keys()] : this.byOrg.has(n.organisationId) ? [n.organisationId] : []) {
      this.after(org, () => {
        for (const s of this.byOrg.get(org) ?? []) if (!s.held) this.write(s, text);
      });
    }
  }

  /** Runs `step` after every step queued for the organisation: frames keep the notification order. */
  private after(org: string, step: () => unknown): void {
    const next = (this.chains.get(org) ?? Promise.resolve())
      .then(step)
      .then(() => {})
      .catch((err) => this.logger.warn({ err, organisationId: org }, 'change stream step failed'));
    this.chains.set(org, next);
    void next.finally(() => {
      if (this.chains.get(org) === next) this.chains.delete(org);
    });
  }

  private enqueue(org: string, read: () => Promise<ChangeRow[]>, catchUp = false): void {
    this.after(org, async () => {
      const rows = await read();
      if (catchUp && rows.length > this.options.maxReplay) this.resetAll(org, 'the change stream was interrupted for longer than it can replay: reload');
      else this.fanOut(org, rows);
    });
  }

  private async readRange(org: string, lo: number, hi: number): Promise<ChangeRow[]> {
    const r = await sql<ChangeRow>`
      select id, entity_type, entity_id, action, ${rfc3339('at')} as at from change_log
      where organisation_id = ${org} and id between ${lo} and ${hi} order by id`.execute(this.db);
    return r.rows;
  }

  /** The changes after `after` within the resume window, up to maxReplay + 1 (more than maxReplay: too many to replay). */
  private async readAfter(org: string, after: number): Promise<ChangeRow[]> {
    const r = await sql<ChangeRow>`
      select id, entity_type, entity_id, action, ${rfc3339('at')} as at from change_log
      where organisation_id = ${org} and id > ${after} and at > now() - make_interval(hours => ${this.options.resumeWindowHours})
      order by id limit ${this.options.maxReplay + 1}`.execute(this.db);
    return r.rows;
  }

  private fanOut(org: string, rows: ChangeRow[]): void {
    const streams = this.byOrg.get(org);
    const seen = this.recent.get(org);
    if (!streams || !seen) return; // its last stream left meanwhile
    const fresh = rows.filter((r) => seen.add(Number(r.id)));
    if (fresh.length === 0) return;
    const text = fresh.map(frame).join('');
    for (const s of streams) {
      if (s.held) s.held.push(...fresh);
      else if (s.replayed) {
        const own = fresh.filter((r) => !s.replayed!.has(Number(r.id)));
        if (own.length > 0) this.write(s, own.length === fresh.length ? text : own.map(frame).join(''));
      } else this.write(s, text);
    }
  }

  private resetAll(org: string, reason: string): void {
    for (const s of this.byOrg.get(org) ?? []) this.write(s, `event: reset\ndata: ${JSON.stringify({ reason })}\n\n`);
  }

  /**
   * Writes to a stream; a client already behind by more than `maxBufferBytes` is told why and
   * closed instead. (A client that reads takes a batch of any size: only what stays unread counts.)
   */
  private write(s: Stream, text: string): void {
    if (s.closed) return;
    if (s.res.writableLength > this.options.maxBufferBytes) {
      this.logger.info({ organisationId: s.organisationId, buffered: s.res.writableLength }, 'change stream client too slow; closing it');
      this.close(s, `event: overflow\ndata: ${JSON.stringify({ reason: 'client too slow: reconnect with Last-Event-ID to resume' })}\n\n`);
      return;
    }
    s.res.write(text);
  }

  private close(s: Stream, last?: string): void {
    if (s.closed) return;
    this.detach(s);
    // A client that does not read never lets end() finish: its socket is destroyed shortly after.
    s.res.end(last);
    const t = setTimeout(() => s.res.destroy(), 5_000);
    t.unref();
    s.res.once('close', () => clearTimeout(t));
  }

  /** Takes a stream out of the hub (idempotent); the organisation's state goes with its last stream. */
  private detach(s: Stream): void {
    s.closed = true;
    const set = this.byOrg.get(s.organisationId);
    if (!set?.delete(s)) return;
    if (set.size === 0) {
      this.byOrg.delete(s.organisationId);
      this.recent.delete(s.organisationId);
    }
  }

  /**
   * Every heartbeat: a comment line to each stream, and the end of each stream whose session is
   * over (signed out, expired, user disabled, membership removed): one query for all of them.
   */
  private beat(): void {
    const streams = [...this.byOrg.values()].flatMap((set) => [...set]);
    for (const s of streams) if (!s.held) this.write(s, ': keepalive\n\n');
    if (streams.length === 0) return;
    void this.liveSessions([...new Set(streams.map((s) => s.sessionId))])
      .then((live) => {
        for (const s of streams) if (!live.has(s.sessionId)) this.close(s, `event: closing\ndata: ${JSON.stringify({ reason: 'session ended' })}\n\n`);
      })
      .catch((err) => this.logger.warn({ err }, 'change stream session check failed'));
  }

  private async liveSessions(ids: string[]): Promise<Set<string>> {
    const r = await sql<{ id: string }>`
      select s.id from sessions s
      join users u on u.id = s.user_id and u.disabled_at is null
      join memberships m on m.organisation_id = s.organisation_id and m.user_id = s.user_id
      where s.id = any(${ids}::uuid[]) and s.expires_at > now()`.execute(this.db);
    return new Set(r.rows.map((x) => x.id));
  }

  /**
   * Sends the stream's opening notice and places the stream in its organisation's chain when the
   * notice comes back (or when the listening connection is back after losing it, or after
   * `openTimeoutMs` if it never comes). False when the stream ended first.
   */
  private async join(s: Stream): Promise<boolean> {
    const org = s.organisationId;
    const token = randomUUID();
    let placed!: (ok: boolean) => void;
    const done = new Promise<boolean>((resolve) => (placed = resolve));
    let last: Promise<number> | null = null;
    const timer = setTimeout(() => this.after(org, o.attach), this.options.openTimeoutMs);
    timer.unref();
    const o: Opening = {
      organisationId: org,
      res: s.res,
      attach: async () => {
        if (this.opening.get(token) !== o) return;
        this.opening.delete(token);
        clearTimeout(timer);
        const max = await last?.catch(() => null);
        if (max == null || this.stopped || s.res.destroyed || s.res.writableEnded) return placed(false);
        // The organisation's first stream here: a catch-up after a lost connection starts from its last change then.
        if (!this.recent.has(org)) this.recent.set(org, new RecentIds(max));
        const set = this.byOrg.get(org) ?? new Set();
        set.add(s);
        this.byOrg.set(org, set);
        s.res.on('close', () => this.detach(s));
        // Once it has joined: a change the client makes after reading this line reaches it.
        s.res.write(`retry: 3000\n: connected\n\n`);
        placed(true);
      },
      cancel: () => {
        this.opening.delete(token);
        clearTimeout(timer);
        placed(false);
      },
    };
    this.opening.set(token, o);
    last = sql<{ max: string | null }>`
      select pg_notify(${CHANGES_CHANNEL}, ${`open ${this.schema} ${token}`}), (select max(id) from change_log where organisation_id = ${org}) as max`
      .execute(this.db)
      .then((r) => Number(r.rows[0]?.max ?? 0));
    try {
      await last;
    } catch (err) {
      this.logger.warn({ err, organisationId: org }, 'change stream could not open');
      o.cancel();
      s.res.end();
      return false;
    }
    return done;
  }

  /**
   * Serves one stream on `res` (already answered 200 with the event-stream headers by the caller)
   * until the client leaves or the process stops. With `lastEventId`, first replays the change log
   * after it (within the resume window); when that is not possible in full (a change after it is
   * older than the window, or was pruned: events.prune keeps the largest id it deleted), sends
   * `event: reset`.
   *
   * The stream gets the changes committed after it opened, and no earlier one: it joins its
   * organisation's streams when the listening connection delivers a notice this call sends.
   * Notices arrive in commit order, so every change committed before that notice has been
   * notified (and read, or skipped) first, however late the listening connection is, and every
   * change committed after it comes after. (Joining when the stream was set up let a change
   * committed just before through when its notice came late: migration 0011 notifies at commit.)
   */
  async open(organisationId: string, sessionId: string, res: ServerResponse, lastEventId: number | null): Promise<void> {
    if (this.stopped) {
      res.end('event: closing\ndata: {}\n\n');
      return;
    }
    await this.start();
    const s: Stream = { organisationId, sessionId, res, held: lastEventId === null ? null : [], replayed: null, closed: false };
    if (!(await this.join(s))) return;
    if (lastEventId === null) return;
    try {
      const gap = await sql<{ old: boolean | null; pruned: string | null }>`
        select (select at <= now() - make_interval(hours => ${this.options.resumeWindowHours}) from change_log
                where organisation_id = ${organisationId} and id > ${lastEventId} order by id limit 1) as old,
               (select through_id from change_log_pruned where organisation_id = ${organisationId}) as pruned`.execute(this.db);
      const g = gap.rows[0];
      const missed = g?.old === true || (g?.pruned != null && lastEventId < Number(g.pruned));
      const rows = missed ? null : await this.readAfter(organisationId, lastEventId);
      const live = s.held ?? [];
      s.held = null;
      if (!rows || rows.length > this.options.maxReplay) {
        this.write(s, `event: reset\ndata: ${JSON.stringify({ reason: 'Last-Event-ID is older than the change log kept for resuming: reload' })}\n\n`);
      } else {
        const sent = new Set(rows.map((r) => Number(r.id)));
        const text = rows.map(frame).join('') + live.filter((r) => !sent.has(Number(r.id))).map(frame).join('');
        if (text) this.write(s, text);
        // A notification of a replayed change may still be on its way: skip those for a while.
        s.replayed = sent;
        setTimeout(() => (s.replayed = null), 10_000).unref();
      }
    } catch (err) {
      this.logger.warn({ err, organisationId }, 'change stream resume failed');
      this.close(s);
    }
  }

  /** Ends every stream (the process is stopping) and stops listening. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.heartbeat) clearInterval(this.heartbeat);
    for (const o of [...this.opening.values()]) {
      o.cancel();
      o.res.end('event: closing\ndata: {}\n\n');
    }
    for (const set of [...this.byOrg.values()]) for (const s of [...set]) this.close(s, 'event: closing\ndata: {}\n\n');
    await this.unsubscribe?.();
    this.unsubscribe = null;
  }
}
