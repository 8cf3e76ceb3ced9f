import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.js';
import type { JobDefinition } from './runner.js';
import * as status from './status.repo.js';

/** A job the runner knows that has no recorded run yet, shaped like a status row. */
export interface NeverRunRow extends Omit<status.StatusRow, 'last_run_at' | 'duration_ms' | 'outcome'> {
  last_run_at: null;
  duration_ms: null;
  outcome: 'never';
}

export type JobStatusRow = (status.StatusRow | NeverRunRow) & { interval_seconds: number };

/**
 * The status of every job the runner knows, as a whole (never-run ones marked `never`), then the
 * per-organisation rows `organisations` selects (one organisation's, or `'all'` for the operator's
 * CLI), ordered by job. Rows of jobs this build no longer has are left out.
 */
export async function jobStatus(db: Kysely<DB>, known: readonly JobDefinition[], organisations: string | 'all'): Promise<JobStatusRow[]> {
  const rows = await status.list(db, organisations);
  return known.flatMap((job): JobStatusRow[] => {
    const interval_seconds = Math.round(job.intervalMs / 1000);
    const mine = rows.filter((r) => r.job === job.name).map((r) => ({ ...r, interval_seconds }));
    if (mine.some((r) => r.organisation_id === null)) return mine;
    const never: JobStatusRow = {
      job: job.name, organisation_id: null, last_run_at: null, duration_ms: null, outcome: 'never', error: null, attempts: 0, detail: {}, last_ok_at: null, interval_seconds,
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
});
