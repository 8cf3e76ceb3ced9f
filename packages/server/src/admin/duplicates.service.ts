import type { Kysely } from 'kysely';
import { logChanges } from '../events/changes.js';
import { type Actor, recordAudit } from '../audit/audit.repo.js';
import type { DB } from '../db/schema.js';
import { AppError } from '../errors.js';
import * as ingestRepo from '../ingest/ingest.repo.js';
import { markTopologiesStale } from '../topology/dependencies.js';
import * as repo from './admin.repo.js';
import * as dup from './duplicates.repo.js';
import { refreshHostSummaries } from '../inventory/host-summaries.js';

export interface HostMerge {
  organisationId: string;
  siteId: string | null;
  /** The oldest host of the group: it keeps its id and takes the others' rows. */
  survivorId: string;
  /** The hosts merged into it (deleted), oldest first. */
  mergedHostIds: string[];
}

export interface MergeReport {
  dryRun: boolean;
  organisations: number;
  hostsMerged: number;
  merges: HostMerge[];
}

/** Groups of hosts linked by shared addresses (transitively), each oldest first. */
function groupsOf(pairs: dup.DuplicateHost[], ages: Map<string, { created_at: Date; seq: number }>): { siteId: string | null; hosts: string[] }[] {
  const parent = new Map<string, string>();
  const find = (x: string): string => {
    const p = parent.get(x) ?? x;
    if (p === x) return x;
    const root = find(p);
    parent.set(x, root);
    return root;
  };
  const site = new Map<string, string | null>();
  for (const p of pairs) {
    site.set(p.id, p.site_id);
    site.set(p.other_id, p.site_id);
    const [a, b] = [find(p.id), find(p.other_id)];
    if (a !== b) parent.set(b, a);
  }
  const groups = new Map<string, string[]>();
  for (const h of site.keys()) (groups.get(find(h)) ?? groups.set(find(h), []).get(find(h))!).push(h);
  const age = (h: string) => ages.get(h)!;
  return [...groups.values()].map((hosts) => ({
    siteId: site.get(hosts[0]!) ?? null,
    hosts: hosts.sort((x, y) => age(x).created_at.getTime() - age(y).created_at.getTime() || age(x).seq - age(y).seq),
  }));
}

/**
 * Repairs inventories where concurrent batches of one site created several hosts for one address
 * (before host identity was serialised per site): in each organisation (or the one given), hosts
 * of one site sharing an address are merged into the oldest, one transaction per organisation
 * holding the identity lock of each site concerned (no batch resolves hosts there meanwhile),
 * with an audit row per merged host. `dryRun` reports the merges without making them.
 */
export async function mergeDuplicateHosts(db: Kysely<DB>, actor: Actor, input: { org?: string | undefined; dryRun: boolean }): Promise<MergeReport> {
  let only: string | null = null;
  if (input.org !== undefined) {
    const org = await repo.findOrganisation(db, input.org);
    if (!org) throw new AppError('not_found', `No organisation ${JSON.stringify(input.org)}.`);
    only = org.id;
  }
  const report: MergeReport = { dryRun: input.dryRun, organisations: 0, hostsMerged: 0, merges: [] };
  for (const organisationId of await dup.organisationsWithHosts(db, only)) {
    const merges = await db.transaction().execute(async (trx) => {
      const planned = await plan(trx, organisationId);
      if (input.dryRun || planned.length === 0) return planned;
      for (const siteId of [...new Set(planned.map((g) => g.siteId))].sort()) await ingestRepo.lockIdentityScope(trx, organisationId, siteId);
      // Under the locks, the groups as they are now.
      const groups = await plan(trx, organisationId);
      await apply(trx, actor, organisationId, groups);
      return groups;
    });
    report.organisations++;
    report.merges.push(...merges);
    report.hostsMerged += merges.reduce((n, g) => n + g.mergedHostIds.length, 0);
  }
  return report;
}

async function plan(db: Kysely<DB>, organisationId: string): Promise<HostMerge[]> {
  const pairs = await dup.hostsSharingAddresses(db, organisationId);
  if (pairs.length === 0) return [];
  const ids = [...new Set(pairs.flatMap((p) => [p.id, p.other_id]))];
  const ages = new Map((await dup.hostAges(db, organisationId, ids)).map((h) => [h.id, h]));
  return groupsOf(pairs, ages).map((g) => ({ organisationId, siteId: g.siteId, survivorId: g.hosts[0]!, mergedHostIds: g.hosts.slice(1) }));
}

/**
 * Merges in waves: wave i merges the i-th duplicate of every group, so a survivor takes one host at
 * a time and two duplicates of one group never collide with each other.
 */
async function apply(trx: Kysely<DB>, actor: Actor, organisationId: string, groups: HostMerge[]): Promise<void> {
  const summaries = await dup.hostSummaries(trx, organisationId, groups.flatMap((g) => g.mergedHostIds));
  const waves = Math.max(0, ...groups.map((g) => g.mergedHostIds.length));
  const movedServices: string[] = [];
  for (let i = 0; i < waves; i++) {
    const wave = groups.filter((g) => g.mergedHostIds[i]).map((g) => ({ dup: g.mergedHostIds[i]!, surv: g.survivorId }));
    movedServices.push(...(await dup.mergeHosts(trx, organisationId, wave)));
  }
  // The survivors' pages show the addresses, MACs and services they took over.
  await refreshHostSummaries(trx, organisationId, groups.map((g) => g.survivorId));
  for (const g of groups) {
    for (const merged of g.mergedHostIds) {
      const s = summaries.get(merged);
      await recordAudit(trx, actor, {
        organisationId, action: 'host.merged', targetType: 'host', targetId: g.survivorId,
        changes: { mergedHostId: merged, siteId: g.siteId, fingerprints: s?.fingerprints ?? [], addresses: s?.addresses ?? [] },
      });
    }
  }
  const survivors = groups.map((g) => g.survivorId);
  await logChanges(trx, organisationId, 'host', groups.flatMap((g) => g.mergedHostIds), 'deleted');
  await logChanges(trx, organisationId, 'host', survivors, 'updated');
  await logChanges(trx, organisationId, 'service', movedServices, 'updated');
  await markTopologiesStale(trx, organisationId, { hostIds: survivors, serviceIds: [] });
}
