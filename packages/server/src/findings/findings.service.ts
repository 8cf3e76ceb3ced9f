import { DistributionVerdict, FINDINGS_BULK_MAX, type VulnerabilityState, actionableStates, vulnerabilityPatchMoves } from '@surveyor/contract';
import type { Kysely } from 'kysely';
import type { Actor } from '../audit/audit.repo.js';
import type { DB } from '../db/schema.js';
import { AppError } from '../errors.js';
import { logChanges } from '../events/changes.js';
import type { CursorCodec } from '../inventory/cursor.js';
import * as repo from './findings.repo.js';

// Triage rules: which findings a list shows (the actionable set unless asked), the pages of the
// list and of its advisories, a bulk move with the PATCH's state machine, a finding's history.

interface Query {
  state?: VulnerabilityState[] | undefined;
  severity?: string | undefined;
  search?: string | undefined;
  cveId?: string | undefined;
  exposed?: 'true' | 'false' | undefined;
  limit: number;
  cursor?: string | undefined;
}

const filtersOf = (q: Query): repo.FindingFilters => ({
  states: q.state ?? [...actionableStates], severity: q.severity, search: q.search, cveId: q.cveId, exposed: q.exposed === undefined ? undefined : q.exposed === 'true',
});

/** The cursor is the position in the ordered list, bound to the list, its filters and the organisation. */
function page<T>(cursors: CursorCodec, organisationId: string, list: string, q: Query, load: (offset: number, take: number) => Promise<{ rows: T[]; total: number }>) {
  const f = filtersOf(q);
  const filters = { ...f, states: [...f.states].sort().join(',') };
  const offset = q.cursor === undefined ? 0 : cursors.decode(organisationId, list, filters, q.cursor);
  return load(offset, q.limit + 1).then(({ rows, total }) => {
    const hasMore = rows.length > q.limit;
    return { rows: rows.slice(0, q.limit), total, hasMore, nextCursor: hasMore ? cursors.encode(organisationId, list, filters, offset + q.limit) : null };
  });
}

const score = (s: string | null) => (s === null ? null : Number(s));

/** A finding's stored distribution verdict (jsonb, migration 0035), as the contract shows it; null when absent or not of that shape. */
export function distributionOf(v: unknown) {
  const parsed = DistributionVerdict.safeParse(typeof v === 'string' ? JSON.parse(v) : v);
  return parsed.success ? parsed.data : null;
}

export async function listFindings(db: Kysely<DB>, cursors: CursorCodec, organisationId: string, q: Query) {
  const p = await page(cursors, organisationId, 'findings', q, (offset, take) => repo.listFindings(db, organisationId, filtersOf(q), offset, take));
  return {
    data: p.rows.map((r) => ({
      id: r.id, cveId: r.cve_id, advisoryId: r.advisory_id, summary: r.summary, severity: r.severity as never, score: score(r.score), state: r.state as VulnerabilityState, note: r.note,
      distribution: distributionOf(r.distribution),
      firstSeenAt: r.first_seen_at, lastSeenAt: r.last_seen_at, stateChangedAt: r.state_changed_at,
      host: { id: r.host_id, name: r.host_name, address: r.host_address },
      service: { id: r.service_id, protocol: r.protocol as never, port: r.port, name: r.service_name, vendor: r.vendor, product: r.product, version: r.version, exposedVia: r.exposed_via },
    })),
    total: p.total,
    nextCursor: p.nextCursor,
    hasMore: p.hasMore,
  };
}

export async function listAdvisoryFindings(db: Kysely<DB>, cursors: CursorCodec, organisationId: string, q: Query) {
  const p = await page(cursors, organisationId, 'findings/advisories', q, (offset, take) => repo.listAdvisoryFindings(db, organisationId, filtersOf(q), offset, take));
  return {
    data: p.rows.map((r) => ({ cveId: r.cve_id, summary: r.summary, severity: r.severity as never, score: score(r.score), findings: r.findings, services: r.services, hosts: r.hosts, states: r.states as never })),
    total: p.total,
    nextCursor: p.nextCursor,
    hasMore: p.hasMore,
  };
}

export interface BulkInput {
  ids?: string[] | undefined;
  cveId?: string | undefined;
  from?: VulnerabilityState[] | undefined;
  state: 'open' | 'acknowledged' | 'false_positive';
  note?: string | undefined;
}

/**
 * Moves the selected findings in one transaction, each by the PATCH's rules: a finding already in
 * the state (with that note) is unchanged, one whose state does not allow the move is refused and
 * left alone, the others move with one audit row each. An id the organisation lacks moves none (404).
 */
export async function bulkMove(db: Kysely<DB>, actor: Actor & { organisationId: string }, input: BulkInput) {
  const o = actor.organisationId;
  return db.transaction().execute(async (trx) => {
    const states = input.from ?? [...actionableStates];
    if (input.cveId !== undefined) {
      const n = await repo.countOfAdvisory(trx, o, input.cveId, states);
      if (n > FINDINGS_BULK_MAX) {
        throw new AppError('validation_failed', `${input.cveId} has ${n} findings in ${states.join(', ')}; move at most ${FINDINGS_BULK_MAX} at once (filter by state, or select them).`, {
          issues: [{ path: 'body.cveId', message: `selects ${n} findings, more than ${FINDINGS_BULK_MAX}` }],
        });
      }
    }
    const ids = input.ids ? [...new Set(input.ids)] : undefined;
    const rows = await repo.lockSelection(trx, o, ids ? { ids } : { cveId: input.cveId!, states });
    if (ids && rows.length !== ids.length) {
      const have = new Set(rows.map((r) => r.id));
      throw new AppError('not_found', `No finding ${ids.find((id) => !have.has(id))} in this organisation; nothing was moved.`);
    }
    const refused: { id: string; state: VulnerabilityState; allowed: VulnerabilityState[] }[] = [];
    const moves: { id: string; from: string; oldNote: string | null }[] = [];
    let unchanged = 0;
    for (const r of rows) {
      const from = r.state as VulnerabilityState;
      if (from === input.state && (input.note === undefined || input.note === r.note)) unchanged++;
      else if (from !== input.state && !vulnerabilityPatchMoves[from].includes(input.state)) refused.push({ id: r.id, state: from, allowed: vulnerabilityPatchMoves[from] });
      else moves.push({ id: r.id, from, oldNote: r.note });
    }
    await repo.applyMoves(trx, o, moves, input.state, input.note, { type: actor.type, keyId: actor.keyId ?? null, userId: actor.userId ?? null, requestId: actor.requestId ?? null });
    await logChanges(trx, o, 'vulnerability', moves.map((m) => m.id), 'updated');
    return { updated: moves.length, unchanged, refused };
  });
}

/** Each change of the finding's state or note, oldest first, and who made it. */
export async function findingHistory(db: Kysely<DB>, organisationId: string, id: string) {
  if (!(await repo.exists(db, organisationId, id))) throw new AppError('not_found', `No finding ${id}.`);
  const rows = await repo.history(db, organisationId, id);
  return {
    data: rows.map((r) => ({
      at: r.at,
      from: (r.changes.state?.from ?? null) as VulnerabilityState | null,
      to: (r.changes.state?.to ?? null) as VulnerabilityState | null,
      note: r.changes.note?.to ?? null,
      by: r.changes.job ?? (r.email ?? (r.key_prefix ? `API key ${r.key_prefix}` : r.actor_type)),
    })),
  };
}
