import { type Kysely, sql } from 'kysely';
import type { DB } from '../db/schema.js';
import { rfc3339 } from '../db/sql.js';
import { emitSelect } from '../events/emit.js';
import { LOCK_NAMESPACE } from '../db/database.js';
import { redactText } from '../logger.js';

export interface StatusEntry {
  job: string;
  /** Null: the job as a whole. */
  organisationId: string | null;
  at: Date;
  durationMs: number;
  outcome: 'ok' | 'failed';
  error: string | undefined;
  attempts: number;
  detail: Record<string, unknown>;
}

/** A failure as stored and shown: its message, with tokens and URL passwords masked. */
export function errorText(err: unknown): string {
  return redactText(String((err as Error | undefined)?.message ?? err ?? 'failed without a reason'));
}

/**
 * Records that a run of a job starts (as a whole, or for one organisation), before it does any
 * work: a run that never records its end (its process was killed) stays visible.
 */
export async function recordStart(db: Kysely<DB>, job: string, organisationId: string | null, at: Date): Promise<void> {
  await sql`
    insert into job_status (job, organisation_id, started_at) values (${job}, ${organisationId}::uuid, ${at})
    on conflict (job, coalesce(organisation_id, '00000000-0000-0000-0000-000000000000'::uuid)) do update set started_at = excluded.started_at, updated_at = now()`.execute(db);
}

/**
 * Claims slot `slot` of a job's schedule (its interval's boundaries counted on the wall clock):
 * true for the one caller that moves the job to this slot, false when it is already there (or
 * past it). One statement: two processes claiming at once cannot both win. A claim older than two
 * intervals (by the database's clock) yields to any: a process whose clock ran ahead and claimed
 * a slot from the future cannot stop the job for every other process until their clocks get there.
 */
export async function claimSlot(db: Kysely<DB>, job: string, intervalMs: number, slot: number): Promise<boolean> {
  const r = await sql`
    insert into job_slots (job, interval_ms, slot) values (${job}, ${intervalMs}, ${slot})
    on conflict (job, interval_ms) do update set slot = excluded.slot, claimed_at = now()
    where job_slots.slot < excluded.slot or job_slots.claimed_at < now() - ${2 * intervalMs} * interval '1 millisecond'
    returning slot`.execute(db);
  return r.rows.length === 1;
}

/** Records the last run of a job (as a whole, or for one organisation), which is no longer in progress; its error text is always redacted. */
export async function record(db: Kysely<DB>, e: StatusEntry): Promise<void> {
  await sql`
    insert into job_status (job, organisation_id, last_run_at, duration_ms, outcome, error, attempts, detail, last_ok_at)
    values (${e.job}, ${e.organisationId}::uuid, ${e.at}, ${e.durationMs}, ${e.outcome}, ${e.error === undefined ? null : redactText(e.error)}, ${e.attempts}, ${JSON.stringify(e.detail)}::jsonb,
            ${e.outcome === 'ok' ? e.at : null}::timestamptz)
    on conflict (job, coalesce(organisation_id, '00000000-0000-0000-0000-000000000000'::uuid)) do update set
      last_run_at = excluded.last_run_at, duration_ms = excluded.duration_ms, outcome = excluded.outcome, error = excluded.error,
      attempts = excluded.attempts, detail = excluded.detail, last_ok_at = coalesce(excluded.last_ok_at, job_status.last_ok_at), started_at = null, updated_at = now()`.execute(db);
}

/**
 * A stored change-stream entry for a job (entity `job`, id its name), `finished` or `failed`, for
 * one organisation, or (null) for every organisation (the job as a whole), in one statement. The
 * runner writes one only when a status changes (its logTransitions): for every organisation it is
 * one row each.
 */
export async function logJobChange(db: Kysely<DB>, job: string, organisationId: string | null, action: 'finished' | 'failed'): Promise<void> {
  await sql`
    insert into change_log (organisation_id, entity_type, entity_id, action)
    select id, 'job', ${job}, ${action} from organisations where ${organisationId === null ? sql`true` : sql`id = ${organisationId}`}`.execute(db);
}

export interface StatusRow {
  job: string;
  organisation_id: string | null;
  /** Null (with duration, outcome and attempts) while no run has finished yet. */
  last_run_at: string | null;
  duration_ms: number | null;
  outcome: 'ok' | 'failed' | null;
  error: string | null;
  attempts: number | null;
  detail: Record<string, unknown>;
  last_ok_at: string | null;
  /** The start of a run that has not recorded its end: in progress, or interrupted. */
  started_at: string | null;
  /** Whether the job's lock is held now (by any process): a started run is then in progress. */
  locked: boolean;
}

/**
 * Job status rows: every job as a whole, and that organisation's rows too (`'all'`: every
 * organisation's, for the operator's CLI). `locked` reads the job's advisory lock (the runner's
 * `tryLock` key `job:<name>`, or `job:<name>:<organisation>` for a job locked per organisation, under the service's namespace) from pg_locks, which sees the locks of
 * every process.
 */
export async function list(db: Kysely<DB>, organisations: string | 'all' | null): Promise<StatusRow[]> {
  const r = await sql<StatusRow>`
    select job, organisation_id, ${rfc3339('last_run_at')} as last_run_at, duration_ms, outcome, error, attempts, detail, ${rfc3339('last_ok_at')} as last_ok_at,
      ${rfc3339('started_at')} as started_at,
      started_at is not null and exists (
        select 1 from pg_locks l where l.locktype = 'advisory' and l.granted and l.classid = ${LOCK_NAMESPACE}
          and l.objid in (hashtext(current_schema() || ':job:' || job)::oid, hashtext(current_schema() || ':job:' || job || ':' || organisation_id)::oid) and l.objsubid = 2
      ) as locked
    from job_status
    where ${organisations === 'all' ? sql`true` : organisations ? sql`organisation_id is null or organisation_id = ${organisations}` : sql`organisation_id is null`}
    order by job, organisation_id nulls first`.execute(db);
  return r.rows;
}

/** The last outcome of a job, as a whole (key `null`) and per organisation. */
export async function outcomes(db: Kysely<DB>, job: string): Promise<Map<string | null, 'ok' | 'failed'>> {
  const r = await sql<{ organisation_id: string | null; outcome: 'ok' | 'failed' }>`select organisation_id, outcome from job_status where job = ${job} and outcome is not null`.execute(db);
  return new Map(r.rows.map((x) => [x.organisation_id, x.outcome]));
}

/**
 * `job.failed` (decisions.md), once per failure episode: when a run fails after one that did not.
 * A job failing as a whole (nothing done for anyone) is announced to every organisation; one
 * organisation's part failing, to that organisation.
 */
export async function announceFailures(
  db: Kysely<DB>,
  job: string,
  before: Map<string | null, 'ok' | 'failed'>,
  run: { failed: boolean; error: string | undefined; attempts: number; organisations?: Map<string, { ok: boolean; error?: string }> | undefined },
): Promise<void> {
  const targets: { organisationId: string | null; error: string | undefined }[] = [];
  if (run.failed) {
    if (before.get(null) !== 'failed') targets.push({ organisationId: null, error: run.error });
  } else for (const [organisationId, o] of run.organisations ?? []) {
    // An organisation still failing after the whole job failed was told already (that episode goes on).
    if (!o.ok && before.get(organisationId) !== 'failed' && before.get(null) !== 'failed') targets.push({ organisationId, error: o.error });
  }
  for (const t of targets) {
    const error = t.error === undefined ? null : redactText(t.error);
    await emitSelect('job.failed', {
      from: sql`organisations`,
      where: t.organisationId === null ? sql`true` : sql`id = ${t.organisationId}`,
      organisationId: sql`id`,
      subjectId: sql`${job}::text`,
      data: { job: sql`${job}::text`, scope: sql`${t.organisationId ? 'organisation' : 'job'}::text`, attempts: sql`${run.attempts}::int`, error: sql`${error}::text` },
    }).execute(db);
  }
}
