import { type Kysely, sql } from 'kysely';
import type { DB } from '../db/schema.js';

export const DAY = 86_400_000;

/** The day-partitioned flow tables: the records and their rollups (migration 0039), one partition of each a UTC day. */
export const FLOW_TABLES = ['flows', 'flow_hours', 'flow_days'] as const;

/**
 * Creates the daily partitions (of the records and of both rollups) the days need, under a lock so
 * that concurrent creators agree. Creating a partition locks its parent: never call this inside a
 * transaction that writes flows.
 */
export async function ensurePartitions(db: Kysely<DB>, days: number[]) {
  for (const day of days) {
    const from = new Date(day).toISOString().slice(0, 10);
    const to = new Date(day + DAY).toISOString().slice(0, 10);
    const names = FLOW_TABLES.map((t) => `${t}_${from.replace(/-/g, '')}`);
    const exists = await sql<{ ok: boolean }>`select ${sql.join(names.map((n) => sql`to_regclass(${n}) is not null`), sql` and `)} as ok`.execute(db);
    if (exists.rows[0]?.ok) continue;
    // Creators queue on the lock; IF NOT EXISTS then sees a table a concurrent creator committed
    // (a second to_regclass would not: it can answer from a stale catalog cache).
    await db.transaction().execute(async (trx) => {
      await sql`select pg_advisory_xact_lock(hashtext('surveyor.flows.partition'))`.execute(trx);
      for (const [i, table] of FLOW_TABLES.entries())
        await sql.raw(`create table if not exists ${names[i]} partition of ${table} for values from ('${from}T00:00:00Z') to ('${to}T00:00:00Z')`).execute(trx);
    });
  }
}
