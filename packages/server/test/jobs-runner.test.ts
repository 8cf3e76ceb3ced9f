import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { type Database, openDatabase } from '../src/db/database.js';
import { rfc3339 } from '../src/db/sql.js';
import { AppError } from '../src/errors.js';
import { type JobContext, type JobDefinition, type JobResult, JobRunner, ProviderError, type RunnerOptions, type TickResult, isTransient, retryPolicy } from '../src/jobs/runner.js';
import { perOrganisation } from '../src/jobs/per-organisation.js';
import { createLogger } from '../src/logger.js';
import { TEST_DATABASE_URL, type TestDatabase, createTestDatabase, seedOrg } from './helpers.js';

const MINUTE = 60_000;
const SKIPPED_MSG = 'job tick skipped: another process holds its lock';

let testDb: TestDatabase;
beforeAll(async () => {
  testDb = await createTestDatabase();
});
afterAll(() => testDb.drop());

function deferred<T = void>() {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

const delay = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

async function waitFor(what: string, cond: () => boolean | Promise<boolean>, timeoutMs = 5_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await delay(10);
  }
}

/** A pino logger (the service's own) writing JSON lines to an array. */
function capturingLogger(level = 'debug') {
  const lines: string[] = [];
  const logger = createLogger(level, { write: (line: string) => void lines.push(line) });
  return { logger, lines, entries: () => lines.map((l) => JSON.parse(l) as { level: string; msg: string; [k: string]: unknown }) };
}

function runnerOn(database: Database, jobs: JobDefinition[], over: Partial<RunnerOptions> = {}): JobRunner {
  return new JobRunner({ database, logger: createLogger('silent'), jobs, ...over });
}

/** A retry wait that records how long it was asked to wait and returns at once. */
function recordingSleep() {
  const slept: number[] = [];
  return { slept, sleep: async (ms: number) => void slept.push(ms) };
}

/** A job whose every tick blocks until the test opens the gate (so two ticks truly overlap). */
function gatedJob(name: string, intervalMs = MINUTE) {
  let gate = deferred();
  let entered = deferred();
  const job = {
    name,
    intervalMs,
    calls: 0,
    signals: [] as AbortSignal[],
    async run(ctx: JobContext): Promise<JobResult> {
      job.calls++;
      job.signals.push(ctx.signal);
      entered.resolve();
      await gate.promise;
      return { detail: { call: job.calls } };
    },
    /** Resolves once a tick's handler has started. */
    entered: () => entered.promise,
    open() {
      gate.resolve();
      gate = deferred();
      entered = deferred();
    },
  };
  return job;
}

/** A job failing with `errors[i]` on its i-th attempt, then succeeding. */
function failingJob(name: string, intervalMs: number, errors: (() => unknown)[]) {
  const job = {
    name,
    intervalMs,
    calls: 0,
    async run(): Promise<JobResult> {
      const make = errors[job.calls++];
      if (make) throw make();
      return { detail: { succeededOnCall: job.calls } };
    },
  };
  return job;
}

interface StatusRow {
  outcome: string;
  attempts: number;
  error: string | null;
  duration_ms: number;
  detail: Record<string, unknown>;
  last_run_at: string;
  last_ok_at: string | null;
}

async function statusRows(job: string, organisationId: string | null = null): Promise<StatusRow[]> {
  const r = await sql<StatusRow>`
    select outcome, attempts, error, duration_ms, detail, ${rfc3339('last_run_at')} as last_run_at, ${rfc3339<string | null>('last_ok_at')} as last_ok_at
    from job_status where job = ${job} and ${organisationId === null ? sql`organisation_id is null` : sql`organisation_id = ${organisationId}::uuid`}`.execute(testDb.database.db);
  return r.rows;
}

async function statusRow(job: string, organisationId: string | null = null): Promise<StatusRow> {
  const rows = await statusRows(job, organisationId);
  expect(rows).toHaveLength(1);
  return rows[0]!;
}

/** Another handle on the test database: on PostgreSQL its own pool (other sessions) on the same schema; PGlite is one process, so the same handle. */
async function secondHandle(): Promise<{ database: Database; close(): Promise<void> }> {
  if (!TEST_DATABASE_URL) return { database: testDb.database, close: async () => {} };
  const database = await openDatabase({ url: TEST_DATABASE_URL, poolMax: 3, searchPath: testDb.schema });
  return { database, close: () => database.close() };
}

/** Ticks `name` on both runners at the same time while its handler blocks; returns both results once the gate is opened. */
async function overlappingTicks(a: JobRunner, b: JobRunner, job: ReturnType<typeof gatedJob>): Promise<[TickResult, TickResult]> {
  const ta = a.tick(job.name);
  const tb = b.tick(job.name);
  await job.entered();
  // The tick that did not get the lock answers without waiting for the gate.
  const first = await Promise.race([ta, tb]);
  expect(first.ran).toBe(false);
  job.open();
  return Promise.all([ta, tb]);
}

describe('a job ticked twice at once runs once: its lock (spec 1.1)', () => {
  it('runs one of two overlapping ticks of one runner and skips the other', async () => {
    const job = gatedJob('lock.same-runner');
    const runner = runnerOn(testDb.database, [job]);
    const results = await overlappingTicks(runner, runner, job);
    expect(results.map((r) => r.ran).sort()).toEqual([false, true]);
    expect(job.calls).toBe(1);
    const ran = results.find((r) => r.ran)!;
    expect(ran).toMatchObject({ job: job.name, outcome: 'ok', attempts: 1, result: { detail: { call: 1 } } });
    expect(results.find((r) => !r.ran)).toEqual({ job: job.name, ran: false });
    // The skipped tick records nothing: one status row, from the tick that ran.
    expect((await statusRow(job.name)).outcome).toBe('ok');
  });

  it('lets another runner on the same database run the job once the tick holding the lock has finished', async () => {
    const other = await secondHandle();
    try {
      const job = gatedJob('lock.released');
      const first = runnerOn(testDb.database, [job]);
      const second = runnerOn(other.database, [job]);
      const [a, b] = await overlappingTicks(first, second, job);
      expect([a.ran, b.ran].sort()).toEqual([false, true]);
      // Whichever runner was skipped now gets the lock; so does the other, after it.
      const skipped = a.ran ? second : first;
      const winner = a.ran ? first : second;
      for (const runner of [skipped, winner]) {
        const tick = runner.tick(job.name);
        await job.entered();
        job.open();
        expect(await tick).toMatchObject({ ran: true, outcome: 'ok' });
      }
      expect(job.calls).toBe(3);
    } finally {
      await other.close();
    }
  });

  it('takes the lock again after a tick whose handler failed (the lock is released on failure too)', async () => {
    const job = failingJob('lock.after-failure', MINUTE, [() => new Error('boom')]);
    const runner = runnerOn(testDb.database, [job]);
    expect(await runner.tick(job.name)).toMatchObject({ ran: true, outcome: 'failed', error: 'boom' });
    expect(await runner.tick(job.name)).toMatchObject({ ran: true, outcome: 'ok' });
  });

  it('refuses to tick a job it does not know, naming the jobs it has', async () => {
    const runner = runnerOn(testDb.database, [gatedJob('lock.known')]);
    await expect(runner.tick('lock.unknown')).rejects.toMatchObject({ code: 'not_found', message: expect.stringContaining('lock.known') });
  });
});

// Two sessions of one PostgreSQL server (CI runs the suite on one).
if (TEST_DATABASE_URL) describe('two runners in separate PostgreSQL sessions on one schema (two processes)', () => {
  it('run a job both tick at the same time exactly once, and the skipping runner logs at debug level that another process holds the lock', async () => {
    const other = await openDatabase({ url: TEST_DATABASE_URL, poolMax: 3, searchPath: testDb.schema });
    try {
      const job = gatedJob('lock.two-sessions');
      const logA = capturingLogger();
      const logB = capturingLogger();
      const a = new JobRunner({ database: testDb.database, logger: logA.logger, jobs: [job] });
      const b = new JobRunner({ database: other, logger: logB.logger, jobs: [job] });
      const [ra, rb] = await overlappingTicks(a, b, job);
      expect([ra.ran, rb.ran].sort()).toEqual([false, true]);
      expect(job.calls).toBe(1);
      const skippedLog = ra.ran ? logB : logA;
      const ranLog = ra.ran ? logA : logB;
      expect(skippedLog.entries()).toContainEqual(expect.objectContaining({ level: 'debug', msg: SKIPPED_MSG, job: job.name }));
      expect(ranLog.entries().map((e) => e.msg)).not.toContain(SKIPPED_MSG);

      // The lock is released with the tick: the runner that was skipped now runs the job.
      const skippedRunner = ra.ran ? b : a;
      const again = skippedRunner.tick(job.name);
      await job.entered();
      job.open();
      expect(await again).toMatchObject({ ran: true, outcome: 'ok' });
      expect(job.calls).toBe(2);
    } finally {
      await other.close();
    }
  });

  it('keys the lock by schema: the same job in two schemas runs in both at the same time', async () => {
    const elsewhere = await createTestDatabase();
    try {
      const job = gatedJob('lock.per-schema');
      const here = runnerOn(testDb.database, [job]);
      const there = runnerOn(elsewhere.database, [job]);
      const th = here.tick(job.name);
      const tt = there.tick(job.name);
      await waitFor('both handlers to start', () => job.calls === 2);
      job.open();
      expect((await Promise.all([th, tt])).map((r) => r.ran)).toEqual([true, true]);
    } finally {
      await elsewhere.drop();
    }
  });
});

describe('two started schedulers on one database run each slot of a job once (spec 1.1)', () => {
  it('ticks a 300 ms job in 10 consecutive slots with two runners: every slot once, none twice', async () => {
    const other = await secondHandle();
    const calls = { a: 0, b: 0 };
    const jobOf = (who: 'a' | 'b') => ({ name: 'slots.two-runners', intervalMs: 300, run: async () => void calls[who]++ });
    const log = capturingLogger();
    // Both runners log to one place; each run's line names the slot it claimed.
    const a = runnerOn(testDb.database, [jobOf('a')], { logger: log.logger });
    const b = runnerOn(other.database, [jobOf('b')], { logger: log.logger });
    const ran = () => log.entries().filter((e) => e.msg === 'job ran').map((e) => e.slot as number);
    try {
      a.start();
      await delay(60); // the second process starts a little later, as a real one would
      b.start();
      await waitFor('ten slots after the first', () => ran().length >= 11, 15_000);
    } finally {
      await a.stop(5_000);
      await b.stop(5_000);
      await other.close();
    }
    // Before slots, each runner ran the job once per interval: about twice as many runs as slots.
    const slots = ran();
    expect(calls.a + calls.b).toBe(slots.length);
    expect(new Set(slots).size).toBe(slots.length);
    // In order, and none skipped but for the few a loaded machine may stall both processes past (a
    // slot is 300 ms; a tick is never made up later): at most 3 of the ~14 slots spanned.
    expect([...slots].sort((x, y) => x - y)).toEqual(slots);
    expect(slots.at(-1)! - slots[0]! + 1 - slots.length).toBeLessThanOrEqual(3);
    // Both took part: the other runner's timer fired in the same slots and skipped them, saying
    // why, or (on a machine stalling one of them) ran the slots the first one missed.
    const skipped = log.entries().filter((e) => e.msg === 'job tick skipped: another process ran this slot').length;
    expect(skipped + Math.min(calls.a, calls.b)).toBeGreaterThan(0);
  });

  it('lets a slot claimed from the future by a process whose clock ran ahead go after two intervals, so the job does not stop everywhere', async () => {
    let calls = 0;
    const job = { name: 'slots.skewed', intervalMs: 200, run: async () => void calls++ };
    // A process an hour ahead claimed its slot a second ago.
    await sql`insert into job_slots (job, interval_ms, slot, claimed_at) values (${job.name}, 200, ${Math.floor((Date.now() + 3_600_000) / 200)}, now() - interval '1 second')`.execute(testDb.database.db);
    const runner = runnerOn(testDb.database, [job]);
    runner.start();
    try {
      await waitFor('a tick despite the slot from the future', () => calls >= 1, 5_000);
    } finally {
      await runner.stop(5_000);
    }
  });

  it('keeps the slots of a compressed schedule (SERVICE_JOBS_TIME_SCALE) apart: a process at the normal scale still runs the job afterwards', async () => {
    let calls = 0;
    const job = { name: 'slots.scales', intervalMs: 6_000, run: async () => void calls++ };
    // At 60× the job ticks every 100 ms, its slot numbers 60 times those of a 6 s schedule.
    const fast = runnerOn(testDb.database, [job], { timeScale: 60 });
    fast.start();
    await waitFor('a few compressed ticks', () => calls >= 3, 10_000);
    await fast.stop(5_000);
    const before = calls;
    const normal = runnerOn(testDb.database, [job]);
    normal.start();
    try {
      await waitFor('the normal schedule\'s first tick', () => calls > before, 5_000);
    } finally {
      await normal.stop(5_000);
    }
  });
});

describe('runNow: a job run on demand takes the same path as a tick', () => {
  /** A per-organisation job counting its work in the organisations it is given, failing for those in `failing`. */
  function perOrgJob(name: string, failing = new Set<string>()) {
    const seen: (string | undefined)[] = [];
    const job: JobDefinition = {
      name,
      intervalMs: MINUTE,
      scope: 'organisation',
      run: async (ctx) => {
        seen.push(ctx.organisationId);
        const ids = ctx.organisationId ? [ctx.organisationId] : [];
        return await perOrganisation(ids, async (id) => {
          if (failing.has(id)) throw new AppError('conflict', `nothing to do for ${id}`);
          return { detail: { done: 1 }, value: { for: id } };
        });
      },
    };
    return { job, seen };
  }

  it('waits for a run in progress elsewhere instead of skipping, then runs (both succeed)', async () => {
    const job = gatedJob('now.waits');
    const runner = runnerOn(testDb.database, [job]);
    const first = runner.tick(job.name);
    await job.entered();
    let forcedDone = false;
    const forced = runner.runNow(job.name).then((r) => ((forcedDone = true), r));
    await delay(600); // several polls of the lock
    expect(forcedDone).toBe(false);
    job.open();
    expect(await first).toMatchObject({ ran: true, outcome: 'ok' });
    await job.entered();
    job.open();
    expect(await forced).toMatchObject({ ran: true, outcome: 'ok', attempts: 1 });
    expect(job.calls).toBe(2);
  });

  it('gives up after its bounded wait with 409 conflict naming the job, and runs nothing', async () => {
    const job = gatedJob('now.gives-up');
    const runner = runnerOn(testDb.database, [job], { lockWaitMs: 400 });
    const first = runner.tick(job.name);
    await job.entered();
    await expect(runner.runNow(job.name)).rejects.toMatchObject({ code: 'conflict', message: expect.stringContaining('now.gives-up') });
    job.open();
    await first;
    expect(job.calls).toBe(1);
  });

  it('for one organisation: hands the job that organisation, records only its row with the trigger, and returns the work\'s value', async () => {
    const org = await seedOrg(testDb.database);
    const { job, seen } = perOrgJob(`now.one-org-${org.organisationId.slice(0, 8)}`);
    const runner = runnerOn(testDb.database, [job]);
    expect(await runner.runFor(job.name, org.organisationId, 'admin')).toEqual({ for: org.organisationId });
    expect(seen).toEqual([org.organisationId]);
    expect(await statusRow(job.name, org.organisationId)).toMatchObject({ outcome: 'ok', attempts: 1, detail: { done: 1, trigger: 'admin' } });
    const whole = await sql`select 1 from job_status where job = ${job.name} and organisation_id is null`.execute(testDb.database.db);
    expect(whole.rows).toEqual([]);
  });

  it('for one organisation that fails: throws the work\'s own error, records it, and announces job.failed to that organisation only', async () => {
    const org = await seedOrg(testDb.database);
    const other = await seedOrg(testDb.database);
    const { job } = perOrgJob(`now.fails-${org.organisationId.slice(0, 8)}`, new Set([org.organisationId]));
    const runner = runnerOn(testDb.database, [job]);
    await expect(runner.runFor(job.name, org.organisationId, 'admin')).rejects.toMatchObject({ code: 'conflict', message: `nothing to do for ${org.organisationId}` });
    expect(await statusRow(job.name, org.organisationId)).toMatchObject({ outcome: 'failed', error: `nothing to do for ${org.organisationId}`, detail: { trigger: 'admin' } });
    const failed = await sql<{ organisation_id: string; data: { job: string; scope: string } }>`
      select organisation_id, data from events where kind = 'job.failed' and subject_id = ${job.name}`.execute(testDb.database.db);
    expect(failed.rows).toEqual([{ organisation_id: org.organisationId, data: expect.objectContaining({ job: job.name, scope: 'organisation' }) }]);
    expect(failed.rows.map((r) => r.organisation_id)).not.toContain(other.organisationId);
  });

  it('refuses to run a job of the whole deployment for one organisation, with 409 conflict', async () => {
    const org = await seedOrg(testDb.database);
    const job = gatedJob('now.deployment');
    await expect(runnerOn(testDb.database, [job]).runNow(job.name, { organisationId: org.organisationId })).rejects.toMatchObject({ code: 'conflict' });
    expect(job.calls).toBe(0);
  });

  it('refuses a job it does not know with not_found, naming the jobs it has', async () => {
    await expect(runnerOn(testDb.database, [gatedJob('now.known')]).runNow('now.unknown')).rejects.toMatchObject({ code: 'not_found', message: expect.stringContaining('now.known') });
  });
});

describe('retryPolicy (spec 1.1 rule 3)', () => {
  it.each([
    { label: '30 s', intervalMs: 30_000, attempts: 1, backoffMs: [] },
    { label: '60 s', intervalMs: 60_000, attempts: 1, backoffMs: [] },
    { label: '120 s', intervalMs: 120_000, attempts: 1, backoffMs: [] },
    { label: '121 s', intervalMs: 121_000, attempts: 3, backoffMs: [5_000, 25_000] },
    { label: '5 min', intervalMs: 5 * MINUTE, attempts: 3, backoffMs: [5_000, 25_000] },
    { label: '15 min', intervalMs: 15 * MINUTE, attempts: 3, backoffMs: [5_000, 25_000] },
    { label: '1 h', intervalMs: 60 * MINUTE, attempts: 3, backoffMs: [5_000, 25_000] },
  ])('gives a job ticking every $label $attempts attempt(s), waiting $backoffMs ms between them', ({ intervalMs, attempts, backoffMs }) => {
    expect(retryPolicy(intervalMs)).toEqual({ attempts, backoffMs });
  });
});

const pgError = (code: string, message: string) => Object.assign(new Error(message), { code, severity: 'FATAL' });
const zodError = () => {
  try {
    z.object({ hosts: z.array(z.string()) }).parse({ hosts: [42] });
  } catch (e) {
    return e;
  }
  throw new Error('the bad data parsed');
};

describe('retries of a failing job (spec 1.1 rule 3)', () => {
  it.each([
    { label: 'a connection reset (ECONNRESET)', error: () => Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }) },
    { label: 'the database shutting down (57P01)', error: () => pgError('57P01', 'terminating connection due to administrator command') },
    { label: 'a provider answering 503', error: () => new ProviderError('advisory feed unavailable', 503) },
  ])('retries a job ticking every 5 minutes after two failures with $label, waiting 5 s then 25 s, and records the third attempt that succeeded', async ({ label, error }) => {
    const job = failingJob(`retry.transient.${label}`, 5 * MINUTE, [error, error]);
    const { slept, sleep } = recordingSleep();
    const at = new Date('2026-05-01T08:00:00.250Z');
    const result = await runnerOn(testDb.database, [job], { sleep, now: () => at }).tick(job.name);
    expect(result).toMatchObject({ job: job.name, ran: true, outcome: 'ok', attempts: 3, result: { detail: { succeededOnCall: 3 } } });
    expect(result.error).toBeUndefined();
    expect(job.calls).toBe(3);
    expect(slept).toEqual([5_000, 25_000]);
    expect(await statusRow(job.name)).toMatchObject({ outcome: 'ok', attempts: 3, error: null, last_run_at: '2026-05-01T08:00:00.250Z', last_ok_at: '2026-05-01T08:00:00.250Z', detail: { succeededOnCall: 3 } });
  });

  it.each([
    { label: 'a provider 404', error: () => new ProviderError('no such advisory', 404), transient: false },
    { label: 'a provider 400', error: () => new ProviderError('bad request', 400), transient: false },
    { label: 'a ZodError from parsing bad data', error: zodError, transient: false },
    { label: 'an AppError (a refusal of ours)', error: () => new AppError('conflict', 'the network is being deleted'), transient: false },
    { label: 'a unique violation (23505)', error: () => pgError('23505', 'duplicate key value violates unique constraint'), transient: false },
    { label: 'a plain Error', error: () => new Error('undefined is not a function'), transient: false },
    { label: 'a provider 408', error: () => new ProviderError('request timeout', 408), transient: true },
    { label: 'a provider 429', error: () => new ProviderError('slow down', 429), transient: true },
    { label: 'a provider 502', error: () => new ProviderError('bad gateway', 502), transient: true },
    { label: 'a provider failure without a status', error: () => new ProviderError('socket hang up'), transient: true },
    { label: 'a refused connection (ECONNREFUSED)', error: () => Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }), transient: true },
    { label: 'a lost database connection (08006)', error: () => pgError('08006', 'connection failure'), transient: true },
    { label: 'a serialization failure (40001)', error: () => pgError('40001', 'could not serialize access'), transient: true },
    { label: 'a deadlock (40P01)', error: () => pgError('40P01', 'deadlock detected'), transient: true },
    { label: 'too many connections (53300)', error: () => pgError('53300', 'sorry, too many clients already'), transient: true },
    { label: 'a timeout (TimeoutError)', error: () => new DOMException('The operation was aborted due to timeout', 'TimeoutError'), transient: true },
    { label: 'a dropped pg connection', error: () => new Error('Connection terminated unexpectedly'), transient: true },
    { label: "fetch's 'fetch failed' over a reset connection (its cause's code)", error: () => new TypeError('fetch failed', { cause: Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }) }), transient: true },
  ].map((c) => ({ ...c, attempts: c.transient ? 3 : 1 })))('counts $label as transient: $transient, so a job ticking every 15 minutes that keeps failing with it makes $attempts attempt(s)', async ({ label, error, transient, attempts }) => {
    expect(isTransient(error())).toBe(transient);
    const job = failingJob(`retry.table.${label}`, 15 * MINUTE, [error, error, error, error]);
    const { slept, sleep } = recordingSleep();
    const result = await runnerOn(testDb.database, [job], { sleep }).tick(job.name);
    expect(result).toMatchObject({ ran: true, outcome: 'failed', attempts, error: expect.any(String) });
    expect(job.calls).toBe(attempts);
    expect(slept).toEqual(transient ? [5_000, 25_000] : []);
    expect(await statusRow(job.name)).toMatchObject({ outcome: 'failed', attempts, error: result.error, last_ok_at: null });
  });

  it.each([
    { label: '30 s', intervalMs: 30_000 },
    { label: '2 minutes exactly', intervalMs: 120_000 },
  ])('makes one attempt only for a job ticking every $label, even when it fails transiently', async ({ label, intervalMs }) => {
    const reset = () => Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' });
    const job = failingJob(`retry.short.${label}`, intervalMs, [reset, reset, reset]);
    const { slept, sleep } = recordingSleep();
    const result = await runnerOn(testDb.database, [job], { sleep }).tick(job.name);
    expect(result).toMatchObject({ ran: true, outcome: 'failed', attempts: 1, error: 'read ECONNRESET' });
    expect(job.calls).toBe(1);
    expect(slept).toEqual([]);
    expect(await statusRow(job.name)).toMatchObject({ outcome: 'failed', attempts: 1, error: 'read ECONNRESET' });
  });

  it('logs each failed attempt at warn, saying whether it will be retried, and the failed tick at error', async () => {
    const reset = () => Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' });
    const job = failingJob('retry.logged', 5 * MINUTE, [reset, reset, reset]);
    const log = capturingLogger();
    await new JobRunner({ database: testDb.database, logger: log.logger, jobs: [job], sleep: recordingSleep().sleep }).tick(job.name);
    const attempts = log.entries().filter((e) => e.msg === 'job attempt failed');
    expect(attempts.map((e) => [e.level, e.attempt, e.retry])).toEqual([['warn', 1, true], ['warn', 2, true], ['warn', 3, false]]);
    expect(log.entries()).toContainEqual(expect.objectContaining({ level: 'error', msg: 'job failed', job: job.name, attempts: 3 }));
  });
});

describe('job status: the last run of each job, as a whole and per organisation', () => {
  it('records the duration of the tick and, as its last run, the time the runner takes as now', async () => {
    const at = new Date('2026-02-03T04:05:06.789Z');
    const job = { name: 'status.duration', intervalMs: MINUTE, run: async () => void (await delay(60)) };
    const result = await runnerOn(testDb.database, [job], { now: () => at }).tick(job.name);
    expect(result.durationMs).toBeGreaterThanOrEqual(50);
    expect(result.durationMs).toBeLessThan(5_000);
    const row = await statusRow(job.name);
    expect(row).toMatchObject({ outcome: 'ok', attempts: 1, error: null, detail: {}, last_run_at: at.toISOString(), last_ok_at: at.toISOString() });
    expect(row.duration_ms).toBe(result.durationMs);
  });

  it('hands the handler the injected clock', async () => {
    const at = new Date('2026-07-08T09:10:11.000Z');
    let seen: Date | undefined;
    const job = { name: 'status.clock', intervalMs: MINUTE, run: async (ctx: JobContext) => void (seen = ctx.now()) };
    await runnerOn(testDb.database, [job], { now: () => at }).tick(job.name);
    expect(seen?.toISOString()).toBe(at.toISOString());
  });

  it('stores a failure with URL passwords and service tokens masked, in the status row, the tick result and the log', async () => {
    const job = failingJob('status.redacted', MINUTE, [() => new Error('connect postgres://bob:s3cret@db/x failed with token svk_abcdefghijklmnop')]);
    const log = capturingLogger();
    const result = await new JobRunner({ database: testDb.database, logger: log.logger, jobs: [job] }).tick(job.name);
    const row = await statusRow(job.name);
    expect(row.outcome).toBe('failed');
    for (const text of [row.error!, result.error!, log.lines.join('\n')]) {
      expect(text).not.toContain('s3cret');
      expect(text).not.toContain('svk_abcdefghijklmnop');
    }
    // What is not secret stays readable.
    expect(row.error).toContain('postgres://bob:');
    expect(row.error).toContain('@db/x failed with token');
    expect(result.error).toBe(row.error);
  });

  it('records a row per organisation the job reports on, besides the job as a whole, with its error masked', async () => {
    const good = await seedOrg(testDb.database);
    const bad = await seedOrg(testDb.database);
    const at = new Date('2026-03-04T05:06:07.008Z');
    const job = {
      name: 'status.per-org',
      intervalMs: 10 * MINUTE,
      run: async () => ({
        detail: { organisations: 2 },
        organisations: new Map([
          [good.organisationId, { ok: true, detail: { snapshots: 1 } }],
          [bad.organisationId, { ok: false, error: 'provider refused key svk_abcdefghijklmnop' }],
        ]),
      }),
    };
    const result = await runnerOn(testDb.database, [job], { now: () => at }).tick(job.name);
    expect(result).toMatchObject({ ran: true, outcome: 'ok', attempts: 1 });
    expect(await statusRow(job.name)).toMatchObject({ outcome: 'ok', error: null, detail: { organisations: 2 }, last_run_at: at.toISOString() });
    expect(await statusRow(job.name, good.organisationId)).toMatchObject({ outcome: 'ok', error: null, attempts: 1, detail: { snapshots: 1 }, last_run_at: at.toISOString(), last_ok_at: at.toISOString() });
    const failed = await statusRow(job.name, bad.organisationId);
    expect(failed).toMatchObject({ outcome: 'failed', attempts: 1, detail: {}, last_run_at: at.toISOString(), last_ok_at: null });
    expect(failed.error).toContain('provider refused key');
    expect(failed.error).not.toContain('svk_abcdefghijklmnop');
  });

  it('keeps the last successful run when a later run fails, and clears the error when a run succeeds again', async () => {
    let now = new Date('2026-04-01T10:00:00.000Z');
    let fail = false;
    const job = { name: 'status.last-ok', intervalMs: MINUTE, run: async () => { if (fail) throw new Error('feed down'); } };
    const runner = runnerOn(testDb.database, [job], { now: () => now });

    await runner.tick(job.name);
    expect(await statusRow(job.name)).toMatchObject({ outcome: 'ok', last_run_at: '2026-04-01T10:00:00.000Z', last_ok_at: '2026-04-01T10:00:00.000Z' });

    now = new Date('2026-04-01T10:01:00.000Z');
    fail = true;
    await runner.tick(job.name);
    expect(await statusRow(job.name)).toMatchObject({ outcome: 'failed', error: 'feed down', last_run_at: '2026-04-01T10:01:00.000Z', last_ok_at: '2026-04-01T10:00:00.000Z' });

    now = new Date('2026-04-01T10:02:00.000Z');
    fail = false;
    await runner.tick(job.name);
    expect(await statusRow(job.name)).toMatchObject({ outcome: 'ok', error: null, last_run_at: '2026-04-01T10:02:00.000Z', last_ok_at: '2026-04-01T10:02:00.000Z' });
  });
});

describe('shutdown: stop() drains the ticks in progress', () => {
  it('waits for a running tick to finish, aborting its signal, and the tick records its status', async () => {
    const job = gatedJob('stop.drain');
    const runner = runnerOn(testDb.database, [job]);
    const tick = runner.tick(job.name);
    await job.entered();
    let stopped = false;
    const stopping = runner.stop(5_000).then(() => void (stopped = true));
    await delay(200);
    expect(stopped).toBe(false);
    expect(job.signals[0]!.aborted).toBe(true);
    job.open();
    await stopping;
    expect(stopped).toBe(true);
    expect(await tick).toMatchObject({ ran: true, outcome: 'ok', attempts: 1 });
    expect(await statusRow(job.name)).toMatchObject({ outcome: 'ok', attempts: 1 });
  });

  it('gives up waiting after its timeout, with a warning, when a tick does not finish', async () => {
    const job = gatedJob('stop.timeout');
    const log = capturingLogger();
    const runner = new JobRunner({ database: testDb.database, logger: log.logger, jobs: [job] });
    const tick = runner.tick(job.name);
    await job.entered();
    const t0 = Date.now();
    await runner.stop(200);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(150);
    expect(Date.now() - t0).toBeLessThan(3_000);
    expect(log.entries()).toContainEqual(expect.objectContaining({ level: 'warn', msg: 'jobs still running at shutdown; closing anyway', running: 1, timeoutMs: 200 }));
    job.open();
    expect((await tick).ran).toBe(true);
  });

  it('ticks each started job about 1 s after start and then on its interval, and never again once stopped', async () => {
    let calls = 0;
    const job = { name: 'stop.timers', intervalMs: 100, run: async () => void calls++ };
    const runner = runnerOn(testDb.database, [job]);
    const t0 = Date.now();
    runner.start();
    await waitFor('the first scheduled tick', () => calls >= 1, 5_000);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(900);
    await waitFor('a tick on the interval', () => calls >= 2, 5_000);
    await runner.stop(5_000);
    const atStop = calls;
    await delay(600);
    expect(calls).toBe(atStop);
  });

  it('never ticks a job whose first (staggered) tick was still pending at stop', async () => {
    const counts = { a: 0, b: 0 };
    const jobs = (['a', 'b'] as const).map((k) => ({ name: `stop.pending.${k}`, intervalMs: 100, run: async () => void counts[k]++ }));
    const runner = runnerOn(testDb.database, jobs);
    runner.start();
    await delay(100);
    await runner.stop(5_000);
    await delay(1_900);
    expect(counts).toEqual({ a: 0, b: 0 });
  });

  it('cuts a retry wait short on stop, without retrying the job again', async () => {
    let calls = 0;
    const job = {
      name: 'stop.backoff',
      intervalMs: 5 * MINUTE,
      run: async () => {
        calls++;
        throw Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' });
      },
    };
    const log = capturingLogger();
    // No injected sleep: the runner's own wait of 5 s, which stop() must interrupt.
    const runner = new JobRunner({ database: testDb.database, logger: log.logger, jobs: [job] });
    const tick = runner.tick(job.name);
    await waitFor('the first attempt to fail and its retry wait to begin', () => log.entries().some((e) => e.msg === 'job attempt failed' && e.retry === true));
    const t0 = Date.now();
    await runner.stop(10_000);
    expect(Date.now() - t0).toBeLessThan(2_000);
    const result = await tick;
    await delay(100);
    expect(calls).toBe(1);
    expect(result).toMatchObject({ ran: true, outcome: 'failed', attempts: 1, error: 'read ECONNRESET' });
    expect(await statusRow(job.name)).toMatchObject({ outcome: 'failed', attempts: 1 });
  });
});

// Two sessions of one PostgreSQL server (CI runs the suite on one).
if (TEST_DATABASE_URL) describe('a worker killed with SIGKILL in the middle of a tick (PostgreSQL)', () => {
  const script = fileURLToPath(new URL('./fixtures/kill-worker.mjs', import.meta.url));
  const built = fileURLToPath(new URL('../dist/jobs/runner.js', import.meta.url));
  let child: ChildProcess | undefined;
  afterAll(() => void child?.kill('SIGKILL'));

  it('leaves its lock to the database, which drops it with the dead session, and leaves no half-written row', async () => {
    expect(existsSync(built), 'the worker runs the built server: run `npm run build` first').toBe(true);
    const db = testDb.database.db;
    await sql`create table probe (id serial primary key, stage text not null)`.execute(db);

    const worker = spawn(process.execPath, [script], {
      env: { PATH: process.env.PATH, DATABASE_URL: TEST_DATABASE_URL, SEARCH_PATH: testDb.schema },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    child = worker;
    let out = '';
    worker.stdout!.on('data', (d) => (out += d));
    worker.stderr!.on('data', (d) => (out += d));
    let exitedWith: NodeJS.Signals | number | null | undefined;
    const exited = new Promise<NodeJS.Signals | number | null>((resolve) => worker.on('exit', (code, signal) => resolve((exitedWith = signal ?? code))));
    await waitFor('the worker to say it is inside its tick', () => out.includes('inside') || exitedWith !== undefined, 20_000);
    expect(exitedWith, `the worker exited before its tick:\n${out}`).toBeUndefined();

    let parentCalls = 0;
    const probe = {
      name: 'reliability.probe',
      intervalMs: MINUTE,
      run: async (ctx: JobContext) => {
        parentCalls++;
        await sql`insert into probe (stage) values ('parent')`.execute(ctx.db);
      },
    };
    const runner = runnerOn(testDb.database, [probe]);
    expect(await runner.tick(probe.name)).toEqual({ job: probe.name, ran: false });
    expect(parentCalls).toBe(0);

    worker.kill('SIGKILL');
    expect(await exited).toBe('SIGKILL');

    let result: TickResult | undefined;
    const until = Date.now() + 5_000;
    while (!(result = await runner.tick(probe.name)).ran && Date.now() < until) await delay(50);
    expect(result).toMatchObject({ ran: true, outcome: 'ok' });
    expect(parentCalls).toBe(1);
    expect(out).not.toContain('tick ended');

    const rows = (await sql<{ stage: string }>`select stage from probe order by id`.execute(db)).rows;
    expect(rows).toEqual([{ stage: 'parent' }]);
  });
});
