// Deleting in bounded batches, for the retention jobs (events.prune, assistant.prune): each
// statement deletes at most a batch of rows in its own transaction, so none holds locks or bloats
// the WAL for long, and a tick stopped half-way leaves nothing half-done: the next tick goes on.

/** Rows per delete statement: small enough to keep each short, large enough to keep up. */
export const PRUNE_BATCH = 10_000;

/** Repeats `step` while it deletes full batches and `stop` does not say otherwise; the rows deleted, and whether it ran out of rows. */
export async function drain(step: () => Promise<number>, batch: number, stop: () => boolean): Promise<{ n: number; done: boolean }> {
  let n = 0;
  for (;;) {
    if (stop()) return { n, done: false };
    const k = await step();
    n += k;
    if (k < batch) return { n, done: true };
  }
}

/** A tick's `stop`: the process stopping, or 10 minutes since this call (what is left waits for the next tick). */
export function tickStop(signal: AbortSignal, budgetMs = 10 * 60_000): () => boolean {
  const started = performance.now();
  return () => signal.aborted || performance.now() - started > budgetMs;
}
