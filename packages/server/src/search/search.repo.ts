import { type Kysely, sql } from 'kysely';
import type { DB } from '../db/schema.js';
import { likeLiteral } from '../db/sql.js';
import { findingSummary, rank } from '../findings/findings.repo.js';

// The search box's own queries: CVEs among the organisation's findings, networks by name or CIDR.
// Hosts and services are searched with the inventory's repository functions (their rules live there).

export interface CveRow { cve_id: string; summary: string | null; severity: string; score: string | null; findings: number; hosts: number }

/** The advisories of the organisation's findings whose id starts with `prefix` (case-insensitive), the most severe first; and how many. */
export async function cvesByPrefix(db: Kysely<DB>, organisationId: string, prefix: string, take: number) {
  const where = sql`v.organisation_id = ${organisationId} and upper(v.cve_id) like ${`${likeLiteral(prefix.toUpperCase())}%`}`;
  const rows = await sql<CveRow>`
    select v.cve_id, max(${findingSummary}) as summary, (array_agg(v.severity order by ${rank(sql`v.severity`)} desc))[1] as severity, max(v.score)::text as score,
           count(*)::int as findings, count(distinct v.host_id)::int as hosts
    from vulnerabilities v where ${where}
    group by v.cve_id
    order by max(${rank(sql`v.severity`)}) desc, max(v.score) desc nulls last, v.cve_id
    limit ${take}`.execute(db);
  const total = await sql<{ n: number }>`select count(distinct v.cve_id)::int as n from vulnerabilities v where ${where}`.execute(db);
  return { rows: rows.rows, total: total.rows[0]!.n };
}

/**
 * The ids of the organisation's networks whose name contains `term`, whose CIDR text starts with
 * it, or (`address`: an address or CIDR) whose CIDR overlaps it; in insertion order; and how many.
 */
export async function networkIds(db: Kysely<DB>, organisationId: string, term: string, address: string | null, take: number) {
  const where = sql`organisation_id = ${organisationId} and (lower(name) like ${`%${likeLiteral(term.toLowerCase())}%`} or cidr::text like ${`${likeLiteral(term.toLowerCase())}%`}
    ${address === null ? sql`` : sql`or cidr && ${address}::inet`})`;
  const rows = await sql<{ id: string }>`select id from networks where ${where} order by seq limit ${take}`.execute(db);
  const total = await sql<{ n: number }>`select count(*)::int as n from networks where ${where}`.execute(db);
  return { ids: rows.rows.map((r) => r.id), total: total.rows[0]!.n };
}
