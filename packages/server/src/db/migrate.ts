import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Logger } from 'pino';
import type { Database } from './database.js';

/** `packages/server/migrations`, the same from `src/db` and `dist/db`. */
export const migrationsDir = fileURLToPath(new URL('../../migrations/', import.meta.url));

export interface Migration {
  version: number;
  name: string;
  sql: string;
  checksum: string;
}

export class SchemaTooNewError extends Error {
  constructor(readonly databaseVersion: number, readonly knownVersion: number) {
    super(
      `The database schema is at version ${databaseVersion}, newer than this release knows (${knownVersion}). ` +
        'A newer Surveyor has migrated it; run that release (or newer) instead.',
    );
    this.name = 'SchemaTooNewError';
  }
}

export class MigrationChangedError extends Error {
  constructor(readonly version: number) {
    super(`Migration ${version} differs from the one applied to this database. Shipped migrations are never edited; add a new one.`);
    this.name = 'MigrationChangedError';
  }
}

/** Reads `NNNN_name.sql` files in version order. Throws on a malformed name or a duplicate version. */
export function loadMigrations(dir: string = migrationsDir): Migration[] {
  const out: Migration[] = [];
  for (const file of readdirSync(dir).sort()) {
    if (!file.endsWith('.sql')) continue;
    const m = /^(\d{4})_([a-z0-9_]+)\.sql$/.exec(file);
    if (!m) throw new Error(`Migration file name ${file} is not NNNN_name.sql`);
    const sql = readFileSync(`${dir}/${file}`, 'utf8');
    const version = Number(m[1]);
    if (out.some((x) => x.version === version)) throw new Error(`Two migrations have version ${version}`);
    out.push({ version, name: m[2]!, sql, checksum: createHash('sha256').update(sql).digest('hex') });
  }
  return out;
}

const LOCK = `hashtext('surveyor.migrate')`;

/** What `migrate` did: the versions it applied now, and the schema's version after. */
export interface MigrationResult {
  applied: number[];
  version: number;
}

/**
 * Applies every pending migration, each in its own transaction, recorded in schema_migrations.
 * Concurrent callers serialise on an advisory lock. Refuses (SchemaTooNewError) a database that a
 * newer release has migrated, and (MigrationChangedError) one whose applied migration was edited.
 */
export async function migrate(database: Database, opts: { logger?: Logger; migrations?: Migration[] } = {}): Promise<MigrationResult> {
  const migrations = opts.migrations ?? loadMigrations();
  const known = migrations.at(-1)?.version ?? 0;
  return database.withRawSession(async (exec) => {
    await exec(`select pg_advisory_lock(${LOCK})`);
    try {
      await exec(`create table if not exists schema_migrations (
        version integer primary key,
        name text not null,
        checksum text not null,
        applied_at timestamptz not null default now()
      )`);
      const rows = await exec('select version, checksum from schema_migrations order by version');
      const applied = new Map(rows.map((r) => [Number(r.version), String(r.checksum)]));
      const current = Math.max(0, ...applied.keys());
      if (current > known) throw new SchemaTooNewError(current, known);
      for (const m of migrations) {
        const sum = applied.get(m.version);
        if (sum !== undefined && sum !== m.checksum) throw new MigrationChangedError(m.version);
      }
      const done: number[] = [];
      for (const m of migrations) {
        if (applied.has(m.version)) continue;
        await exec('begin');
        try {
          await exec(m.sql);
          await exec(`insert into schema_migrations (version, name, checksum) values (${m.version}, '${m.name}', '${m.checksum}')`);
          await exec('commit');
        } catch (e) {
          await exec('rollback');
          throw new Error(`Migration ${m.version}_${m.name} failed: ${(e as Error).message}`, { cause: e });
        }
        opts.logger?.info({ version: m.version, name: m.name }, 'migration applied');
        done.push(m.version);
      }
      return { applied: done, version: Math.max(current, ...done) };
    } finally {
      await exec(`select pg_advisory_unlock(${LOCK})`);
    }
  });
}
