import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.js';
import { type JobContext, type JobDefinition, type JobResult, type OrganisationOutcome, OrganisationsFailed, isTransient } from './runner.js';

/** What a job did for one organisation: the detail recorded in its status, and a value for a caller of `runNow`. */
export interface OrganisationWork {
  detail: Record<string, unknown>;
  value?: unknown;
}

async function organisations(db: Kysely<DB>): Promise<string[]> {
  return (await db.selectFrom('organisations').select('id').orderBy('id').execute()).map((r) => r.id);
}

/**
 * Runs `fn` for each organisation; one organisation failing does not stop the others. When every
 * one fails, the tick fails (retried when every error is transient, a database outage), with each
 * organisation's outcome recorded; the job's own error is the first error only when transient
 * (an outage reads the same for everyone), else a summary: one organisation's error text is not
 * shown to the others, as the job's status and `job.failed` reach every organisation.
 */
export async function perOrganisation(ids: string[], fn: (id: string) => Promise<OrganisationWork>): Promise<JobResult> {
  const outcomes = new Map<string, OrganisationOutcome>();
  const errors: unknown[] = [];
  for (const id of ids) {
    try {
      const work = await fn(id);
      outcomes.set(id, { ok: true, detail: work.detail, value: work.value });
    } catch (err) {
      errors.push(err);
      outcomes.set(id, { ok: false, error: String((err as Error)?.message ?? err), cause: err });
    }
  }
  if (errors.length > 0 && errors.length === ids.length) {
    const transient = errors.every(isTransient);
    // A database outage reads the same for everyone; any other error text stays with its organisation.
    const message = transient ? String((errors[0] as Error)?.message ?? errors[0]) : `failed for every organisation (${ids.length}); each organisation's status has its own error`;
    throw new OrganisationsFailed(message, outcomes, transient);
  }
  return { detail: { organisations: ids.length, failed: errors.length }, organisations: outcomes };
}

/**
 * perOrganisation over every organisation (or the one a forced run names), the job's detail
 * carrying under `key` the sum of `count` over the organisations' details.
 */
export async function everyOrganisation(ctx: Pick<JobContext, 'db' | 'organisationId'>, key: string, fn: (org: string) => Promise<OrganisationWork>, count: (detail: Record<string, unknown>) => number): Promise<JobResult> {
  let total = 0;
  const ids = ctx.organisationId ? [ctx.organisationId] : await organisations(ctx.db);
  const result = await perOrganisation(ids, async (org) => {
    const work = await fn(org);
    total += count(work.detail);
    return work;
  });
  return { ...result, detail: { ...result.detail, [key]: total } };
}

/**
 * A job that does `work` for every organisation (or the one a forced run names) on each tick, its
 * detail summing `count` of the organisations' details under `key`.
 */
export function organisationJob(def: {
  name: string;
  intervalMs: number;
  key: string;
  count: (detail: Record<string, unknown>) => number;
  work: (db: Kysely<DB>, organisationId: string, at: Date) => Promise<OrganisationWork>;
}): JobDefinition {
  return {
    name: def.name,
    intervalMs: def.intervalMs,
    scope: 'organisation',
    run(ctx) {
      const at = ctx.now();
      return everyOrganisation(ctx, def.key, (org) => def.work(ctx.db, org, at), def.count);
    },
  };
}
