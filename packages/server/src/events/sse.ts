import type { ServerResponse } from 'node:http';
import { type Kysely, sql } from 'kysely';
import type { Logger } from 'pino';
import type { Database } from '../db/database.js';
import type { DB } from '../db/schema.js';
import { rfc3339 } from '../db/sql.js';

/** The channel the change log's trigger notifies on (migration 0011): `<organisation> <first id> <last id>`. */
export const CHANGES_CHANNEL = 'surveyor_changes';

export interface SseOptions {
  /** Comment line interval (decisions.md: 15 s). */
  heartbeatMs: number;
  /** Bytes a client may leave unread before it is dropped. */
  maxBufferBytes: number;
  /** How far back `Last-Event-ID` can resume. */
  resumeWindowHours: number;
  /** Most changes replayed on resume; more, and the client is told to reload. */
  maxReplay: number;
}

export const defaultSseOptions: SseOptions = { heartbeatMs: 15_000, maxBufferBytes: 1 << 20, resumeWindowHours: 24, maxReplay: 10_000 };

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

interface Stream {
  organisationId: string;
  res: ServerResponse;
  /** Set while a resume replays the change log: live frames wait here, then go out without repeats. */
  held: ChangeRow[] | null;
  closed: boolean;
}

/** Per organisation: the change ids sent recently (a notified range can overlap another statement's rows). */
class RecentIds {
  private readonly set = new Set<number>();
  private readonly order: number[] = [];
  max = 0;
  constructor(private readonly cap = 50_000) {}
  /** True when `id` is new (and remembers it). */
  add(id: number): boolean {
    if (this.set.has(id)) return false;
    this.set.add(id);
    this.order.push(id);
    if (id > this.max) this.max = id;
    if (this.order.length > this.cap) for (const old of this.order.splice(0, this.order.length - this.cap)) this.set.delete(old);
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
  private unsubscribe: (() => Promise<void>) | null = null;
  private starting: Promise<void> | null = null;
  private heartbeat: NodeJS.Timeout | null = null;
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
      // The listening connection was lost and is back: re-read what may have been missed.
      for (const org of this.byOrg.keys()) this.enqueue(org, () => this.readAfter(org, this.recent.get(org)?.max ?? 0));
      return;
    }
    const [org, lo, hi] = payload.split(' ');
    if (!org || !this.byOrg.has(org)) return;
    this.enqueue(org, () => this.readRange(org, Number(lo), Number(hi)));
  }

  private enqueue(org: string, read: () => Promise<ChangeRow[]>): void {
    const next = (this.chains.get(org) ?? Promise.resolve())
      .then(read)
      .then((rows) => this.fanOut(org, rows))
      .catch((err) => this.logger.warn({ err, organisationId: org }, 'change stream read failed'));
    this.chains.set(org, next);
    void next.finally(() => {
      if (this.chains.get(org) === next) this.chains.delete(org);
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
    const seen = this.recent.get(org) ?? new RecentIds();
    this.recent.set(org, seen);
    const fresh = rows.filter((r) => seen.add(Number(r.id)));
    if (fresh.length === 0) return;
    const text = fresh.map(frame).join('');
    for (const s of this.byOrg.get(org) ?? []) {
      if (s.held) s.held.push(...fresh);
      else this.write(s, text);
    }
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
    s.closed = true;
    this.remove(s);
    // A client that does not read never lets end() finish: its socket is destroyed shortly after.
    s.res.end(last);
    setTimeout(() => s.res.destroy(), 5_000).unref();
  }

  private remove(s: Stream): void {
    const set = this.byOrg.get(s.organisationId);
    set?.delete(s);
    if (set?.size === 0) {
      this.byOrg.delete(s.organisationId);
      this.recent.delete(s.organisationId);
    }
  }

  private beat(): void {
    for (const set of this.byOrg.values()) for (const s of set) if (!s.held) this.write(s, ': keepalive\n\n');
  }

  /**
   * Serves one stream on `res` (already answered 200 with the event-stream headers by the caller)
   * until the client leaves or the process stops. With `lastEventId`, first replays the change log
   * after it (within the resume window); when that is not possible in full, sends `event: reset`.
   */
  async open(organisationId: string, res: ServerResponse, lastEventId: number | null): Promise<void> {
    if (this.stopped) {
      res.end('event: closing\ndata: {}\n\n');
      return;
    }
    await this.start();
    if (res.destroyed || res.writableEnded) return; // the client left while the stream was being set up
    const s: Stream = { organisationId, res, held: lastEventId === null ? null : [], closed: false };
    const set = this.byOrg.get(organisationId) ?? new Set();
    set.add(s);
    this.byOrg.set(organisationId, set);
    res.on('close', () => {
      s.closed = true;
      this.remove(s);
    });
    res.write(`retry: 3000\n: connected\n\n`);
    if (lastEventId === null) return;
    try {
      const first = await sql<{ id: number; old: boolean }>`
        select id, at <= now() - make_interval(hours => ${this.options.resumeWindowHours}) as old from change_log
        where organisation_id = ${organisationId} and id > ${lastEventId} order by id limit 1`.execute(this.db);
      const rows = first.rows[0]?.old ? null : await this.readAfter(organisationId, lastEventId);
      const live = s.held ?? [];
      s.held = null;
      if (!rows || rows.length > this.options.maxReplay) {
        this.write(s, `event: reset\ndata: ${JSON.stringify({ reason: 'Last-Event-ID is older than the change log kept for resuming: reload' })}\n\n`);
      } else {
        const sent = new Set(rows.map((r) => Number(r.id)));
        const text = rows.map(frame).join('') + live.filter((r) => !sent.has(Number(r.id))).map(frame).join('');
        if (text) this.write(s, text);
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
    for (const set of [...this.byOrg.values()]) for (const s of [...set]) this.close(s, 'event: closing\ndata: {}\n\n');
    await this.unsubscribe?.();
    this.unsubscribe = null;
  }
}
