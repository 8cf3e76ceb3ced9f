import { PRUNE_BATCH, drain, tickStop } from '../jobs/batches.js';
import type { JobDefinition } from '../jobs/runner.js';
import { pruneTurns } from './assistant.repo.js';

const DAY = 86_400_000;

/**
 * assistant.prune (1 h, issue 30): deletes the assistant's turns (who asked, outcome, tokens)
 * older than SERVICE_AI_TURNS_RETENTION_DAYS, oldest first, in statements of at most `batch`
 * rows. The counter service_ai_turns_total reads kept totals, so it never goes back.
 */
export function assistantPrune(retentionDays: number, opts: { batch?: number } = {}): JobDefinition {
  const batch = opts.batch ?? PRUNE_BATCH;
  return {
    name: 'assistant.prune',
    intervalMs: 60 * 60_000,
    async run({ db, now, signal }) {
      const cutoff = new Date(now().getTime() - retentionDays * DAY);
      const r = await drain(() => pruneTurns(db, cutoff, batch), batch, tickStop(signal));
      return { detail: { turns: r.n, complete: r.done } };
    },
  };
}
