import { type Kysely, sql } from 'kysely';
import type { DB } from '../db/schema.js';
import type { TurnReport } from './chat.service.js';

/**
 * Records one question's outcome, size and cost (never its text), and counts it in the
 * organisation's totals (what service_ai_turns_total reports), in one statement.
 */
export async function recordTurn(db: Kysely<DB>, organisationId: string, userId: string, r: Omit<TurnReport, 'outcome'> & { latencyMs: number; outcome: TurnReport['outcome'] | 'error' }): Promise<void> {
  await sql`
    with turn as (
      insert into assistant_turns (organisation_id, user_id, outcome, rounds, tools, prompt_tokens, completion_tokens, latency_ms)
      values (${organisationId}, ${userId}, ${r.outcome}, ${r.rounds}, ${r.tools}::text[], ${r.usage.promptTokens}, ${r.usage.completionTokens}, ${Math.round(r.latencyMs)})
      returning organisation_id, outcome
    )
    insert into assistant_turn_totals (organisation_id, outcome, turns)
    select organisation_id, outcome, 1 from turn
    on conflict (organisation_id, outcome) do update set turns = assistant_turn_totals.turns + 1`.execute(db);
}

/**
 * Turns older than `cutoff`, oldest first, at most `batch` (its own statement): the rows deleted.
 * Their totals stay.
 */
export async function pruneTurns(db: Kysely<DB>, cutoff: Date, batch: number): Promise<number> {
  const r = await sql`
    delete from assistant_turns t
    where (t.organisation_id, t.id) in (select organisation_id, id from assistant_turns where at < ${cutoff} order by at limit ${batch})`.execute(db);
  return Number(r.numAffectedRows ?? 0);
}
