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
  await sql`insert into change_log (organisation_id, entity_type, entity_id, action)
    select ${organisationId}, ${type}, id, ${action} from unnest(${[...ids]}::text[]) as v(id)`.execute(db);
}

/**
 * The same, as a statement to embed in a data-modifying CTE: `logged as (${changeSelect(...)})`,
 * `from` naming the rows (with `organisation_id` and `id` columns unless told otherwise).
 */
export function changeSelect(type: ChangeType, action: ChangeAction, e: { from: RawBuilder<unknown>; organisationId?: RawBuilder<unknown>; id?: RawBuilder<unknown>; where?: RawBuilder<unknown> }): RawBuilder<unknown> {
  return sql`insert into change_log (organisation_id, entity_type, entity_id, action)
    select ${e.organisationId ?? sql`organisation_id`}, ${type}, ${e.id ?? sql`id`}, ${action} from ${e.from}${e.where ? sql` where ${e.where}` : sql``}`;
}
