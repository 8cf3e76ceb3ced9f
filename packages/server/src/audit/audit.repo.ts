import { type Kysely, sql } from 'kysely';
import type { DB } from '../db/schema.js';
import { rfc3339 } from '../db/sql.js';

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

export interface AuditFilter {
  action?: string | undefined;
  targetType?: string | undefined;
  targetId?: string | undefined;
  since?: string | undefined;
  until?: string | undefined;
}

/** The organisation's audit rows matching `f`, the newest first, strictly before `before`; with who acted. */
export async function listAudit(db: Kysely<DB>, organisationId: string, f: AuditFilter, before: { at: string; id: string } | undefined, take: number) {
  const escaped = f.action?.replace(/[\\%_]/g, (c) => `\\${c}`);
  const where = sql.join(
    [
      sql`l.organisation_id = ${organisationId}`,
      ...(escaped !== undefined ? [sql`l.action like ${`${escaped}%`}`] : []),
      ...(f.targetType ? [sql`l.target_type = ${f.targetType}`] : []),
      ...(f.targetId ? [sql`l.target_id = ${f.targetId}`] : []),
      ...(f.since ? [sql`l.occurred_at >= ${f.since}::timestamptz`] : []),
      ...(f.until ? [sql`l.occurred_at < ${f.until}::timestamptz`] : []),
      ...(before ? [sql`(l.occurred_at, l.id) < (${before.at}::timestamptz, ${before.id}::uuid)`] : []),
    ],
    sql` and `,
  );
  const r = await sql<{
    id: string; at: string; at_exact: string; action: string; target_type: string; target_id: string | null; actor_type: string;
    email: string | null; key_prefix: string | null; changes: Record<string, unknown>; request_id: string | null;
  }>`
    select l.id, ${rfc3339('l.occurred_at')} as at, to_char(l.occurred_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as at_exact,
           l.action, l.target_type, l.target_id, l.actor_type, u.email, k.token_prefix as key_prefix, l.changes, l.request_id
    from audit_log l
    left join users u on u.id = l.actor_user_id
    left join keys k on k.organisation_id = l.organisation_id and k.id = l.actor_key_id
    where ${where}
    order by l.occurred_at desc, l.id desc
    limit ${take}`.execute(db);
  return r.rows;
}
