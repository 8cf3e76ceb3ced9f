import { type Kysely, type RawBuilder, sql } from 'kysely';
import type { ChangeAction, ChangeType } from '@surveyor/contract';
import type { DB } from '../db/schema.js';

/**
 * What the live change stream (GET /api/sse) names: `event: <type>.<action>`, the types and
 * actions of the contract (`changeTypes`, `changeActions`). Every state change
 * of these entities writes a change_log row in the transaction of the change (README, "Live
 * change stream", lists when); a trigger notifies the streams at commit.
 */
export type { ChangeAction, ChangeType } from '@surveyor/contract';

/**
 * Logs `action` for each id, in the caller's transaction: one statement with two array
 * parameters, however many ids (a large batch stays far below the bind-parameter limit).
 */
export async function logChanges(db: Kysely<DB>, organisationId: string, type: ChangeType, ids: readonly string[], action: ChangeAction): Promise<void> {
  if (ids.length === 0) return;
  await sql`insert into change_log (organisation_id, id, entity_type, entity_id, action)
    select ${organisationId}, ${nextChangeId(sql`${organisationId}`)}, ${type}, id, ${action} from unnest(${[...ids]}::text[]) as v(id)`.execute(db);
}

/**
 * The next number of one of the organisation's counters (migration 0013: `changes` numbers the
 * change log, `events` the events), for a set-based insert to number its rows itself: with
 * `organisationId` a constant the counter is looked up once per statement, where the row trigger
 * looked it up by name for each row (migration 0040).
 */
export function nextNumber(counter: 'changes' | 'events', organisationId: RawBuilder<unknown>): RawBuilder<unknown> {
  return sql`nextval((select organisation_counter(${sql.lit(counter)}, ${organisationId}::uuid)::regclass))`;
}

/** The next change-log id of the organisation (see nextNumber). */
export const nextChangeId = (organisationId: RawBuilder<unknown>) => nextNumber('changes', organisationId);

/**
 * The same, as a statement to embed in a data-modifying CTE: `logged as (${changeSelect(...)})`,
 * `from` naming the rows (with `organisation_id` and `id` columns unless told otherwise).
 */
export function changeSelect(type: ChangeType, action: ChangeAction, e: { from: RawBuilder<unknown>; organisationId?: RawBuilder<unknown>; id?: RawBuilder<unknown>; where?: RawBuilder<unknown> }): RawBuilder<unknown> {
  const org = e.organisationId ?? sql`organisation_id`;
  return sql`insert into change_log (organisation_id, id, entity_type, entity_id, action)
    select ${org}, ${nextChangeId(org)}, ${type}, ${e.id ?? sql`id`}, ${action} from ${e.from}${e.where ? sql` where ${e.where}` : sql``}`;
}

/** The channel the change log's trigger notifies on (migration 0011): `<organisation> <first id> <last id>`. */
export const CHANGES_CHANNEL = 'surveyor_changes';

/** A job run's start or end as the live streams get it without a stored row (see announceJobRun). */
export interface JobRunNotice {
  /** The schema of the service that ran it: a database may hold several (tests, benchmarks). */
  schema: string;
  /** Null: every organisation (a run of the job as a whole). */
  organisationId: string | null;
  job: string;
  action: 'started' | 'finished' | 'failed';
  at: string;
}

/**
 * Tells the live streams that a run of `job` started or ended, without storing it (issue 30): a
 * healthy job's every tick used to write a change row per organisation (millions a day), while
 * all a stream needs is to refresh Settings → Jobs now. Streams open at the time get it, with no
 * `id:` (not replayable, so it leaves a stream's resume point alone). A change of a job's state
 * (first run, failure, recovery) is stored as a change row instead (the runner's logTransitions).
 * Payload: `job <schema> <organisation|*> <job> <action> <at>`.
 */
export async function announceJobRun(db: Kysely<DB>, job: string, organisationId: string | null, action: JobRunNotice['action'], at: Date): Promise<void> {
  await sql`select pg_notify(${CHANGES_CHANNEL}, concat_ws(' ', 'job', current_schema(), ${organisationId ?? '*'}::text, ${job}::text, ${action}::text, ${at.toISOString()}::text))`.execute(db);
}

/** The notice in a payload of CHANGES_CHANNEL, or null when it is not one. */
export function parseJobRun(payload: string): JobRunNotice | null {
  const [kind, schema, org, job, action, at, ...rest] = payload.split(' ');
  if (kind !== 'job' || !schema || !org || !job || !at || rest.length > 0) return null;
  if (action !== 'started' && action !== 'finished' && action !== 'failed') return null;
  return { schema, organisationId: org === '*' ? null : org, job, action, at };
}
