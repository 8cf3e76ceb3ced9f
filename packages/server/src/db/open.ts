import { sql } from 'kysely';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import { type Database, type DatabaseOptions, openDatabase } from './database.js';
import { type MigrationResult, migrate } from './migrate.js';

/** The database options of the configuration: PostgreSQL at DATABASE_URL, else the embedded one in SERVICE_DATA_DIR. */
export function databaseOptions(config: Pick<Config, 'databaseUrl' | 'dataDir'>, poolMax: number, logger?: Logger): DatabaseOptions {
  return { url: config.databaseUrl, dataDir: config.databaseUrl ? undefined : config.dataDir, poolMax, ...(logger ? { logger } : {}) };
}

/** Opens the configured database with a small pool, migrates it, runs `fn`, and closes it (a CLI command's life). */
export async function withMigratedDatabase<T>(config: Pick<Config, 'databaseUrl' | 'dataDir'>, fn: (database: Database, applied: MigrationResult) => Promise<T>): Promise<T> {
  const database = await openDatabase(databaseOptions(config, 2));
  try {
    const applied = await migrate(database);
    return await fn(database, applied);
  } finally {
    await database.close();
  }
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
