import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.js';
import type { JobDefinition } from './runner.js';
import * as status from './status.repo.js';

/**
 * What the status of a job shows: the last finished run's outcome (`ok`, `failed`), or `never`
 * (no run recorded); `running` while a run that started is in progress (its lock is held), and
 * `interrupted` when a run started and never recorded its end with nobody holding the lock any
 * more (its process was killed), until the next run starts.
 */
export type JobOutcome = 'ok' | 'failed' | 'never' | 'running' | 'interrupted';

export interface JobStatusRow {
  job: string;
  organisation_id: string | null;
  interval_seconds: number;
  /** The last finished run: its start, duration, attempts and error (null, 0: none yet). */
  last_run_at: string | null;
  duration_ms: number | null;
  outcome: JobOutcome;
  error: string | null;
  attempts: number;
  detail: Record<string, unknown>;
  last_ok_at: string | null;
  /** The start of the run in progress, or of the interrupted one. */
  started_at: string | null;
}

function outcomeOf(r: status.StatusRow): JobOutcome {
  if (r.started_at !== null) return r.locked ? 'running' : 'interrupted';
  return r.outcome ?? 'never';
}

/**
 * The status of every job the runner knows, as a whole (never-run ones marked `never`), then the
 * per-organisation rows `organisations` selects (one organisation's, or `'all'` for the operator's
 * CLI), ordered by job. Rows of jobs this build no longer has are left out.
 */
export async function jobStatus(db: Kysely<DB>, known: readonly JobDefinition[], organisations: string | 'all'): Promise<JobStatusRow[]> {
  const rows = await status.list(db, organisations);
  return known.flatMap((job): JobStatusRow[] => {
    const interval_seconds = Math.round(job.intervalMs / 1000);
    const mine = rows
      .filter((r) => r.job === job.name)
      .map(({ locked: _locked, ...r }): JobStatusRow => ({ ...r, interval_seconds, outcome: outcomeOf({ locked: _locked, ...r }), attempts: r.attempts ?? 0 }));
    if (mine.some((r) => r.organisation_id === null)) return mine;
    const never: JobStatusRow = {
      job: job.name, organisation_id: null, last_run_at: null, duration_ms: null, outcome: 'never', error: null, attempts: 0, detail: {}, last_ok_at: null, started_at: null, interval_seconds,
    };
    return [never, ...mine];
  });
}

/** The API shape of a status row (GET /api/v1/admin/jobs). */
export const toJobStatus = (r: JobStatusRow) => ({
  job: r.job,
  organisationId: r.organisation_id,
  intervalSeconds: r.interval_seconds,
  lastRunAt: r.last_run_at,
  durationMs: r.duration_ms,
  outcome: r.outcome,
  error: r.error,
  attempts: r.attempts,
  detail: r.detail,
  lastOkAt: r.last_ok_at,
  startedAt: r.started_at,
});
