import type { JobStatus } from './types';

/** A job is unhealthy when its last run failed (or was interrupted), or is older than 3 × its interval. */
export function jobHealthy(j: JobStatus, now = Date.now()): boolean {
  if (j.outcome === 'failed' || j.outcome === 'interrupted') return false;
  if (j.organisationId !== null) return true; // the organisation's runs follow the job as a whole
  if (!j.lastRunAt) return true; // never run yet (a fresh server): not a failure
  return now - Date.parse(j.lastRunAt) <= 3 * j.intervalSeconds * 1000;
}
