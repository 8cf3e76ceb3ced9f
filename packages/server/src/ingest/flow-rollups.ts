import { type Kysely, type RawBuilder, type Transaction, sql } from 'kysely';
import type { DB } from '../db/schema.js';
import { DAY, ensurePartitions } from './flow-partitions.js';

const HOUR = 3_600_000;
/** A closed hour is rolled up once its records had this long to arrive; a later one is added by its delivery (foldIntoRollups). */
export const ROLLUP_GRACE_MS = 5 * 60_000;
/** Hours one rollup transaction takes at most: a backlog (a stopped job, records stored before migration 0039) is rolled in steps. */
const STEP_HOURS = 6;

const floorTo = (t: number, unit: number) => Math.floor(t / unit) * unit;
const ceilTo = (t: number, unit: number) => Math.ceil(t / unit) * unit;

/** How far an organisation's records are rolled up (ms, UTC-aligned): all before `hours` are in flow_hours, all before `days` in flow_days. */
export interface RollupMarks {
  hours: number;
  days: number;
}

// A rollup row's totals grow by the row being added (the upsert of both the job and a late delivery).
const ADD = (table: string) =>
  sql.raw(`bytes = ${table}.bytes + excluded.bytes, packets = ${table}.packets + excluded.packets, flows = ${table}.flows + excluded.flows, last_seen = greatest(${table}.last_seen, excluded.last_seen)`);
const UNITS = [
  { table: 'flow_hours', unit: 'hour', mark: 'hours' },
  { table: 'flow_days', unit: 'day', mark: 'days' },
] as const;

async function marksFor(db: Kysely<DB> | Transaction<DB>, organisationId: string, lock: boolean): Promise<RollupMarks | null> {
  const r = await sql<{ hours_until: Date; days_until: Date }>`
    select hours_until, days_until from flow_rollups where organisation_id = ${organisationId} ${lock ? sql`for share` : sql``}`.execute(db);
  const row = r.rows[0];
  return row ? { hours: new Date(row.hours_until).getTime(), days: new Date(row.days_until).getTime() } : null;
}

/** The organisation's rollup marks, null before its first flow record. */
export const rollupMarks = (db: Kysely<DB> | Transaction<DB>, organisationId: string) => marksFor(db, organisationId, false);

/**
 * In a delivery's transaction, after its records are stored (`columns`: their columns as array
 * literals, bucket_start … bytes, built only when some are late; `firstAt` the earliest bucket): holds the organisation's marks FOR SHARE until the commit (the
 * rollup job moves them under FOR UPDATE, so it rolls this delivery's records or this delivery
 * finds them moved) and adds the records of hours and days already rolled up to their rollups. An
 * organisation's first delivery sets its marks at its first record's hour and day.
 */
export async function foldIntoRollups(tx: Transaction<DB>, organisationId: string, columns: () => readonly string[], firstAt: number): Promise<void> {
  let marks = await marksFor(tx, organisationId, true);
  if (!marks) {
    await sql`
      insert into flow_rollups (organisation_id, hours_until, days_until)
      values (${organisationId}, ${new Date(floorTo(firstAt, HOUR))}, ${new Date(floorTo(firstAt, DAY))}) on conflict do nothing`.execute(tx);
    marks = (await marksFor(tx, organisationId, true))!;
  }
  if (firstAt >= marks.hours) return;
  const c = columns();
  for (const { table, unit, mark } of UNITS) {
    if (firstAt >= marks[mark]) continue;
    await sql`
      insert into ${sql.raw(table)} as t (organisation_id, ${sql.raw(unit)}, src_ip, dst_ip, dst_port, protocol, bytes, packets, flows, last_seen)
      select ${organisationId}, date_trunc(${unit}, v.bucket_start, 'UTC'), v.src_ip, v.dst_ip, v.dst_port, v.protocol, sum(v.bytes), sum(v.packets), count(*), max(v.bucket_start)
      from unnest(${c[0]}::timestamptz[], ${c[1]}::inet[], ${c[2]}::inet[], ${c[3]}::int[], ${c[4]}::text[], ${c[5]}::bigint[], ${c[6]}::bigint[])
        as v(bucket_start, src_ip, dst_ip, dst_port, protocol, packets, bytes)
      where v.bucket_start < ${new Date(marks[mark])}
      group by 2, 3, 4, 5, 6
      -- In key order, as the job writes: two late deliveries of the same conversations lock their rows in one order (no deadlock).
      order by 4, 2, 3, 5, 6
      on conflict (organisation_id, dst_ip, ${sql.raw(unit)}, src_ip, dst_port, protocol) do update set ${ADD('t')}`.execute(tx);
  }
}

export interface RollupRun {
  organisations: number;
  hourRows: number;
  dayRows: number;
  /** The hour every organisation's records are now rolled up to (ISO), or null when there were none. */
  through: string | null;
}

/**
 * Job flows.rollup: rolls every organisation's records of closed hours (closed ROLLUP_GRACE_MS
 * ago) into flow_hours, and the hours of closed days into flow_days, set-based across
 * organisations, in steps of at most STEP_HOURS a transaction, written in (organisation,
 * destination) order so that a host's callers lie together on disk (a 30-day read of a busy host
 * is 30 short runs of pages, not one page a caller and day). Each step locks the marks it
 * moves FOR UPDATE, so deliveries of those organisations wait for it (a step is one hour's
 * records in the steady state) and a record is counted once: by the step, or by its delivery.
 */
export async function rollupFlows(db: Kysely<DB>, now: Date, stop: () => boolean = () => false): Promise<RollupRun> {
  const target = floorTo(now.getTime() - ROLLUP_GRACE_MS, HOUR);
  const run: RollupRun = { organisations: 0, hourRows: 0, dayRows: 0, through: null };
  while (!stop()) {
    const pending = await sql<{ lo: Date | null; dlo: Date | null; n: number }>`
      select min(hours_until) as lo, min(days_until) as dlo, count(*)::int as n from flow_rollups where hours_until < ${new Date(target)}`.execute(db);
    const p = pending.rows[0]!;
    if (!p.lo || !p.dlo) break;
    const lo = new Date(p.lo).getTime();
    const dlo = new Date(p.dlo).getTime();
    const to = Math.min(target, lo + STEP_HOURS * HOUR);
    // The partitions the step writes (records stored before migration 0039 have no rollup partitions yet).
    const days: number[] = [];
    for (let d = floorTo(Math.min(lo, dlo), DAY); d < to; d += DAY) days.push(d);
    await ensurePartitions(db, days);
    const step = await db.transaction().execute(async (trx) => {
      const locked = await sql<{ organisation_id: string }>`
        select organisation_id from flow_rollups where hours_until < ${new Date(to)} order by organisation_id for update`.execute(trx);
      const ids = locked.rows.map((r) => r.organisation_id);
      if (ids.length === 0) return null;
      const hours = await sql`
        insert into flow_hours as t (organisation_id, hour, src_ip, dst_ip, dst_port, protocol, bytes, packets, flows, last_seen)
        select f.organisation_id, date_trunc('hour', f.bucket_start, 'UTC'), f.src_ip, f.dst_ip, f.dst_port, f.protocol, sum(f.bytes), sum(f.packets), count(*), max(f.bucket_start)
        from flows f join flow_rollups r on r.organisation_id = f.organisation_id and f.bucket_start >= r.hours_until
        where r.organisation_id = any(${ids}::uuid[]) and f.bucket_start >= ${new Date(lo)} and f.bucket_start < ${new Date(to)}
        group by 1, 2, 3, 4, 5, 6
        order by 1, 4, 2
        on conflict (organisation_id, dst_ip, hour, src_ip, dst_port, protocol) do update set ${ADD('t')}`.execute(trx);
      await sql`update flow_rollups set hours_until = ${new Date(to)} where organisation_id = any(${ids}::uuid[]) and hours_until < ${new Date(to)}`.execute(trx);
      // Days whose every hour is now rolled up.
      const days = await sql`
        insert into flow_days as t (organisation_id, day, src_ip, dst_ip, dst_port, protocol, bytes, packets, flows, last_seen)
        select h.organisation_id, date_trunc('day', h.hour, 'UTC'), h.src_ip, h.dst_ip, h.dst_port, h.protocol, sum(h.bytes), sum(h.packets), sum(h.flows), max(h.last_seen)
        from flow_hours h join flow_rollups r on r.organisation_id = h.organisation_id and h.hour >= r.days_until and h.hour < date_trunc('day', r.hours_until, 'UTC')
        where r.organisation_id = any(${ids}::uuid[]) and h.hour >= ${new Date(floorTo(dlo, DAY))} and h.hour < ${new Date(floorTo(to, DAY))}
        group by 1, 2, 3, 4, 5, 6
        order by 1, 4, 2
        on conflict (organisation_id, dst_ip, day, src_ip, dst_port, protocol) do update set ${ADD('t')}`.execute(trx);
      await sql`
        update flow_rollups set days_until = date_trunc('day', hours_until, 'UTC')
        where organisation_id = any(${ids}::uuid[]) and days_until < date_trunc('day', hours_until, 'UTC')`.execute(trx);
      return { organisations: ids.length, hourRows: Number(hours.numAffectedRows ?? 0), dayRows: Number(days.numAffectedRows ?? 0) };
    });
    if (!step) break;
    run.organisations = Math.max(run.organisations, step.organisations);
    run.hourRows += step.hourRows;
    run.dayRows += step.dayRows;
    run.through = new Date(to).toISOString();
  }
  return run;
}

type Segment = { table: 'flows' | 'flow_hours' | 'flow_days'; from: number; to: number | null };

/**
 * Where each part of the window [from, to] (to null: open) is read: whole days and hours from the
 * rollups up to the marks, the rest (the window's first partial hour, the records since the last
 * rollup, an end inside a rolled hour) from the records. Exported for its test.
 */
export function windowSegments(from: number, to: number | null, marks: RollupMarks | null): Segment[] {
  const end = to ?? Number.POSITIVE_INFINITY;
  const rolledEnd = Math.min(end, marks?.hours ?? Number.NEGATIVE_INFINITY);
  const h0 = ceilTo(from, HOUR);
  const h1 = floorTo(rolledEnd, HOUR);
  if (!marks || !(h0 < h1)) return [{ table: 'flows', from, to }];
  const segments: Segment[] = [];
  if (from < h0) segments.push({ table: 'flows', from, to: h0 });
  const d0 = ceilTo(h0, DAY);
  const d1 = Math.min(floorTo(h1, DAY), marks.days);
  if (d0 < d1) {
    if (h0 < d0) segments.push({ table: 'flow_hours', from: h0, to: d0 });
    segments.push({ table: 'flow_days', from: d0, to: d1 });
    if (d1 < h1) segments.push({ table: 'flow_hours', from: d1, to: h1 });
  } else segments.push({ table: 'flow_hours', from: h0, to: h1 });
  segments.push({ table: 'flows', from: h1, to });
  return segments;
}

/**
 * One organisation's flows in the window [from, to] (to null: up to now and whatever is ahead) as
 * rows (src_ip, dst_ip, dst_port, protocol, bytes, packets, flows, last_seen): per conversation
 * and hour or day where rolled up, per record elsewhere (flows 1, last_seen its bucket), each
 * part filtered by `where` (on src_ip / dst_ip). Sums over these rows equal sums over the
 * window's records; the last segment (records) is closed at `to`, the others half-open.
 */
export function windowFlows(organisationId: string, from: Date, to: Date | null, marks: RollupMarks | null, where: RawBuilder<unknown>): RawBuilder<unknown> {
  const parts = windowSegments(from.getTime(), to?.getTime() ?? null, marks).map((s, i, all) => {
    const last = i === all.length - 1;
    if (s.table === 'flows') {
      const upper = s.to === null ? sql`` : last ? sql`and bucket_start <= ${new Date(s.to)}` : sql`and bucket_start < ${new Date(s.to)}`;
      return sql`select src_ip, dst_ip, dst_port, protocol, bytes, packets, 1::bigint as flows, bucket_start as last_seen
        from flows where organisation_id = ${organisationId} and bucket_start >= ${new Date(s.from)} ${upper} and ${where}`;
    }
    const unit = sql.raw(s.table === 'flow_hours' ? 'hour' : 'day');
    return sql`select src_ip, dst_ip, dst_port, protocol, bytes, packets, flows, last_seen
      from ${sql.raw(s.table)} where organisation_id = ${organisationId} and ${unit} >= ${new Date(s.from)} and ${unit} < ${new Date(s.to!)} and ${where}`;
  });
  return sql.join(parts, sql` union all `);
}
