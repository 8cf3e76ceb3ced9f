import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../src/cli/main.js';
import { type Database, openDatabase } from '../src/db/database.js';
import { type Migration, MigrationChangedError, SchemaTooNewError, loadMigrations, migrate } from '../src/db/migrate.js';
import { type TestDatabase, createTestDatabase } from './helpers.js';

const shipped = loadMigrations();
const latest = shipped.at(-1)!.version;

async function recorded(database: Database) {
  const { rows } = await sql<{ version: number; name: string; checksum: string; applied_at: Date }>`
    select version, name, checksum, applied_at from schema_migrations order by version`.execute(database.db);
  return rows;
}

async function tableExists(database: Database, name: string): Promise<boolean> {
  const { rows } = await sql<{ r: string | null }>`select to_regclass(${name})::text as r`.execute(database.db);
  return rows[0]!.r !== null;
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

describe('loadMigrations', () => {
  it('reads the shipped migrations in version order, starting with 0001_foundation', () => {
    expect(shipped[0]).toMatchObject({ version: 1, name: 'foundation' });
    expect(shipped.map((m) => m.version)).toEqual([...shipped.map((m) => m.version)].sort((a, b) => a - b));
    for (const m of shipped) expect(m.checksum).toBe(sha256(m.sql));
  });
});

describe('migrate on a fresh database', () => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await createTestDatabase({ migrate: false });
  });
  afterAll(() => t.drop());

  it('applies 0001 and records it in schema_migrations with its name and checksum', async () => {
    expect(await tableExists(t.database, 'organisations')).toBe(false);
    const result = await migrate(t.database);
    expect(result.applied).toEqual(shipped.map((m) => m.version));
    expect(result.applied[0]).toBe(1);
    expect(result.version).toBe(latest);
    const rows = await recorded(t.database);
    expect(rows.map((r) => Number(r.version))).toEqual(shipped.map((m) => m.version));
    expect(rows[0]).toMatchObject({ name: 'foundation', checksum: shipped[0]!.checksum });
    expect(rows[0]!.applied_at).toBeInstanceOf(Date);
    for (const table of ['organisations', 'users', 'memberships', 'keys', 'sessions', 'audit_log']) {
      expect(await tableExists(t.database, table)).toBe(true);
    }
  });

  it('applies nothing the second time', async () => {
    const before = await recorded(t.database);
    const result = await migrate(t.database);
    expect(result).toEqual({ applied: [], version: latest });
    expect(await recorded(t.database)).toEqual(before);
  });

  it('refuses an applied migration whose file changed, with MigrationChangedError', async () => {
    const editedSql = `${shipped[0]!.sql}\n-- edited after release\n`;
    const edited: Migration[] = [{ ...shipped[0]!, sql: editedSql, checksum: sha256(editedSql) }, ...shipped.slice(1)];
    const err = await migrate(t.database, { migrations: edited }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(MigrationChangedError);
    expect((err as MigrationChangedError).version).toBe(1);
    expect((err as Error).message).toMatch(/Migration 1 differs/);
    // Refusing left the recorded history alone.
    expect((await recorded(t.database))[0]!.checksum).toBe(shipped[0]!.checksum);
  });

  it('refuses a database a newer release migrated, with SchemaTooNewError', async () => {
    await sql`insert into schema_migrations (version, name, checksum) values (9999, 'from_the_future', 'x')`.execute(t.database.db);
    try {
      const err = await migrate(t.database).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(SchemaTooNewError);
      expect(err).toMatchObject({ databaseVersion: 9999, knownVersion: latest });
      expect((err as Error).message).toMatch(/newer/);
    } finally {
      await sql`delete from schema_migrations where version = 9999`.execute(t.database.db);
    }
    // With the future row gone it is back to a no-op.
    expect(await migrate(t.database)).toEqual({ applied: [], version: latest });
  });
});

describe('a failing migration', () => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await createTestDatabase({ migrate: false });
  });
  afterAll(() => t.drop());

  it('leaves no trace, while the migration before it stays applied: each runs in its own transaction', async () => {
    const brokenSql = 'create table probe_broken (id integer primary key);\ninsert into probe_broken values (1);\nselect * from no_such_table_anywhere;';
    const migrations: Migration[] = [shipped[0]!, { version: 2, name: 'broken', sql: brokenSql, checksum: sha256(brokenSql) }];
    const err = await migrate(t.database, { migrations }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toMatch(/Migration 2_broken failed/);
    expect((err as Error).message).toMatch(/no_such_table_anywhere/);

    expect(await tableExists(t.database, 'probe_broken')).toBe(false);
    const rows = await recorded(t.database);
    expect(rows.map((r) => Number(r.version))).toEqual([1]);
    expect(await tableExists(t.database, 'organisations')).toBe(true);

    // The connection is usable afterwards (not stuck in an aborted transaction), and a fixed
    // 0002 then applies on its own.
    const fixedSql = 'create table probe_fixed (id integer primary key);';
    const fixed: Migration[] = [shipped[0]!, { version: 2, name: 'fixed', sql: fixedSql, checksum: sha256(fixedSql) }];
    expect(await migrate(t.database, { migrations: fixed })).toEqual({ applied: [2], version: 2 });
    expect(await tableExists(t.database, 'probe_fixed')).toBe(true);
    expect((await recorded(t.database)).map((r) => [Number(r.version), r.name])).toEqual([[1, 'foundation'], [2, 'fixed']]);
  });
});

describe('concurrent migrate calls', () => {
  it('serialise: the migrations are applied exactly once', async () => {
    const t = await createTestDatabase({ migrate: false, poolMax: 4 });
    try {
      const results = await Promise.all([migrate(t.database), migrate(t.database), migrate(t.database)]);
      const applied = results.flatMap((r) => r.applied).sort((a, b) => a - b);
      expect(applied).toEqual(shipped.map((m) => m.version));
      for (const r of results) expect(r.version).toBe(latest);
      expect((await recorded(t.database)).map((r) => Number(r.version))).toEqual(shipped.map((m) => m.version));
    } finally {
      await t.drop();
    }
  });
});

describe('surveyor migrate on an embedded data folder a newer release migrated', () => {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'surveyor-migrate-'));
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it('exits 1 with a message saying the schema is newer, and leaves the database as it was', async () => {
    const database = await openDatabase({ dataDir, poolMax: 1 });
    try {
      await migrate(database);
      await sql`insert into schema_migrations (version, name, checksum) values (9999, 'from_the_future', 'x')`.execute(database.db);
    } finally {
      await database.close();
    }

    const out: string[] = [];
    const err: string[] = [];
    const code = await runCli(['migrate'], { out: (l) => out.push(l), err: (l) => err.push(l), env: { SERVICE_DATA_DIR: dataDir } });
    expect(code).toBe(1);
    expect(out).toEqual([]);
    expect(err.join('\n')).toMatch(/newer/);
    expect(err.join('\n')).toMatch(/9999/);

    const reopened = await openDatabase({ dataDir, poolMax: 1 });
    try {
      expect((await recorded(reopened)).map((r) => Number(r.version))).toEqual([...shipped.map((m) => m.version), 9999]);
    } finally {
      await reopened.close();
    }
  });
});
