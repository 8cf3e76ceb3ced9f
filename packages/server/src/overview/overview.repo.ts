import { scanSessionStates } from '@surveyor/contract';
import { type Kysely, sql } from 'kysely';
import type { DB } from '../db/schema.js';

type Db = Kysely<DB>;

export type CertificateWindows = { expired: number; '1d': number; '7d': number; '14d': number; '30d': number };

/**
 * Current certificates per expiry window (decisions.md): each window counts those whose notAfter
 * falls within it, cumulative and not yet expired; expired counts those already past. Only the
 * certificates their endpoints present now (state `current`, view `certificate_states`, stored on the row): a
 * certificate replaced on its endpoint, or whose service is gone, needs no attention, and
 * `tls.expiring` does not announce it either. One query over the certificates ending within 30
 * days. The metrics and the overview both read this.
 */
export async function certificatesExpiring(db: Db, organisationId: string, now: Date): Promise<CertificateWindows> {
  const r = await sql<{ expired: number; d1: number; d7: number; d14: number; d30: number }>`
    select count(*) filter (where not_after <= ${now})::int as expired,
           count(*) filter (where not_after > ${now} and not_after <= ${now}::timestamptz + interval '1 day')::int as d1,
           count(*) filter (where not_after > ${now} and not_after <= ${now}::timestamptz + interval '7 days')::int as d7,
           count(*) filter (where not_after > ${now} and not_after <= ${now}::timestamptz + interval '14 days')::int as d14,
           count(*) filter (where not_after > ${now} and not_after <= ${now}::timestamptz + interval '30 days')::int as d30
    from certificates c
    where c.organisation_id = ${organisationId} and c.not_after <= ${now}::timestamptz + interval '30 days'
      and c.state = 'current'`.execute(db);
  const c = r.rows[0]!;
  return { expired: c.expired, '1d': c.d1, '7d': c.d7, '14d': c.d14, '30d': c.d30 };
}

/** Scan sessions per state, every state of the contract listed (0 where none). One grouped count. */
export async function sessionCounts(db: Db, organisationId: string): Promise<Record<(typeof scanSessionStates)[number], number>> {
  const r = await sql<{ state: string; n: number }>`select state, count(*)::int as n from scan_sessions where organisation_id = ${organisationId} group by state`.execute(db);
  const by = new Map(r.rows.map((x) => [x.state, x.n]));
  return Object.fromEntries(scanSessionStates.map((s) => [s, by.get(s) ?? 0])) as Record<(typeof scanSessionStates)[number], number>;
}

/** The latest snapshot's capture time and its age in seconds at `now`; nulls when none was taken. */
export async function latestSnapshot(db: Db, organisationId: string, now: Date): Promise<{ at: Date | null; ageSeconds: number | null }> {
  const r = await sql<{ at: Date | null; age: number | null }>`
    select max(captured_at) as at, extract(epoch from (${now}::timestamptz - max(captured_at)))::float8 as age from snapshots where organisation_id = ${organisationId}`.execute(db);
  const x = r.rows[0];
  return { at: x?.at ? new Date(x.at) : null, ageSeconds: x?.age ?? null };
}

/** Hosts present (not gone) and gone: what the Hosts screen lists by default, and the rest. One count. */
export async function hostCounts(db: Db, organisationId: string): Promise<{ present: number; gone: number }> {
  const r = await sql<{ present: number; gone: number }>`
    select count(*) filter (where gone_at is null)::int as present, count(*) filter (where gone_at is not null)::int as gone
    from hosts where organisation_id = ${organisationId}`.execute(db);
  return r.rows[0]!;
}
