import { pruneFlows } from '../ingest/flows.js';
import { everyOrganisation } from '../jobs/per-organisation.js';
import type { JobDefinition } from '../jobs/runner.js';
import { rebuildDependencies } from './dependencies.js';

/**
 * topology.dependencies (1 h): every organisation's application topology rebuilt from recent flows;
 * then flows past the 30-day retention are pruned (decisions.md). Run now for one organisation by
 * POST /api/v1/admin/dependency-tick, whose answer is the work's value (the build).
 */
export function topologyDependencies(): JobDefinition {
  return {
    name: 'topology.dependencies',
    intervalMs: 60 * 60_000,
    scope: 'organisation',
    async run(ctx) {
      const at = ctx.now();
      const result = await everyOrganisation(
        ctx,
        'edges',
        async (org) => {
          const r = await rebuildDependencies(ctx.db, org, at);
          return { detail: { edges: r.edges, topologies: r.topologies.length }, value: r };
        },
        (d) => d.edges as number,
      );
      // Pruning failing (the database, not a busy table: that is skipped) does not undo the rebuild: it says so in the detail.
      const pruned = await pruneFlows(ctx.db, at).catch((err) => ({ error: String((err as Error)?.message ?? err), partitions: [], busy: [], batches: 0 }));
      return {
        ...result,
        detail: { ...result.detail, prunedPartitions: pruned.partitions, busyPartitions: pruned.busy, prunedBatches: pruned.batches, ...('error' in pruned ? { pruneError: pruned.error } : {}) },
      };
    },
  };
}
