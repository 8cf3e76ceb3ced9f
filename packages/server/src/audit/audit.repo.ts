import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.js';

export interface Actor {
  type: 'key' | 'session' | 'cli' | 'system';
  keyId?: string | null;
  userId?: string | null;
  requestId?: string | null;
}

export interface AuditEntry {
  organisationId: string;
  action: string;
  targetType: string;
  targetId?: string | null;
  changes?: Record<string, unknown>;
}

/** Appends one audit row in the caller's transaction, so the row exists exactly when the change does. */
export async function recordAudit(trx: Kysely<DB>, actor: Actor, entry: AuditEntry): Promise<void> {
  await trx
    .insertInto('audit_log')
    .values({
      organisation_id: entry.organisationId,
      actor_type: actor.type,
      actor_key_id: actor.keyId ?? null,
      actor_user_id: actor.userId ?? null,
      action: entry.action,
      target_type: entry.targetType,
      target_id: entry.targetId ?? null,
      changes: JSON.stringify(entry.changes ?? {}),
      request_id: actor.requestId ?? null,
    })
    .execute();
}
