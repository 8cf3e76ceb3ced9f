import type { Database } from '../db/database.js';

export const JOBS_CHANNEL = 'surveyor_daemon_jobs';

/**
 * Long polls waiting in this process, by daemon id. A job queued in any process NOTIFYs the
 * daemon's id on JOBS_CHANNEL; the listener here wakes that daemon's waiters, which then try to
 * claim. Waiting holds no database connection.
 */
export class JobWaiters {
  private readonly waiting = new Map<string, Set<() => void>>();
  private unsubscribe: (() => Promise<void>) | null = null;
  /** True once stopped (the process is closing): waits end at once. */
  stopped = false;

  async start(database: Database): Promise<void> {
    this.unsubscribe = await database.listen(JOBS_CHANNEL, (payload) => this.wake(payload));
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.unsubscribe?.();
    for (const set of this.waiting.values()) for (const wake of set) wake();
    this.waiting.clear();
  }

  /** Wakes the waiters of one daemon, or all of them for `*`. */
  wake(daemonId: string): void {
    const targets = daemonId === '*' ? [...this.waiting.values()].flatMap((s) => [...s]) : [...(this.waiting.get(daemonId) ?? [])];
    for (const wake of targets) wake();
  }

  /** Resolves when the daemon is notified, `ms` pass, or `signal` aborts, whichever is first. */
  wait(daemonId: string, ms: number, signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const set = this.waiting.get(daemonId) ?? new Set();
      this.waiting.set(daemonId, set);
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        set.delete(done);
        if (set.size === 0) this.waiting.delete(daemonId);
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal.addEventListener('abort', done);
      set.add(done);
      if (signal.aborted || this.stopped) done();
    });
  }

  get size(): number {
    let n = 0;
    for (const s of this.waiting.values()) n += s.size;
    return n;
  }
}
