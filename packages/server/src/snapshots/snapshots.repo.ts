import { createHash } from 'node:crypto';
import { createGzip } from 'node:zlib';
import { type Kysely, sql } from 'kysely';
import type { DB } from '../db/schema.js';
import { rfc3339 } from '../db/sql.js';
import { logChanges } from '../events/changes.js';

const iso = <C extends string>(column: C) => rfc3339(column).as(column);

/** The columns of a snapshot as the API shows it (the collection read in inventory uses them too). */
export const snapshotColumns = ['id', 'seq', 'site_id', 'reason', 'stats', 'content_sha256', 'content_bytes', iso('captured_at'), iso('created_at')] as const;

export function findScheduledSnapshot(db: Kysely<DB>, organisationId: string, day: string) {
  return db
    .selectFrom('snapshots')
    .select(snapshotColumns)
    .where('organisation_id', '=', organisationId)
    .where('reason', '=', 'scheduled')
    .where('site_id', 'is', null)
    .where(sql<boolean>`capture_day = ${day}::date`)
    .executeTakeFirst();
}

/** Row counts per entity type, optionally of one site. Run it in a REPEATABLE READ transaction for one consistent read. */
export async function countInventory(db: Kysely<DB>, organisationId: string, siteId: string | null) {
  const site = siteId ? sql`and h.site_id = ${siteId}` : sql``;
  const siteOf = (col: string) => (siteId ? sql`and ${sql.ref(col)} = ${siteId}` : sql``);
  const r = await sql<Record<string, number>>`
    select
      (select count(*)::int from hosts h where h.organisation_id = ${organisationId} ${site}) as hosts,
      (select count(*)::int from host_addresses a join hosts h on h.organisation_id = a.organisation_id and h.id = a.host_id where a.organisation_id = ${organisationId} ${site}) as addresses,
      (select count(*)::int from services s join hosts h on h.organisation_id = s.organisation_id and h.id = s.host_id where s.organisation_id = ${organisationId} ${site}) as services,
      (select count(*)::int from networks n where n.organisation_id = ${organisationId} ${siteOf('n.site_id')}) as networks,
      (select count(*)::int from sites st where st.organisation_id = ${organisationId} ${siteOf('st.id')}) as sites,
      (select count(*)::int from certificates c join hosts h on h.organisation_id = c.organisation_id and h.id = c.host_id where c.organisation_id = ${organisationId} ${site}) as certificates,
      (select count(*)::int from vulnerabilities v join hosts h on h.organisation_id = v.organisation_id and h.id = v.host_id where v.organisation_id = ${organisationId} ${site}) as vulnerabilities,
      (select count(*)::int from topologies t where t.organisation_id = ${organisationId} ${siteOf('t.site_id')}) as topologies
  `.execute(db);
  return r.rows[0]!;
}

export async function insertSnapshot(
  db: Kysely<DB>,
  s: { organisationId: string; siteId: string | null; reason: string; stats: Record<string, number>; keyId: string | null; content: SnapshotContent; captureDay?: string },
) {
  const row = await db
    .insertInto('snapshots')
    .values({
      organisation_id: s.organisationId, site_id: s.siteId, reason: s.reason, stats: JSON.stringify(s.stats), created_by_key_id: s.keyId,
      content: s.content.gzip, content_sha256: s.content.sha256, content_bytes: s.content.bytes, ...(s.captureDay ? { capture_day: s.captureDay } : {}),
    })
    .returning(snapshotColumns)
    .executeTakeFirstOrThrow();
  await logChanges(db, s.organisationId, 'snapshot', [row.id], 'created');
  return row;
}

export interface SnapshotContent {
  gzip: Buffer;
  sha256: string;
  bytes: number;
}

const CONTENT_CHUNK = 5000;

/**
 * The inventory's content as canonical JSON (every list in id order, fixed key order), read by the
 * caller's transaction: hosts with their addresses and MACs, services, certificates,
 * vulnerabilities. Read in chunks of CONTENT_CHUNK rows (keyset on id) and compressed and hashed
 * as it goes, so a large inventory never sits in memory whole. Stored gzip-compressed with the
 * SHA-256 of the text, so snapshots can be diffed and attested.
 */
export async function captureContent(db: Kysely<DB>, organisationId: string, siteId: string | null): Promise<SnapshotContent> {
  const inSite = siteId ? sql`and h.site_id = ${siteId}` : sql``;
  // Rows of another table belong to the site through their host; without a site filter no join,
  // so each chunk is a range of the (organisation_id, id) primary key.
  const hostInSite = (alias: string) => (siteId ? sql`and exists (select 1 from hosts h where h.organisation_id = ${sql.ref(`${alias}.organisation_id`)} and h.id = ${sql.ref(`${alias}.host_id`)} and h.site_id = ${siteId})` : sql``);
  const sections: [string, (after: string) => ReturnType<typeof sql<{ id: string; item: string }>>][] = [
    ['hosts', (after) => sql`
      select h.id, json_build_object(
          'id', h.id, 'siteId', h.site_id, 'fingerprint', h.fingerprint, 'hostname', h.hostname, 'fqdn', h.fqdn, 'vendor', h.vendor, 'os', h.os, 'deviceType', h.device_type,
          'addresses', coalesce((select json_agg(host(a.address) order by a.address) from host_addresses a where a.organisation_id = h.organisation_id and a.host_id = h.id), '[]'),
          'macs', coalesce((select json_agg(m.mac order by m.mac) from (select mac::text from host_addresses where organisation_id = h.organisation_id and host_id = h.id and mac is not null
                                                                  union select mac::text from host_interfaces where organisation_id = h.organisation_id and host_id = h.id and mac is not null) m), '[]')
        )::text as item
      from hosts h where h.organisation_id = ${organisationId} ${inSite} and h.id > ${after}::uuid order by h.id limit ${CONTENT_CHUNK}`],
    ['services', (after) => sql`
      select s.id, json_build_object('id', s.id, 'hostId', s.host_id, 'protocol', s.protocol, 'port', s.port, 'state', s.state, 'name', s.name, 'product', s.product,
          'version', s.version, 'cpe', s.cpe, 'gone', s.gone_at is not null)::text as item
      from services s
      where s.organisation_id = ${organisationId} ${hostInSite('s')} and s.id > ${after}::uuid order by s.id limit ${CONTENT_CHUNK}`],
    ['certificates', (after) => sql`
      select c.id, json_build_object('id', c.id, 'hostId', c.host_id, 'port', c.port, 'sha256', c.sha256, 'subject', c.subject, 'issuer', c.issuer,
          'notAfter', c.not_after, 'trustStatus', c.trust_status)::text as item
      from certificates c
      where c.organisation_id = ${organisationId} ${hostInSite('c')} and c.id > ${after}::uuid order by c.id limit ${CONTENT_CHUNK}`],
    ['vulnerabilities', (after) => sql`
      select v.id, json_build_object('id', v.id, 'hostId', v.host_id, 'serviceId', v.service_id, 'cve', v.cve_id, 'severity', v.severity, 'state', v.state)::text as item
      from vulnerabilities v
      where v.organisation_id = ${organisationId} ${hostInSite('v')} and v.id > ${after}::uuid order by v.id limit ${CONTENT_CHUNK}`],
  ];
  // Each chunk must be a short walk of the primary key in id order, whatever the statistics say
  // (right after a large first sweep they describe a small organisation, and the planner would
  // sort the whole organisation's rows for every chunk). For this transaction only.
  await sql`set local enable_sort = off`.execute(db);
  await sql`set local enable_bitmapscan = off`.execute(db);
  const gzip = createGzip();
  const compressed: Buffer[] = [];
  gzip.on('data', (c: Buffer) => compressed.push(c));
  const finished = new Promise<void>((resolve, reject) => {
    gzip.on('end', resolve);
    gzip.on('error', reject);
  });
  const hash = createHash('sha256');
  let bytes = 0;
  const write = (text: string) => {
    const b = Buffer.from(text, 'utf8');
    bytes += b.length;
    hash.update(b);
    gzip.write(b);
  };
  write('{');
  for (const [i, [name, chunk]] of sections.entries()) {
    write(`${i ? ',' : ''}"${name}":[`);
    let after = '00000000-0000-0000-0000-000000000000';
    let first = true;
    for (;;) {
      const rows = (await chunk(after).execute(db)).rows;
      if (rows.length === 0) break;
      write(`${first ? '' : ','}${rows.map((r) => r.item).join(',')}`);
      first = false;
      after = rows.at(-1)!.id;
      if (rows.length < CONTENT_CHUNK) break;
    }
    write(']');
  }
  write('}');
  gzip.end();
  await finished;
  return { gzip: Buffer.concat(compressed), sha256: hash.digest('hex'), bytes };
}

/** A snapshot of the organisation with the size of its stored (compressed) content; undefined for none or another organisation's. */
export function findSnapshot(db: Kysely<DB>, organisationId: string, id: string) {
  return db
    .selectFrom('snapshots')
    .select([...snapshotColumns, sql<number | null>`octet_length(content)`.as('stored_bytes')])
    .where('organisation_id', '=', organisationId)
    .where('id', '=', id)
    .executeTakeFirst();
}

/** Slices of stored content read per statement: a few MiB of text once gunzipped. */
export const CONTENT_SLICE = 1024 * 1024;

/**
 * A snapshot's stored (gzip) content, `CONTENT_SLICE` bytes per statement (substring over the
 * bytea, which reads only the TOAST chunks of the slice: the column is stored uncompressed by
 * TOAST, migration 0016), so a content of hundreds of MiB never sits in memory whole.
 */
export async function* readContent(db: Kysely<DB>, organisationId: string, id: string, storedBytes: number, slice = CONTENT_SLICE): AsyncGenerator<Buffer> {
  for (let offset = 0; offset < storedBytes; offset += slice) {
    const r = await sql<{ part: Uint8Array }>`
      select substring(content from ${offset + 1}::int for ${slice}::int) as part from snapshots where organisation_id = ${organisationId} and id = ${id}
    `.execute(db);
    const part = r.rows[0]?.part;
    if (!part || part.length === 0) throw new Error(`Snapshot ${id}: its content ends early at byte ${offset}.`);
    yield Buffer.isBuffer(part) ? part : Buffer.from(part.buffer, part.byteOffset, part.length);
  }
}

/** How long a stored diff is kept after it was computed (a page of a pruned one computes it again). */
export const DIFF_TTL_HOURS = 24;

/** The counts of the stored diff of `snapshotId` against `againstId`; undefined when none is stored. */
export function findDiff(db: Kysely<DB>, organisationId: string, snapshotId: string, againstId: string) {
  return db
    .selectFrom('snapshot_diffs')
    .select('counts')
    .where('organisation_id', '=', organisationId)
    .where('snapshot_id', '=', snapshotId)
    .where('against_id', '=', againstId)
    .executeTakeFirst();
}

/**
 * Claims the pair for the caller's transaction, to store its diff in: true when the caller is to
 * compute it; false when another transaction has stored it (an insert of the same key waits for a
 * transaction still storing it, then finds its row: the diff is computed once, not by every
 * request that arrives meanwhile).
 */
export async function claimDiff(db: Kysely<DB>, organisationId: string, snapshotId: string, againstId: string, counts: object): Promise<boolean> {
  const r = await db
    .insertInto('snapshot_diffs')
    .values({ organisation_id: organisationId, snapshot_id: snapshotId, against_id: againstId, counts: JSON.stringify(counts) })
    .onConflict((oc) => oc.columns(['organisation_id', 'snapshot_id', 'against_id']).doNothing())
    .returning('snapshot_id')
    .executeTakeFirst();
  return r !== undefined;
}

export async function setDiffCounts(db: Kysely<DB>, organisationId: string, snapshotId: string, againstId: string, counts: object): Promise<void> {
  await db
    .updateTable('snapshot_diffs')
    .set({ counts: JSON.stringify(counts) })
    .where('organisation_id', '=', organisationId)
    .where('snapshot_id', '=', snapshotId)
    .where('against_id', '=', againstId)
    .execute();
}

/** One change to store: section index, entity id, kind, the entities' JSON text, the changed fields' JSON (null for none). */
export interface StoredChange {
  sec: number;
  id: string;
  kind: string;
  before: string | null;
  after: string | null;
  fields: string | null;
}

/** Stores changes of a claimed diff, in one statement. */
export async function insertDiffChanges(db: Kysely<DB>, organisationId: string, snapshotId: string, againstId: string, changes: StoredChange[]): Promise<void> {
  if (changes.length === 0) return;
  const col = <K extends keyof StoredChange>(k: K) => changes.map((c) => c[k]);
  await sql`
    insert into snapshot_diff_changes (organisation_id, snapshot_id, against_id, section, entity_id, kind, before, after, fields)
    select ${organisationId}, ${snapshotId}, ${againstId}, v.section, v.entity_id, v.kind, v.before, v.after, v.fields
    from unnest(${col('sec')}::smallint[], ${col('id')}::uuid[], ${col('kind')}::text[], ${col('before')}::text[], ${col('after')}::text[], ${col('fields')}::text[])
      as v(section, entity_id, kind, before, after, fields)
  `.execute(db);
}

/**
 * Up to `limit` changes of a stored diff in (section, entity id) order, strictly after `after`,
 * of one section and one kind when asked: a keyset read of the primary key (or, for one kind, of
 * its index), whatever the page's place in the diff.
 */
export function readDiffPage(
  db: Kysely<DB>,
  organisationId: string,
  snapshotId: string,
  againstId: string,
  page: { section?: number | undefined; kind?: string | undefined; after?: { sec: number; id: string } | undefined; limit: number },
) {
  let q = db
    .selectFrom('snapshot_diff_changes')
    .select(['section', 'entity_id', 'kind', 'before', 'after', 'fields'])
    .where('organisation_id', '=', organisationId)
    .where('snapshot_id', '=', snapshotId)
    .where('against_id', '=', againstId);
  if (page.section !== undefined) q = q.where('section', '=', page.section);
  if (page.kind !== undefined) q = q.where('kind', '=', page.kind);
  if (page.after) q = q.where(sql<boolean>`(section, entity_id) > (${page.after.sec}::smallint, ${page.after.id}::uuid)`);
  return q.orderBy('section').orderBy('entity_id').limit(page.limit).execute();
}

/** Deletes the organisation's stored diffs computed more than DIFF_TTL_HOURS before `now` (their changes with them); returns how many. */
export async function pruneDiffs(db: Kysely<DB>, organisationId: string, now: Date): Promise<number> {
  const r = await db
    .deleteFrom('snapshot_diffs')
    .where('organisation_id', '=', organisationId)
    .where('created_at', '<', new Date(now.getTime() - DIFF_TTL_HOURS * 3600_000))
    .executeTakeFirst();
  return Number(r.numDeletedRows);
}
