import { readFileSync } from 'node:fs';
import type { Logger } from 'pino';
import { ConfigError, describeConfig, loadConfig } from '../config.js';
import { DataDirLockedError } from '../db/data-dir-lock.js';
import { MigrationChangedError, SchemaTooNewError } from '../db/migrate.js';
import { withMigratedDatabase } from '../db/open.js';
import { AppError } from '../errors.js';
import { jobStatus } from '../jobs/status.service.js';
import { createLogger } from '../logger.js';
import { cliVerbs, openRuntime, startJobs, startServer, startWorker } from '../main.js';
import type { CliIO, CliVerb } from '../module.js';
import { UsageError, parseFlags } from './args.js';

export type { CliIO } from '../module.js';

// The `surveyor` command: parses arguments and calls the composition root (main.ts). Verbs of
// a domain (`admin …`) come from its module.

const usage = () => `Usage: surveyor <command> [options]      surveyor <command> --help      surveyor --version

Commands:
  serve                                   Run the web process (migrates first; runs the jobs unless SERVICE_JOBS_IN_WEB=false)
  worker                                  Run the scheduled jobs only (migrates first)
  jobs list [--json]                      Every scheduled job: last run, duration, outcome ("never" when it has not run yet)
  jobs run NAME [--json]                  Run a job now, as its schedule would (waits for a run in progress; exit 1 when it fails)
  migrate [--json]                        Apply pending database migrations and exit
  config [--json]                         List every environment variable with its default
${Object.values(cliVerbs()).flatMap((v) => v.usage.map((l) => `  ${l}`)).join('\n')}

ORG is an organisation id or name. The database is DATABASE_URL, or the embedded one in SERVICE_DATA_DIR.
Exit codes: 0 done, 1 failure, 2 bad arguments or refused request.`;

/** The built-in commands: their usage lines and what they do (`surveyor COMMAND --help`). */
const builtins: Record<string, Pick<CliVerb, 'usage' | 'help'>> = {
  serve: {
    usage: ['serve'],
    help: `Runs the web process: migrates the database, then listens on SERVICE_HOST:SERVICE_PORT, and
runs the scheduled jobs unless SERVICE_JOBS_IN_WEB=false. The log is JSON on stdout. SIGTERM or
SIGINT stops it: no new job ticks, running ones finish (SERVICE_JOBS_SHUTDOWN_SECONDS), requests
drain (up to 10 s), then it exits 0. npm start runs this command.`,
  },
  worker: {
    usage: ['worker'],
    help: `Runs the scheduled jobs only, on their own database pool (migrates first). Run it with
SERVICE_JOBS_IN_WEB=false on the web processes. SIGTERM or SIGINT lets running jobs finish
(SERVICE_JOBS_SHUTDOWN_SECONDS), then it exits 0.`,
  },
  jobs: {
    usage: ['jobs list [--json]', 'jobs run NAME [--json]'],
    help: `list: every scheduled job with its interval, last run, duration, outcome ("never" until it has
run), attempts and error. run NAME: runs a job now as its schedule would (same lock, retries and
status rows); waits for a run in progress elsewhere. Exit 0 when the run succeeded, 1 when it
failed, 2 for an unknown job. For cron or a Kubernetes Job.`,
  },
  migrate: {
    usage: ['migrate [--json]'],
    help: `Applies pending database migrations and exits; prints the schema version and what was applied
(--json: {"applied":[…],"version":N}). serve and worker migrate at start too.`,
  },
  config: {
    usage: ['config [--json]'],
    help: 'Lists every environment variable the service reads, with its default and meaning.',
  },
};

/** `surveyor COMMAND [SUB] --help`: the usage lines of the command (of SUB when given) and what it does. */
function commandHelp(command: string, verb: Pick<CliVerb, 'usage' | 'help'>, args: string[]): string {
  const sub = args.find((a) => !a.startsWith('-'));
  const lines = verb.usage.filter((l) => sub !== undefined && l.startsWith(`${command} ${sub}`));
  return `Usage:\n${(lines.length ? lines : verb.usage).map((l) => `  surveyor ${l}`).join('\n')}\n\n${verb.help}`;
}

/** SERVICE_VERSION when set, else the package's version. */
function version(env: CliIO['env']): string {
  if (env.SERVICE_VERSION) return env.SERVICE_VERSION;
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
  return pkg.version;
}

/** Runs one CLI invocation; resolves to the exit code (serve and worker resolve when they stop). */
export async function runCli(argv: string[], io: CliIO): Promise<number> {
  const [command, ...rest] = argv;
  try {
    if (!command || command === '--help' || command === '-h' || (command === 'help' && rest.length === 0)) {
      io.out(usage());
      return command ? 0 : 2;
    }
    if (command === '--version' || command === '-V' || command === 'version') {
      io.out(`surveyor ${version(io.env)}`);
      return 0;
    }
    if (command === 'help' || rest.includes('--help') || rest.includes('-h')) {
      const [name, args] = command === 'help' ? [rest[0]!, rest.slice(1)] : [command, rest];
      const verb = builtins[name] ?? cliVerbs()[name];
      if (!verb) throw new UsageError(`unknown command ${JSON.stringify(name)}`);
      io.out(commandHelp(name, verb, args));
      return 0;
    }
    if (command === 'config') {
      const f = parseFlags(rest, { json: 'boolean' });
      const vars = describeConfig();
      io.out(f.json ? JSON.stringify(vars) : vars.map((v) => `${v.name}=${v.default ?? ''}\n    ${v.description}`).join('\n'));
      return 0;
    }
    if (command === 'serve' || command === 'worker') {
      parseFlags(rest, {});
      const config = loadConfig(io.env);
      const logger = createLogger(config.logLevel);
      // Signals are caught from the first moment: one arriving during start-up stops the process as
      // soon as it is up, instead of killing it mid-migration.
      const signals = catchSignals();
      const running = command === 'serve' ? await startServer(config, logger, (text) => io.err(text.replace(/\n$/, ''))) : await startWorker(config, logger);
      const drainSeconds = command === 'worker' || config.jobsInWeb ? config.jobs.shutdownSeconds + 10 : 10;
      return await untilSignalled(signals, logger, drainSeconds, () => running.close(), command === 'serve' ? 'draining requests' : 'letting running jobs finish');
    }
    if (command === 'jobs') return await jobs(rest, io);
    if (command === 'migrate') {
      const f = parseFlags(rest, { json: 'boolean' });
      return await withMigratedDatabase(loadConfig(io.env), async (_database, applied) => {
        io.out(f.json ? JSON.stringify(applied) : `Schema at version ${applied.version}; applied ${applied.applied.length ? applied.applied.join(', ') : 'nothing'}.`);
        return 0;
      });
    }
    const verb = cliVerbs()[command];
    if (verb) return await verb.run(rest, io, loadConfig(io.env));
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

/** `surveyor jobs list|run`: the job runner of this configuration, not ticking. */
async function jobs([sub, ...args]: string[], io: CliIO): Promise<number> {
  if (sub !== 'list' && sub !== 'run') throw new UsageError(`unknown jobs command ${JSON.stringify(sub ?? '')} (list or run)`);
  const name = sub === 'run' ? args.shift() : undefined;
  if (sub === 'run' && (!name || name.startsWith('--'))) throw new UsageError('jobs run needs a job name');
  const f = parseFlags(args, { json: 'boolean' });
  const config = loadConfig(io.env);
  const logger = createLogger(config.logLevel === 'info' ? 'warn' : config.logLevel);
  const rt = await openRuntime(config, logger, 2);
  try {
    const running = await startJobs(rt, { start: false });
    try {
      const { runner } = running;
      if (sub === 'list') {
        const rows = await jobStatus(rt.database.db, runner.definitions, 'all');
        io.out(
          f.json
            ? JSON.stringify(rows)
            : rows
                .map((r) => {
                  const org = r.organisation_id ? `  org ${r.organisation_id}` : '';
                  if (r.outcome === 'never') return `${r.job.padEnd(22)} never run (every ${r.interval_seconds} s)`;
                  const last = r.last_run_at ? `  last run ${r.last_run_at}` : '  no run finished yet';
                  if (r.outcome === 'running' || r.outcome === 'interrupted') return `${r.job.padEnd(22)} ${r.outcome} (started ${r.started_at})${last}${org}`;
                  return `${r.job.padEnd(22)} ${r.outcome.padEnd(6)} ${r.last_run_at}  ${String(r.duration_ms).padStart(7)} ms  attempts ${r.attempts}${org}${r.error ? `  ${r.error}` : ''}`;
                })
                .join('\n'),
        );
        return 0;
      }
      if (!runner.definition(name!)) throw new UsageError(`unknown job ${JSON.stringify(name)} (one of ${runner.names.join(', ')})`);
      const r = await runner.runNow(name!);
      const { result, cause: _cause, ...summary } = r;
      io.out(f.json ? JSON.stringify({ ...summary, detail: result?.detail ?? {} }) : `${name}: ${r.outcome} in ${r.durationMs} ms (attempts ${r.attempts})${r.error ? `: ${r.error}` : ''} ${JSON.stringify(result?.detail ?? {})}`);
      return r.outcome === 'ok' ? 0 : 1;
    } finally {
      await running.close();
    }
  } finally {
    await rt.database.close();
  }
}

interface Signals {
  signalled: string | null;
  onSignal: (signal: string) => void;
}

/** Signals caught from the first moment; `onSignal` is replaced once the process is up. */
function catchSignals(): Signals {
  const state: Signals = { signalled: null, onSignal: (signal) => (state.signalled = signal) };
  process.once('SIGINT', () => state.onSignal('SIGINT'));
  process.once('SIGTERM', () => state.onSignal('SIGTERM'));
  return state;
}

/** Resolves at SIGTERM/SIGINT once `close` is done; a close that hangs past `seconds` exits the process. */
function untilSignalled(signals: Signals, logger: Logger, seconds: number, close: () => Promise<void>, what: string): Promise<number> {
  return new Promise<number>((resolve) => {
    signals.onSignal = (signal: string) => {
      logger.info({ signal }, `shutting down: ${what}`);
      const force = setTimeout(() => {
        logger.error('shutdown took too long; exiting');
        process.exit(1); // a hung request or job must not keep the process alive
      }, seconds * 1000);
      force.unref();
      close().then(
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
