import { type Kysely, type RawBuilder, sql } from 'kysely';
import type { DB } from '../db/schema.js';
import { rfc3339 } from '../db/sql.js';

// The SQL of triage: findings joined to their host and service, filtered and ordered by severity
// then score; the same grouped by advisory; a set-based move of many findings; a finding's audit rows.

export interface FindingFilters {
  states: readonly string[];
  severity?: string | undefined;
  search?: string | undefined;
  cveId?: string | undefined;
  exposed?: boolean | undefined;
}

/** critical 4 … none 0: the order of the list. */
export const rank = (col: RawBuilder<unknown>) => sql`case ${col} when 'critical' then 4 when 'high' then 3 when 'medium' then 2 when 'low' then 1 else 0 end`;

/**
 * A finding's text: its advisory's summary (findings refer to the advisory, issue 29; one CVE on
 * 71 services keeps one copy), else what a finding recorded before the matcher stored itself.
 */
export const summaryOf = (findings: string) => {
  const f = sql.table(findings);
  return sql<string | null>`coalesce((select a.summary from advisories a where a.id = ${f}.advisory_id), ${f}.summary)`;
};
export const findingSummary = summaryOf('v');

/** The where clause of the filters, on `v` (vulnerabilities), `h` (hosts) and `s` (services). */
function where(organisationId: string, f: FindingFilters) {
  const parts = [sql`v.organisation_id = ${organisationId}`, sql`v.state = any(${[...f.states]}::text[])`];
  if (f.severity) parts.push(sql`v.severity = ${f.severity}`);
  if (f.cveId) parts.push(sql`v.cve_id = ${f.cveId}`);
  if (f.exposed !== undefined) parts.push(sql`s.exposed_via is ${f.exposed ? sql`not null` : sql`null`}`);
  if (f.search) {
    const literal = f.search.replace(/[\\%_]/g, (c) => `\\${c}`);
    const like = `%${literal}%`;
    const prefix = `${literal}%`;
    parts.push(sql`(v.cve_id ilike ${prefix} or h.hostname ilike ${like} or h.fqdn ilike ${like}
      or s.product ilike ${like} or s.vendor ilike ${like} or (s.vendor || ' ' || s.product) ilike ${like}
      or exists (select 1 from host_addresses a where a.organisation_id = v.organisation_id and a.host_id = v.host_id and host(a.address) like ${prefix}))`);
  }
  return sql.join(parts, sql` and `);
}

/**
 * The findings with their host and service, and the service's exposure (`s.exposed_via`: why the
 * internet reaches it, the view service_exposure stored on the service, migration 0046).
 */
const from = sql`vulnerabilities v
  join hosts h on h.organisation_id = v.organisation_id and h.id = v.host_id
  join services s on s.organisation_id = v.organisation_id and s.id = v.service_id`;

export interface FindingRow {
  id: string; cve_id: string; advisory_id: string | null; summary: string | null; severity: string; score: string | null; state: string; note: string | null;
  distribution: unknown;
  first_seen_at: string; last_seen_at: string; state_changed_at: string;
  host_id: string; host_name: string | null; host_address: string | null;
  service_id: string; protocol: string; port: number; service_name: string | null; vendor: string | null; product: string | null; version: string | null; exposed_via: string | null;
}

/** One page of findings after `offset`, ordered exposed first, then by severity, score (none last), CVE, host name, port, id; and the total. */
export async function listFindings(db: Kysely<DB>, organisationId: string, f: FindingFilters, offset: number, take: number) {
  const w = where(organisationId, f);
  const rows = await sql<FindingRow>`
    select v.id, v.cve_id, v.advisory_id, ${findingSummary} as summary, v.severity, v.score::text as score, v.state, v.note, v.distribution,
           ${rfc3339('v.first_seen_at')} as first_seen_at, ${rfc3339('v.last_seen_at')} as last_seen_at, ${rfc3339('v.state_changed_at')} as state_changed_at,
           h.id as host_id, coalesce(h.hostname, h.fqdn) as host_name,
           (select host(a.address) from host_addresses a where a.organisation_id = v.organisation_id and a.host_id = v.host_id order by a.address limit 1) as host_address,
           s.id as service_id, s.protocol, s.port, s.name as service_name, s.vendor, s.product, s.version, s.exposed_via
    from ${from} where ${w}
    order by s.exposed_via is null, ${rank(sql`v.severity`)} desc, v.score desc nulls last, v.cve_id, coalesce(h.hostname, h.fqdn) collate "C", s.port, v.id
    offset ${offset} limit ${take}`.execute(db);
  const total = await sql<{ n: number }>`select count(*)::int as n from ${from} where ${w}`.execute(db);
  return { rows: rows.rows, total: total.rows[0]!.n };
}

export interface AdvisoryRow {
  cve_id: string; summary: string | null; severity: string; score: string | null; findings: number; services: number; hosts: number; states: Record<string, number>;
}

/** One page of advisories with their matching findings counted, ordered by severity, score, CVE id; and the total. */
export async function listAdvisoryFindings(db: Kysely<DB>, organisationId: string, f: FindingFilters, offset: number, take: number) {
  const w = where(organisationId, f);
  const grouped = await sql<AdvisoryRow & { open: number; acknowledged: number; resolved: number; false_positive: number }>`
    select v.cve_id, max(${findingSummary}) as summary,
           (array_agg(v.severity order by ${rank(sql`v.severity`)} desc))[1] as severity, max(v.score)::text as score,
           count(*)::int as findings, count(distinct v.service_id)::int as services, count(distinct v.host_id)::int as hosts,
           count(*) filter (where v.state = 'open')::int as open, count(*) filter (where v.state = 'acknowledged')::int as acknowledged,
           count(*) filter (where v.state = 'resolved')::int as resolved, count(*) filter (where v.state = 'false_positive')::int as false_positive
    from ${from} where ${w}
    group by v.cve_id
    order by max(${rank(sql`v.severity`)}) desc, max(v.score) desc nulls last, v.cve_id
    offset ${offset} limit ${take}`.execute(db);
  const total = await sql<{ n: number }>`select count(distinct v.cve_id)::int as n from ${from} where ${w}`.execute(db);
  return {
    rows: grouped.rows.map(({ open, acknowledged, resolved, false_positive, ...r }) => ({ ...r, states: { open, acknowledged, resolved, false_positive } })),
    total: total.rows[0]!.n,
  };
}

/** How many findings of `cveId` are in `states` (the size of a bulk move by CVE). */
export async function countOfAdvisory(db: Kysely<DB>, organisationId: string, cveId: string, states: readonly string[]) {
  const r = await sql<{ n: number }>`select count(*)::int as n from vulnerabilities where organisation_id = ${organisationId} and cve_id = ${cveId} and state = any(${[...states]}::text[])`.execute(db);
  return r.rows[0]!.n;
}

/** The findings selected by ids, or every finding of a CVE in `states`, locked for update in the caller's transaction. */
export async function lockSelection(db: Kysely<DB>, organisationId: string, sel: { ids: readonly string[] } | { cveId: string; states: readonly string[] }) {
  const r = await sql<{ id: string; state: string; note: string | null }>`
    select id, state, note from vulnerabilities
    where organisation_id = ${organisationId} and ${'ids' in sel ? sql`id = any(${[...sel.ids]}::uuid[])` : sql`cve_id = ${sel.cveId} and state = any(${[...sel.states]}::text[])`}
    order by id for update`.execute(db);
  return r.rows;
}

/**
 * Moves the findings `moves` to `state` (or only sets the note where the state is already it), one
 * statement, and writes one audit row per finding in the same statement's transaction.
 */
export async function applyMoves(db: Kysely<DB>, organisationId: string, moves: { id: string; from: string; oldNote: string | null }[], state: string, note: string | undefined, actor: { type: string; keyId: string | null; userId: string | null; requestId: string | null }) {
  if (moves.length === 0) return;
  const ids = moves.map((m) => m.id);
  await sql`
    update vulnerabilities set
      state = ${state},
      ${note !== undefined ? sql`note = ${note},` : sql``}
      state_changed_at = case when state <> ${state} then now() else state_changed_at end,
      resolved_at = null,
      updated_at = now()
    where organisation_id = ${organisationId} and id = any(${ids}::uuid[])`.execute(db);
  await sql`
    insert into audit_log (organisation_id, actor_type, actor_key_id, actor_user_id, action, target_type, target_id, changes, request_id)
    select ${organisationId}, ${actor.type}, ${actor.keyId}, ${actor.userId}, 'vulnerability.updated', 'vulnerability', id,
           jsonb_build_object('state', jsonb_build_object('from', f, 'to', ${state}::text), 'bulk', true)
             || case when ${note !== undefined} then jsonb_build_object('note', jsonb_build_object('from', n, 'to', ${note ?? null}::text)) else '{}'::jsonb end,
           ${actor.requestId}
    from unnest(${ids}::text[], ${moves.map((m) => m.from)}::text[], ${moves.map((m) => m.oldNote)}::text[]) as v(id, f, n)`.execute(db);
}

export interface HistoryRow {
  at: string;
  changes: { state?: { from: string | null; to: string }; note?: { from: string | null; to: string | null }; job?: string };
  actor_type: string;
  email: string | null;
  key_prefix: string | null;
}

/** The audit rows of a finding, oldest first, with who made each (a member's email, a key's prefix). */
export async function history(db: Kysely<DB>, organisationId: string, id: string) {
  const r = await sql<HistoryRow>`
    select ${rfc3339('l.occurred_at')} as at, l.changes, l.actor_type, u.email, k.token_prefix as key_prefix
    from audit_log l
    left join users u on u.id = l.actor_user_id
    left join keys k on k.organisation_id = l.organisation_id and k.id = l.actor_key_id
    where l.organisation_id = ${organisationId} and l.target_type = 'vulnerability' and l.target_id = ${id}
    order by l.occurred_at, l.id`.execute(db);
  return r.rows;
}

/** Whether the organisation has the finding. */
export async function exists(db: Kysely<DB>, organisationId: string, id: string) {
  const r = await db.selectFrom('vulnerabilities').select('id').where('organisation_id', '=', organisationId).where('id', '=', id).executeTakeFirst();
  return r !== undefined;
}
