import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.js';
import { CHANGES_CHANNEL, parseJobRun } from '../src/events/changes.js';
import { eventsPrune } from '../src/events/prune.job.js';
import { organisationJob } from '../src/jobs/per-organisation.js';
import { type JobDefinition, JobRunner } from '../src/jobs/runner.js';
import { createLogger } from '../src/logger.js';
import { jobDefinitions } from '../src/main.js';
import { type SeededOrg, type TestDatabase, createTestDatabase, seedOrg } from './helpers.js';

// Growth that nothing bounds (issue 30): a job's change rows only where its status changes (a
// healthy job ticking writes none; every run's start and end reach the live streams unstored),
// and the retention of the change log, events and alert deliveries (job events.prune).

const DAY = 86_400_000;

let testDb: TestDatabase;
let a: SeededOrg;
let b: SeededOrg;
beforeAll(async () => {
  testDb = await createTestDatabase();
  a = await seedOrg(testDb.database);
  b = await seedOrg(testDb.database);
});
afterAll(() => testDb?.drop());

const db = () => testDb.database.db;
const runnerOf = (jobs: JobDefinition[]) => new JobRunner({ database: testDb.database, logger: createLogger('silent'), jobs });

/** The stored change rows of a job for an organisation, in order. */
async function jobChanges(org: SeededOrg, job: string): Promise<string[]> {
  const r = await sql<{ action: string }>`select action from change_log where organisation_id = ${org.organisationId} and entity_type = 'job' and entity_id = ${job} order by id`.execute(db());
  return r.rows.map((x) => x.action);
}

describe('job change rows: only where a status changes', () => {
  /** A per-organisation job whose work fails for the organisations in `failing`. */
  function flakyJob(name: string) {
    const failing = new Set<string>();
    const job = organisationJob({
      name,
      intervalMs: 60_000,
      key: 'done',
      count: () => 1,
      work: async (_db, org) => {
        if (failing.has(org)) throw new Error(`broken for ${org}`);
        return { detail: {} };
      },
    });
    return { job, failing };
  }

  it('a healthy job ticking writes one row to each organisation on its first run and none after', async () => {
    const { job } = flakyJob('test.healthy');
    const runner = runnerOf([job]);
    for (let i = 0; i < 4; i++) expect(await runner.tick(job.name)).toMatchObject({ ran: true, outcome: 'ok' });
    expect(await jobChanges(a, job.name)).toEqual(['finished']);
    expect(await jobChanges(b, job.name)).toEqual(['finished']);
  });

  it("an organisation's failure writes one failed row to it alone, its recovery one finished row, and the ticks between none", async () => {
    const { job, failing } = flakyJob('test.flaky');
    const runner = runnerOf([job]);
    await runner.tick(job.name);
    failing.add(a.organisationId);
    for (let i = 0; i < 3; i++) await runner.tick(job.name); // the failure, then two more failing ticks
    expect(await jobChanges(a, job.name)).toEqual(['finished', 'failed']);
    expect(await jobChanges(b, job.name)).toEqual(['finished']);
    failing.clear();
    for (let i = 0; i < 3; i++) await runner.tick(job.name); // the recovery, then two healthy ticks
    expect(await jobChanges(a, job.name)).toEqual(['finished', 'failed', 'finished']);
    expect(await jobChanges(b, job.name)).toEqual(['finished']);
  });

  it('the job failing as a whole writes one failed row to every organisation, and its recovery one finished row', async () => {
    const { job, failing } = flakyJob('test.outage');
    const runner = runnerOf([job]);
    await runner.tick(job.name);
    failing.add(a.organisationId).add(b.organisationId);
    expect(await runner.tick(job.name)).toMatchObject({ outcome: 'failed' });
    expect(await runner.tick(job.name)).toMatchObject({ outcome: 'failed' });
    for (const org of [a, b]) expect(await jobChanges(org, job.name)).toEqual(['finished', 'failed']);
    failing.clear();
    await runner.tick(job.name);
    await runner.tick(job.name);
    for (const org of [a, b]) expect(await jobChanges(org, job.name)).toEqual(['finished', 'failed', 'finished']);
  });

  it('a run for one organisation writes to it alone, and only when its status changes', async () => {
    const { job, failing } = flakyJob('test.forced');
    const runner = runnerOf([job]);
    await runner.runNow(job.name, { organisationId: a.organisationId });
    await runner.runNow(job.name, { organisationId: a.organisationId });
    failing.add(a.organisationId);
    await runner.runNow(job.name, { organisationId: a.organisationId });
    expect(await jobChanges(a, job.name)).toEqual(['finished', 'failed']);
    expect(await jobChanges(b, job.name)).toEqual([]);
  });

  it('every run still reaches the live streams: its start and its end, unstored, naming the schema, the job and its scope', async () => {
    const { job, failing } = flakyJob('test.live');
    const runner = runnerOf([job]);
    const heard: string[] = [];
    const unlisten = await testDb.database.listen(CHANGES_CHANNEL, (p) => void heard.push(p));
    try {
      await runner.tick(job.name); // first run: its end is stored (a row to every organisation), its start live
      await runner.tick(job.name); // healthy: start and end live
      failing.add(b.organisationId);
      await runner.runNow(job.name, { organisationId: b.organisationId }); // b fails: stored for b
      const until = Date.now() + 5_000;
      while (heard.filter((p) => parseJobRun(p)?.job === job.name).length < 4 && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
      const notices = heard.map(parseJobRun).filter((n) => n?.job === job.name);
      const schema = (await sql<{ s: string }>`select current_schema() as s`.execute(db())).rows[0]!.s;
      expect(notices.map((n) => [n!.schema, n!.organisationId, n!.action])).toEqual([
        [schema, null, 'started'],
        [schema, null, 'started'],
        [schema, null, 'finished'],
        [schema, b.organisationId, 'started'],
      ]);
      expect(notices.every((n) => !Number.isNaN(Date.parse(n!.at)))).toBe(true);
      expect(await jobChanges(a, job.name)).toEqual(['finished']);
      expect(await jobChanges(b, job.name)).toEqual(['finished', 'failed']);
    } finally {
      await unlisten();
    }
  });
});

describe('retention: events.prune', () => {
  const ago = (days: number) => new Date(Date.now() - days * DAY);

  async function change(org: SeededOrg, daysAgo: number, type = 'host'): Promise<number> {
    const r = await sql<{ id: string }>`
      insert into change_log (organisation_id, entity_type, entity_id, action, at) values (${org.organisationId}, ${type}, ${randomUUID()}, 'updated', ${ago(daysAgo)}) returning id`.execute(db());
    return Number(r.rows[0]!.id);
  }
  async function changeIds(org: SeededOrg): Promise<number[]> {
    return (await sql<{ id: string }>`select id from change_log where organisation_id = ${org.organisationId} and entity_type <> 'job' order by id`.execute(db())).rows.map((r) => Number(r.id));
  }
  async function event(org: SeededOrg, daysAgo: number): Promise<string> {
    const r = await sql<{ id: string }>`
      insert into events (organisation_id, kind, severity, subject_type, subject_id, data, occurred_at)
      values (${org.organisationId}, 'daemon.offline', 'critical', 'daemon', ${randomUUID()}, '{}'::jsonb, ${ago(daysAgo)}) returning id`.execute(db());
    return r.rows[0]!.id;
  }
  async function destination(org: SeededOrg): Promise<string> {
    // Routed nothing by itself (no kind it takes is ever emitted): the deliveries below are made by hand.
    const r = await sql<{ id: string }>`
      insert into notification_destinations (organisation_id, name, kind, event_kinds, min_severity, target, config_sealed)
      values (${org.organisationId}, ${`d-${randomUUID()}`}, 'webhook', array['test.none'], 'info', 'https://example.test', 'sealed') returning id`.execute(db());
    return r.rows[0]!.id;
  }
  async function delivery(org: SeededOrg, eventId: string, destinationId: string, state: 'pending' | 'delivered' | 'dead', daysAgo: number): Promise<string> {
    const r = await sql<{ id: string }>`
      insert into notification_deliveries (organisation_id, event_id, destination_id, state, attempts, created_at, updated_at)
      values (${org.organisationId}, ${eventId}, ${destinationId}, ${state}, 1, ${ago(daysAgo)}, ${ago(daysAgo)}) returning id`.execute(db());
    const id = r.rows[0]!.id;
    await sql`insert into notification_attempts (organisation_id, delivery_id, attempt, attempted_at, duration_ms) values (${org.organisationId}, ${id}, 1, ${ago(daysAgo)}, 5)`.execute(db());
    return id;
  }
  const exists = async (table: 'events' | 'notification_deliveries', id: string) => (await sql<{ n: number }>`select count(*)::int as n from ${sql.table(table)} where id = ${id}`.execute(db())).rows[0]!.n === 1;

  it('is a job of the build, hourly, with the documented default windows', () => {
    const config = loadConfig({});
    expect(config.retention).toEqual({ changeLogDays: 7, eventsDays: 90, deliveriesDays: 30 });
    const job = jobDefinitions({ config, secretKey: Buffer.alloc(32) }).find((j) => j.name === 'events.prune');
    expect(job).toMatchObject({ intervalMs: 3_600_000 });
  });

  it('deletes change rows past the window in bounded batches and keeps those inside; a resume point below the last one pruned is on record', async () => {
    const oldA = [await change(a, 9), await change(a, 8), await change(a, 8), await change(a, 7.5), await change(a, 7.1)];
    const keptA = [await change(a, 6.9), await change(a, 1), await change(a, 0)];
    const oldB = [await change(b, 30), await change(b, 10), await change(b, 8)];
    const keptB = [await change(b, 2)];
    // Batches of 2 rows, one organisation a statement: every batch and every page of organisations is walked.
    const job = eventsPrune(loadConfig({}).retention, { batch: 2, organisations: 1 });
    const r = await runnerOf([job]).tick(job.name);
    expect(r).toMatchObject({ ran: true, outcome: 'ok', result: { detail: { complete: true } } });
    expect((r.result!.detail as { changes: number }).changes).toBeGreaterThanOrEqual(oldA.length + oldB.length);
    expect(await changeIds(a)).toEqual(keptA);
    expect(await changeIds(b)).toEqual(keptB);
    const marks = await sql<{ organisation_id: string; through_id: string }>`select organisation_id, through_id from change_log_pruned`.execute(db());
    expect(new Map(marks.rows.map((m) => [m.organisation_id, Number(m.through_id)]))).toEqual(new Map([[a.organisationId, Math.max(...oldA)], [b.organisationId, Math.max(...oldB)]]));
  });

  it('follows SERVICE_CHANGE_LOG_RETENTION_DAYS', async () => {
    const old = await change(a, 3);
    const kept = await change(a, 1);
    const job = eventsPrune(loadConfig({ SERVICE_CHANGE_LOG_RETENTION_DAYS: '2' }).retention);
    await runnerOf([job]).tick(job.name);
    const ids = await changeIds(a);
    expect(ids).toContain(kept);
    expect(ids).not.toContain(old);
  });

  it('keeps change rows cve.match has not read yet, whatever their age', async () => {
    await sql`insert into advisory_match_state (organisation_id, matched_at) values (${b.organisationId}, ${ago(20)})
      on conflict (organisation_id) do update set matched_at = excluded.matched_at`.execute(db());
    const read = await change(b, 25, 'service');
    const unread = await change(b, 15, 'service');
    const job = eventsPrune(loadConfig({}).retention);
    await runnerOf([job]).tick(job.name);
    const ids = await changeIds(b);
    expect(ids).toContain(unread);
    expect(ids).not.toContain(read);
    await sql`delete from advisory_match_state where organisation_id = ${b.organisationId}`.execute(db());
  });

  it('deletes finished deliveries past their window with their attempts, and events past theirs of which no delivery is left; keeps a pending delivery and its event', async () => {
    const dest = await destination(a);
    const oldAlone = await event(a, 91);
    const recent = await event(a, 89);
    const pendingEvent = await event(a, 200);
    const pending = await delivery(a, pendingEvent, dest, 'pending', 200);
    const deliveredLongAgo = await event(a, 120);
    const oldDelivery = await delivery(a, deliveredLongAgo, dest, 'delivered', 31);
    const deadLongAgo = await event(a, 120);
    const oldDead = await delivery(a, deadLongAgo, dest, 'dead', 45);
    const deliveredLately = await event(a, 120);
    const lateDelivery = await delivery(a, deliveredLately, dest, 'delivered', 29);
    const job = eventsPrune(loadConfig({}).retention, { batch: 1 });
    const r = await runnerOf([job]).tick(job.name);
    expect(r.result?.detail).toMatchObject({ deliveries: 2, events: 3, complete: true });
    expect(await exists('notification_deliveries', oldDelivery)).toBe(false);
    expect(await exists('notification_deliveries', oldDead)).toBe(false);
    const attempts = await sql<{ n: number }>`select count(*)::int as n from notification_attempts where delivery_id in (${oldDelivery}, ${oldDead})`.execute(db());
    expect(attempts.rows[0]!.n).toBe(0);
    for (const gone of [oldAlone, deliveredLongAgo, deadLongAgo]) expect(await exists('events', gone)).toBe(false);
    for (const kept of [recent, pendingEvent, deliveredLately]) expect(await exists('events', kept)).toBe(true);
    expect(await exists('notification_deliveries', pending)).toBe(true);
    expect(await exists('notification_deliveries', lateDelivery)).toBe(true);
    // Once the pending delivery is delivered and its window passes, its event goes too.
    await sql`update notification_deliveries set state = 'delivered', updated_at = ${ago(31)} where id = ${pending}`.execute(db());
    await runnerOf([job]).tick(job.name);
    expect(await exists('notification_deliveries', pending)).toBe(false);
    expect(await exists('events', pendingEvent)).toBe(false);
  });

  it('follows SERVICE_EVENTS_RETENTION_DAYS and SERVICE_DELIVERIES_RETENTION_DAYS', async () => {
    const dest = await destination(b);
    const e = await event(b, 3);
    const kept = await event(b, 1);
    const withDelivery = await event(b, 1);
    const d = await delivery(b, withDelivery, dest, 'dead', 3);
    const job = eventsPrune(loadConfig({ SERVICE_EVENTS_RETENTION_DAYS: '2', SERVICE_DELIVERIES_RETENTION_DAYS: '2' }).retention);
    await runnerOf([job]).tick(job.name);
    expect(await exists('events', e)).toBe(false);
    expect(await exists('events', kept)).toBe(true);
    expect(await exists('notification_deliveries', d)).toBe(false);
    expect(await exists('events', withDelivery)).toBe(true);
  });

  it('stops between statements when the process stops, leaving the rest to the next tick', async () => {
    for (let i = 0; i < 5; i++) await change(a, 10);
    const job = eventsPrune(loadConfig({}).retention, { batch: 2 });
    const ac = new AbortController();
    ac.abort();
    const r = await job.run({ db: db(), logger: createLogger('silent'), now: () => new Date(), signal: ac.signal });
    expect(r?.detail).toMatchObject({ changes: 0, complete: false });
    expect((await changeIds(a)).length).toBeGreaterThanOrEqual(5);
  });
});

describe('retention variables', () => {
  function configError(env: Record<string, string>): ConfigError {
    try {
      loadConfig(env);
    } catch (e) {
      expect(e).toBeInstanceOf(ConfigError);
      return e as ConfigError;
    }
    throw new Error('expected a ConfigError, nothing was thrown');
  }

  it('parses whole days', () => {
    expect(loadConfig({ SERVICE_CHANGE_LOG_RETENTION_DAYS: '1', SERVICE_EVENTS_RETENTION_DAYS: '365', SERVICE_DELIVERIES_RETENTION_DAYS: '3650' }).retention).toEqual({ changeLogDays: 1, eventsDays: 365, deliveriesDays: 3650 });
  });

  it.each([
    ['SERVICE_CHANGE_LOG_RETENTION_DAYS', '0'],
    ['SERVICE_CHANGE_LOG_RETENTION_DAYS', '0.5'],
    ['SERVICE_EVENTS_RETENTION_DAYS', 'forever'],
    ['SERVICE_EVENTS_RETENTION_DAYS', '3651'],
    ['SERVICE_DELIVERIES_RETENTION_DAYS', '-1'],
    ['SERVICE_DELIVERIES_RETENTION_DAYS', '1e3'],
  ])('refuses %s=%j at start with a ConfigError naming it', (name, value) => {
    const e = configError({ [name]: value });
    expect(e.problems).toHaveLength(1);
    expect(e.problems[0]).toMatch(new RegExp(`^${name}: `));
    expect(e.message).toContain(name);
  });
});
