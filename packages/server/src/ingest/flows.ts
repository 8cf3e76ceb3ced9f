import { createHash } from 'node:crypto';
import type { FlowRecord, FlowsRequest } from '@surveyor/contract';
import { type Kysely, type Transaction, sql } from 'kysely';
import type { z } from 'zod';
import type { DaemonPrincipal } from '../daemons/daemons.service.js';
import { ownDaemon } from '../daemons/daemons.service.js';
import { copyRows, copyText } from '../db/copy.js';
import type { DB } from '../db/schema.js';
import { DAY, FLOW_TABLES, ensurePartitions } from './flow-partitions.js';
import { foldIntoRollups } from './flow-rollups.js';


/** decisions.md: flow records older than 30 days (the largest topology window) are pruned. */
export const FLOW_RETENTION_DAYS = 30;

/**
 * Prunes flows past the retention: drops each daily partition (of the records and of their rollups) whose day ended more than 30 days
 * before `at` (a DROP, not a DELETE: no dead rows, no vacuum), and forgets batch digests as old
 * (a retry that late is not one). A partition is dropped under the creators' lock and with a
 * short lock timeout: when readers hold the table that long, it is left for the next run.
 */
export async function pruneFlows(db: Kysely<DB>, at: Date): Promise<{ partitions: string[]; busy: string[]; batches: number }> {
  const cutoff = new Date(at.getTime() - FLOW_RETENTION_DAYS * DAY);
  const children = await sql<{ name: string }>`
    select c.relname as name from pg_inherits i
    join pg_class c on c.oid = i.inhrelid join pg_class p on p.oid = i.inhparent
    where p.oid in (${sql.join(FLOW_TABLES.map((t) => sql`${t}::regclass`))}) order by c.relname`.execute(db);
  const dropped: string[] = [];
  const busy: string[] = [];
  for (const { name } of children.rows) {
    const m = /^(?:flows|flow_hours|flow_days)_(\d{4})(\d{2})(\d{2})$/.exec(name);
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
 * Flow records made ready to store: the records inside the window as COPY rows, the digest of the
 * whole delivery, and how many fell outside the window.
 */
export interface PreparedFlows {
  /** Records to store: those inside the window. */
  records: number;
  /** Records outside the window (older than the retention, or ahead of the clock): not stored, counted. */
  outOfWindow: number;
  dropped: number;
  digest: string;
  /** The records to store, for the late ones' rollups (flow-rollups.ts), and as COPY rows of RECORD_COLUMNS. */
  kept: Flow[];
  rows: string;
  /** The earliest bucket stored (ms), to tell whether any record falls in hours already rolled up. */
  firstAt: number;
}

/** The stored columns of a record, after (organisation_id, daemon_id), in COPY order. */
const RECORD_COLUMNS = ['bucket_start', 'src_ip', 'dst_ip', 'dst_port', 'protocol', 'packets', 'bytes', 'source'] as const;

/**
 * Records as COPY rows (text format) of RECORD_COLUMNS (storeFlows puts the organisation and
 * daemon in front of each). Every value
 * but protocol and source is validated to characters COPY takes as they are (canonical addresses,
 * RFC 3339 times, integers); protocol and source names repeat, each distinct one escaped once.
 */
function copyRowsOf(f: Flow[]): string {
  const texts = new Map<string, string>();
  const text = (v: string) => texts.get(v) ?? texts.set(v, copyText(v)).get(v)!;
  let out = '';
  for (const x of f) out += `${x.bucketStart}\t${x.srcIp}\t${x.dstIp}\t${x.dstPort}\t${text(x.protocol.toLowerCase())}\t${x.packets}\t${x.bytes}\t${text(x.source)}\n`;
  return out;
}

/** Columns as PostgreSQL array literals (bucket_start … bytes), for the late records' rollups. */
export function columnsOf(f: Flow[]): readonly string[] {
  const column = <T>(pick: (x: Flow) => T) => `{${f.map(pick).join(',')}}`;
  const quotes = new Map<string, string>();
  const quote = (v: string) => quotes.get(v) ?? quotes.set(v, `"${v.replace(/["\\]/g, '\\$&')}"`).get(v)!;
  return [
    column((x) => x.bucketStart), column((x) => x.srcIp), column((x) => x.dstIp), column((x) => x.dstPort),
    `{${f.map((x) => quote(x.protocol.toLowerCase())).join(',')}}`, column((x) => x.packets), column((x) => x.bytes),
  ];
}

/**
 * Makes flow records ready for storeFlows: COPY rows, digest, and the daily partitions they need.
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
  let firstAt = Number.POSITIVE_INFINITY;
  // A delivery repeats its minutes: each distinct bucket is parsed once.
  const instants = new Map<string, number>();
  for (const x of f) {
    let at = instants.get(x.bucketStart);
    if (at === undefined) {
      at = Date.parse(x.bucketStart);
      instants.set(x.bucketStart, at);
      // The UTC day of each record: read from the text when it is in UTC, from the instant otherwise.
      if (at >= from && at <= to) days.add(x.bucketStart.endsWith('Z') ? x.bucketStart.slice(0, 10) : new Date(at).toISOString().slice(0, 10));
    }
    if (at < from || at > to) continue;
    kept.push(x);
    if (at < firstAt) firstAt = at;
  }
  const all = copyRowsOf(f);
  const digest = createHash('sha256').update(all).update(`|${dropped}`).digest('hex');
  await ensurePartitions(db, [...days].map((d) => Date.parse(`${d}T00:00:00Z`)));
  return { records: kept.length, outOfWindow: f.length - kept.length, dropped, digest, kept, rows: kept.length === f.length ? all : copyRowsOf(kept), firstAt };
}

/**
 * Stores prepared flow records as sent, in the caller's transaction, by one COPY; they are
 * resolved to the inventory when read (view `flows_resolved`, host topology), so a flow seen
 * before its host resolves once the host is known. Records of hours already rolled up (a late
 * delivery) are added to the rollups in the same transaction (flow-rollups.ts). A retried delivery (the same records again,
 * after a lost answer) is recognised by its digest and stores nothing; `dropped` accumulates on the
 * daemon once per delivery. Returns the records stored.
 */
export async function storeFlows(tx: Transaction<DB>, organisationId: string, daemonId: string, p: PreparedFlows): Promise<{ accepted: number }> {
  // First writer of a digest wins; a concurrent identical delivery waits on the key, then finds it.
  const fresh = await sql`
    insert into flow_batches (organisation_id, daemon_id, digest, records) values (${organisationId}, ${daemonId}, ${p.digest}, ${p.records})
    on conflict do nothing returning 1`.execute(tx);
  if (fresh.rows.length === 0) return { accepted: 0 };
  if (p.records > 0) {
    // Each row ends in the only raw newline it has (COPY escapes one inside a value): the owner goes in front of each.
    const owner = `${organisationId}\t${daemonId}\t`;
    await copyRows(tx, 'flows', ['organisation_id', 'daemon_id', ...RECORD_COLUMNS], owner + p.rows.slice(0, -1).replaceAll('\n', `\n${owner}`) + '\n');
    await foldIntoRollups(tx, organisationId, () => columnsOf(p.kept), p.firstAt);
  }
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
