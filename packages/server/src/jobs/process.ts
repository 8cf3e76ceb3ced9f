import { sql } from 'kysely';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import { type Database, openDatabase } from '../db/database.js';
import { resolveSecretKey } from '../crypto/secrets.js';
import { coreJobs } from './definitions.js';
import { JobRunner } from './runner.js';

export interface RunningJobs {
  runner: JobRunner;
  /** Stops ticking, lets running ticks finish (bounded), releases their locks, closes the pool. */
  close(): Promise<void>;
}

/**
 * The job scheduler of a process (spec 1.1): on PostgreSQL with its own pool, separate from the
 * query pool (rule 5); on the embedded database, which one process holds, on that process's
 * database.
 */
export async function startJobs(config: Config, logger: Logger, embedded?: Database, opts: { start?: boolean } = {}): Promise<RunningJobs> {
  const database = config.databaseUrl ? await openDatabase({ url: config.databaseUrl, poolMax: config.dbPoolMax, logger }) : embedded;
  if (!database) throw new Error('the embedded database is opened by the process that runs the jobs');
  const runner = new JobRunner({ database, logger: logger.child({ component: 'jobs' }), jobs: coreJobs(config, { secretKey: resolveSecretKey(config) }) });
  if (opts.start !== false) runner.start();
  return {
    runner,
    async close() {
      await runner.stop(config.jobs.shutdownSeconds * 1000);
      if (database !== embedded) await database.close();
    },
  };
}

/**
 * Warns when this process's own connections cannot fit in the server's `max_connections` (less
 * the superuser reserve). The whole deployment needs (servers + workers + 1) × SERVICE_DB_POOL_MAX
 * below it (README, "Connection budget").
 */
export async function checkConnectionBudget(database: Database, logger: Logger, budget: number, what: string): Promise<void> {
  if (database.kind !== 'postgres') return;
  try {
    const r = await sql<{ max: number; reserved: number }>`
      select current_setting('max_connections')::int as max, current_setting('superuser_reserved_connections')::int as reserved`.execute(database.db);
    const { max, reserved } = r.rows[0]!;
    if (budget > max - reserved) {
      logger.warn({ budget, maxConnections: max, reserved }, `this ${what} may open ${budget} database connections but the server allows ${max - reserved}; lower SERVICE_DB_POOL_MAX or raise max_connections`);
    }
  } catch (err) {
    logger.debug({ err }, 'could not read max_connections');
  }
}
