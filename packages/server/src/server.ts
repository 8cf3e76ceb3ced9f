import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { bootstrapFirstOwner } from './admin/admin.service.js';
import type { Config } from './config.js';
import { resolveSecretKey } from './crypto/secrets.js';
import { type Database, openDatabase } from './db/database.js';
import { migrate } from './db/migrate.js';
import { buildApp } from './http/app.js';
import { type RunningJobs, checkConnectionBudget, startJobs } from './jobs/process.js';

export interface RunningServer {
  app: FastifyInstance;
  database: Database;
  url: string;
  /** The job scheduler, when this process runs it (SERVICE_JOBS_IN_WEB). */
  jobs: RunningJobs | null;
  close(): Promise<void>;
}

/**
 * The web process: database → migrations → first-run owner (embedded database only) → app →
 * listen → job scheduler (unless SERVICE_JOBS_IN_WEB=false). Returns once listening; `close`
 * stops the jobs (running ticks finish), drains requests, then closes the database.
 */
export async function startServer(config: Config, logger: Logger, out: (line: string) => void = (l) => process.stdout.write(`${l}\n`)): Promise<RunningServer> {
  if (config.databaseUrl) resolveSecretKey(config); // a missing key fails before anything opens
  const database = await openDatabase({ url: config.databaseUrl, dataDir: config.databaseUrl ? undefined : config.dataDir, poolMax: config.dbPoolMax, logger });
  try {
    const secretKey = resolveSecretKey(config); // on PGlite it may create the key file: only under the data folder's lock
    await migrate(database, { logger });
    if (database.kind === 'pglite') {
      const first = await bootstrapFirstOwner(database.db);
      if (first) {
        out('');
        out('  First run: created the organisation "Default" and its owner.');
        out(`    email:    ${first.email}`);
        out(`    password: ${first.password}   (shown once; change it after signing in)`);
        out('');
      }
    }
    const app = await buildApp({ config, database, logger, secretKey });
    await app.listen({ host: config.host, port: config.port });
    // Query pool + LISTEN connection, and with the jobs their pool and one lock connection.
    await checkConnectionBudget(database, logger, config.dbPoolMax + 1 + (config.jobsInWeb ? config.dbPoolMax + 1 : 0), 'web process');
    const jobs = config.jobsInWeb ? await startJobs(config, logger, database) : null;
    const address = app.server.address();
    const port = typeof address === 'object' && address ? address.port : config.port;
    const url = config.port === 0 ? config.baseUrl.replace(/:0$/, `:${port}`) : config.baseUrl;
    out(`Surveyor ${config.version} listening on ${url} (database: ${database.kind === 'pglite' ? `embedded, ${config.dataDir}` : 'PostgreSQL'})`);
    return {
      app,
      database,
      url,
      jobs,
      async close() {
        await jobs?.close();
        await app.close();
        await database.close();
      },
    };
  } catch (e) {
    await database.close();
    throw e;
  }
}
