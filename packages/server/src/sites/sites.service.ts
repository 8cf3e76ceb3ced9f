import type { CreateSiteRequest, EnrolDaemonRequest, RenameSiteRequest } from '@surveyor/contract';
import type { Kysely } from 'kysely';
import type { z } from 'zod';
import { createDaemonKey } from '../admin/admin.service.js';
import { type Actor, recordAudit } from '../audit/audit.repo.js';
import { daemonSummary } from '../daemons/daemons.service.js';
import type { DB } from '../db/schema.js';
import { AppError } from '../errors.js';
import * as repo from './sites.repo.js';

type OrgActor = Actor & { organisationId: string };

function siteView(s: repo.SiteRow) {
  return { id: s.id, code: s.code, name: s.name, description: s.description, createdAt: s.created_at, updatedAt: s.updated_at };
}

async function siteOrThrow(db: Kysely<DB>, organisationId: string, id: string) {
  const site = await repo.findSite(db, organisationId, id);
  if (!site) throw new AppError('not_found', `No site ${id}.`);
  return site;
}

/** Adds a site; a code the organisation already has (case-insensitive) is 409 `duplicate`. */
export async function createSite(db: Kysely<DB>, actor: OrgActor, input: z.output<typeof CreateSiteRequest>) {
  const site = await db.transaction().execute(async (trx) => {
    const s = await repo.insertSite(trx, actor.organisationId, input.code, input.name);
    if (!s) return undefined;
    await recordAudit(trx, actor, { organisationId: actor.organisationId, action: 'site.created', targetType: 'site', targetId: s.id, changes: { code: s.code, name: s.name } });
    return s;
  });
  if (!site) throw new AppError('duplicate', `A site with code ${JSON.stringify(input.code)} exists.`);
  return siteView(site);
}

/** Renames a site of the organisation (404 for any other id). */
export async function renameSite(db: Kysely<DB>, actor: OrgActor, id: string, input: z.output<typeof RenameSiteRequest>) {
  return db.transaction().execute(async (trx) => {
    const before = await siteOrThrow(trx, actor.organisationId, id);
    await repo.renameSite(trx, actor.organisationId, id, input.name);
    await recordAudit(trx, actor, { organisationId: actor.organisationId, action: 'site.renamed', targetType: 'site', targetId: id, changes: { name: { from: before.name, to: input.name } } });
    return siteView((await repo.findSite(trx, actor.organisationId, id))!);
  });
}

/** "3 hosts, 1 network and 2 daemons": what a site still holds, in words. */
function holdingsText(h: { hosts: number; networks: number; daemons: number; snapshots: number }): string {
  const parts = ([['host', h.hosts], ['network', h.networks], ['daemon', h.daemons], ['snapshot', h.snapshots]] as const).filter(([, n]) => n > 0).map(([w, n]) => `${n} ${w}${n === 1 ? '' : 's'}`);
  return parts.length > 1 ? `${parts.slice(0, -1).join(', ')} and ${parts.at(-1)}` : parts[0]!;
}

/**
 * Deletes an empty site: one that holds no host, network, daemon or snapshot (409 `conflict`
 * naming what it still holds). A snapshot of a site keeps that scope (its diff and attestation
 * say so) and snapshots are never pruned (spec 8): a site with snapshots stays. Its topology
 * views go with it.
 */
export async function deleteSite(db: Kysely<DB>, actor: OrgActor, id: string): Promise<void> {
  await db.transaction().execute(async (trx) => {
    const site = await repo.lockSite(trx, actor.organisationId, id);
    if (!site) throw new AppError('not_found', `No site ${id}.`);
    const held = await repo.siteHoldings(trx, actor.organisationId, id);
    if (held.hosts + held.networks + held.daemons > 0) {
      throw new AppError('conflict', `Site ${site.code} still holds ${holdingsText(held)}; move or delete them first, then delete the site.`, { holds: held });
    }
    if (held.snapshots > 0) {
      throw new AppError('conflict', `Site ${site.code} has ${holdingsText({ ...held, hosts: 0, networks: 0, daemons: 0 })} taken of it; snapshots keep their site's scope and are never deleted, so the site stays.`, { holds: held });
    }
    await repo.deleteSite(trx, actor.organisationId, id);
    await recordAudit(trx, actor, { organisationId: actor.organisationId, action: 'site.deleted', targetType: 'site', targetId: id, changes: { code: site.code, name: site.name } });
  });
}

/**
 * Assigns a daemon to a site from the console, or clears it (null). An assignment made here is
 * flagged (`site_set_in_ui`), and registration never moves a daemon that has one (spec 4.4).
 */
export async function setDaemonSite(db: Kysely<DB>, actor: OrgActor, daemonId: string, siteId: string | null) {
  await db.transaction().execute(async (trx) => {
    const daemon = await repo.findDaemonForUpdate(trx, actor.organisationId, daemonId);
    if (!daemon) throw new AppError('not_found', `No daemon ${daemonId}.`);
    if (siteId !== null) await siteOrThrow(trx, actor.organisationId, siteId);
    await repo.setDaemonSite(trx, actor.organisationId, daemonId, siteId, daemon.site_id);
    await recordAudit(trx, actor, { organisationId: actor.organisationId, action: 'daemon.site_set', targetType: 'daemon', targetId: daemonId, changes: { siteId: { from: daemon.site_id, to: siteId } } });
  });
  return (await daemonSummary(db, actor.organisationId, daemonId))!;
}

/** Mints a daemon key (shown once, stored hashed; audited as `key.created`) and the command line that starts a daemon with it. */
export async function enrolDaemon(db: Kysely<DB>, actor: OrgActor, baseUrl: string, input: z.output<typeof EnrolDaemonRequest>) {
  const site = input.siteId ? await siteOrThrow(db, actor.organisationId, input.siteId) : undefined;
  const key = await createDaemonKey(db, actor, { org: actor.organisationId, name: input.name });
  const command = `surveyor-daemon --server ${baseUrl} --key ${key.token}${site ? ` --site ${site.code}` : ''}`;
  return { keyId: key.id, token: key.token, command };
}
