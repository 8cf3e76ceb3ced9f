import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type JobDefinition, JobRunner } from '../src/jobs/runner.js';
import * as status from '../src/jobs/status.repo.js';
import { jobStatus } from '../src/jobs/status.service.js';
import { createLogger } from '../src/logger.js';
import { TEST_DATABASE_URL, type TestApp, buildTestApp, login, seedOrg } from './helpers.js';

// A killed job tick is visible (issue 18, section 2, item 3): a run is on record from its start,
// so a run whose process died shows `interrupted` (until the next run), one in progress `running`;
// and the change stream stores a run's end where the job's status changes (entity `job`; issue 30:
// a healthy job's every tick is not stored, its start and end reach the live streams unstored).

async function waitFor(what: string, cond: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('job status from the start of a run', () => {
  let t: TestApp;
  let org: Awaited<ReturnType<typeof seedOrg>>;
  beforeAll(async () => {
    t = await buildTestApp();
    org = await seedOrg(t.database);
  });
  afterAll(async () => {
    await t?.close();
  });

  const statusOf = async (job: JobDefinition) => (await jobStatus(t.database.db, [job], 'all')).find((r) => r.organisation_id === null)!;
  const jobChanges = async (job: string) =>
    (
      await sql<{ action: string }>`select action from change_log where organisation_id = ${org.organisationId} and entity_type = 'job' and entity_id = ${job} order by id`.execute(t.database.db)
    ).rows.map((r) => r.action);

  it('shows a run in progress as running with its start, and ok once it ends; the first end is stored in the change stream, the start is not', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const job: JobDefinition = { name: 'test.slow', intervalMs: 60_000, run: async () => void (await gate) };
    const runner = new JobRunner({ database: t.database, logger: createLogger('silent'), jobs: [job] });
    const tick = runner.tick(job.name);
    await waitFor('the run to start', async () => (await statusOf(job)).outcome === 'running');
    const running = await statusOf(job);
    expect(running).toMatchObject({ outcome: 'running', started_at: expect.stringMatching(/Z|[+-]\d\d:\d\d$/), last_run_at: null, attempts: 0 });
    expect(await jobChanges(job.name)).toEqual([]);
    release();
    expect(await tick).toMatchObject({ ran: true, outcome: 'ok' });
    expect(await statusOf(job)).toMatchObject({ outcome: 'ok', started_at: null, last_run_at: running.started_at, attempts: 1 });
    expect(await jobChanges(job.name)).toEqual(['finished']);
    await runner.stop();
  });

  it('stores failed for a first run that fails', async () => {
    const job: JobDefinition = { name: 'test.broken', intervalMs: 60_000, run: async () => Promise.reject(new Error('nope')) };
    const runner = new JobRunner({ database: t.database, logger: createLogger('silent'), jobs: [job] });
    expect(await runner.tick(job.name)).toMatchObject({ outcome: 'failed' });
    expect(await jobChanges(job.name)).toEqual(['failed']);
    expect(await statusOf(job)).toMatchObject({ outcome: 'failed', started_at: null });
  });

  it('shows a start nobody runs any more as interrupted, over HTTP too, until the next run', async () => {
    // What a process killed mid-tick leaves: its start, and no lock (that of a dead session is gone).
    const startedAt = new Date(Date.now() - 60_000);
    await status.recordStart(t.database.db, 'inventory.snapshot', null, startedAt);
    const s = await login(t.app, org.ownerEmail);
    const res = await t.app.inject({ method: 'GET', url: '/api/v1/admin/jobs', headers: { cookie: s.cookie } });
    expect(res.statusCode, res.body).toBe(200);
    const row = (res.json().data as { job: string; organisationId: string | null; startedAt: string }[]).find((r) => r.job === 'inventory.snapshot' && r.organisationId === null);
    expect(row).toMatchObject({ outcome: 'interrupted', lastRunAt: null, attempts: 0 });
    expect(Date.parse(row!.startedAt)).toBe(startedAt.getTime());
    // The next run: running while it runs, then its own outcome.
    const job: JobDefinition = { name: 'inventory.snapshot', intervalMs: 3_600_000, run: async () => ({ detail: {} }) };
    const runner = new JobRunner({ database: t.database, logger: createLogger('silent'), jobs: [job] });
    expect(await runner.tick(job.name)).toMatchObject({ outcome: 'ok' });
    expect(await statusOf(job)).toMatchObject({ outcome: 'ok', started_at: null });
  });
});

// A real kill: a worker process (the built server) SIGKILLed in the middle of its tick.
if (TEST_DATABASE_URL) {
  describe('a worker killed mid-tick leaves its run interrupted (PostgreSQL)', () => {
    const script = fileURLToPath(new URL('./fixtures/kill-worker.mjs', import.meta.url));
    const built = fileURLToPath(new URL('../dist/jobs/runner.js', import.meta.url));
    let t: TestApp;
    let child: ChildProcess | undefined;
    beforeAll(async () => {
      t = await buildTestApp();
    });
    afterAll(async () => {
      child?.kill('SIGKILL');
      await t?.close();
    });

    it('is running while the worker holds the lock, interrupted once it is killed', async () => {
      expect(existsSync(built), 'the worker runs the built server: run `npm run build` first').toBe(true);
      const schema = (await sql<{ s: string }>`select current_schema() as s`.execute(t.database.db)).rows[0]!.s;
      await sql`create table probe (id serial primary key, stage text not null)`.execute(t.database.db);
      const worker = spawn(process.execPath, [script], { env: { PATH: process.env.PATH, DATABASE_URL: TEST_DATABASE_URL, SEARCH_PATH: schema }, stdio: ['pipe', 'pipe', 'pipe'] });
      child = worker;
      let out = '';
      worker.stdout!.on('data', (d) => (out += d));
      worker.stderr!.on('data', (d) => (out += d));
      const exited = new Promise((resolve) => worker.on('exit', (code, signal) => resolve(signal ?? code)));
      await waitFor('the worker to be inside its tick', () => out.includes('inside'), 20_000);
      const probe: JobDefinition = { name: 'reliability.probe', intervalMs: 60_000, run: async () => {} };
      const row = async () => (await jobStatus(t.database.db, [probe], 'all')).find((r) => r.organisation_id === null)!;
      expect(await row()).toMatchObject({ outcome: 'running', last_run_at: null });
      worker.kill('SIGKILL');
      expect(await exited).toBe('SIGKILL');
      // The database notices the dead session and drops its lock.
      await waitFor('the lock to go', async () => (await row()).outcome !== 'running');
      expect(await row()).toMatchObject({ outcome: 'interrupted', started_at: expect.any(String) });
    }, 40_000);
  });
}
