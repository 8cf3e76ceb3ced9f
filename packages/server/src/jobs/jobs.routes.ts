import { routes } from '@surveyor/contract';
import type { FastifyInstance } from 'fastify';
import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.js';
import { sessionPrincipal } from '../http/principals.js';
import { addRoute } from '../http/route.js';
import { takeScheduledSnapshot } from '../inventory/inventory.service.js';
import { rebuildDependencies } from '../topology/dependencies.js';
import * as status from './status.repo.js';

/** Runs one job's work for one organisation now, recording it in the job status like a tick. */
async function runNow<T>(db: Kysely<DB>, job: string, organisationId: string, work: () => Promise<T>, detail: (r: T) => Record<string, unknown>): Promise<T> {
  const at = new Date();
  const t0 = performance.now();
  try {
    const r = await work();
    await status.record(db, { job, organisationId, at, durationMs: Math.round(performance.now() - t0), outcome: 'ok', error: undefined, attempts: 1, detail: { ...detail(r), trigger: 'admin' } });
    return r;
  } catch (err) {
    await status.record(db, { job, organisationId, at, durationMs: Math.round(performance.now() - t0), outcome: 'failed', error: status.errorText(err), attempts: 1, detail: { trigger: 'admin' } }).catch(() => {});
    throw err;
  }
}

/** Spec 4.6: the administrative endpoints that run a job now, and the job status (Settings → Jobs). */
export function registerJobRoutes(app: FastifyInstance, deps: { db: Kysely<DB> }): void {
  const { db } = deps;

  addRoute(app, routes.adminSnapshot, async (request) => {
    const org = sessionPrincipal(request).organisationId;
    return runNow(db, 'inventory.snapshot', org, () => takeScheduledSnapshot(db, org, new Date()), (r) => ({ created: r.created, snapshotId: r.snapshot.id }));
  });

  addRoute(app, routes.adminDependencyTick, async (request) => {
    const org = sessionPrincipal(request).organisationId;
    return runNow(db, 'topology.dependencies', org, () => rebuildDependencies(db, org, new Date()), (r) => ({ edges: r.edges, topologies: r.topologies.length }));
  });

  addRoute(app, routes.adminJobs, async (request) => {
    const rows = await status.list(db, sessionPrincipal(request).organisationId);
    return {
      data: rows.map((r) => ({
        job: r.job, organisationId: r.organisation_id, lastRunAt: r.last_run_at, durationMs: r.duration_ms, outcome: r.outcome, error: r.error,
        attempts: r.attempts, detail: r.detail, lastOkAt: r.last_ok_at,
      })),
    };
  });
}
