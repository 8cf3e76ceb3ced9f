import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recordTurn } from '../src/assistant/assistant.repo.js';
import { assistantPrune } from '../src/assistant/prune.job.js';
import { ConfigError, loadConfig } from '../src/config.js';
import { loadMigrations, migrate } from '../src/db/migrate.js';
import { JobRunner } from '../src/jobs/runner.js';
import { createLogger } from '../src/logger.js';
import { jobDefinitions } from '../src/main.js';
import { collectMetrics } from '../src/metrics/metrics.js';
import { type SeededOrg, type TestDatabase, createTestDatabase, seedOrg } from './helpers.js';

// The assistant's turns (issue 27) are kept SERVICE_AI_TURNS_RETENTION_DAYS (job assistant.prune,
// issue 30: growth that nothing bounds); the counter service_ai_turns_total reads kept totals, so
// pruning never makes it go back.

const usage = { promptTokens: 10, completionTokens: 5, totalTokens: 15 };

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
const turn = (org: SeededOrg, outcome: 'ok' | 'rate_limited' | 'error') => recordTurn(db(), org.organisationId, org.ownerId, { outcome, rounds: 1, tools: ['list_hosts'], usage, latencyMs: 12.4 });
/** Moves every turn of `org` recorded since `since` back by `days`. */
const backdate = (org: SeededOrg, days: number) => sql`update assistant_turns set at = at - make_interval(days => ${days}) where organisation_id = ${org.organisationId} and at > now() - interval '1 day'`.execute(db());
const stored = async (org: SeededOrg) => (await sql<{ outcome: string }>`select outcome from assistant_turns where organisation_id = ${org.organisationId} order by at, outcome`.execute(db())).rows.map((r) => r.outcome);
const counter = async (org: SeededOrg) => {
  const text = await collectMetrics(db(), org.organisationId);
  return Object.fromEntries([...text.matchAll(/^service_ai_turns_total\{outcome="(\w+)"\} (\d+)$/gm)].map((m) => [m[1], Number(m[2])]));
};
const runnerOf = (job: ReturnType<typeof assistantPrune>) => new JobRunner({ database: testDb.database, logger: createLogger('silent'), jobs: [job] });

describe('assistant.prune', () => {
  it('is a job of the build, hourly, keeping 90 days unless SERVICE_AI_TURNS_RETENTION_DAYS says otherwise (1 to 3650)', () => {
    const config = loadConfig({});
    expect(config.ai.turnsRetentionDays).toBe(90);
    expect(jobDefinitions({ config, secretKey: Buffer.alloc(32) }).find((j) => j.name === 'assistant.prune')).toMatchObject({ intervalMs: 3_600_000 });
    expect(loadConfig({ SERVICE_AI_TURNS_RETENTION_DAYS: '7' }).ai.turnsRetentionDays).toBe(7);
    for (const bad of ['0', '3651', 'soon']) expect(() => loadConfig({ SERVICE_AI_TURNS_RETENTION_DAYS: bad })).toThrow(ConfigError);
  });

  it('deletes turns past the window in bounded batches, keeps those inside, and the counter keeps counting them', async () => {
    await turn(a, 'ok');
    await turn(a, 'rate_limited');
    await turn(b, 'ok');
    await backdate(a, 91);
    await backdate(b, 200);
    await turn(a, 'ok');
    await turn(a, 'error');
    await backdate(a, 89);
    await turn(a, 'ok');
    const before = { a: await counter(a), b: await counter(b) };
    expect(before.a).toMatchObject({ ok: 3, rate_limited: 1, error: 1, upstream_error: 0 });
    expect(before.b).toMatchObject({ ok: 1, rate_limited: 0 });

    // Batches of one row: each batch is its own statement, and the tick walks them all.
    const job = assistantPrune(90, { batch: 1 });
    expect(await runnerOf(job).tick(job.name)).toMatchObject({ ran: true, outcome: 'ok', result: { detail: { turns: 3, complete: true } } });
    expect(await stored(a)).toEqual(['ok', 'error', 'ok']);
    expect(await stored(b)).toEqual([]);
    expect({ a: await counter(a), b: await counter(b) }).toEqual(before);

    await turn(b, 'ok');
    expect(await counter(b)).toMatchObject({ ok: 2 });
  });

  it('follows the window it is given', async () => {
    await turn(a, 'error');
    await backdate(a, 3);
    await turn(a, 'rate_limited');
    const job = assistantPrune(2);
    expect(await runnerOf(job).tick(job.name)).toMatchObject({ outcome: 'ok', result: { detail: { complete: true } } });
    expect(await stored(a)).toEqual(['rate_limited']);
    expect(await counter(a)).toMatchObject({ ok: 3, error: 2, rate_limited: 2 });
  });
});

describe('migration 0044', () => {
  it('counts the turns already stored into the totals', async () => {
    const t = await createTestDatabase({ migrate: false });
    try {
      await migrate(t.database, { migrations: loadMigrations().filter((m) => m.version < 44) });
      const org = await seedOrg(t.database);
      for (const outcome of ['ok', 'ok', 'upstream_timeout']) {
        await sql`insert into assistant_turns (organisation_id, id, user_id, outcome, rounds, latency_ms) values (${org.organisationId}, ${randomUUID()}, ${org.ownerId}, ${outcome}, 1, 10)`.execute(t.database.db);
      }
      await migrate(t.database);
      const totals = await sql<{ outcome: string; n: number }>`select outcome, turns::int as n from assistant_turn_totals where organisation_id = ${org.organisationId} order by outcome`.execute(t.database.db);
      expect(totals.rows).toEqual([{ outcome: 'ok', n: 2 }, { outcome: 'upstream_timeout', n: 1 }]);
    } finally {
      await t.drop();
    }
  });
});
