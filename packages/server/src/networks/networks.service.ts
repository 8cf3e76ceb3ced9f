import type { PatchNetworkRequest } from '@surveyor/contract';
import type { Kysely } from 'kysely';
import type { z } from 'zod';
import { type Actor, recordAudit } from '../audit/audit.repo.js';
import type { DB } from '../db/schema.js';
import { AppError } from '../errors.js';
import { findNetwork, findSite } from '../inventory/inventory.repo.js';
import { toNetwork } from '../inventory/inventory.service.js';
import { findActiveSession } from '../scans/scans.repo.js';
import { markNetworkViewsStale } from '../topology/dependencies.js';
import * as repo from './networks.repo.js';

type OrgActor = Actor & { organisationId: string };

async function networkOrThrow(db: Kysely<DB>, organisationId: string, id: string) {
  const n = await findNetwork(db, organisationId, id);
  if (!n) throw new AppError('not_found', `No network ${id}.`);
  return toNetwork(n);
}

/**
 * Edits a network (the CIDR stays: the contract refuses the field). Fields left out stay; the
 * audit row records each changed field from → to. A site of another organisation is 404.
 */
export async function patchNetwork(db: Kysely<DB>, actor: OrgActor, id: string, input: z.output<typeof PatchNetworkRequest>) {
  const org = actor.organisationId;
  return db.transaction().execute(async (trx) => {
    if (!(await repo.lockNetwork(trx, org, id))) throw new AppError('not_found', `No network ${id}.`);
    const before = await networkOrThrow(trx, org, id);
    if (input.siteId && !(await findSite(trx, org, input.siteId))) throw new AppError('not_found', `No site ${input.siteId}.`);
    await repo.updateNetwork(trx, org, id, {
      name: input.name,
      siteId: input.siteId,
      scanIntervalMinutes: input.scanIntervalMinutes,
      excludeCidrs: input.excludeCidrs,
      topPortsTcp: input.topPortsTcp,
      topPortsUdp: input.topPortsUdp,
      nmapEnabled: input.nmap?.enabled,
      nmapScripts: input.nmap?.scripts ? [...new Set(input.nmap.scripts)] : undefined,
    });
    const after = await networkOrThrow(trx, org, id);
    const changes = Object.fromEntries(
      (['name', 'siteId', 'scanIntervalMinutes', 'excludeCidrs', 'topPortsTcp', 'topPortsUdp', 'nmap'] as const)
        .filter((k) => JSON.stringify(before[k]) !== JSON.stringify(after[k]))
        .map((k) => [k, { from: before[k], to: after[k] }]),
    );
    // A network moved to another site changes where the network views place its addresses.
    if (changes.siteId) for (const siteId of [before.siteId, after.siteId]) await markNetworkViewsStale(trx, org, { siteId, cidrs: [after.cidr] });
    await recordAudit(trx, actor, { organisationId: org, action: 'network.updated', targetType: 'network', targetId: id, changes });
    return after;
  });
}

/**
 * Deletes a network with its scan sessions; its hosts stay in the inventory. A session queued,
 * dispatched or running refuses it (409 scan_already_active, naming the session).
 */
export async function deleteNetwork(db: Kysely<DB>, actor: OrgActor, id: string): Promise<void> {
  const org = actor.organisationId;
  await db.transaction().execute(async (trx) => {
    if (!(await repo.lockNetwork(trx, org, id))) throw new AppError('not_found', `No network ${id}.`);
    const network = await networkOrThrow(trx, org, id);
    const active = await findActiveSession(trx, org, id);
    if (active) {
      throw new AppError('scan_already_active', `A scan of ${network.cidr} is in progress (session ${active.id}); cancel it, or wait until it ends, before deleting the network.`, { sessionId: active.id });
    }
    const sessions = await repo.deleteNetwork(trx, org, id);
    await markNetworkViewsStale(trx, org, { siteId: network.siteId, cidrs: [network.cidr] });
    await recordAudit(trx, actor, { organisationId: org, action: 'network.deleted', targetType: 'network', targetId: id, changes: { before: network, sessionsDeleted: sessions } });
  });
}

/** The organisation's networks overlapping `cidr` (but `exceptId`), each saying whether it contains the CIDR or lies within it. */
export async function networkOverlaps(db: Kysely<DB>, organisationId: string, cidr: string, exceptId?: string) {
  const rows = await repo.overlapping(db, organisationId, cidr, exceptId);
  return { data: rows.map((r) => ({ id: r.id, name: r.name, cidr: r.cidr, relation: r.contains ? ('contains' as const) : ('within' as const) })) };
}
