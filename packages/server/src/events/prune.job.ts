import { PRUNE_BATCH, tickStop } from '../jobs/batches.js';
import type { JobDefinition } from '../jobs/runner.js';
import { type Retention, prune } from './retention.js';

/**
 * events.prune (1 h, issue 30): deletes delivered and dead alert deliveries, events and change
 * rows older than their windows (SERVICE_DELIVERIES_RETENTION_DAYS, SERVICE_EVENTS_RETENTION_DAYS,
 * SERVICE_CHANGE_LOG_RETENTION_DAYS), in statements of at most PRUNE_BATCH rows. Keeps a pending
 * delivery and its event, an event with a delivery left, and the change rows cve.match has yet to read.
 */
export function eventsPrune(retention: Retention, opts: { batch?: number; organisations?: number } = {}): JobDefinition {
  return {
    name: 'events.prune',
    intervalMs: 60 * 60_000,
    async run({ db, now, signal }) {
      const r = await prune(db, retention, now(), { batch: opts.batch ?? PRUNE_BATCH, organisations: opts.organisations ?? 500, stop: tickStop(signal) });
      return { detail: { ...r } };
    },
  };
}
