import { type Kysely, sql } from 'kysely';
import type { DB } from '../db/schema.js';
import { rollupMarks, windowFlows } from '../ingest/flow-rollups.js';
import { rfc3339 } from '../db/sql.js';

export function hostExists(db: Kysely<DB>, organisationId: string, id: string) {
  return db.selectFrom('hosts').select('id').where('organisation_id', '=', organisationId).where('id', '=', id).executeTakeFirst();
}

export function hostPorts(db: Kysely<DB>, organisationId: string, hostId: string) {
  return db
    .selectFrom('services')
    .select(['id', 'port', 'protocol', 'state', 'name', 'product', 'version'])
    .where('organisation_id', '=', organisationId)
    .where('host_id', '=', hostId)
    .where('gone_at', 'is', null)
    .orderBy('port')
    .orderBy('protocol')
    .execute();
}

export interface PeerRow {
  host_id: string | null;
  address: string;
  hostname: string | null;
  ports: number[];
  protocols: string[];
  bytes: number;
  packets: number;
  flows: number;
  last_seen_at: string;
}

/**
 * Flow peers of a host in a window, one row per peer address, busiest first. `direction` in:
 * callers (flows to one of the host's addresses); out: destinations (flows from one of them).
 * Read from the rollups per conversation and day or hour where the window is rolled up (their
 * (organisation, dst/src address, day/hour) indexes, one probe per address of the host) and from
 * the records elsewhere (the first partial hour, the last hour or so: a BRIN range on time), see
 * windowFlows. Each peer address is resolved to a host as `flows_resolved` does (the same address
 * resolves to the same host).
 */
export async function flowPeers(db: Kysely<DB>, organisationId: string, hostId: string, from: Date, direction: 'in' | 'out') {
  const [selfIp, peerIp] = direction === 'in' ? ['dst_ip', 'src_ip'] : ['src_ip', 'dst_ip'];
  const marks = await rollupMarks(db, organisationId);
  const own = sql`${sql.ref(selfIp)} in (select address from host_addresses where organisation_id = ${organisationId} and host_id = ${hostId})`;
  const r = await sql<PeerRow>`
    select pa.host_id, host(f.peer_ip) as address, h.hostname, f.ports, f.protocols, f.bytes, f.packets, f.flows, ${rfc3339('f.last_seen')} as last_seen_at
    from (
      select ${sql.ref(peerIp)} as peer_ip,
             array_agg(distinct dst_port order by dst_port) as ports, array_agg(distinct protocol order by protocol) as protocols,
             sum(bytes)::float8 as bytes, sum(packets)::float8 as packets, sum(flows)::int as flows, max(last_seen) as last_seen
      from (${windowFlows(organisationId, from, null, marks, own)}) w
      group by ${sql.ref(peerIp)}
    ) f
    left join lateral (select a.host_id from host_addresses a where a.organisation_id = ${organisationId} and a.address = f.peer_ip order by a.host_id limit 1) pa on true
    left join hosts h on h.organisation_id = ${organisationId} and h.id = pa.host_id
    order by f.bytes desc, f.peer_ip
    limit 1000`.execute(db);
  return r.rows;
}

export function neighbours(db: Kysely<DB>, organisationId: string, hostId: string) {
  return sql<{ local_interface: string; remote_chassis_id: string; remote_port_id: string | null; remote_system_name: string | null; management_address: string | null; protocol: string; host_id: string | null }>`
    select n.local_interface, n.remote_chassis_id, n.remote_port_id, n.remote_system_name, host(n.management_address) as management_address, n.protocol,
      (select a.host_id from host_addresses a where a.organisation_id = n.organisation_id and a.address = n.management_address order by a.host_id limit 1) as host_id
    from host_neighbors n where n.organisation_id = ${organisationId} and n.host_id = ${hostId}
    order by n.local_interface, n.remote_chassis_id`.execute(db);
}

/**
 * Whether the organisation has any flow record, and any neighbour record, at all. Records are
 * indexed by time only: an organisation with flows has a rollup row (flow_hours holds every
 * rolled hour's records, and is pruned with them) or records since its last rollup (a short BRIN range).
 */
export async function sources(db: Kysely<DB>, organisationId: string) {
  const r = await sql<{ flows: boolean; neighbours: boolean }>`
    select exists (select 1 from flow_rollups m where m.organisation_id = ${organisationId}
                   and (exists (select 1 from flow_hours where organisation_id = ${organisationId})
                        or exists (select 1 from flows where organisation_id = ${organisationId} and bucket_start >= m.hours_until))) as flows,
           exists (select 1 from host_neighbors where organisation_id = ${organisationId}) as neighbours`.execute(db);
  return r.rows[0]!;
}

/** The host's hostname and FQDN, when it exists. */
export function hostNames(db: Kysely<DB>, organisationId: string, hostId: string) {
  return db.selectFrom('hosts').select(['hostname', 'fqdn']).where('organisation_id', '=', organisationId).where('id', '=', hostId).executeTakeFirst();
}
