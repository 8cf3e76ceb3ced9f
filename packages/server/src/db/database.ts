/// <reference path="./pg-copy-streams.d.ts" />
import path from 'node:path';
import type { PGlite } from '@electric-sql/pglite';
import { Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import type { Logger } from 'pino';
import { lockDataDir } from './data-dir-lock.js';
import { PGliteDialect } from './pglite-dialect.js';
import { copyOf } from './copy.js';
import { from as copyFrom } from 'pg-copy-streams';
import type { DB } from './schema.js';
import { WriteWatchPlugin } from './write-watch.js';

/** First key of every advisory lock this service takes with `tryLock` (its namespace). */
export const LOCK_NAMESPACE = 0x5375; // "Su"

// bigint (count(*), sums) as number on both drivers; our counts stay far below 2^53.
pg.types.setTypeParser(20, (v) => Number(v));

export type Row = Record<string, unknown>;
/** Rows as arrays of their values, in the order of `columns` (Database.preparedArrays). */
export type ArrayRows = { columns: string[]; rows: unknown[][] };
export type Exec = (sqlText: string) => Promise<Row[]>;

export interface Database {
  db: Kysely<DB>;
  kind: 'postgres' | 'pglite';
  /** Runs `fn` on one dedicated connection with a multi-statement executor (migrations). */
  withRawSession<T>(fn: (exec: Exec) => Promise<T>): Promise<T>;
  /**
   * Runs one statement kept prepared per connection under `name` on PostgreSQL (planned once,
   * not per call), plainly on PGlite. Only for hot, fixed statements with an explicit column
   * list: a prepared `select *` breaks when a migration adds a column under a running process.
   */
  prepared<R extends Row>(name: string, text: string, values: unknown[]): Promise<R[]>;
  /**
   * `prepared`, its rows as arrays (`rowMode: 'array'`): each row its values in the order of
   * `columns`, the statement's column names. No object per row: a page writer reads the values by
   * position (page-json.ts). A null `name` runs a statement that is not a fixed shape (a search)
   * unnamed, planned for its values.
   */
  preparedArrays(name: string | null, text: string, values: unknown[]): Promise<ArrayRows>;
  /**
   * Subscribes to a NOTIFY channel, delivering each payload to `onPayload`, in this process,
   * whichever process sent it. On PostgreSQL one dedicated connection listens (re-listening
   * after a reconnect). Returns the unsubscribe function.
   */
  listen(channel: string, onPayload: (payload: string) => void): Promise<() => Promise<void>>;
  /**
   * Takes the advisory lock named `key` without waiting. On PostgreSQL a session lock
   * (`pg_try_advisory_lock`, keyed by schema and name) on a connection of this pool, held until
   * the returned release runs;
   * the server drops it if the process dies. On PGlite (one process by construction) an
   * in-process lock. Null when someone else holds it.
   */
  tryLock(key: string): Promise<(() => Promise<void>) | null>;
  /** One round trip; false when it fails or takes longer than `timeoutMs`. Never throws. */
  ping(timeoutMs?: number): Promise<boolean>;
  close(): Promise<void>;
}

export interface DatabaseOptions {
  /** PostgreSQL connection string; absent: PGlite. */
  url?: string;
  /** PGlite data folder; absent with no url: an in-memory PGlite (tests). */
  dataDir?: string;
  poolMax: number;
  /** PostgreSQL schema to work in (tests isolate each file in its own). */
  searchPath?: string;
  logger?: Logger;
}

async function pingWith(db: Kysely<DB>, timeoutMs: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  try {
    const timeout = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), timeoutMs)));
    const round = sql`select 1 as ok`.execute(db).then(() => true, () => false);
    return await Promise.race([round, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Opens the database the configuration names. PGlite data folders are locked to this process. */
export async function openDatabase(opts: DatabaseOptions): Promise<Database> {
  if (opts.url) return openPostgres(opts.url, opts);
  return openPGlite(opts);
}

/**
 * Lets a copyRows statement (db/copy.ts) through Kysely on this client: its data is streamed with
 * pg-copy-streams on the same connection, so in the caller's transaction; any other query as is.
 */
function streamCopies(client: pg.PoolClient): void {
  const query = client.query.bind(client) as (...args: unknown[]) => unknown;
  (client as { query: unknown }).query = (...args: unknown[]) => {
    const copy = typeof args[0] === 'string' && Array.isArray(args[1]) ? copyOf(args[0], args[1]) : null;
    if (!copy) return query(...args);
    const stream = query(copyFrom(copy.statement)) as ReturnType<typeof copyFrom>;
    return new Promise((resolve, reject) => {
      stream.on('error', reject);
      stream.on('finish', () => resolve({ command: 'COPY', rowCount: stream.rowCount, rows: [], fields: [] }));
      stream.end(copy.data);
    });
  };
}

function openPostgres(url: string, opts: DatabaseOptions): Database {
  const poolConfig: pg.PoolConfig = {
    connectionString: url,
    max: opts.poolMax,
    connectionTimeoutMillis: 5000,
    idleTimeoutMillis: 30_000,
    application_name: 'surveyor',
    ...(opts.searchPath ? { options: `-c search_path=${opts.searchPath}` } : {}),
  };
  const pool = new pg.Pool(poolConfig);
  // An idle client losing its server emits here; without a listener the process would crash.
  pool.on('error', (err) => opts.logger?.warn({ err }, 'idle database connection failed'));
  // A connection can also die while checked out between queries, when pg-pool's idle listener is
  // detached; pg then emits 'error' on the client, which must not crash the process. Queries in
  // flight still fail with the error, and the pool discards the broken client on release.
  pool.on('connect', (client) => {
    client.on('error', (err) => opts.logger?.warn({ err }, 'database connection lost'));
    streamCopies(client);
  });
  const db = new Kysely<DB>({ dialect: new PostgresDialect({ pool }), plugins: [new WriteWatchPlugin()] });
  const listener = sharedListener(url, opts);
  // A statement a connection keeps prepared fails once a migration (another process's, in a rolling
  // upgrade) changed the type of a column it returns: "cached plan must not change result type".
  // Then every statement takes a new name (a generation suffix), so each connection prepares it
  // afresh, and the call is retried once.
  let generation = 0;
  const named = async <T>(name: string, run: (name: string) => Promise<T>): Promise<T> => {
    const at = generation;
    try {
      return await run(at === 0 ? name : `${name}~${at}`);
    } catch (err) {
      const e = err as { code?: string; message?: string };
      if (e.code !== '0A000' || !e.message?.includes('cached plan')) throw err;
      if (generation === at) generation++;
      return run(`${name}~${generation}`);
    }
  };
  return {
    db,
    kind: 'postgres',
    async withRawSession(fn) {
      const client = await pool.connect();
      try {
        return await fn(async (text) => {
          const res = (await client.query(text)) as unknown as pg.QueryResult | pg.QueryResult[];
          return Array.isArray(res) ? (res.at(-1)?.rows ?? []) : res.rows;
        });
      } finally {
        client.release();
      }
    },
    prepared: async <R extends Row>(name: string, text: string, values: unknown[]) => (await named(name, (n) => pool.query<R>({ name: n, text, values }))).rows,
    async preparedArrays(name, text, values) {
      const r = await (name === null ? pool.query<unknown[]>({ text, values, rowMode: 'array' }) : named(name, (n) => pool.query<unknown[]>({ name: n, text, values, rowMode: 'array' })));
      return { columns: r.fields.map((f) => f.name), rows: r.rows };
    },
    async tryLock(key) {
      const client = await pool.connect();
      let ok = false;
      try {
        ok = (await client.query<{ ok: boolean }>("select pg_try_advisory_lock($1, hashtext(current_schema() || ':' || $2)) as ok", [LOCK_NAMESPACE, key])).rows[0]!.ok;
      } catch (e) {
        client.release(e as Error);
        throw e;
      }
      if (!ok) {
        client.release();
        return null;
      }
      return async () => {
        try {
          await client.query("select pg_advisory_unlock($1, hashtext(current_schema() || ':' || $2))", [LOCK_NAMESPACE, key]);
          client.release();
        } catch (e) {
          client.release(e as Error); // a broken connection is discarded; its session (and lock) ends with it
        }
      };
    },
    listen: listener.listen,
    ping: (timeoutMs = 2000) => pingWith(db, timeoutMs),
    close: async () => {
      await listener.close();
      await db.destroy();
      // Kysely ends the pool only if it ever ran a query through it; a process that used the pool
      // directly (migrations, locks) would otherwise keep idle connections, and stay alive, for
      // the pool's idle timeout.
      if (!pool.ended) await pool.end();
    },
  };
}

/**
 * LISTEN on PostgreSQL: one dedicated connection per process for every channel (it is not part
 * of the pool), opened with the first subscription and closed with the last. A lost connection
 * is retried every second until it is back, listens again, and delivers `*` to every subscriber:
 * notifications sent meanwhile are lost, so each re-checks what it watches.
 */
function sharedListener(url: string, opts: DatabaseOptions) {
  const handlers = new Map<string, Set<(payload: string) => void>>();
  let client: pg.Client | null = null;
  let connecting: Promise<pg.Client> | null = null;
  let stopped = false;
  const deliver = (channel: string, payload: string) => {
    for (const h of handlers.get(channel) ?? []) h(payload);
  };
  const connect = (): Promise<pg.Client> => {
    connecting ??= (async () => {
      const c = new pg.Client({ connectionString: url, application_name: 'surveyor-listen', ...(opts.searchPath ? { options: `-c search_path=${opts.searchPath}` } : {}) });
      c.on('notification', (n) => deliver(n.channel, n.payload ?? ''));
      c.on('error', (err) => {
        c.end().catch(() => {});
        // A connection that failed while opening is connect()'s to report; only an established one reconnects here.
        if (client !== c) return;
        opts.logger?.warn({ err }, 'listen connection lost; reconnecting');
        client = null;
        connecting = null;
        // Reconnect every second until it works (an outage may last), then tell every subscriber.
        const retry = () =>
          setTimeout(() => {
            if (stopped || handlers.size === 0) return;
            void connect().then(() => {
              for (const channel of handlers.keys()) deliver(channel, '*');
            }, retry);
          }, 1000).unref();
        if (!stopped && handlers.size > 0) retry();
      });
      try {
        await c.connect();
        for (const channel of handlers.keys()) await c.query(`listen ${pg.escapeIdentifier(channel)}`);
      } catch (e) {
        connecting = null;
        c.end().catch(() => {});
        throw e;
      }
      client = c;
      return c;
    })();
    return connecting;
  };
  return {
    async listen(channel: string, onPayload: (payload: string) => void): Promise<() => Promise<void>> {
      stopped = false;
      const fresh = !handlers.has(channel);
      const set = handlers.get(channel) ?? new Set();
      set.add(onPayload);
      handlers.set(channel, set);
      try {
        const c = client ?? (await connect());
        if (fresh) await c.query(`listen ${pg.escapeIdentifier(channel)}`); // twice (a connection just opened listened already) is harmless
      } catch (e) {
        set.delete(onPayload);
        if (set.size === 0) handlers.delete(channel);
        throw e;
      }
      return async () => {
        set.delete(onPayload);
        if (set.size > 0 || handlers.get(channel) !== set) return;
        handlers.delete(channel);
        if (handlers.size === 0) {
          const c = client;
          client = null;
          connecting = null;
          await c?.end().catch(() => {});
        } else {
          await client?.query(`unlisten ${pg.escapeIdentifier(channel)}`).catch(() => {});
        }
      };
    },
    async close() {
      stopped = true;
      handlers.clear();
      const c = client;
      client = null;
      connecting = null;
      await c?.end().catch(() => {});
    },
  };
}

async function openPGlite(opts: DatabaseOptions): Promise<Database> {
  const release = opts.dataDir ? lockDataDir(opts.dataDir) : () => {};
  let pglite: PGlite;
  try {
    // Loaded here, not at start-up: a deployment on PostgreSQL never needs it in its heap.
    const { PGlite } = await import('@electric-sql/pglite');
    pglite = opts.dataDir ? await PGlite.create(path.join(opts.dataDir, 'pgdata')) : await PGlite.create();
  } catch (e) {
    release();
    throw e;
  }
  const dialect = new PGliteDialect(pglite);
  const db = new Kysely<DB>({ dialect, plugins: [new WriteWatchPlugin()] });
  const held = new Set<string>();
  let closed = false;
  return {
    db,
    kind: 'pglite',
    async withRawSession(fn) {
      const unlock = await dialect.mutex.lock();
      try {
        return await fn(async (text) => (await pglite.exec(text)).at(-1)?.rows ?? []);
      } finally {
        unlock();
      }
    },
    // LISTEN and UNLISTEN take the connection's turn like any statement: issued inside another
    // caller's transaction, a rollback of it would silently undo the subscription.
    async listen(channel, onPayload) {
      const unlock = await dialect.mutex.lock();
      let unsub: () => Promise<void>;
      try {
        unsub = await pglite.listen(channel, onPayload);
      } finally {
        unlock();
      }
      return async () => {
        if (pglite.closed) return;
        const release = await dialect.mutex.lock();
        try {
          await unsub();
        } finally {
          release();
        }
      };
    },
    async prepared<R extends Row>(_name: string, text: string, values: unknown[]) {
      const unlock = await dialect.mutex.lock();
      try {
        return (await pglite.query<R>(text, values)).rows;
      } finally {
        unlock();
      }
    },
    async preparedArrays(_name, text, values) {
      const unlock = await dialect.mutex.lock();
      try {
        const r = await pglite.query<unknown[]>(text, values, { rowMode: 'array' });
        return { columns: r.fields.map((f) => f.name), rows: r.rows };
      } finally {
        unlock();
      }
    },
    async tryLock(key) {
      if (held.has(key)) return null;
      held.add(key);
      // Also the database's advisory lock on the one connection, so pg_locks shows what runs (the
      // job status tells a run in progress from an interrupted one by it).
      await sql`select pg_advisory_lock(${LOCK_NAMESPACE}, hashtext(current_schema() || ':' || ${key}))`.execute(db).catch((e) => {
        held.delete(key);
        throw e;
      });
      return async () => {
        held.delete(key);
        if (!closed && !pglite.closed) await sql`select pg_advisory_unlock(${LOCK_NAMESPACE}, hashtext(current_schema() || ':' || ${key}))`.execute(db).catch(() => {});
      };
    },
    ping: (timeoutMs = 2000) => (closed || pglite.closed ? Promise.resolve(false) : pingWith(db, timeoutMs)),
    async close() {
      if (closed) return;
      closed = true;
      await db.destroy();
      if (!pglite.closed) await pglite.close();
      release();
    },
  };
}
