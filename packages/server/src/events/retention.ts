import { type Kysely, sql } from 'kysely';
import type { Config } from '../config.js';
import type { DB } from '../db/schema.js';
import { drain } from '../jobs/batches.js';

// Retention of what the service appends by itself (issue 30): alert deliveries, events and the
// change log. Each is deleted in statements of at most `batch` rows (its own transaction each),
// so no delete holds locks or bloats the WAL for long, and a tick stopped half-way (shutdown,
// time budget) leaves nothing half-done: the next tick goes on.

const DAY = 86_400_000;

export type Retention = Config['retention'];

/** How far a tick may go: rows per statement, and when to stop (the rest waits for the next tick). */
export interface PruneBounds {
  batch: number;
  /** Organisations per change-log statement. */
  organisations: number;
  /** Stops between statements when this says so (the process stopping, the tick's time budget). */
  stop(): boolean;
}

export interface Pruned {
  deliveries: number;
  events: number;
  changes: number;
  /** False when the tick stopped before it was done (the next one goes on). */
  complete: boolean;
}

/**
 * Delivered and dead deliveries whose last attempt is older than the window, with their attempts
 * (cascade). A pending delivery is never pruned: it is kept until it is delivered or dead.
 */
async function deliveriesBatch(db: Kysely<DB>, cutoff: Date, batch: number): Promise<number> {
  const r = await sql`
    delete from notification_deliveries d
    where (d.organisation_id, d.id) in (
      select organisation_id, id from notification_deliveries
      where state <> 'pending' and updated_at < ${cutoff}
      order by updated_at limit ${batch})`.execute(db);
  return Number(r.numAffectedRows ?? 0);
}

/**
 * Events older than the window of which no delivery is left: an event is kept while a delivery
 * of it is (pending, or within the deliveries' window), so the delivery log can still name it.
 */
async function eventsBatch(db: Kysely<DB>, cutoff: Date, batch: number): Promise<number> {
  const r = await sql`
    delete from events e
    where (e.organisation_id, e.id) in (
      select o.organisation_id, o.id from events o
      where o.occurred_at < ${cutoff}
        and not exists (select 1 from notification_deliveries d where d.organisation_id = o.organisation_id and d.event_id = o.id)
      order by o.occurred_at limit ${batch})`.execute(db);
  return Number(r.numAffectedRows ?? 0);
}

/**
 * Change rows older than the window of the organisations `orgs`, at most `batch`, oldest first,
 * each organisation's read through its (organisation_id, at) index; the largest id deleted per
 * organisation is kept in change_log_pruned (a resume from below it is told to reload). Rows
 * that cve.match has not read yet (newer than the organisation's last match) are kept whatever
 * their age: it finds the services changed since its last run in the change log.
 */
async function changesBatch(db: Kysely<DB>, orgs: string[], cutoff: Date, batch: number): Promise<number> {
  const r = await sql<{ n: number }>`
    with doomed as (
      select c.organisation_id, c.id
      from unnest(${orgs}::uuid[]) as o(id)
      left join advisory_match_state m on m.organisation_id = o.id
      cross join lateral (
        select organisation_id, id from change_log
        where organisation_id = o.id and at < least(${cutoff}::timestamptz, coalesce(m.matched_at, 'infinity'::timestamptz))
        order by at limit ${batch}
      ) c
      limit ${batch}
    ), gone as (
      delete from change_log c using doomed d where c.organisation_id = d.organisation_id and c.id = d.id
      returning c.organisation_id, c.id
    ), marked as (
      insert into change_log_pruned (organisation_id, through_id)
      select organisation_id, max(id) from gone group by organisation_id
      on conflict (organisation_id) do update set through_id = greatest(change_log_pruned.through_id, excluded.through_id), pruned_at = now()
    )
    select count(*)::int as n from gone`.execute(db);
  return r.rows[0]?.n ?? 0;
}

/**
 * Prunes past each window of `retention`, as of `at`: deliveries first (an event goes only once
 * none of its deliveries is left), then events, then the change log organisation by organisation
 * (`bounds.organisations` at a time, by id). Never throws for having stopped early: `complete` says so.
 */
export async function prune(db: Kysely<DB>, retention: Retention, at: Date, bounds: PruneBounds): Promise<Pruned> {
  const before = (days: number) => new Date(at.getTime() - days * DAY);
  const out: Pruned = { deliveries: 0, events: 0, changes: 0, complete: false };
  const deliveries = await drain(() => deliveriesBatch(db, before(retention.deliveriesDays), bounds.batch), bounds.batch, bounds.stop);
  out.deliveries = deliveries.n;
  if (!deliveries.done) return out;
  const events = await drain(() => eventsBatch(db, before(retention.eventsDays), bounds.batch), bounds.batch, bounds.stop);
  out.events = events.n;
  if (!events.done) return out;
  const cutoff = before(retention.changeLogDays);
  for (let after = '00000000-0000-0000-0000-000000000000'; ; ) {
    const orgs = (await sql<{ id: string }>`select id from organisations where id > ${after}::uuid order by id limit ${bounds.organisations}`.execute(db)).rows.map((r) => r.id);
    if (orgs.length === 0) break;
    const changes = await drain(() => changesBatch(db, orgs, cutoff, bounds.batch), bounds.batch, bounds.stop);
    out.changes += changes.n;
    if (!changes.done) return out;
    after = orgs[orgs.length - 1]!;
  }
  out.complete = true;
  return out;
}
