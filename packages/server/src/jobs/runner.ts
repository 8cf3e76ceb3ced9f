import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import { ZodError } from 'zod';
import type { Database } from '../db/database.js';
import type { DB } from '../db/schema.js';
import { AppError } from '../errors.js';
import { announceJobRun } from '../events/changes.js';
import * as status from './status.repo.js';

/** What a job reports for one organisation it worked on. */
export interface OrganisationOutcome {
  ok: boolean;
  detail?: Record<string, unknown>;
  error?: string;
  /** What the work returned, for a caller of `runNow` (not recorded). */
  value?: unknown;
  /** The failure itself, for a caller of `runNow` (only its redacted text is recorded). */
  cause?: unknown;
}

/** What a tick of a job reports: a summary, and per organisation where the job works per organisation. */
export interface JobResult {
  detail?: Record<string, unknown>;
  organisations?: Map<string, OrganisationOutcome>;
}

export interface JobContext {
  db: Kysely<DB>;
  logger: Logger;
  /** The time the tick takes as "now" (injectable in tests). */
  now(): Date;
  /** Set when the process is stopping: a long job checks it between steps. */
  signal: AbortSignal;
  /** Set on a run forced for one organisation (`runNow`): a per-organisation job works on it alone. */
  organisationId?: string;
  /** Set on a run forced for one thing of that organisation (a cloud account): the job works on it alone. */
  subject?: string;
}

/**
 * A scheduled job (spec 1.1): its name, its interval, and what one tick does. A new job plugs in
 * by adding one definition to the runner's list.
 */
export interface JobDefinition {
  name: string;
  intervalMs: number;
  /** `organisation`: the job works organisation by organisation and can be run now for one (`runNow`). */
  scope?: 'organisation' | 'deployment';
  /**
   * A run for one organisation takes that organisation's lock (`job:<name>:<organisation>`), not
   * the job's: it does not wait for another organisation's run, nor for the scheduled tick. Only
   * for a job whose work serialises itself per organisation in the database.
   */
  lockPerOrganisation?: boolean;
  run(ctx: JobContext): Promise<JobResult | void>;
}

/** How long `runNow` waits for a job's lock held by another run before giving up. */
export const RUN_NOW_WAIT_MS = 120_000;

/** Spec 1.1 rule 3: 2 minutes or less → one attempt; above → three, after 5 s and then 25 s. */
export function retryPolicy(intervalMs: number): { attempts: number; backoffMs: number[] } {
  return intervalMs <= 120_000 ? { attempts: 1, backoffMs: [] } : { attempts: 3, backoffMs: [5_000, 25_000] };
}

/** A tick that failed for every organisation it worked on; each organisation's outcome is still recorded. */
export class OrganisationsFailed extends Error {
  constructor(
    message: string,
    readonly organisations: Map<string, OrganisationOutcome>,
    readonly transient: boolean,
  ) {
    super(message);
    this.name = 'OrganisationsFailed';
  }
}

/** A failure of an outside provider (cloud API, advisory feed, notification endpoint). */
export class ProviderError extends Error {
  constructor(
    message: string,
    readonly status?: number,
  ) {
    super(message);
    this.name = 'ProviderError';
  }
}

const TRANSIENT_NODE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EAI_AGAIN', 'ENOTFOUND', 'EHOSTUNREACH', 'ENETUNREACH', 'UND_ERR_SOCKET', 'UND_ERR_CONNECT_TIMEOUT']);

/**
 * Whether a failure is worth another attempt: a database blip (connection lost or refused, the
 * server shutting down or out of connections, a serialization failure or deadlock), a provider's
 * 5xx, 408 or 429, a timeout. A 4xx, a validation failure or a refusal of ours is not.
 */
export function isTransient(err: unknown): boolean {
  if (err instanceof ZodError || err instanceof AppError) return false;
  if (err instanceof OrganisationsFailed) return err.transient;
  if (err instanceof ProviderError) return err.status === undefined || err.status >= 500 || err.status === 408 || err.status === 429;
  const e = err as { code?: unknown; name?: unknown; message?: unknown };
  if (e?.name === 'TimeoutError' || e?.name === 'AbortError') return true;
  // fetch() rejects with TypeError('fetch failed'), its cause carrying the network error's code.
  const cause = (e as { cause?: { code?: unknown } } | null)?.cause;
  const code = typeof e?.code === 'string' ? e.code : typeof cause?.code === 'string' ? cause.code : '';
  if (TRANSIENT_NODE_CODES.has(code)) return true;
  // SQLSTATE: 08 connection exception, 57P01-57P03 shutdown / cannot connect now, 53300 too many
  // connections, 40001 serialization failure, 40P01 deadlock.
  if (/^08/.test(code) || ['57P01', '57P02', '57P03', '53300', '40001', '40P01'].includes(code)) return true;
  return typeof e?.message === 'string' && /Connection terminated|connection timeout|timeout exceeded when trying to connect/i.test(e.message);
}

export interface TickResult {
  job: string;
  /** False when another process held the job's lock: it ran the tick, this one skipped it. */
  ran: boolean;
  outcome?: 'ok' | 'failed';
  attempts?: number;
  durationMs?: number;
  error?: string;
  result?: JobResult;
  /** The failure of the run as a whole (not printed; `error` is its redacted text). */
  cause?: unknown;
}

export interface RunnerOptions {
  /** The worker's own database handle (its own pool, separate from the web query pool). */
  database: Database;
  logger: Logger;
  jobs: JobDefinition[];
  now?: () => Date;
  /** How a retry waits (tests pass one that records instead of sleeping). */
  sleep?: (ms: number) => Promise<void>;
  /** How long `runNow` waits for a lock another run holds (default RUN_NOW_WAIT_MS). */
  lockWaitMs?: number;
  /** Divides every interval and retry wait of the schedule (SERVICE_JOBS_TIME_SCALE; tests and demos). */
  timeScale?: number;
}

/** Waits `ms`, or less when `signal` aborts; leaves no listener behind either way. */
const realSleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const done = () => {
      clearTimeout(t);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const t = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });

/**
 * The change stream's stored entries for a run's end (issue 30): only where a status Settings →
 * Jobs shows changed, since the stream is replayed on resume and kept for days. The job as a whole
 * (a scheduled run) going from no run, or from the other outcome, to `ok` (`finished`) or
 * `failed`: to every organisation. An organisation's own row doing so: to that organisation (not
 * again when the job as a whole said the same to everyone). A healthy job ticking writes nothing
 * here; each run's start and end reach the live streams through announceJobRun instead. Returns
 * whether the end was stored for everyone the run's notice would reach.
 */
async function logTransitions(
  db: Kysely<DB>,
  job: string,
  before: Map<string | null, 'ok' | 'failed'>,
  run: { scope: string | null; failed: boolean; organisations: Map<string, OrganisationOutcome> | undefined },
): Promise<boolean> {
  const action = (failed: boolean) => (failed ? 'failed' : 'finished');
  let whole: 'finished' | 'failed' | null = null;
  if (run.scope === null && before.get(null) !== (run.failed ? 'failed' : 'ok')) {
    whole = action(run.failed);
    await status.logJobChange(db, job, null, whole);
  }
  let own = false;
  for (const [organisationId, o] of run.organisations ?? []) {
    if (before.get(organisationId) === (o.ok ? 'ok' : 'failed') || action(!o.ok) === whole) continue;
    await status.logJobChange(db, job, organisationId, action(!o.ok));
    if (organisationId === run.scope) own = true;
  }
  return run.scope === null ? whole !== null : own;
}

/**
 * Runs scheduled jobs. Each job ticks on its interval; a tick first takes the job's advisory lock
 * in the shared database, so with any number of processes one executes a given tick and the
 * others skip it. Failures are retried per `retryPolicy` (in memory only: a restart resumes the
 * normal schedule). Every executed tick records its status.
 */
export class JobRunner {
  private readonly jobs = new Map<string, JobDefinition>();
  /** Each job's next scheduled tick. */
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private readonly running = new Set<Promise<TickResult>>();
  private readonly stopping = new AbortController();
  private readonly now: () => Date;

  private readonly timeScale: number;

  constructor(private readonly opts: RunnerOptions) {
    for (const j of opts.jobs) this.jobs.set(j.name, j);
    this.now = opts.now ?? (() => new Date());
    this.timeScale = opts.timeScale ?? 1;
  }

  get names(): string[] {
    return [...this.jobs.keys()];
  }

  definition(name: string): JobDefinition | undefined {
    return this.jobs.get(name);
  }

  /** Every job this runner knows, in the order they were given. */
  get definitions(): JobDefinition[] {
    return [...this.jobs.values()];
  }

  /**
   * Starts ticking every job: once soon after start (staggered by 0.5 s), then at each boundary of
   * its interval on the wall clock (plus the same stagger), so every process ticks a job in the
   * same slot. A scheduled tick claims its slot in the database (`job_slots`): with any number of
   * processes, one executes a given tick, and a slot another process ran is skipped, not run again.
   */
  start(): void {
    let i = 0;
    for (const job of this.jobs.values()) {
      const interval = this.interval(job);
      const phase = Math.round((500 * i) / this.timeScale) % interval;
      this.later(job.name, 1_000 + 500 * i++, () => this.scheduled(job, interval, phase));
    }
    this.opts.logger.info({ jobs: this.names, ...(this.timeScale === 1 ? {} : { timeScale: this.timeScale }) }, 'job scheduler started');
  }

  /** A job's interval on this runner's clock (SERVICE_JOBS_TIME_SCALE divides it). */
  private interval(job: JobDefinition): number {
    return Math.max(1, Math.round(job.intervalMs / this.timeScale));
  }

  private later(name: string, ms: number, fn: () => Promise<void>): void {
    if (this.stopping.signal.aborted) return;
    const t = setTimeout(() => void fn(), ms);
    t.unref();
    this.timers.set(name, t);
  }

  /**
   * One scheduled tick, then the next: at the following slot boundary, or at once when this tick
   * ran past that boundary (the current slot is then still this process's to try; the slots it
   * overran in full are skipped). `intended` is the slot the timer was set for: a timer firing a
   * millisecond early still ticks its slot.
   */
  private async scheduled(job: JobDefinition, interval: number, phase: number, intended?: number): Promise<void> {
    if (this.stopping.signal.aborted) return;
    const slotAt = (t: number) => Math.floor((t - phase) / interval);
    const slot = Math.max(intended ?? 0, slotAt(Date.now()));
    await this.track(this.execute(job, { wait: false, slot: { index: slot, intervalMs: interval } })).catch((err) => this.opts.logger.error({ err, job: job.name }, 'job tick failed outside the job'));
    const now = Date.now();
    const current = slotAt(now);
    const next = current > slot ? current : slot + 1;
    this.later(job.name, current > slot ? 0 : next * interval + phase - now, () => this.scheduled(job, interval, phase, next));
  }

  /** Runs one tick of a job now, if this process gets its lock (the scheduler's way: a held lock skips). */
  tick(name: string): Promise<TickResult> {
    return this.track(this.job(name).then((job) => this.execute(job, { wait: false })));
  }

  /**
   * The one way to run a job on demand (the admin endpoints, `surveyor jobs run`): the same lock,
   * retries, status records and `job.failed` as a scheduled tick. A lock held by another run is
   * waited for (bounded; then 409 `conflict`), so two forced runs both succeed and the second finds
   * the work done. With `organisationId` a per-organisation job works on that organisation alone
   * and records only its row. `trigger` is noted in the recorded detail.
   */
  runNow(name: string, opts: { organisationId?: string; trigger?: string; subject?: string } = {}): Promise<TickResult> {
    return this.track(
      this.job(name).then((job) => {
        if (opts.organisationId && job.scope !== 'organisation') throw new AppError('conflict', `Job ${name} works on the whole deployment; it cannot run for one organisation.`);
        return this.execute(job, { wait: true, ...opts });
      }),
    );
  }

  /**
   * Runs a per-organisation job now for one organisation (runNow) and returns what its work
   * returned; a failure throws the work's own error, so a refusal keeps its problem code.
   */
  async runFor<T>(name: string, organisationId: string, trigger: string, subject?: string): Promise<T> {
    const r = await this.runNow(name, { organisationId, trigger, ...(subject ? { subject } : {}) });
    const o = r.result?.organisations?.get(organisationId);
    if (r.outcome === 'ok' && o?.ok) return o.value as T;
    throw o?.cause ?? r.cause ?? new Error(o?.error ?? r.error ?? `job ${name} failed`);
  }

  private async job(name: string): Promise<JobDefinition> {
    const job = this.jobs.get(name);
    if (!job) throw new AppError('not_found', `No job ${name} (one of ${this.names.join(', ')}).`);
    return job;
  }

  private track(p: Promise<TickResult>): Promise<TickResult> {
    const tracked = p.finally(() => this.running.delete(tracked));
    this.running.add(tracked);
    return tracked;
  }

  /** The job's lock: at once, or (`wait`) polled until it frees or the wait runs out. */
  private async lock(job: JobDefinition, wait: boolean, organisationId?: string): Promise<(() => Promise<void>) | null> {
    const deadline = Date.now() + (this.opts.lockWaitMs ?? RUN_NOW_WAIT_MS);
    const key = organisationId && job.lockPerOrganisation ? `job:${job.name}:${organisationId}` : `job:${job.name}`;
    for (;;) {
      const release = await this.opts.database.tryLock(key);
      if (release || !wait) return release;
      if (Date.now() >= deadline || this.stopping.signal.aborted) {
        throw new AppError('conflict', `Job ${job.name} is still running elsewhere after ${Math.round((this.opts.lockWaitMs ?? RUN_NOW_WAIT_MS) / 1000)} s; try again when it has finished.`);
      }
      await realSleep(250, this.stopping.signal);
    }
  }

  private async execute(job: JobDefinition, run: { wait: boolean; organisationId?: string; trigger?: string; subject?: string; slot?: { index: number; intervalMs: number } }): Promise<TickResult> {
    const { database, logger } = this.opts;
    const release = await this.lock(job, run.wait, run.organisationId);
    if (!release) {
      logger.debug({ job: job.name }, 'job tick skipped: another process holds its lock');
      return { job: job.name, ran: false };
    }
    try {
      if (run.slot && !(await status.claimSlot(database.db, job.name, run.slot.intervalMs, run.slot.index))) {
        logger.debug({ job: job.name, slot: run.slot.index }, 'job tick skipped: another process ran this slot');
        return { job: job.name, ran: false };
      }
      const policy = retryPolicy(job.intervalMs);
      const started = this.now();
      // The start is on record before any work: a run killed mid-way shows as interrupted.
      const scope = run.organisationId ?? null;
      await status.recordStart(database.db, job.name, scope, started);
      await announceJobRun(database.db, job.name, scope, 'started', started).catch((err) => logger.warn({ err, job: job.name }, 'could not announce the job start'));
      const t0 = performance.now();
      let attempts = 0;
      let failed = false;
      let failure: unknown;
      let result: JobResult | undefined;
      for (;;) {
        attempts++;
        try {
          result = (await job.run({ db: database.db, logger: logger.child({ job: job.name }), now: this.now, signal: this.stopping.signal, ...(run.organisationId ? { organisationId: run.organisationId } : {}), ...(run.subject ? { subject: run.subject } : {}) })) ?? undefined;
          failed = false;
          break;
        } catch (err) {
          failed = true;
          failure = err;
          const retry = attempts < policy.attempts && isTransient(err) && !this.stopping.signal.aborted;
          logger.warn({ err, job: job.name, attempt: attempts, retry }, 'job attempt failed');
          if (!retry) break;
          const wait = policy.backoffMs[attempts - 1]!;
          await (this.opts.sleep ? this.opts.sleep(wait) : realSleep(Math.round(wait / this.timeScale), this.stopping.signal));
          if (this.stopping.signal.aborted) break; // stopped during the wait: no further attempt
        }
      }
      const durationMs = Math.round(performance.now() - t0);
      const error = failed ? status.errorText(failure) : undefined;
      const outcome = failed ? 'failed' : 'ok';
      const trigger = run.trigger ? { trigger: run.trigger } : {};
      const before = await status.outcomes(database.db, job.name);
      let organisations = result?.organisations ?? (failed && failure instanceof OrganisationsFailed ? failure.organisations : undefined);
      if (run.organisationId) {
        // A run for one organisation is that organisation's run: the job's own row stays the scheduler's.
        if (!organisations?.has(run.organisationId)) organisations = new Map([[run.organisationId, failed ? { ok: false, error, cause: failure } : { ok: true, detail: result?.detail ?? {} }]]);
      } else {
        await status.record(database.db, { job: job.name, organisationId: null, at: started, durationMs, outcome, error, attempts, detail: { ...(result?.detail ?? {}), ...trigger } });
      }
      for (const [organisationId, o] of organisations ?? []) {
        await status.record(database.db, { job: job.name, organisationId, at: started, durationMs, outcome: o.ok ? 'ok' : 'failed', error: o.error, attempts, detail: { ...(o.detail ?? {}), ...trigger } });
      }
      const stored = await logTransitions(database.db, job.name, before, { scope, failed, organisations }).catch((err) => {
        logger.warn({ err, job: job.name }, 'could not log the job end');
        return false;
      });
      if (!stored) {
        const own = scope === null ? undefined : organisations?.get(scope);
        await announceJobRun(database.db, job.name, scope, failed || own?.ok === false ? 'failed' : 'finished', this.now()).catch((err) => logger.warn({ err, job: job.name }, 'could not announce the job end'));
      }
      await status
        .announceFailures(database.db, job.name, before, { failed: failed && !run.organisationId, error, attempts, organisations })
        .catch((err) => logger.warn({ err, job: job.name }, 'could not record job.failed events'));
      const slot = run.slot ? { slot: run.slot.index } : {};
      if (outcome === 'failed') logger.error({ job: job.name, attempts, error, ...slot }, 'job failed');
      else logger.debug({ job: job.name, durationMs, detail: result?.detail, ...slot }, 'job ran');
      // A failed run still reports each organisation's outcome (runFor finds its own failure there).
      const reported = result ?? (organisations ? { organisations } : undefined);
      return { job: job.name, ran: true, outcome, attempts, durationMs, ...(error ? { error, cause: failure } : {}), ...(reported ? { result: reported } : {}) };
    } finally {
      await release();
    }
  }

  /**
   * Stops: no new ticks; ticks in progress finish (their retry waits are cut short), up to
   * `timeoutMs`; their locks are released as they end.
   */
  async stop(timeoutMs = 30_000): Promise<void> {
    this.stopping.abort();
    for (const t of this.timers.values()) clearTimeout(t);
    this.timers.clear();
    if (this.running.size === 0) return;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), timeoutMs)));
    const drained = await Promise.race([Promise.allSettled([...this.running]).then(() => 'drained' as const), timeout]);
    clearTimeout(timer);
    if (drained === 'timeout') this.opts.logger.warn({ running: this.running.size, timeoutMs }, 'jobs still running at shutdown; closing anyway');
  }
}
