import { pruneFlows } from '../ingest/flows.js';
import { tickStop } from '../jobs/batches.js';
import { everyOrganisation } from '../jobs/per-organisation.js';
import type { JobDefinition } from '../jobs/runner.js';
import { type DependencyBuild, rebuildDependencies } from './dependencies.js';
import { buildViews } from './views.service.js';

/** What one organisation's run gives a caller of runFor: the dependency build and every view after it. */
export type TopologyBuild = DependencyBuild & { views: Awaited<ReturnType<typeof buildViews>> };

/**
 * topology.dependencies (1 h): every organisation's application topology rebuilt from recent flows,
 * then each of its topology views (network and application, per site: nodes, edges, positions);
 * then flows past the 30-day retention are pruned (decisions.md). Run now for one organisation by
 * POST /api/v1/admin/dependency-tick and POST /api/v1/topology/regenerate, whose answers come
 * from the work's value (the build and the views). A run for one organisation locks that
 * organisation only (lockPerOrganisation).
 */
export function topologyDependencies(): JobDefinition {
  return {
    name: 'topology.dependencies',
    intervalMs: 60 * 60_000,
    scope: 'organisation',
    // An organisation's regenerate does not wait for another's: the work serialises itself per
    // organisation (the dependency rebuild's advisory lock, each view's row lock).
    lockPerOrganisation: true,
    async run(ctx) {
      const at = ctx.now();
      const result = await everyOrganisation(
        ctx,
        'edges',
        async (org) => {
          const r = await rebuildDependencies(ctx.db, org, at);
          const views = await buildViews(ctx.db, org, at);
          const value: TopologyBuild = { ...r, views };
          return { detail: { edges: r.edges, topologies: r.topologies.length, views: views.length, failedViews: views.filter((v) => v.status === 'failed').length }, value };
        },
        (d) => d.edges as number,
      );
      // Pruning failing (the database, not a busy table: that is skipped) does not undo the rebuild: it says so in the detail.
      const pruned = await pruneFlows(ctx.db, at, tickStop(ctx.signal)).catch((err) => ({ error: String((err as Error)?.message ?? err), partitions: [], busy: [], batches: 0, scanBatches: 0 }));
      return {
        ...result,
        detail: {
          ...result.detail, prunedPartitions: pruned.partitions, busyPartitions: pruned.busy, prunedBatches: pruned.batches, prunedScanBatches: pruned.scanBatches,
          ...('error' in pruned ? { pruneError: pruned.error } : {}),
        },
      };
    },
  };
}
