import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type TestDatabase, createTestDatabase } from './helpers.js';

// Statements kept prepared per connection (Database.prepared, preparedArrays: the hot pages) and
// a migration another process runs under them, as in a rolling upgrade.

let testDb: TestDatabase;
beforeAll(async () => {
  testDb = await createTestDatabase();
  await sql`create table prepared_probe (id int primary key, v int not null)`.execute(testDb.database.db);
  await sql`insert into prepared_probe values (1, 7)`.execute(testDb.database.db);
});
afterAll(() => testDb?.drop());

describe('prepared statements (db/database.ts)', () => {
  it('answer after a migration changed the type of a column they return, on every connection, without a restart', async () => {
    const d = testDb.database;
    const text = 'select v from prepared_probe where id = $1';
    const rows = () => d.prepared<{ v: unknown }>('probe_v', text, [1]);
    const arrays = () => d.preparedArrays('probe_v_arrays', text, [1]);
    // Several at once: several connections of the pool prepare them.
    const all = async () => (await Promise.all([...Array.from({ length: 6 }, rows), ...Array.from({ length: 6 }, arrays)])).map((r) => ('rows' in r ? r.rows[0]![0] : r[0]!.v));
    expect(await all()).toEqual(Array(12).fill(7));
    await sql`alter table prepared_probe alter column v type text`.execute(d.db);
    expect(await all()).toEqual(Array(12).fill('7'));
    // And again: a second change after the first.
    await sql`alter table prepared_probe alter column v type bigint using v::bigint`.execute(d.db);
    expect(await all()).toEqual(Array(12).fill(7));
  });
});
