import type { EventKindName } from '@surveyor/contract';
import type { FastifyInstance } from 'fastify';
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { Config } from './config.js';
import type { Database } from './db/database.js';
import type { DB } from './db/schema.js';
import type { JobDefinition, JobRunner } from './jobs/runner.js';

/** What a module's routes get from the web process. */
export interface WebDeps {
  config: Config;
  database: Database;
  db: Kysely<DB>;
  logger: Logger;
  /** SERVICE_SECRET_KEY (or the generated one): signs cursors, encrypts stored secrets. */
  secretKey: Buffer;
  /** Runs a job now (the admin endpoints): the scheduler's own runner, ticking or not per SERVICE_JOBS_IN_WEB. */
  jobs: JobRunner;
}

/** What a module's jobs get from the process that runs them. */
export interface JobDeps {
  config: Config;
  secretKey: Buffer;
}

/** The streams a CLI verb writes to, and the environment it reads its configuration from. */
export interface CliIO {
  out(text: string): void;
  err(text: string): void;
  env: Record<string, string | undefined>;
}

/** A top-level `surveyor` command a module adds (for example `surveyor admin …`). */
export interface CliVerb {
  /** Lines of the usage text, each `verb [sub-command] args`; `surveyor VERB SUB --help` prints the lines of SUB. */
  usage: string[];
  /** What the verb does, for `surveyor VERB --help` (a few lines). */
  help: string;
  /** Runs the verb with the arguments after it; resolves to the exit code. Throws UsageError for bad arguments. */
  run(args: string[], io: CliIO, config: Config): Promise<number>;
}

/**
 * A domain: one folder whose `index.ts` exports its module. The composition root (`main.ts`)
 * lists the modules; the web process registers their routes in list order (auth first: its
 * hook authenticates every route), the job runner takes their jobs, the CLI their verbs.
 */
export interface Module {
  name: string;
  routes?(app: FastifyInstance, deps: WebDeps): void | Promise<void>;
  jobs?(deps: JobDeps): JobDefinition[];
  /** The event kinds this domain emits (the kinds and their data schemas are in the contract's events.ts). */
  events?: readonly EventKindName[];
  cli?: Record<string, CliVerb>;
}
