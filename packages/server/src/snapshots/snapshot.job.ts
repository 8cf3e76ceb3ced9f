import { organisationJob } from '../jobs/per-organisation.js';
import type { JobDefinition } from '../jobs/runner.js';
import { pruneSnapshotDiffs, takeScheduledSnapshot } from './snapshots.service.js';

/**
 * inventory.snapshot (1 h): today's scheduled snapshot of every organisation, if not taken yet
 * (spec 1.1 rule 1). Run now for one organisation by POST /api/v1/admin/snapshot, whose answer is
 * the work's value: `{ created, snapshot }`. Also prunes the organisation's stored diffs computed
 * more than a day ago (issue 29), so an organisation that stops comparing does not keep them.
 */
export function inventorySnapshot(): JobDefinition {
  return organisationJob({
    name: 'inventory.snapshot',
    intervalMs: 60 * 60_000,
    key: 'created',
    count: (d) => (d.created ? 1 : 0),
    async work(db, org, at) {
      const r = await takeScheduledSnapshot(db, org, at);
      const pruned = await pruneSnapshotDiffs(db, org, at);
      return { detail: { created: r.created, snapshotId: r.snapshot.id, ...(pruned ? { prunedDiffs: pruned } : {}) }, value: r };
    },
  });
}
