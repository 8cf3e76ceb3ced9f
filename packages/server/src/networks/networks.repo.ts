import { type Kysely, sql } from 'kysely';
import type { DB } from '../db/schema.js';
import { logChanges } from '../events/changes.js';

/** The network's row locked for a change; undefined when the organisation has no such network. */
export function lockNetwork(db: Kysely<DB>, organisationId: string, id: string) {
  return db
    .selectFrom('networks')
    .select(['id', 'site_id', sql<string>`cidr::text`.as('cidr')])
    .where('organisation_id', '=', organisationId)
    .where('id', '=', id)
    .forUpdate()
    .executeTakeFirst();
}

export interface NetworkChanges {
  name?: string | undefined;
  siteId?: string | null | undefined;
  scanIntervalMinutes?: number | null | undefined;
  excludeCidrs?: string[] | undefined;
  topPortsTcp?: number | undefined;
  topPortsUdp?: number | undefined;
  nmapEnabled?: boolean | undefined;
  nmapScripts?: string[] | undefined;
}

/** Sets the fields given (undefined: left as they are) and logs the network as updated. */
export async function updateNetwork(db: Kysely<DB>, organisationId: string, id: string, c: NetworkChanges): Promise<void> {
  await db
    .updateTable('networks')
    .set({
      ...(c.name !== undefined ? { name: c.name } : {}),
      ...(c.siteId !== undefined ? { site_id: c.siteId } : {}),
      ...(c.scanIntervalMinutes !== undefined ? { scan_interval_minutes: c.scanIntervalMinutes } : {}),
      ...(c.excludeCidrs !== undefined ? { exclude_cidrs: sql<string[]>`${c.excludeCidrs}::cidr[]` as unknown as string[] } : {}),
      ...(c.topPortsTcp !== undefined ? { top_ports_tcp: c.topPortsTcp } : {}),
      ...(c.topPortsUdp !== undefined ? { top_ports_udp: c.topPortsUdp } : {}),
      ...(c.nmapEnabled !== undefined ? { nmap_enabled: c.nmapEnabled } : {}),
      ...(c.nmapScripts !== undefined ? { nmap_scripts: c.nmapScripts } : {}),
      updated_at: sql`now()`,
    })
    .where('organisation_id', '=', organisationId)
    .where('id', '=', id)
    .execute();
  await logChanges(db, organisationId, 'network', [id], 'updated');
}

/** Deletes the network (its sessions, their batches and jobs cascade); returns how many sessions went with it. */
export async function deleteNetwork(db: Kysely<DB>, organisationId: string, id: string): Promise<number> {
  const sessions = await db
    .selectFrom('scan_sessions')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('organisation_id', '=', organisationId)
    .where('network_id', '=', id)
    .executeTakeFirstOrThrow();
  await db.deleteFrom('networks').where('organisation_id', '=', organisationId).where('id', '=', id).execute();
  await logChanges(db, organisationId, 'network', [id], 'deleted');
  return Number(sessions.n);
}

/** The organisation's networks (but `exceptId`) whose range contains or lies inside `cidr`, the same one aside; the widest first, at most 20. */
export function overlapping(db: Kysely<DB>, organisationId: string, cidr: string, exceptId: string | undefined) {
  let q = db
    .selectFrom('networks')
    .select(['id', 'name', sql<string>`cidr::text`.as('cidr'), sql<boolean>`cidr >> ${cidr}::cidr`.as('contains')])
    .where('organisation_id', '=', organisationId)
    .where(sql<boolean>`cidr && ${cidr}::cidr`)
    .where(sql<boolean>`cidr <> ${cidr}::cidr`);
  if (exceptId) q = q.where('id', '<>', exceptId);
  return q.orderBy(sql`masklen(cidr)`).orderBy('name').limit(20).execute();
}
