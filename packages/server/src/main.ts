import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { adminModule } from './admin/index.js';
import { advisoriesModule } from './advisories/index.js';
import { attestationModule } from './attestation/index.js';
import { bootstrapFirstOwner } from './admin/admin.service.js';
import { authModule } from './auth/index.js';
import { consoleModule } from './console/index.js';
import type { Config } from './config.js';
import { resolveSecretKey } from './crypto/secrets.js';
import { daemonsModule } from './daemons/index.js';
import { type Database, openDatabase } from './db/database.js';
import { migrate } from './db/migrate.js';
import { checkConnectionBudget, databaseOptions } from './db/open.js';
import { eventsModule } from './events/index.js';
import { healthModule } from './health/index.js';
import { hostsModule } from './hosts/index.js';
import { buildApp } from './http/app.js';
import { ingestModule } from './ingest/index.js';
import { inventoryModule } from './inventory/index.js';
import { findingsModule } from './findings/index.js';
import { auditModule } from './audit/index.js';
import { jobsModule } from './jobs/index.js';
import { type JobDefinition, JobRunner } from './jobs/runner.js';
import { membersModule } from './members/index.js';
import { metricsModule } from './metrics/index.js';
import { networksModule } from './networks/index.js';
import type { CliVerb, JobDeps, Module, WebDeps } from './module.js';
import { notificationsModule } from './notifications/index.js';
import { overviewModule } from './overview/index.js';
import { scansModule } from './scans/index.js';
import { cloudModule } from './cloud/index.js';
import { scimModule } from './scim/index.js';
import { assistantModule } from './assistant/index.js';
import { searchModule } from './search/index.js';
import { sitesModule } from './sites/index.js';
import { snapshotsModule } from './snapshots/index.js';
import { topologyModule } from './topology/index.js';

// The composition root: configuration → database → the modules → web app and/or job runner.
// A new domain is a folder with an index.ts exporting its Module, and one line in this list.

/** Every domain, in the order the web process registers them (auth first: its hook guards every route). */
export const modules: readonly Module[] = [
  authModule,
  healthModule,
  inventoryModule,
  hostsModule,
  networksModule,
  findingsModule,
  auditModule,
  snapshotsModule,
  attestationModule,
  scansModule,
  daemonsModule,
  sitesModule,
  ingestModule,
  topologyModule,
  jobsModule,
  metricsModule,
  overviewModule,
  advisoriesModule,
  notificationsModule,
  eventsModule,
  adminModule,
  membersModule,
  consoleModule,
  searchModule,
  cloudModule,
  scimModule,
  assistantModule,
];

/** Every scheduled job of every module (spec 1.1). */
export function jobDefinitions(deps: JobDeps): JobDefinition[] {
  return modules.flatMap((m) => m.jobs?.(deps) ?? []);
}

/** The CLI verbs the modules add (`surveyor admin …`). */
export function cliVerbs(): Record<string, CliVerb> {
  return Object.assign({}, ...modules.map((m) => m.cli ?? {}));
}

/** What a process is built from: its configuration, logger, database and secret key, each made once. */
export interface Runtime {
  config: Config;
  logger: Logger;
  database: Database;
  secretKey: Buffer;
}

/**
 * Opens the configured database (pool of `poolMax`), migrates it, and resolves the secret key:
 * on PostgreSQL before opening (a missing key fails first), on PGlite after (it may create the
 * key file, only under the data folder's lock).
 */
export async function openRuntime(config: Config, logger: Logger, poolMax: number): Promise<Runtime> {
  const requiredKey = config.databaseUrl ? resolveSecretKey(config) : null;
  const database = await openDatabase(databaseOptions(config, poolMax, logger));
  try {
    const secretKey = requiredKey ?? resolveSecretKey(config);
    await migrate(database, { logger });
    return { config, logger, database, secretKey };
  } catch (e) {
    await database.close();
    throw e;
  }
}

export interface RunningJobs {
  runner: JobRunner;
  /** Stops ticking, lets running ticks finish (bounded), releases their locks, closes the pool. */
  close(): Promise<void>;
}

/**
 * The job runner of a process (spec 1.1): on PostgreSQL with its own pool, separate from the
 * query pool (rule 5); on the embedded database, which one process holds, on that process's
 * database. `start: false` builds it without ticking (to run a job now).
 */
export async function startJobs(rt: Runtime, opts: { start?: boolean } = {}): Promise<RunningJobs> {
  const { config, logger } = rt;
  const database = config.databaseUrl ? await openDatabase(databaseOptions(config, config.dbPoolMax, logger)) : rt.database;
  const runner = new JobRunner({ database, logger: logger.child({ component: 'jobs' }), jobs: jobDefinitions({ config, secretKey: rt.secretKey }), timeScale: config.jobs.timeScale });
  if (opts.start !== false) runner.start();
  return {
    runner,
    async close() {
      await runner.stop(config.jobs.shutdownSeconds * 1000);
      if (database !== rt.database) await database.close();
    },
  };
}

/**
 * The web application of every module (not listening). `jobs` runs jobs now for the admin
 * endpoints; without one, a runner that does not tick is made on the app's database.
 */
export async function buildWebApp(rt: Runtime & { jobs?: JobRunner }): Promise<FastifyInstance> {
  const jobs = rt.jobs ?? new JobRunner({ database: rt.database, logger: rt.logger.child({ component: 'jobs' }), jobs: jobDefinitions(rt) });
  const deps: WebDeps = { config: rt.config, database: rt.database, db: rt.database.db, logger: rt.logger, secretKey: rt.secretKey, jobs };
  return buildApp({ config: rt.config, logger: rt.logger, registrars: modules.flatMap((m) => (m.routes ? [(app: FastifyInstance) => m.routes!(app, deps)] : [])) });
}

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
 * stops the jobs (running ticks finish), drains requests, then closes the database. Everything
 * it says goes to the log, except the first-run owner's one-time password: `tellOperator`
 * (stderr) gets that block.
 */
export async function startServer(config: Config, logger: Logger, tellOperator: (text: string) => void = (t) => process.stderr.write(t)): Promise<RunningServer> {
  const rt = await openRuntime(config, logger, config.dbPoolMax);
  const { database } = rt;
  let jobs: RunningJobs | null = null;
  try {
    if (database.kind === 'pglite') {
      const first = await bootstrapFirstOwner(database.db);
      // The one-time password is for the person at the terminal, never a log record: a plain
      // block on stderr, on this first start only (README, "Run it"; docs/operating.md, Logs).
      if (first) {
        logger.info({ organisation: 'Default', email: first.email }, 'first run: created the organisation Default and its owner; the one-time password is on stderr');
        tellOperator(
          [
            '',
            '  First run: created the organisation "Default" and its owner.',
            `    email:    ${first.email}`,
            `    password: ${first.password}   (shown once; change it after signing in)`,
            '',
            '',
          ].join('\n'),
        );
      }
    }
    // The scheduler's runner serves the admin endpoints too; built before the app, ticking after listen.
    jobs = config.jobsInWeb ? await startJobs(rt, { start: false }) : null;
    const app = await buildWebApp({ ...rt, ...(jobs ? { jobs: jobs.runner } : {}) });
    await app.listen({ host: config.host, port: config.port });
    // Query pool + LISTEN connection, and with the jobs their pool and one lock connection.
    await checkConnectionBudget(database, logger, config.dbPoolMax + 1 + (config.jobsInWeb ? config.dbPoolMax + 1 : 0), 'web process');
    jobs?.runner.start();
    const address = app.server.address();
    const port = typeof address === 'object' && address ? address.port : config.port;
    const url = config.port === 0 ? config.baseUrl.replace(/:0$/, `:${port}`) : config.baseUrl;
    logger.info({ url, version: config.version, ...databaseFields(rt), pid: process.pid, jobs: config.jobsInWeb }, `Surveyor ${config.version} listening on ${url}`);
    const running = jobs;
    return {
      app,
      database,
      url,
      jobs: running,
      async close() {
        await running?.close();
        await app.close();
        await database.close();
      },
    };
  } catch (e) {
    await jobs?.close();
    await database.close();
    throw e;
  }
}

/** What a start-up record says about the database (never its URL: it may hold a password). */
function databaseFields(rt: Runtime): { database: 'embedded' | 'postgres'; dataDir?: string } {
  return rt.database.kind === 'pglite' ? { database: 'embedded', dataDir: rt.config.dataDir } : { database: 'postgres' };
}

/** The worker process: migrations, then the job scheduler on its own pool. Returns its `close`. */
export async function startWorker(config: Config, logger: Logger): Promise<RunningJobs> {
  const rt = await openRuntime(config, logger, 2);
  let jobs: RunningJobs;
  try {
    await checkConnectionBudget(rt.database, logger, config.dbPoolMax + 1, 'worker');
    // On PostgreSQL the jobs open their own pool; the embedded database is this one.
    jobs = await startJobs(rt);
  } catch (e) {
    await rt.database.close();
    throw e;
  }
  // The scheduler's timers do not hold the process open, and a worker listens on no socket: its
  // pool's connections were all that kept it alive, so when the database went away (a restart,
  // a failover) the process ended (exit 13) instead of waiting for it. This handle holds it until close.
  const alive = setInterval(() => {}, 2 ** 30);
  logger.info({ version: config.version, jobs: jobs.runner.names, ...databaseFields(rt), pid: process.pid }, `Surveyor ${config.version} worker running ${jobs.runner.names.join(', ')}`);
  return {
    runner: jobs.runner,
    async close() {
      clearInterval(alive);
      await jobs.close();
      await rt.database.close();
    },
  };
}
