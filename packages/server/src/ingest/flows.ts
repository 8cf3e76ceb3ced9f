import { createHash } from 'node:crypto';
import type { FlowRecord, FlowsRequest } from '@surveyor/contract';
import { type Kysely, type Transaction, sql } from 'kysely';
import type { z } from 'zod';
import type { DaemonPrincipal } from '../daemons/daemons.service.js';
import { ownDaemon } from '../daemons/daemons.service.js';
import type { DB } from '../db/schema.js';

const DAY = 86_400_000;

/** Creates the daily partitions the batch needs (under a lock, so concurrent creators agree). */
async function ensurePartitions(db: Kysely<DB>, days: number[]) {
  for (const day of days) {
    const from = new Date(day).toISOString().slice(0, 10);
    const to = new Date(day + DAY).toISOString().slice(0, 10);
    const name = `flows_${from.replace(/-/g, '')}`;
    const exists = await sql<{ ok: boolean }>`select to_regclass(${name}) is not null as ok`.execute(db);
    if (exists.rows[0]?.ok) continue;
    // Creators queue on the lock; IF NOT EXISTS then sees a table a concurrent creator committed
    // (a second to_regclass would not: it can answer from a stale catalog cache).
    await db.transaction().execute(async (trx) => {
      await sql`select pg_advisory_xact_lock(hashtext('surveyor.flows.partition'))`.execute(trx);
      await sql.raw(`create table if not exists ${name} partition of flows for values from ('${from}T00:00:00Z') to ('${to}T00:00:00Z')`).execute(trx);
    });
  }
}

/** decisions.md: flow records older than 30 days (the largest topology window) are pruned. */
export const FLOW_RETENTION_DAYS = 30;

/**
 * Prunes flows past the retention: drops each daily partition whose day ended more than 30 days
 * before `at` (a DROP, not a DELETE: no dead rows, no vacuum), and forgets batch digests as old
 * (a retry that late is not one). A partition is dropped under the creators' lock and with a
 * short lock timeout: when readers hold the table that long, it is left for the next run.
 */
export async function pruneFlows(db: Kysely<DB>, at: Date): Promise<{ partitions: string[]; busy: string[]; batches: number }> {
  const cutoff = new Date(at.getTime() - FLOW_RETENTION_DAYS * DAY);
  const children = await sql<{ name: string }>`
    select c.relname as name from pg_inherits i
    join pg_class c on c.oid = i.inhrelid join pg_class p on p.oid = i.inhparent
    where p.oid = 'flows'::regclass order by c.relname`.execute(db);
  const dropped: string[] = [];
  const busy: string[] = [];
  for (const { name } of children.rows) {
    const m = /^flows_(\d{4})(\d{2})(\d{2})$/.exec(name);
    if (!m || Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3])) + DAY > cutoff.getTime()) continue;
    try {
      await db.transaction().execute(async (trx) => {
        // The drop locks the parent table: it waits at most 2 s for readers (and blocks writers that long).
        await sql`set local lock_timeout = '2s'`.execute(trx);
        await sql`select pg_advisory_xact_lock(hashtext('surveyor.flows.partition'))`.execute(trx);
        await sql.raw(`drop table if exists ${name}`).execute(trx);
      });
      dropped.push(name);
    } catch (err) {
      if ((err as { code?: string }).code !== '55P03') throw err; // lock_not_available: busy now, next run
      busy.push(name);
    }
  }
  const batches = await sql`delete from flow_batches where received_at < ${cutoff}`.execute(db);
  return { partitions: dropped, busy, batches: Number(batches.numAffectedRows ?? 0) };
}

/** `dropped` accumulates on the daemon (spec 4.4). */
function addDropped(db: Kysely<DB>, organisationId: string, daemonId: string, n: number) {
  return sql`update daemons set flows_dropped = flows_dropped + ${n}, last_seen_at = now() where organisation_id = ${organisationId} and id = ${daemonId}`.execute(db);
}

type Flow = z.output<typeof FlowRecord>;

/** A bucket further ahead of the server's clock than this is not stored: the daemon's clock runs ahead. */
export const FLOW_FUTURE_TOLERANCE_MS = 10 * 60_000;

/**
 * Flow records made ready to store: the columns (as PostgreSQL array literals) of the records
 * inside the window, the digest of the whole delivery, and how many fell outside the window.
 */
export interface PreparedFlows {
  /** Records to store: those inside the window. */
  records: number;
  /** Records outside the window (older than the retention, or ahead of the clock): not stored, counted. */
  outOfWindow: number;
  dropped: number;
  digest: string;
  columns: readonly string[];
}

/** Columns as PostgreSQL array literals, built directly (see prepareFlows). */
function columnsOf(f: Flow[]): readonly string[] {
  // Every value but protocol and source is validated to characters that need no quoting
  // (canonical addresses, RFC 3339 times, integers). Protocol and source names repeat: each
  // distinct one is quoted once.
  const column = <T>(pick: (x: Flow) => T) => `{${f.map(pick).join(',')}}`;
  const quotes = new Map<string, string>();
  const quote = (v: string) => quotes.get(v) ?? quotes.set(v, `"${v.replace(/["\\]/g, '\\$&')}"`).get(v)!;
  const quoted = (pick: (x: Flow) => string) => `{${f.map((x) => quote(pick(x))).join(',')}}`;
  return [
    column((x) => x.bucketStart), column((x) => x.srcIp), column((x) => x.dstIp), column((x) => x.dstPort),
    quoted((x) => x.protocol.toLowerCase()), column((x) => x.packets), column((x) => x.bytes), quoted((x) => x.source),
  ];
}

/**
 * Makes flow records ready for storeFlows: columns, digest, and the daily partitions they need.
 * Records outside the window (README "Daemons and scans") are left out and counted: a bucket that
 * started more than FLOW_RETENTION_DAYS before `now` (pruned anyway, and a daemon replaying an old
 * buffer must not be refused forever), or more than FLOW_FUTURE_TOLERANCE_MS after it. The digest
 * is of the whole delivery, so a retry is recognised even when a record crossed the window's edge
 * between the two copies. The partitions are created here, before the caller's transaction and
 * each in a short one of its own: creating one locks the flows table, which a batch's transaction
 * must not hold. A partition made for a batch that then fails stays, empty.
 */
export async function prepareFlows(db: Kysely<DB>, f: Flow[], dropped: number, now = Date.now()): Promise<PreparedFlows> {
  const from = now - FLOW_RETENTION_DAYS * DAY;
  const to = now + FLOW_FUTURE_TOLERANCE_MS;
  const kept: Flow[] = [];
  const days = new Set<string>();
  for (const x of f) {
    const at = Date.parse(x.bucketStart);
    if (at < from || at > to) continue;
    kept.push(x);
    // The UTC day of each record: read from the text when it is in UTC, from the instant otherwise.
    days.add(x.bucketStart.endsWith('Z') ? x.bucketStart.slice(0, 10) : new Date(at).toISOString().slice(0, 10));
  }
  const all = columnsOf(f);
  const digest = createHash('sha256').update(all.join('|')).update(`|${dropped}`).digest('hex');
  await ensurePartitions(db, [...days].map((d) => Date.parse(`${d}T00:00:00Z`)));
  return { records: kept.length, outOfWindow: f.length - kept.length, dropped, digest, columns: kept.length === f.length ? all : columnsOf(kept) };
}

/**
 * Stores prepared flow records as sent, in the caller's transaction, in one set-based insert; they
 * are resolved to the inventory when read (view `flows_resolved`, host topology), so a flow seen
 * before its host resolves once the host is known. A retried delivery (the same records again,
 * after a lost answer) is recognised by its digest and stores nothing; `dropped` accumulates on the
 * daemon once per delivery. Returns the records stored.
 */
export async function storeFlows(tx: Transaction<DB>, organisationId: string, daemonId: string, p: PreparedFlows): Promise<{ accepted: number }> {
  // First writer of a digest wins; a concurrent identical delivery waits on the key, then finds it.
  const fresh = await sql`
    insert into flow_batches (organisation_id, daemon_id, digest, records) values (${organisationId}, ${daemonId}, ${p.digest}, ${p.records})
    on conflict do nothing returning 1`.execute(tx);
  if (fresh.rows.length === 0) return { accepted: 0 };
  const c = p.columns;
  if (p.records > 0) await sql`
    insert into flows (organisation_id, bucket_start, daemon_id, src_ip, dst_ip, dst_port, protocol, packets, bytes, source)
    select ${organisationId}, v.bucket_start, ${daemonId}, v.src_ip, v.dst_ip, v.dst_port, v.protocol, v.packets, v.bytes, v.source
    from unnest(${c[0]}::timestamptz[], ${c[1]}::inet[], ${c[2]}::inet[], ${c[3]}::int[], ${c[4]}::text[], ${c[5]}::bigint[], ${c[6]}::bigint[], ${c[7]}::text[])
      as v(bucket_start, src_ip, dst_ip, dst_port, protocol, packets, bytes, source)`.execute(tx);
  if (p.dropped > 0) await addDropped(tx, organisationId, daemonId, p.dropped);
  return { accepted: p.records };
}

/** A delivery to POST /daemon/flows (spec 4.4): its records stored in one transaction of their own. */
export async function ingestFlows(db: Kysely<DB>, p: DaemonPrincipal, body: z.output<typeof FlowsRequest>): Promise<{ accepted: number; outOfWindow: number }> {
  const daemon = await ownDaemon(db, p);
  if (body.flows.length === 0) {
    // Nothing to recognise a retry by: a delivery of `dropped` alone is counted as it comes.
    if (body.dropped > 0) await addDropped(db, p.organisationId, daemon.id, body.dropped);
    return { accepted: 0, outOfWindow: 0 };
  }
  const prepared = await prepareFlows(db, body.flows, body.dropped);
  const stored = await db.transaction().execute((trx) => storeFlows(trx, p.organisationId, daemon.id, prepared));
  return { ...stored, outOfWindow: prepared.outOfWindow };
}
