import type { SnapshotDiffKind, SnapshotDiffSection } from '@surveyor/contract';
import type { Kysely } from 'kysely';
import { type Actor, recordAudit } from '../audit/audit.repo.js';
import type { DB } from '../db/schema.js';
import { AppError } from '../errors.js';
import { findSite } from '../inventory/inventory.repo.js';
import { type DiffChange, type DiffPosition, SECTIONS, type SectionCounts, contentItems, decodeDiffCursor, encodeDiffCursor, gunzipped, walkChanges, zeroCounts } from './diff.js';
import * as repo from './snapshots.repo.js';

type SnapshotRow = Awaited<ReturnType<typeof repo.findScheduledSnapshot>> & {};

const STAT_KEYS = ['hosts', 'addresses', 'services', 'networks', 'sites', 'certificates', 'vulnerabilities', 'topologies'] as const;

export const toSnapshot = (r: SnapshotRow) => ({
  id: r.id,
  siteId: r.site_id,
  reason: r.reason as 'manual',
  stats: Object.fromEntries(STAT_KEYS.map((k) => [k, Number(r.stats[k] ?? 0)])) as Record<(typeof STAT_KEYS)[number], number>,
  contentSha256: r.content_sha256,
  contentBytes: r.content_bytes === null ? null : Number(r.content_bytes),
  capturedAt: r.captured_at,
  createdAt: r.created_at,
});

/** Takes a snapshot: its stats and content come from one consistent (REPEATABLE READ) read. */
export async function createSnapshot(db: Kysely<DB>, actor: Actor & { organisationId: string }, input: { reason: string; siteId?: string | undefined }) {
  return db
    .transaction()
    .setIsolationLevel('repeatable read')
    .execute(async (trx) => {
      if (input.siteId && !(await findSite(trx, actor.organisationId, input.siteId))) throw new AppError('not_found', `No site ${input.siteId}.`);
      const siteId = input.siteId ?? null;
      const stats = await repo.countInventory(trx, actor.organisationId, siteId);
      const content = await repo.captureContent(trx, actor.organisationId, siteId);
      const row = await repo.insertSnapshot(trx, { organisationId: actor.organisationId, siteId, reason: input.reason, stats, keyId: actor.keyId ?? null, content });
      const snapshot = toSnapshot(row);
      await recordAudit(trx, actor, { organisationId: actor.organisationId, action: 'snapshot.created', targetType: 'snapshot', targetId: row.id, changes: { reason: input.reason, siteId, stats } });
      return snapshot;
    });
}

/**
 * Today's scheduled snapshot of the organisation (job inventory.snapshot): taken if it does not
 * exist yet, else the existing one. Idempotent per UTC day even when two processes race: a unique
 * index admits one, and the loser answers with the winner's.
 */
export async function takeScheduledSnapshot(db: Kysely<DB>, organisationId: string, now: Date): Promise<{ created: boolean; snapshot: ReturnType<typeof toSnapshot> }> {
  const day = now.toISOString().slice(0, 10);
  const existing = () => repo.findScheduledSnapshot(db, organisationId, day);
  const found = await existing();
  if (found) return { created: false, snapshot: toSnapshot(found) };
  try {
    const snapshot = await db
      .transaction()
      .setIsolationLevel('repeatable read')
      .execute(async (trx) => {
        const stats = await repo.countInventory(trx, organisationId, null);
        const content = await repo.captureContent(trx, organisationId, null);
        const row = await repo.insertSnapshot(trx, { organisationId, siteId: null, reason: 'scheduled', stats, keyId: null, content, captureDay: day });
        await recordAudit(trx, { type: 'system' }, { organisationId, action: 'snapshot.created', targetType: 'snapshot', targetId: row.id, changes: { reason: 'scheduled', stats } });
        return toSnapshot(row);
      });
    return { created: true, snapshot };
  } catch (e) {
    if ((e as { code?: string }).code !== '23505') throw e;
    const winner = await existing();
    if (!winner) throw e;
    return { created: false, snapshot: toSnapshot(winner) };
  }
}

type DiffCounts = Record<SnapshotDiffSection, SectionCounts>;
type StoredSnapshot = NonNullable<Awaited<ReturnType<typeof repo.findSnapshot>>>;

const KINDS = ['added', 'removed', 'changed'] as const;

/** Counts as stored, in the API's order of sections and kinds (jsonb keeps its own key order). */
function diffCounts(stored: Record<string, Record<string, number>>): DiffCounts {
  const counts = zeroCounts();
  for (const s of SECTIONS) for (const k of KINDS) counts[s][k] = Number(stored[s]?.[k] ?? 0);
  return counts;
}

/**
 * The counts of the diff of `target` against `base`, its changes stored for the pages to read
 * (issue 29): computed by the first request of the pair, in one transaction that walks both
 * contents once; a request arriving while it runs waits for it and reads what it stored, rather
 * than walking too. Contents never change, so a stored diff stays right until it is pruned.
 */
async function storedDiff(db: Kysely<DB>, organisationId: string, target: StoredSnapshot, base: StoredSnapshot, now = new Date()): Promise<DiffCounts> {
  const found = await repo.findDiff(db, organisationId, target.id, base.id);
  if (found) return diffCounts(found.counts);
  await repo.pruneDiffs(db, organisationId, now);
  const counts = await db.transaction().execute(async (trx) => {
    const counts = zeroCounts();
    if (!(await repo.claimDiff(trx, organisationId, target.id, base.id, counts))) return (await repo.findDiff(trx, organisationId, target.id, base.id))?.counts;
    const items = (s: StoredSnapshot) => contentItems(gunzipped(repo.readContent(trx, organisationId, s.id, Number(s.stored_bytes))));
    for await (const batch of walkChanges(items(base), items(target))) {
      for (const c of batch) counts[SECTIONS[c.sec]!][c.kind]++;
      const rows = batch.map((c) => ({
        sec: c.sec,
        id: c.id,
        kind: c.kind,
        before: c.before?.toString('utf8') ?? null,
        after: c.after?.toString('utf8') ?? null,
        fields: c.fields.length ? JSON.stringify(c.fields) : null,
      }));
      await repo.insertDiffChanges(trx, organisationId, target.id, base.id, rows);
    }
    await repo.setDiffCounts(trx, organisationId, target.id, base.id, counts);
    return counts;
  });
  // Stored by another request and pruned before this one read it: a stale diff pruned in between. Walk again.
  if (!counts) return storedDiff(db, organisationId, target, base, now);
  return diffCounts(counts);
}

/**
 * The diff of snapshot `id` against snapshot `against` (the base): counts per section, then one
 * page of changes (issue 15). Both of the organisation, else 404; both with stored content, else
 * 409. Identical contents (same SHA-256) answer zero counts without reading them. The first
 * request of a pair walks both contents and stores the diff; every page is then a keyset read of
 * the stored changes after the cursor (issue 29), so page 50 costs what page 1 does.
 */
export async function diffSnapshots(
  db: Kysely<DB>,
  organisationId: string,
  id: string,
  query: { against: string; section?: SnapshotDiffSection | undefined; kind?: SnapshotDiffKind | undefined; limit: number; cursor?: string | undefined },
) {
  const after = query.cursor === undefined ? undefined : (decodeDiffCursor(query.cursor) ?? undefined);
  if (query.cursor !== undefined && !after) throw new AppError('invalid_cursor', 'The cursor is malformed: pass the nextCursor of the previous page.');
  const [target, base] = await Promise.all([repo.findSnapshot(db, organisationId, id), repo.findSnapshot(db, organisationId, query.against)]);
  if (!target) throw new AppError('not_found', `No snapshot ${id}.`);
  if (!base) throw new AppError('not_found', `No snapshot ${query.against}.`);
  for (const s of [target, base]) {
    if (s.stored_bytes === null || s.content_sha256 === null) throw new AppError('conflict', `Snapshot ${s.id} was taken before snapshots stored their content: it cannot be compared.`);
  }
  const note =
    target.site_id === base.site_id
      ? null
      : `The snapshots cover different scopes (${target.site_id ? `site ${target.site_id}` : 'the whole organisation'} against ${base.site_id ? `site ${base.site_id}` : 'the whole organisation'}): what lies outside the narrower one shows as added or removed.`;
  let counts = zeroCounts();
  let changes: DiffChange[] = [];
  let next: DiffPosition | null = null;
  if (target.content_sha256 !== base.content_sha256) {
    counts = await storedDiff(db, organisationId, target, base);
    // One more than the page: whether a matching change follows its last.
    const rows = await repo.readDiffPage(db, organisationId, target.id, base.id, {
      section: query.section === undefined ? undefined : SECTIONS.indexOf(query.section),
      kind: query.kind,
      after,
      limit: query.limit + 1,
    });
    changes = rows.slice(0, query.limit).map((r) => ({
      section: SECTIONS[r.section]!,
      kind: r.kind as SnapshotDiffKind,
      id: r.entity_id,
      before: r.before === null ? null : (JSON.parse(r.before) as Record<string, unknown>),
      after: r.after === null ? null : (JSON.parse(r.after) as Record<string, unknown>),
      fields: r.fields === null ? [] : (JSON.parse(r.fields) as DiffChange['fields']),
    }));
    if (rows.length > query.limit) next = { sec: rows[query.limit - 1]!.section, id: rows[query.limit - 1]!.entity_id };
  }
  return {
    snapshot: toSnapshot(target),
    against: toSnapshot(base),
    note,
    counts,
    changes,
    nextCursor: next ? encodeDiffCursor(next) : null,
  };
}

/** Prunes the organisation's stored snapshot diffs older than a day (job inventory.snapshot); returns how many. */
export function pruneSnapshotDiffs(db: Kysely<DB>, organisationId: string, now: Date): Promise<number> {
  return repo.pruneDiffs(db, organisationId, now);
}
