import type { JobDefinition } from '../jobs/runner.js';
import { pruneTurns } from './assistant.repo.js';

const DAY = 86_400_000;
/** Rows per delete statement, as events.prune. */
const PRUNE_BATCH = 10_000;
/** A tick stops starting new statements after this long; what is left waits for the next tick. */
const TICK_BUDGET_MS = 10 * 60_000;

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
      const started = performance.now();
      const cutoff = new Date(now().getTime() - retentionDays * DAY);
      let turns = 0;
      for (;;) {
        if (signal.aborted || performance.now() - started > TICK_BUDGET_MS) return { detail: { turns, complete: false } };
        const n = await pruneTurns(db, cutoff, batch);
        turns += n;
        if (n < batch) return { detail: { turns, complete: true } };
      }
    },
  };
}
