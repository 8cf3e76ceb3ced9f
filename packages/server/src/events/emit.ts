import { type EventData, type EventKindName, type EventSeverity, eventKindInfo } from '@surveyor/contract';
import { type Kysely, type RawBuilder, sql } from 'kysely';
import type { DB } from '../db/schema.js';
import { nextNumber } from './changes.js';

// The one way to write an event (decisions.md "Events and alerts"). Events are appended in the
// caller's transaction, so an event exists exactly when its change does, and the routing trigger
// on `events` (migration 0011) queues its deliveries in that same transaction. Each kind's
// subject type and severity come from the contract (`eventKindInfo`); its `data` is checked
// against the kind's schema: at run time for `emit`, at compile time for `emitSelect`.
//
// One emitter stays in the database on purpose: `vulnerability.opened` is written by triggers on
// `vulnerabilities` (migration 0011), so every writer of findings (the PATCH, the advisory
// matcher) announces them without having to remember to.

type Severity<K extends EventKindName> = (typeof eventKindInfo)[K]['severity'] extends 'computed' ? { severity: EventSeverity } : { severity?: never };

/** One event to append: its subject's id and its data (and its severity, for kinds whose severity is computed). */
export type Emission<K extends EventKindName> = { subjectId: string; data: EventData<K> } & Severity<K>;

function fixedSeverity(kind: EventKindName): EventSeverity | null {
  const s = eventKindInfo[kind].severity;
  return s === 'computed' ? null : s;
}

/**
 * Appends events of one kind for one organisation, in the caller's transaction. Throws (a
 * ZodError) when a `data` does not match the kind's schema: a programming error, never stored.
 */
export async function emit<K extends EventKindName>(db: Kysely<DB>, organisationId: string, kind: K, events: Emission<K>[]): Promise<void> {
  if (events.length === 0) return;
  const info = eventKindInfo[kind];
  const rows = events.map((e) => ({ subjectId: e.subjectId, severity: fixedSeverity(kind) ?? (e.severity as EventSeverity), data: JSON.stringify(info.data.parse(e.data)) }));
  await sql`
    insert into events (organisation_id, seq, kind, severity, subject_type, subject_id, data)
    select ${organisationId}, ${nextEventSeq(sql`${organisationId}`)}, ${kind}, s, ${info.subject}, i, d::jsonb
    from unnest(${rows.map((r) => r.severity)}::text[], ${rows.map((r) => r.subjectId)}::text[], ${rows.map((r) => r.data)}::text[]) as v(s, i, d)`.execute(db);
}

const nextEventSeq = (organisationId: RawBuilder<unknown>) => nextNumber('events', organisationId);

/** SQL expressions for each field of a kind's data (optional fields may be left out). */
export type DataExpressions<K extends EventKindName> = { [F in keyof EventData<K>]: RawBuilder<unknown> };

export interface SelectEmission<K extends EventKindName> {
  /** The relation the events come from: a CTE name or a table with its alias. */
  from: RawBuilder<unknown>;
  organisationId: RawBuilder<unknown>;
  subjectId: RawBuilder<unknown>;
  data: DataExpressions<K>;
  /** For kinds whose severity is computed: the expression choosing it per row. */
  severity?: RawBuilder<unknown>;
  where?: RawBuilder<unknown>;
}

/**
 * The statement `insert into events … select … from <from>`, for set-based writers that announce
 * what a statement changed from inside that statement (a CTE `announced as (…)`): one round trip,
 * the same snapshot. The data keys are checked against the kind's schema by the compiler.
 */
export function emitSelect<K extends EventKindName>(kind: K, e: SelectEmission<K>): RawBuilder<unknown> {
  const info = eventKindInfo[kind];
  const fixed = fixedSeverity(kind);
  if (!fixed && !e.severity) throw new Error(`event ${kind} needs a severity expression`);
  const pairs = Object.entries(e.data as Record<string, RawBuilder<unknown>>).map(([k, v]) => sql`${sql.lit(k)}, ${v}`);
  return sql`insert into events (organisation_id, seq, kind, severity, subject_type, subject_id, data)
    select ${e.organisationId}, ${nextEventSeq(e.organisationId)}, ${sql.lit(kind)}, ${fixed ? sql.lit(fixed) : e.severity!}, ${sql.lit(info.subject)}, (${e.subjectId})::text, jsonb_build_object(${sql.join(pairs)})
    from ${e.from}${e.where ? sql` where ${e.where}` : sql``}`;
}
