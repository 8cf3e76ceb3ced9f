import { type Kysely, sql } from 'kysely';
import type { DB } from '../db/schema.js';
import { rfc3339 } from '../db/sql.js';

export type EventSeverity = 'info' | 'warning' | 'critical';

export interface NewEvent {
  kind: string;
  severity: EventSeverity;
  subjectType: string;
  subjectId: string;
  data?: Record<string, unknown>;
}

/** Appends events in the caller's transaction, so an event exists exactly when its change does. */
export async function emitEvents(db: Kysely<DB>, organisationId: string, events: NewEvent[]): Promise<void> {
  if (events.length === 0) return;
  await sql`
    insert into events (organisation_id, kind, severity, subject_type, subject_id, data)
    select ${organisationId}, k, s, t, i, d::jsonb
    from unnest(${events.map((e) => e.kind)}::text[], ${events.map((e) => e.severity)}::text[], ${events.map((e) => e.subjectType)}::text[],
                ${events.map((e) => e.subjectId)}::text[], ${events.map((e) => JSON.stringify(e.data ?? {}))}::text[]) as v(k, s, t, i, d)`.execute(db);
}

/** The payload of an event (decisions.md): what webhooks, Slack and mail carry. */
export interface EventPayload {
  id: string;
  kind: string;
  severity: EventSeverity;
  occurredAt: string;
  organisationId: string;
  subject: { type: string; id: string };
  data: Record<string, unknown>;
}

/** The organisation's events after `afterSeq`, oldest first, as payloads with their sequence. */
export async function eventsSince(db: Kysely<DB>, organisationId: string, afterSeq = 0, limit = 500, kind?: string): Promise<(EventPayload & { seq: number })[]> {
  const r = await sql<{ id: string; seq: number; kind: string; severity: EventSeverity; occurred_at: string; subject_type: string; subject_id: string; data: Record<string, unknown> }>`
    select id, seq, kind, severity, ${rfc3339('occurred_at')} as occurred_at, subject_type, subject_id, data
    from events where organisation_id = ${organisationId} and seq > ${afterSeq} ${kind ? sql`and kind = ${kind}` : sql``} order by seq limit ${limit}`.execute(db);
  return r.rows.map((e) => ({
    id: e.id, seq: Number(e.seq), severity: e.severity, kind: e.kind, occurredAt: e.occurred_at, organisationId,
    subject: { type: e.subject_type, id: e.subject_id }, data: e.data,
  }));
}
