import type { EventSeverity } from '@surveyor/contract';
import { type Kysely, sql } from 'kysely';
import type { DB } from '../db/schema.js';
import { rfc3339 } from '../db/sql.js';

export type { EventSeverity };

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

/** An event row as read for payloads (eventColumns). */
export interface EventRow {
  organisation_id: string;
  id: string;
  seq: number;
  kind: string;
  severity: EventSeverity;
  occurred_at: string;
  subject_type: string;
  subject_id: string;
  data: Record<string, unknown>;
}

/**
 * The columns of an EventRow, of the events table aliased `e`. A `vulnerability.opened` event
 * refers to its advisory (`advisoryId`) rather than copying its text (issue 29): its `summary` is
 * the advisory's, read here, unless the finding carried a text of its own.
 */
export const eventColumns = sql`e.organisation_id, e.id, e.seq, e.kind, e.severity, ${rfc3339('e.occurred_at')} as occurred_at, e.subject_type, e.subject_id,
  case when e.kind = 'vulnerability.opened' and e.data->>'summary' is null and e.data->>'advisoryId' is not null
       then e.data || jsonb_build_object('summary', (select a.summary from advisories a where a.id = e.data->>'advisoryId'))
       else e.data end as data`;

export function toPayload(e: EventRow): EventPayload {
  return {
    id: e.id, kind: e.kind, severity: e.severity, occurredAt: e.occurred_at, organisationId: e.organisation_id,
    subject: { type: e.subject_type, id: e.subject_id }, data: e.data,
  };
}

/** Which events a log shows: of a kind, about a subject, within a time window. */
export interface EventFilter {
  kind?: string | undefined;
  subjectId?: string | undefined;
  since?: string | undefined;
  until?: string | undefined;
}

const filterSql = (f: EventFilter) =>
  sql.join(
    [
      ...(f.kind ? [sql`e.kind = ${f.kind}`] : []),
      ...(f.subjectId ? [sql`e.subject_id = ${f.subjectId}`] : []),
      ...(f.since ? [sql`e.occurred_at >= ${f.since}::timestamptz`] : []),
      ...(f.until ? [sql`e.occurred_at < ${f.until}::timestamptz`] : []),
      sql`true`,
    ],
    sql` and `,
  );

/** The organisation's events before `beforeSeq` (all when absent), the newest first, matching `f`. */
export async function eventsBefore(db: Kysely<DB>, organisationId: string, beforeSeq: number | undefined, limit: number, f: EventFilter): Promise<(EventPayload & { seq: number })[]> {
  const r = await sql<EventRow>`
    select ${eventColumns} from events e
    where e.organisation_id = ${organisationId} ${beforeSeq === undefined ? sql`` : sql`and e.seq < ${beforeSeq}`} and ${filterSql(f)}
    order by e.seq desc limit ${limit}`.execute(db);
  return r.rows.map((e) => ({ ...toPayload(e), seq: Number(e.seq) }));
}

/** The organisation's events after `afterSeq`, oldest first, as payloads with their sequence. */
export async function eventsSince(db: Kysely<DB>, organisationId: string, afterSeq = 0, limit = 500, kind?: string, f: Omit<EventFilter, 'kind'> = {}): Promise<(EventPayload & { seq: number })[]> {
  const r = await sql<EventRow>`
    select ${eventColumns} from events e
    where e.organisation_id = ${organisationId} and e.seq > ${afterSeq} and ${filterSql({ ...f, kind })} order by e.seq limit ${limit}`.execute(db);
  return r.rows.map((e) => ({ ...toPayload(e), seq: Number(e.seq) }));
}
