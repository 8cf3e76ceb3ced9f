import type { SnapshotDiffKind, SnapshotDiffSection } from '@surveyor/contract';
import type { Kysely } from 'kysely';
import { type Actor, recordAudit } from '../audit/audit.repo.js';
import type { DB } from '../db/schema.js';
import { AppError } from '../errors.js';
import { findSite } from '../inventory/inventory.repo.js';
import { contentItems, decodeDiffCursor, diffContents, encodeDiffCursor, gunzipped, zeroCounts } from './diff.js';
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

/**
 * The diff of snapshot `id` against snapshot `against` (the base): counts per section, then one
 * page of changes (issue 15). Both of the organisation, else 404; both with stored content, else
 * 409. Identical contents (same SHA-256) answer zero counts without reading them.
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
  const items = (s: typeof target) => contentItems(gunzipped(repo.readContent(db, organisationId, s.id, Number(s.stored_bytes))));
  const result =
    target.content_sha256 === base.content_sha256
      ? { counts: zeroCounts(), changes: [], next: null }
      : await diffContents(items(base), items(target), { section: query.section, kind: query.kind, after, limit: query.limit });
  return {
    snapshot: toSnapshot(target),
    against: toSnapshot(base),
    note,
    counts: result.counts,
    changes: result.changes,
    nextCursor: result.next ? encodeDiffCursor(result.next) : null,
  };
}
