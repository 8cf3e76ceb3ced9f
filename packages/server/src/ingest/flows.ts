import { createHash } from 'node:crypto';
import type { FlowRecord, FlowsRequest } from '@surveyor/contract';
import { type Kysely, type Transaction, sql } from 'kysely';
import type { z } from 'zod';
import type { DaemonPrincipal } from '../daemons/daemons.service.js';
import { ownDaemon } from '../daemons/daemons.service.js';
import { copyRows, copyText } from '../db/copy.js';
import type { DB } from '../db/schema.js';
import { PRUNE_BATCH, drain } from '../jobs/batches.js';
import { OWNER_AT, OWNER_BYTES, ScannedFlows } from './flow-check.js';
import { DAY, FLOW_TABLES, ensurePartitions } from './flow-partitions.js';
import { foldIntoRollups } from './flow-rollups.js';


/** decisions.md: flow records older than 30 days (the largest topology window) are pruned. */
export const FLOW_RETENTION_DAYS = 30;

/**
 * Prunes flows past the retention: drops each daily partition (of the records and of their rollups) whose day ended more than 30 days
 * before `at` (a DROP, not a DELETE: no dead rows, no vacuum), and forgets batch digests as old,
 * the flow deliveries' and the observation batches' (a retry that late is not one), in deletes of
 * PRUNE_BATCH rows until `stop` says so, the rest left for the next run. A partition
 * is dropped under the creators' lock and with a short lock timeout: when readers hold the table
 * that long, it is left for the next run.
 */
export async function pruneFlows(db: Kysely<DB>, at: Date, stop: () => boolean = () => false): Promise<{ partitions: string[]; busy: string[]; batches: number; scanBatches: number }> {
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
  const batches = await forgetDigests(db, 'flow_batches', 'daemon_id', cutoff, stop);
  const scanBatches = await forgetDigests(db, 'scan_batches', 'session_id', cutoff, stop);
  return { partitions: dropped, busy, batches, scanBatches };
}

/**
 * Forgets the digests `table` received before `cutoff` (both tables are keyed by organisation, owner
 * and digest, and indexed by time received), oldest first, PRUNE_BATCH rows a statement until `stop`
 * says so; answers how many.
 */
async function forgetDigests(db: Kysely<DB>, table: 'flow_batches' | 'scan_batches', owner: 'daemon_id' | 'session_id', cutoff: Date, stop: () => boolean): Promise<number> {
  const t = sql.table(table);
  const o = sql.ref(owner);
  const { n } = await drain(
    async () =>
      Number(
        (
          await sql`
            delete from ${t} where (organisation_id, ${o}, digest) in (
              select organisation_id, ${o}, digest from ${t} where received_at < ${cutoff} order by received_at limit ${PRUNE_BATCH})`.execute(db)
        ).numAffectedRows ?? 0,
      ),
    PRUNE_BATCH,
    stop,
  );
  return n;
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
  /** The records to store as COPY rows of RECORD_COLUMNS (storeFlows puts the owner in front of each); empty when `binary` holds them. */
  rows: Buffer;
  /** The records to store as array literals (columnsOf), for the late ones' rollups (flow-rollups.ts): made only when some are late. */
  columns: () => readonly string[];
  /** The earliest bucket stored (ms), to tell whether any record falls in hours already rolled up. */
  firstAt: number;
  /** The same records in COPY's binary format, owners blank (flow-check.ts ScannedFlows), when read from the body's bytes. */
  binary?: { data: Buffer; tuples: Int32Array };
}

/** The stored columns of a record, after (organisation_id, daemon_id), in COPY order. */
const RECORD_COLUMNS = ['bucket_start', 'src_ip', 'dst_ip', 'dst_port', 'protocol', 'packets', 'bytes', 'source'] as const;

/**
 * Records as COPY rows (text format) of RECORD_COLUMNS (storeFlows puts the organisation and
 * daemon in front of each). Every value
 * but protocol and source is validated to characters COPY takes as they are (canonical addresses,
 * RFC 3339 times, integers); protocol and source names repeat, each distinct one escaped once.
 */
export function copyRowsOf(f: Flow[]): string {
  const texts = new Map<string, string>();
  const text = (v: string) => texts.get(v) ?? texts.set(v, copyText(v)).get(v)!;
  let out = '';
  for (const x of f) out += `${x.bucketStart}\t${x.srcIp}\t${x.dstIp}\t${x.dstPort}\t${text(x.protocol.toLowerCase())}\t${x.packets}\t${x.bytes}\t${text(x.source)}\n`;
  return out;
}

/**
 * The digest a retry is recognised by: of the COPY rows of every record of the delivery (inside the
 * window or not) and of `dropped`. The same bytes whichever way the body was read (scanFlows or
 * JSON.parse), and the same digest as before issue 30's byte path.
 */
const digestOf = (rows: Buffer, dropped: number) => createHash('sha256').update(rows).update(`|${dropped}`).digest('hex');

/** COPY rows with the owner's columns (`<organisation>\t<daemon>\t`) in front of each. */
function withOwner(rows: Buffer, owner: string): Buffer {
  const o = Buffer.from(owner);
  let n = 0;
  for (let i = rows.indexOf(10); i !== -1; i = rows.indexOf(10, i + 1)) n++;
  const out = Buffer.allocUnsafe(rows.length + n * o.length);
  let at = 0;
  for (let s = 0, i = rows.indexOf(10); i !== -1; s = i + 1, i = rows.indexOf(10, s)) {
    at += o.copy(out, at);
    at += rows.copy(out, at, s, i + 1);
  }
  return out;
}

/** Binary COPY tuples (flow-check.ts ScannedFlows) with the owner's two uuids written into each one's blank. */
function ownedTuples({ data, tuples }: { data: Buffer; tuples: Int32Array }, organisationId: string, daemonId: string): Buffer {
  const owner = Buffer.alloc(OWNER_BYTES);
  owner.writeInt32BE(16, 0);
  owner.write(organisationId.replace(/-/g, ''), 4, 'hex');
  owner.writeInt32BE(16, 20);
  owner.write(daemonId.replace(/-/g, ''), 24, 'hex');
  for (let t = 0; t < tuples.length; t++) data.set(owner, tuples[t]! + OWNER_AT);
  return data;
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

/** A fraction of a second past its sixth digit (the digits after it dropped). */
const PAST_MICROSECONDS = /(\.\d{6})\d+/;

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
export async function prepareFlows(db: Kysely<DB>, f: Flow[] | ScannedFlows, dropped: number, now = Date.now()): Promise<PreparedFlows> {
  const from = now - FLOW_RETENTION_DAYS * DAY;
  const to = now + FLOW_FUTURE_TOLERANCE_MS;
  if (f instanceof ScannedFlows) {
    // Read from the body's bytes (flow-check.ts): used as they are when every record is inside the window.
    if (f.firstAt >= from && f.lastAt <= to) {
      const scanned = f;
      await ensurePartitions(db, scanned.days);
      return {
        records: f.count, outOfWindow: 0, dropped, digest: f.digest, rows: Buffer.alloc(0), columns: () => columnsOf(scanned.flows), firstAt: f.firstAt,
        binary: { data: f.binary, tuples: f.tuples },
      };
    }
    f = f.flows;
  }
  const kept: Flow[] = [];
  const days = new Set<string>();
  let firstAt = Number.POSITIVE_INFINITY;
  // A delivery repeats its minutes: each distinct bucket is parsed once.
  const instants = new Map<string, { at: number; text: string }>();
  for (const x of f) {
    let bucket = instants.get(x.bucketStart);
    if (bucket === undefined) {
      // Kept to the microsecond, PostgreSQL's precision: it would round further digits, in the last
      // half-microsecond of a day into the next day, past the partition made for the record.
      const text = x.bucketStart.replace(PAST_MICROSECONDS, '$1');
      bucket = { at: Date.parse(text), text };
      instants.set(x.bucketStart, bucket);
      // The UTC day of each record: read from the text when it is in UTC, from the instant otherwise.
      if (bucket.at >= from && bucket.at <= to) days.add(text.endsWith('Z') ? text.slice(0, 10) : new Date(bucket.at).toISOString().slice(0, 10));
    }
    if (bucket.text !== x.bucketStart) x.bucketStart = bucket.text;
    const at = bucket.at;
    if (at < from || at > to) continue;
    kept.push(x);
    if (at < firstAt) firstAt = at;
  }
  const all = Buffer.from(copyRowsOf(f));
  await ensurePartitions(db, [...days].map((d) => Date.parse(`${d}T00:00:00Z`)));
  return {
    records: kept.length, outOfWindow: f.length - kept.length, dropped, digest: digestOf(all, dropped),
    rows: kept.length === f.length ? all : Buffer.from(copyRowsOf(kept)), columns: () => columnsOf(kept), firstAt,
  };
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
    const columns = ['organisation_id', 'daemon_id', ...RECORD_COLUMNS];
    if (p.binary) await copyRows(tx, 'flows', columns, ownedTuples(p.binary, organisationId, daemonId), true);
    // Each row ends in the only raw newline it has (COPY escapes one inside a value): the owner goes in front of each.
    else await copyRows(tx, 'flows', columns, withOwner(p.rows, `${organisationId}\t${daemonId}\t`));
    await foldIntoRollups(tx, organisationId, p.columns, p.firstAt);
  }
  if (p.dropped > 0) await addDropped(tx, organisationId, daemonId, p.dropped);
  return { accepted: p.records };
}

/** A delivery to POST /daemon/flows (spec 4.4): its records stored in one transaction of their own. */
export async function ingestFlows(db: Kysely<DB>, p: DaemonPrincipal, body: z.output<typeof FlowsRequest>): Promise<{ accepted: number; outOfWindow: number }> {
  const daemon = await ownDaemon(db, p);
  if ((body instanceof ScannedFlows ? body.count : body.flows.length) === 0) {
    // Nothing was copied from its buffers: they can serve another delivery.
    if (body instanceof ScannedFlows) body.release();
    // Nothing to recognise a retry by: a delivery of `dropped` alone is counted as it comes.
    if (body.dropped > 0) await addDropped(db, p.organisationId, daemon.id, body.dropped);
    return { accepted: 0, outOfWindow: 0 };
  }
  const prepared = await prepareFlows(db, body instanceof ScannedFlows ? body : body.flows, body.dropped);
  const stored = await db.transaction().execute((trx) => storeFlows(trx, p.organisationId, daemon.id, prepared));
  // Its COPY has been read to the end by the server (or was a retry's, never sent): the buffer can serve another delivery.
  if (body instanceof ScannedFlows) body.release();
  return { ...stored, outOfWindow: prepared.outOfWindow };
}
