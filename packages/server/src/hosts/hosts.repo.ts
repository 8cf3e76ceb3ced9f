import { type Kysely, sql } from 'kysely';
import type { DB } from '../db/schema.js';

// One host's layer 2/3 facts as the daemons reported them (decisions.md "Observation elements"),
// each one small query on the host's own rows (their keys lead with organisation and host).

type Db = Kysely<DB>;
const rows = async <T>(q: ReturnType<typeof sql<T>>, db: Db) => (await q.execute(db)).rows;

export async function hostExists(db: Db, o: string, hostId: string): Promise<boolean> {
  return (await rows(sql<{ one: number }>`select 1 as one from hosts where organisation_id = ${o} and id = ${hostId}`, db)).length > 0;
}

/** Interfaces, each with the host's addresses seen with its MAC. */
export function interfaces(db: Db, o: string, hostId: string) {
  return rows(
    sql<{ name: string; mac: string | null; addresses: string[]; last_seen_at: Date }>`
      select i.name, i.mac::text as mac, i.last_seen_at,
        array(select host(a.address) from host_addresses a where a.organisation_id = i.organisation_id and a.host_id = i.host_id and a.mac = i.mac order by a.address) as addresses
      from host_interfaces i where i.organisation_id = ${o} and i.host_id = ${hostId}`,
    db,
  );
}

export function vlans(db: Db, o: string, hostId: string) {
  return rows(
    sql<{ vlan_id: number; name: string | null; tagged: string[]; untagged: string[]; last_seen_at: Date }>`
      select vlan_id, name, tagged, untagged, last_seen_at from host_vlans where organisation_id = ${o} and host_id = ${hostId} order by vlan_id`,
    db,
  );
}

export function lagGroups(db: Db, o: string, hostId: string) {
  return rows(
    sql<{ name: string; protocol: 'lacp' | 'static' | null; members: string[]; last_seen_at: Date }>`
      select name, protocol, members, last_seen_at from host_lag_groups where organisation_id = ${o} and host_id = ${hostId} order by name`,
    db,
  );
}

/** Routes, each with the inventory host holding its next hop. */
export function routes(db: Db, o: string, hostId: string) {
  return rows(
    sql<{ destination: string; next_hop: string | null; next_hop_host_id: string | null; interface: string; metric: number | null; last_seen_at: Date }>`
      select r.destination::text as destination, host(r.next_hop) as next_hop, r.interface, r.metric, r.last_seen_at,
        (select a.host_id from host_addresses a where a.organisation_id = r.organisation_id and a.address = r.next_hop order by a.host_id limit 1) as next_hop_host_id
      from host_routes r where r.organisation_id = ${o} and r.host_id = ${hostId} order by r.destination, r.interface`,
    db,
  );
}

/** A chassis id PostgreSQL reads as a MAC (colon, dash, bare or Cisco dotted form), else null. */
const CHASSIS_MAC = sql`case when n.remote_chassis_id ~* '^([0-9a-f]{2}:){5}[0-9a-f]{2}$|^([0-9a-f]{2}-){5}[0-9a-f]{2}$|^[0-9a-f]{12}$|^[0-9a-f]{4}\\.[0-9a-f]{4}\\.[0-9a-f]{4}$' then n.remote_chassis_id::macaddr end`;

/**
 * The neighbour records of other hosts that name this host: by management address, by a chassis
 * id that is one of its MACs, or by a system name that is its hostname or FQDN.
 */
export function reportedOnPorts(db: Db, o: string, hostId: string) {
  return rows(
    sql<{ port: string | null; host_id: string; hostname: string | null; fqdn: string | null; address: string | null; local_interface: string; protocol: 'lldp' | 'cdp'; last_seen_at: Date; gone_at: Date | null }>`
      with me as materialized (select hostname, fqdn from hosts where organisation_id = ${o} and id = ${hostId}),
      my_addresses as materialized (select address from host_addresses where organisation_id = ${o} and host_id = ${hostId}),
      my_macs as materialized (
        select mac from host_interfaces where organisation_id = ${o} and host_id = ${hostId} and mac is not null
        union select mac from host_addresses where organisation_id = ${o} and host_id = ${hostId} and mac is not null
      )
      select n.remote_port_id as port, n.host_id, r.hostname, r.fqdn, n.local_interface, n.protocol, n.last_seen_at, r.gone_at,
        r.addresses[1] as address
      from host_neighbors n join hosts r on r.organisation_id = n.organisation_id and r.id = n.host_id
      where n.organisation_id = ${o} and n.host_id <> ${hostId}
        and (n.management_address in (select address from my_addresses)
          or ${CHASSIS_MAC} in (select mac from my_macs)
          or lower(n.remote_system_name) in (select lower(hostname) from me union select lower(fqdn) from me))`,
    db,
  );
}
