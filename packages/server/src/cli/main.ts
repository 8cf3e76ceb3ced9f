import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import * as admin from '../admin/admin.service.js';
import type { Actor } from '../audit/audit.repo.js';
import { type Config, ConfigError, describeConfig, loadConfig } from '../config.js';
import { DataDirLockedError } from '../db/data-dir-lock.js';
import { type Database, openDatabase } from '../db/database.js';
import { type RunningJobs, checkConnectionBudget, startJobs } from '../jobs/process.js';
import * as jobStatus from '../jobs/status.repo.js';
import { MigrationChangedError, SchemaTooNewError, migrate } from '../db/migrate.js';
import type { DB } from '../db/schema.js';
import { AppError } from '../errors.js';
import { createLogger } from '../logger.js';
import { startServer } from '../server.js';
import { type FlagSpec, UsageError, parseFlags } from './args.js';

const USAGE = `Usage: surveyor <command> [options]

Commands:
  serve                                   Run the web process (migrates first; runs the jobs unless SERVICE_JOBS_IN_WEB=false)
  worker                                  Run the scheduled jobs only (migrates first)
  jobs list [--json]                      Status of every scheduled job: last run, duration, outcome
  jobs run NAME [--json]                  Run one tick of a job now (exit 1 when it fails)
  migrate [--json]                        Apply pending database migrations and exit
  config [--json]                         List every environment variable with its default
  admin create-org --name NAME --owner-email EMAIL [--owner-password PW] [--json]
  admin create-user --org ORG --email EMAIL --role viewer|editor|admin|owner [--password PW] [--json]
  admin create-api-key --org ORG --user EMAIL --scopes s1,s2 [--name N] [--kind api|metrics|scim] [--json]
  admin create-daemon-key --org ORG [--name N] [--json]
  admin set-role --org ORG --user EMAIL --role ROLE [--json]
  admin revoke-key --id ID [--json]

ORG is an organisation id or name. The database is DATABASE_URL, or the embedded one in SERVICE_DATA_DIR.
Exit codes: 0 done, 1 failure, 2 bad arguments or refused request.`;

interface AdminCommand {
  flags: FlagSpec;
  required: string[];
  run(db: Kysely<DB>, actor: Actor, f: Record<string, string | undefined>): Promise<Record<string, unknown>>;
  human(result: Record<string, unknown>): string;
}

const s = (v: unknown) => (typeof v === 'string' ? v : undefined);

const adminCommands: Record<string, AdminCommand> = {
  'create-org': {
    flags: { name: 'string', 'owner-email': 'string', 'owner-password': 'string' },
    required: ['name', 'owner-email'],
    run: (db, actor, f) => admin.createOrganisation(db, actor, { name: f.name!, ownerEmail: f['owner-email']!, ownerPassword: f['owner-password'] }),
    human: (r) => `Created organisation ${r.organisationId} with owner ${r.userId}${r.generatedPassword ? `; one-time password: ${r.generatedPassword}` : ''}`,
  },
  'create-user': {
    flags: { org: 'string', email: 'string', role: 'string', password: 'string' },
    required: ['org', 'email', 'role'],
    run: (db, actor, f) => admin.createUser(db, actor, { org: f.org!, email: f.email!, role: f.role!, password: f.password }),
    human: (r) => `User ${r.userId} added${r.generatedPassword ? `; one-time password: ${r.generatedPassword}` : ''}`,
  },
  'create-api-key': {
    flags: { org: 'string', user: 'string', scopes: 'string', name: 'string', kind: 'string' },
    required: ['org', 'user', 'scopes'],
    run: (db, actor, f) => {
      const kind = f.kind ?? 'api';
      if (!['api', 'metrics', 'scim'].includes(kind)) throw new UsageError('--kind must be api, metrics or scim');
      return admin.createApiKey(db, actor, {
        org: f.org!, userEmail: f.user!, scopes: f.scopes!.split(',').map((x) => x.trim()).filter(Boolean), name: f.name, kind: kind as 'api',
      });
    },
    human: (r) => `Key ${r.id} (${(r.scopes as string[]).join(', ')}):\n${r.token}\nStore it now; it is not shown again.`,
  },
  'create-daemon-key': {
    flags: { org: 'string', name: 'string' },
    required: ['org'],
    run: (db, actor, f) => admin.createDaemonKey(db, actor, { org: f.org!, name: f.name }),
    human: (r) => `Daemon key ${r.id}:\n${r.token}\nStore it now; it is not shown again.`,
  },
  'set-role': {
    flags: { org: 'string', user: 'string', role: 'string' },
    required: ['org', 'user', 'role'],
    run: (db, actor, f) => admin.setRole(db, actor, { org: f.org!, userEmail: f.user!, role: f.role! }),
    human: (r) => `Role of ${r.userId}: ${r.previousRole} -> ${r.role}`,
  },
  'revoke-key': {
    flags: { id: 'string' },
    required: ['id'],
    run: (db, actor, f) => admin.revokeKey(db, actor, { id: f.id! }),
    human: (r) => `Key ${r.id} revoked`,
  },
};

export interface CliIO {
  out(text: string): void;
  err(text: string): void;
  env: Record<string, string | undefined>;
}

/** Runs one CLI invocation; resolves to the exit code (serve resolves when the server stops). */
export async function runCli(argv: string[], io: CliIO): Promise<number> {
  const [command, ...rest] = argv;
  try {
    if (!command || command === '--help' || command === 'help' || command === '-h') {
      io.out(USAGE);
      return command ? 0 : 2;
    }
    if (command === 'config') {
      const f = parseFlags(rest, { json: 'boolean' });
      const vars = describeConfig();
      io.out(f.json ? JSON.stringify(vars) : vars.map((v) => `${v.name}=${v.default ?? ''}\n    ${v.description}`).join('\n'));
      return 0;
    }
    if (command === 'serve') {
      parseFlags(rest, {});
      return await serve(loadConfig(io.env), io);
    }
    if (command === 'worker') {
      parseFlags(rest, {});
      return await worker(loadConfig(io.env), io);
    }
    if (command === 'jobs') {
      const [sub, ...args] = rest;
      if (sub === 'list') {
        const f = parseFlags(args, { json: 'boolean' });
        return await withDatabase(loadConfig(io.env), async (db) => {
          const rows = await jobStatus.list(db, 'all');
          io.out(
            f.json
              ? JSON.stringify(rows)
              : rows.length === 0
                ? 'No job has run yet.'
                : rows.map((r) => `${r.job.padEnd(22)} ${r.outcome.padEnd(6)} ${r.last_run_at}  ${String(r.duration_ms).padStart(7)} ms  attempts ${r.attempts}${r.organisation_id ? `  org ${r.organisation_id}` : ''}${r.error ? `  ${r.error}` : ''}`).join('\n'),
          );
          return 0;
        });
      }
      if (sub === 'run') {
        const f = parseFlags(args.slice(1), { json: 'boolean' });
        const name = args[0];
        if (!name || name.startsWith('--')) throw new UsageError('jobs run needs a job name');
        const config = loadConfig(io.env);
        return await withDatabase(config, async (_db, _applied, database) => {
          const logger = createLogger(config.logLevel === 'info' ? 'warn' : config.logLevel);
          const jobs = await startJobs(config, logger, database, { start: false });
          try {
            if (!jobs.runner.definition(name)) throw new UsageError(`unknown job ${JSON.stringify(name)} (one of ${jobs.runner.names.join(', ')})`);
            const r = await jobs.runner.tick(name);
            const { result, ...summary } = r;
            io.out(f.json ? JSON.stringify({ ...summary, detail: result?.detail ?? {} }) : !r.ran ? `${name}: another process is running it now; skipped` : `${name}: ${r.outcome} in ${r.durationMs} ms (attempts ${r.attempts})${r.error ? `: ${r.error}` : ''} ${JSON.stringify(result?.detail ?? {})}`);
            return r.ran && r.outcome === 'ok' ? 0 : 1;
          } finally {
            await jobs.close();
          }
        });
      }
      throw new UsageError(`unknown jobs command ${JSON.stringify(sub ?? '')} (list or run)`);
    }
    if (command === 'migrate') {
      const f = parseFlags(rest, { json: 'boolean' });
      const config = loadConfig(io.env);
      return await withDatabase(config, async (_db, applied) => {
        io.out(f.json ? JSON.stringify(applied) : `Schema at version ${applied.version}; applied ${applied.applied.length ? applied.applied.join(', ') : 'nothing'}.`);
        return 0;
      });
    }
    if (command === 'admin') {
      const [sub, ...args] = rest;
      const cmd = sub ? adminCommands[sub] : undefined;
      if (!cmd) throw new UsageError(`unknown admin command ${JSON.stringify(sub ?? '')} (one of ${Object.keys(adminCommands).join(', ')})`);
      const f = parseFlags(args, { ...cmd.flags, json: 'boolean' }, cmd.required);
      const config = loadConfig(io.env);
      return await withDatabase(config, async (db) => {
        const result = await cmd.run(db, { type: 'cli' }, Object.fromEntries(Object.entries(f).map(([k, v]) => [k, s(v)])));
        io.out(f.json ? JSON.stringify(result) : cmd.human(result));
        return 0;
      });
    }
    throw new UsageError(`unknown command ${JSON.stringify(command)}`);
  } catch (e) {
    if (e instanceof UsageError) {
      io.err(`surveyor: ${e.message} (surveyor --help)`);
      return 2;
    }
    if (e instanceof AppError) {
      io.err(`surveyor: ${e.code}: ${e.message}`);
      return 2;
    }
    if (e instanceof ConfigError || e instanceof DataDirLockedError || e instanceof SchemaTooNewError || e instanceof MigrationChangedError) {
      io.err(`surveyor: ${e.message}`);
      return 1;
    }
    io.err(`surveyor: unexpected failure: ${(e as Error).stack ?? String(e)}`);
    return 1;
  }
}

async function withDatabase(config: Config, fn: (db: Kysely<DB>, applied: { applied: number[]; version: number }, database: Database) => Promise<number>): Promise<number> {
  const database = await openDatabase({ url: config.databaseUrl, dataDir: config.databaseUrl ? undefined : config.dataDir, poolMax: 2 });
  try {
    const applied = await migrate(database);
    return await fn(database.db, applied, database);
  } finally {
    await database.close();
  }
}

/** Signals caught from the first moment; `onSignal` is replaced once the process is up. */
function catchSignals() {
  const state: { signalled: string | null; onSignal: (signal: string) => void } = { signalled: null, onSignal: (signal) => (state.signalled = signal) };
  process.once('SIGINT', () => state.onSignal('SIGINT'));
  process.once('SIGTERM', () => state.onSignal('SIGTERM'));
  return state;
}

/** The worker process: migrations, then the job scheduler on its own pool until SIGTERM/SIGINT. */
async function worker(config: Config, io: CliIO): Promise<number> {
  const logger: Logger = createLogger(config.logLevel);
  const signals = catchSignals();
  const database = await openDatabase({ url: config.databaseUrl, dataDir: config.databaseUrl ? undefined : config.dataDir, poolMax: 2, logger });
  let jobs: RunningJobs;
  try {
    await migrate(database, { logger });
    await checkConnectionBudget(database, logger, config.dbPoolMax + 1, 'worker');
    // On PostgreSQL the jobs open their own pool; the embedded database is this one.
    jobs = await startJobs(config, logger, database);
  } catch (e) {
    await database.close();
    throw e;
  }
  io.out(`Surveyor ${config.version} worker running ${jobs.runner.names.join(', ')} (database: ${database.kind === 'pglite' ? `embedded, ${config.dataDir}` : 'PostgreSQL'})`);
  return new Promise<number>((resolve) => {
    signals.onSignal = (signal: string) => {
      logger.info({ signal }, 'shutting down: letting running jobs finish');
      const force = setTimeout(() => {
        logger.error('shutdown took too long; exiting');
        process.exit(1);
      }, (config.jobs.shutdownSeconds + 10) * 1000);
      force.unref();
      jobs
        .close()
        .then(() => database.close())
        .then(
          () => resolve(0),
          (err) => {
            logger.error({ err }, 'shutdown failed');
            resolve(1);
          },
        );
    };
    if (signals.signalled) signals.onSignal(signals.signalled);
  });
}

async function serve(config: Config, io: CliIO): Promise<number> {
  const logger: Logger = createLogger(config.logLevel);
  // Signals are caught from the first moment: one arriving during start-up stops the server as
  // soon as it is up, instead of killing the process mid-migration.
  let signalled: string | null = null;
  let onSignal: (signal: string) => void = (signal) => (signalled = signal);
  process.once('SIGINT', () => onSignal('SIGINT'));
  process.once('SIGTERM', () => onSignal('SIGTERM'));
  const server = await startServer(config, logger, io.out);
  return new Promise<number>((resolve) => {
    onSignal = (signal: string) => {
      logger.info({ signal }, 'shutting down: draining requests');
      const force = setTimeout(() => {
        logger.error('shutdown took too long; exiting');
        process.exit(1); // a hung request or job must not keep the process alive
      }, (config.jobsInWeb ? config.jobs.shutdownSeconds + 10 : 10) * 1000);
      force.unref();
      server.close().then(
        () => resolve(0),
        (err) => {
          logger.error({ err }, 'shutdown failed');
          resolve(1);
        },
      );
    };
    if (signalled) onSignal(signalled);
  });
}
