import type { PGlite } from '@electric-sql/pglite';
import {
  CompiledQuery,
  type DatabaseConnection,
  type Dialect,
  type Driver,
  type Kysely,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  type QueryResult,
  type TransactionSettings,
} from 'kysely';
import { copyOf } from './copy.js';

/** A FIFO mutex: PGlite is one connection, so one Kysely connection may hold it at a time. */
export class Mutex {
  private tail: Promise<void> = Promise.resolve();

  /** Resolves with a release function once every earlier holder has released. */
  lock(): Promise<() => void> {
    let release!: () => void;
    const next = new Promise<void>((r) => (release = r));
    const acquired = this.tail.then(() => release);
    this.tail = this.tail.then(() => next);
    return acquired;
  }
}

class PGliteConnection implements DatabaseConnection {
  constructor(private readonly pg: PGlite) {}

  async executeQuery<R>(q: CompiledQuery): Promise<QueryResult<R>> {
    const copy = copyOf(q.sql, q.parameters);
    if (copy) {
      // PGlite reads COPY … FROM '/dev/blob' from the query's blob.
      const done = await this.pg.query(copy.statement.replace(/from stdin$/i, "from '/dev/blob'"), [], { blob: new Blob([copy.data]) });
      return { rows: [], numAffectedRows: BigInt(done.affectedRows ?? 0) };
    }
    const res = await this.pg.query<R>(q.sql, q.parameters as unknown[], { rowMode: 'object' });
    return { rows: res.rows, ...(res.affectedRows !== undefined ? { numAffectedRows: BigInt(res.affectedRows) } : {}) };
  }

  async *streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    throw new Error('streaming is not supported on PGlite');
  }
}

class PGliteDriver implements Driver {
  private readonly releases = new WeakMap<DatabaseConnection, () => void>();

  constructor(private readonly pg: PGlite, private readonly mutex: Mutex) {}

  async init(): Promise<void> {
    await this.pg.waitReady;
  }

  async acquireConnection(): Promise<DatabaseConnection> {
    const release = await this.mutex.lock();
    // One physical connection: a fresh wrapper per acquisition keeps the release bookkeeping exact.
    const conn = new PGliteConnection(this.pg);
    this.releases.set(conn, release);
    return conn;
  }

  async beginTransaction(conn: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    await conn.executeQuery(CompiledQuery.raw(settings.isolationLevel ? `begin isolation level ${settings.isolationLevel}` : 'begin'));
  }

  async commitTransaction(conn: DatabaseConnection): Promise<void> {
    await conn.executeQuery(CompiledQuery.raw('commit'));
  }

  async rollbackTransaction(conn: DatabaseConnection): Promise<void> {
    await conn.executeQuery(CompiledQuery.raw('rollback'));
  }

  async releaseConnection(conn: DatabaseConnection): Promise<void> {
    this.releases.get(conn)?.();
    this.releases.delete(conn);
  }

  async destroy(): Promise<void> {}
}

/** Kysely dialect over one PGlite instance; the caller owns (and closes) the instance. */
export class PGliteDialect implements Dialect {
  constructor(private readonly pg: PGlite, readonly mutex: Mutex = new Mutex()) {}

  createAdapter() {
    return new PostgresAdapter();
  }
  createDriver(): Driver {
    return new PGliteDriver(this.pg, this.mutex);
  }
  createQueryCompiler() {
    return new PostgresQueryCompiler();
  }
  createIntrospector(db: Kysely<unknown>) {
    return new PostgresIntrospector(db);
  }
}
