import { type Kysely, sql } from 'kysely';
import type { DB } from '../db/schema.js';
import { rfc3339 } from '../db/sql.js';
import { logChanges } from '../events/changes.js';

const siteColumns = ['id', 'code', 'name', 'description', rfc3339('created_at').as('created_at'), rfc3339('updated_at').as('updated_at')] as const;

export type SiteRow = { id: string; code: string; name: string; description: string | null; created_at: string; updated_at: string };

/** The new site, or undefined when the organisation already has its code (case-insensitive). */
export async function insertSite(db: Kysely<DB>, organisationId: string, code: string, name: string): Promise<SiteRow | undefined> {
  const r = await sql<{ id: string }>`insert into sites (organisation_id, code, name) values (${organisationId}, ${code}, ${name})
    on conflict (organisation_id, lower(code)) do nothing returning id`.execute(db);
  const id = r.rows[0]?.id;
  if (!id) return undefined;
  await logChanges(db, organisationId, 'site', [id], 'created');
  return findSite(db, organisationId, id);
}

export function findSite(db: Kysely<DB>, organisationId: string, id: string): Promise<SiteRow | undefined> {
  return db.selectFrom('sites').select(siteColumns).where('organisation_id', '=', organisationId).where('id', '=', id).executeTakeFirst() as Promise<SiteRow | undefined>;
}

/** Renames a site; false when the organisation has no such site. */
export async function renameSite(db: Kysely<DB>, organisationId: string, id: string, name: string): Promise<boolean> {
  const r = await db.updateTable('sites').set({ name, updated_at: sql`now()` }).where('organisation_id', '=', organisationId).where('id', '=', id).executeTakeFirst();
  const renamed = Number(r.numUpdatedRows) > 0;
  if (renamed) await logChanges(db, organisationId, 'site', [id], 'updated');
  return renamed;
}

/** The daemon's current site, locked for the change; undefined when the organisation has no such daemon. */
export function findDaemonForUpdate(db: Kysely<DB>, organisationId: string, id: string) {
  return db
    .selectFrom('daemons')
    .select(['id', 'site_id', 'site_set_in_ui'])
    .where('organisation_id', '=', organisationId)
    .where('id', '=', id)
    .where('removed_at', 'is', null)
    .forUpdate()
    .executeTakeFirst();
}

/**
 * Sets (or clears) a daemon's site from the console: set marks it as the UI's, so registration leaves it alone.
 * Logs the daemon as updated, and each site it left or joined (`previousSiteId`, `siteId`) as updated too.
 */
export async function setDaemonSite(db: Kysely<DB>, organisationId: string, id: string, siteId: string | null, previousSiteId: string | null): Promise<void> {
  await db.updateTable('daemons').set({ site_id: siteId, site_set_in_ui: siteId !== null, updated_at: sql`now()` }).where('organisation_id', '=', organisationId).where('id', '=', id).execute();
  await logChanges(db, organisationId, 'daemon', [id], 'updated');
  const sites = [...new Set([previousSiteId, siteId])].filter((s): s is string => s !== null);
  if (previousSiteId !== siteId) await logChanges(db, organisationId, 'site', sites, 'updated');
}

/** What a site still holds: its hosts, networks, daemons (removed daemons aside) and snapshots. */
export async function siteHoldings(db: Kysely<DB>, organisationId: string, id: string): Promise<{ hosts: number; networks: number; daemons: number; snapshots: number }> {
  const r = await sql<{ hosts: number; networks: number; daemons: number; snapshots: number }>`
    select (select count(*) from hosts where organisation_id = ${organisationId} and site_id = ${id})::int as hosts,
           (select count(*) from networks where organisation_id = ${organisationId} and site_id = ${id})::int as networks,
           (select count(*) from daemons where organisation_id = ${organisationId} and site_id = ${id} and removed_at is null)::int as daemons,
           (select count(*) from snapshots where organisation_id = ${organisationId} and site_id = ${id})::int as snapshots`.execute(db);
  return r.rows[0]!;
}

/**
 * Deletes a site, locked first, with its topology views (built from its hosts, so meaningless
 * without it). The service refuses a site with snapshots. Logs the site and each view as deleted.
 */
export async function deleteSite(db: Kysely<DB>, organisationId: string, id: string): Promise<void> {
  const views = await db.deleteFrom('topologies').where('organisation_id', '=', organisationId).where('site_id', '=', id).returning('id').execute();
  await db.deleteFrom('sites').where('organisation_id', '=', organisationId).where('id', '=', id).execute();
  await logChanges(db, organisationId, 'topology', views.map((v) => v.id), 'deleted');
  await logChanges(db, organisationId, 'site', [id], 'deleted');
}

/** The site, locked against a concurrent change (a daemon or network joining it). */
export function lockSite(db: Kysely<DB>, organisationId: string, id: string) {
  return db.selectFrom('sites').select(['id', 'code', 'name']).where('organisation_id', '=', organisationId).where('id', '=', id).forUpdate().executeTakeFirst();
}
