import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.js';
import type { TurnReport } from './chat.service.js';

/** Records one question's outcome, size and cost (never its text). */
export async function recordTurn(db: Kysely<DB>, organisationId: string, userId: string, r: Omit<TurnReport, 'outcome'> & { latencyMs: number; outcome: TurnReport['outcome'] | 'error' }): Promise<void> {
  await db
    .insertInto('assistant_turns')
    .values({
      organisation_id: organisationId, user_id: userId, outcome: r.outcome, rounds: r.rounds, tools: r.tools,
      prompt_tokens: r.usage.promptTokens, completion_tokens: r.usage.completionTokens, latency_ms: Math.round(r.latencyMs),
    })
    .execute();
}
