import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.js';
import { everyOrganisation } from '../jobs/per-organisation.js';
import type { JobDefinition } from '../jobs/runner.js';
import { type CloudKind, enabledAccountIds } from './accounts.js';
import { type Collectors, type SyncOutcome, syncAccount, syncIfFree } from './sync.service.js';

/** The job of each kind (spec 1.1): cloud.sync every 15 minutes (AWS), cloud.k8s every 5 minutes (Kubernetes). */
export const CLOUD_JOBS = { aws: { name: 'cloud.sync', intervalMs: 15 * 60_000 }, kubernetes: { name: 'cloud.k8s', intervalMs: 5 * 60_000 } } as const satisfies Record<CloudKind, { name: string; intervalMs: number }>;

/**
 * Syncs the organisation's enabled accounts of a kind (or the one account a forced run names), one
 * after the other; one account failing does not stop the others (its outcome is on the account).
 * When every account failed, the organisation's run fails with the first failure, so the job's
 * status and `job.failed` say why, and the retry rules see a 5xx or a 4xx as it was.
 */
async function syncOrganisation(db: Kysely<DB>, key: Buffer, collectors: Collectors, kind: CloudKind, organisationId: string, subject: string | undefined, signal: AbortSignal) {
  const ids = subject ? [subject] : await enabledAccountIds(db, organisationId, kind);
  const synced: SyncOutcome[] = [];
  const errors: unknown[] = [];
  let busy = 0;
  for (const id of ids) {
    if (signal.aborted) break;
    try {
      // A press waits for a sync of its account in progress; a scheduled tick leaves it to that one.
      const outcome = subject ? await syncAccount(db, key, collectors, organisationId, id, { signal }) : await syncIfFree(db, key, collectors, organisationId, id, { signal });
      if (outcome) synced.push(outcome);
      else busy++;
    } catch (err) {
      errors.push(err);
    }
  }
  if (errors.length > 0 && synced.length === 0) throw errors[0];
  const detail = { accounts: ids.length, failed: errors.length, busy, resources: synced.reduce((n, s) => n + s.counts.resources, 0), changed: synced.reduce((n, s) => n + s.counts.changed, 0), gone: synced.reduce((n, s) => n + s.counts.gone, 0) };
  return { detail, value: synced[0] };
}

/** The sync job of a kind, per organisation; its lock is per organisation, so a press in one organisation never waits for another's sync. */
export function cloudJob(kind: CloudKind, key: Buffer, collectors: Collectors): JobDefinition {
  const def = CLOUD_JOBS[kind];
  return {
    name: def.name,
    intervalMs: def.intervalMs,
    scope: 'organisation',
    lockPerOrganisation: true,
    run: (ctx) => everyOrganisation(ctx, 'resources', (org) => syncOrganisation(ctx.db, key, collectors, kind, org, ctx.subject, ctx.signal), (d) => Number(d.resources ?? 0)),
  };
}
