import type { JobDefinition } from '../jobs/runner.js';
import { rollupFlows } from './flow-rollups.js';

/**
 * flows.rollup (5 min, issue 30; beyond spec 1.1's jobs): rolls flow records of closed hours into
 * the hourly rollups and closed days into the daily ones (flow-rollups.ts), which host topology
 * and the application view read. A tick with no hour closed since the last costs one index read.
 */
export function flowsRollup(): JobDefinition {
  return {
    name: 'flows.rollup',
    intervalMs: 5 * 60_000,
    async run({ db, now, signal }) {
      const r = await rollupFlows(db, now(), () => signal.aborted);
      return { detail: { ...r } };
    },
  };
}
