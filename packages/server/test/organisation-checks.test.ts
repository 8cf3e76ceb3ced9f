import { randomUUID } from 'node:crypto';
import { type Kysely, sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DB } from '../src/db/schema.js';
import { logChanges } from '../src/events/changes.js';
import { type SeededOrg, type TestDatabase, createTestDatabase, seedOrg } from './helpers.js';

// The change log's and events' organisation, checked once per statement (migration 0043) where a
// foreign key checked it once per row: the same rule (a row naming no organisation fails its
// statement with 23503 and nothing of the statement is stored), the same lock (a concurrent delete
// of the organisation waits for the writer), the same cascade (the organisation's rows go with it).

let testDb: TestDatabase;
let a: SeededOrg;
beforeAll(async () => {
  testDb = await createTestDatabase();
  a = await seedOrg(testDb.database);
});
afterAll(() => testDb?.drop());

const db = () => testDb.database.db;

const changeRows = async (org: string) =>
  (await sql<{ n: number }>`select count(*)::int as n from change_log where organisation_id = ${org}`.execute(db())).rows[0]!.n;
const eventRows = async (org: string) =>
  (await sql<{ n: number }>`select count(*)::int as n from events where organisation_id = ${org}`.execute(db())).rows[0]!.n;

/** The SQLSTATE a statement fails with (undefined when it succeeds). */
async function sqlState(run: () => Promise<unknown>): Promise<string | undefined> {
  try {
    await run();
    return undefined;
  } catch (e) {
    return (e as { code?: string }).code;
  }
}

/** An event of `org`, numbered by its organisation's counter unless `seq` is given (an unknown organisation has none). */
const insertEvent = (d: Kysely<DB>, org: string, seq: number | null = null) =>
  sql`insert into events (organisation_id, seq, kind, severity, subject_type, subject_id, data) values (${org}, ${seq}, 'host.discovered', 'info', 'host', ${randomUUID()}, '{}')`.execute(d);
/** A change row of `org` with an explicit id (an unknown organisation has no counter). */
const insertChange = (org: string, id: number) =>
  sql`insert into change_log (organisation_id, id, entity_type, entity_id, action) values (${org}, ${id}, 'host', ${randomUUID()}, 'created')`.execute(db());

describe('organisation of change rows and events, checked per statement (migration 0043)', () => {
  it('stores rows of an existing organisation', async () => {
    const before = await changeRows(a.organisationId);
    await logChanges(db(), a.organisationId, 'host', [randomUUID(), randomUUID()], 'created');
    await insertEvent(db(), a.organisationId);
    expect(await changeRows(a.organisationId)).toBe(before + 2);
    expect(await eventRows(a.organisationId)).toBeGreaterThan(0);
  });

  it('refuses a change row naming no organisation with 23503, and stores nothing of its statement', async () => {
    const stranger = randomUUID();
    const before = await changeRows(a.organisationId);
    expect(await sqlState(() => insertChange(stranger, 1))).toBe('23503');
    // One statement, one good row and one bad: neither is stored.
    const mixed = () => sql`
      insert into change_log (organisation_id, id, entity_type, entity_id, action)
      values (${a.organisationId}, 9000000001, 'host', ${randomUUID()}, 'created'), (${stranger}, 9000000002, 'host', ${randomUUID()}, 'created')`.execute(db());
    expect(await sqlState(mixed)).toBe('23503');
    expect(await changeRows(a.organisationId)).toBe(before);
    expect(await changeRows(stranger)).toBe(0);
  });

  it('refuses an event naming no organisation, and a row moved to no organisation', async () => {
    const stranger = randomUUID();
    expect(await sqlState(() => insertEvent(db(), stranger, 1))).toBe('23503');
    expect(await eventRows(stranger)).toBe(0);
    const before = await changeRows(a.organisationId);
    expect(await sqlState(() => sql`update change_log set organisation_id = ${stranger} where organisation_id = ${a.organisationId}`.execute(db()))).toBe('23503');
    expect(await sqlState(() => sql`update events set organisation_id = ${stranger} where organisation_id = ${a.organisationId}`.execute(db()))).toBe('23503');
    expect(await changeRows(a.organisationId)).toBe(before);
  });

  it('deletes an organisation with its change rows and events (the cascade of the keys)', async () => {
    const c = await seedOrg(testDb.database);
    await logChanges(db(), c.organisationId, 'host', [randomUUID()], 'created');
    await insertEvent(db(), c.organisationId);
    expect(await changeRows(c.organisationId)).toBeGreaterThan(0);
    await db().deleteFrom('organisations').where('id', '=', c.organisationId).execute();
    expect(await changeRows(c.organisationId)).toBe(0);
    expect(await eventRows(c.organisationId)).toBe(0);
    expect(await changeRows(a.organisationId)).toBeGreaterThan(0);
  });

  it('makes a delete of the organisation wait for a writer of its rows, so none is left behind', async () => {
    const c = await seedOrg(testDb.database);
    let written!: () => void;
    const wrote = new Promise<void>((r) => (written = r));
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const writer = db().transaction().execute(async (tx) => {
      await logChanges(tx, c.organisationId, 'host', [randomUUID()], 'created');
      await insertEvent(tx, c.organisationId);
      written();
      await gate;
    });
    await wrote;
    let deleted = false;
    const deleter = db().deleteFrom('organisations').where('id', '=', c.organisationId).execute().then(() => (deleted = true));
    await new Promise((r) => setTimeout(r, 300));
    expect(deleted).toBe(false);
    release();
    await writer;
    await deleter;
    expect(await changeRows(c.organisationId)).toBe(0);
    expect(await eventRows(c.organisationId)).toBe(0);
  });
});
