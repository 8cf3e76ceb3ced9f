import { type Kysely, sql } from 'kysely';
import type { DB } from '../db/schema.js';
import { rfc3339 } from '../db/sql.js';

/** A view's scope: a site, or (null) the organisation's hosts without a site. */
const inScope = (column: string, siteId: string | null) => sql`${sql.ref(column)} is not distinct from ${siteId}::uuid`;

export interface TopologyRow {
  id: string;
  site_id: string | null;
  kind: 'network' | 'application';
  status: 'pending' | 'ready' | 'stale' | 'failed';
  name: string;
  node_count: number;
  edge_count: number;
  built_at: string | null;
  failure_reason: string | null;
}

const topologyColumns = sql`id, site_id, kind, status, name, node_count, edge_count, ${rfc3339('built_at')} as built_at, failure_reason`;

/** Every site has a network view, and so do the hosts without a site (application views: rebuildDependencies). */
export async function ensureNetworkViews(db: Kysely<DB>, organisationId: string): Promise<void> {
  await sql`
    insert into topologies (organisation_id, site_id, kind, status, name)
    select ${organisationId}, site_id, 'network', 'pending', 'Network (' || name || ')'
    from (select s.id as site_id, s.name from sites s where s.organisation_id = ${organisationId} union all select null::uuid, 'no site') scopes
    on conflict (organisation_id, kind, coalesce(site_id, '00000000-0000-0000-0000-000000000000'::uuid)) do nothing`.execute(db);
}

export async function listTopologies(db: Kysely<DB>, organisationId: string): Promise<TopologyRow[]> {
  return (await sql<TopologyRow>`select ${topologyColumns} from topologies where organisation_id = ${organisationId} order by kind, seq`.execute(db)).rows;
}

export async function findTopology(db: Kysely<DB>, organisationId: string, id: string, lock = false): Promise<TopologyRow | undefined> {
  return (await sql<TopologyRow>`select ${topologyColumns} from topologies where organisation_id = ${organisationId} and id = ${id} ${lock ? sql`for update` : sql``}`.execute(db)).rows[0];
}

// --- What a network view is built from ------------------------------------------------------

export interface ScopeHost { id: string; hostname: string | null; fqdn: string | null; addresses: string[] }
export async function scopeHosts(db: Kysely<DB>, organisationId: string, siteId: string | null): Promise<ScopeHost[]> {
  const r = await sql<ScopeHost>`
    select h.id, h.hostname, h.fqdn,
      array(select host(a.address) from host_addresses a where a.organisation_id = h.organisation_id and a.host_id = h.id order by a.address) as addresses
    from hosts h where h.organisation_id = ${organisationId} and ${inScope('h.site_id', siteId)} order by h.id`.execute(db);
  return r.rows;
}

export interface VlanRow { host_id: string; vlan_id: number; name: string | null; tagged: string[]; untagged: string[] }
export async function scopeVlans(db: Kysely<DB>, organisationId: string, siteId: string | null): Promise<VlanRow[]> {
  return (await sql<VlanRow>`
    select v.host_id, v.vlan_id, v.name, v.tagged, v.untagged from host_vlans v
    join hosts h on h.organisation_id = v.organisation_id and h.id = v.host_id
    where v.organisation_id = ${organisationId} and ${inScope('h.site_id', siteId)} order by v.host_id, v.vlan_id`.execute(db)).rows;
}

export interface LagRow { host_id: string; name: string; protocol: string | null; members: string[] }
export async function scopeLags(db: Kysely<DB>, organisationId: string, siteId: string | null): Promise<LagRow[]> {
  return (await sql<LagRow>`
    select l.host_id, l.name, l.protocol, l.members from host_lag_groups l
    join hosts h on h.organisation_id = l.organisation_id and h.id = l.host_id
    where l.organisation_id = ${organisationId} and ${inScope('h.site_id', siteId)} order by l.host_id, l.name`.execute(db)).rows;
}

export interface NeighbourRow {
  host_id: string;
  local_interface: string;
  remote_chassis_id: string;
  remote_port_id: string | null;
  remote_system_name: string | null;
  management_address: string | null;
  protocol: string;
  /** The neighbour as an inventory host: by management address, else by a chassis id that is an interface's MAC. */
  remote_host_id: string | null;
}
export async function scopeNeighbours(db: Kysely<DB>, organisationId: string, siteId: string | null): Promise<NeighbourRow[]> {
  return (await sql<NeighbourRow>`
    select n.host_id, n.local_interface, n.remote_chassis_id, n.remote_port_id, n.remote_system_name, host(n.management_address) as management_address, n.protocol,
      coalesce(
        (select a.host_id from host_addresses a where a.organisation_id = n.organisation_id and a.address = n.management_address order by a.host_id limit 1),
        (select i.host_id from host_interfaces i where i.organisation_id = n.organisation_id
           and i.mac = case when n.remote_chassis_id ~* '^([0-9a-f]{2}[:-]){5}[0-9a-f]{2}$' then n.remote_chassis_id::macaddr end order by i.host_id limit 1)
      ) as remote_host_id
    from host_neighbors n join hosts h on h.organisation_id = n.organisation_id and h.id = n.host_id
    where n.organisation_id = ${organisationId} and ${inScope('h.site_id', siteId)}
    order by n.host_id, n.local_interface, n.remote_chassis_id`.execute(db)).rows;
}

export interface MembershipRow { host_id: string; address: string; network_id: string; cidr: string; network_name: string }
/** Each address of a scope host in the most specific inventory network containing it. */
export async function scopeMemberships(db: Kysely<DB>, organisationId: string, siteId: string | null): Promise<MembershipRow[]> {
  return (await sql<MembershipRow>`
    select distinct on (a.host_id, a.address) a.host_id, host(a.address) as address, nw.id as network_id, nw.cidr::text as cidr, nw.name as network_name
    from host_addresses a
    join hosts h on h.organisation_id = a.organisation_id and h.id = a.host_id
    join networks nw on nw.organisation_id = a.organisation_id and a.address <<= nw.cidr
    where a.organisation_id = ${organisationId} and ${inScope('h.site_id', siteId)}
    order by a.host_id, a.address, masklen(nw.cidr) desc, nw.id`.execute(db)).rows;
}

export interface RouteRow {
  host_id: string;
  destination: string;
  next_hop: string | null;
  interface: string;
  metric: number | null;
  network_id: string | null;
  network_cidr: string | null;
  network_name: string | null;
  next_hop_host_id: string | null;
}
export async function scopeRoutes(db: Kysely<DB>, organisationId: string, siteId: string | null): Promise<RouteRow[]> {
  return (await sql<RouteRow>`
    select r.host_id, r.destination::text as destination, host(r.next_hop) as next_hop, r.interface, r.metric,
      nw.id as network_id, nw.cidr::text as network_cidr, nw.name as network_name,
      (select a.host_id from host_addresses a where a.organisation_id = r.organisation_id and a.address = r.next_hop order by a.host_id limit 1) as next_hop_host_id
    from host_routes r
    join hosts h on h.organisation_id = r.organisation_id and h.id = r.host_id
    left join networks nw on nw.organisation_id = r.organisation_id and nw.cidr = r.destination
    where r.organisation_id = ${organisationId} and ${inScope('h.site_id', siteId)}
    order by r.host_id, r.destination, r.interface`.execute(db)).rows;
}

/** Labels of hosts (any site: a neighbour or next hop may sit elsewhere): hostname, FQDN, first address or id. */
export async function hostLabels(db: Kysely<DB>, organisationId: string, ids: string[]): Promise<Map<string, { label: string; addresses: string[] }>> {
  const r = await sql<{ id: string; label: string; addresses: string[] }>`
    select h.id, coalesce(h.hostname, h.fqdn, (select host(a.address) from host_addresses a where a.organisation_id = h.organisation_id and a.host_id = h.id order by a.address limit 1), h.id::text) as label,
      array(select host(a.address) from host_addresses a where a.organisation_id = h.organisation_id and a.host_id = h.id order by a.address) as addresses
    from hosts h where h.organisation_id = ${organisationId} and h.id = any(${[...new Set(ids)]}::uuid[])`.execute(db);
  return new Map(r.rows.map((x) => [x.id, { label: x.label, addresses: x.addresses }]));
}

// --- What an application view is built from -------------------------------------------------

export interface DependencyRow {
  src_host_id: string;
  dst_host_id: string;
  dst_service_id: string;
  service_name: string | null;
  port: number;
  protocol: string;
  bytes: number;
  flows: number;
  last_seen_at: string;
}
export async function scopeDependencies(db: Kysely<DB>, organisationId: string, siteId: string | null): Promise<DependencyRow[]> {
  return (await sql<DependencyRow>`
    select e.src_host_id, e.dst_host_id, e.dst_service_id, s.name as service_name, s.port, s.protocol, e.bytes::float8 as bytes, e.flows::float8 as flows, ${rfc3339('e.last_seen_at')} as last_seen_at
    from dependency_edges e join services s on s.organisation_id = e.organisation_id and s.id = e.dst_service_id
    where e.organisation_id = ${organisationId} and ${inScope('e.site_id', siteId)}
    order by e.src_host_id, e.dst_service_id`.execute(db)).rows;
}

// --- The stored view ------------------------------------------------------------------------

export interface NodeRow { node_id: string; kind: string; label: string; data: Record<string, unknown>; x: number; y: number }
export interface EdgeRow { edge_id: string; source: string; target: string; kind: string; label: string; data: Record<string, unknown> }

export async function viewNodes(db: Kysely<DB>, organisationId: string, topologyId: string): Promise<NodeRow[]> {
  return db.selectFrom('topology_nodes').select(['node_id', 'kind', 'label', 'data', 'x', 'y'])
    .where('organisation_id', '=', organisationId).where('topology_id', '=', topologyId).orderBy('node_id').execute();
}

export async function viewEdges(db: Kysely<DB>, organisationId: string, topologyId: string): Promise<EdgeRow[]> {
  return db.selectFrom('topology_edges').select(['edge_id', 'source', 'target', 'kind', 'label', 'data'])
    .where('organisation_id', '=', organisationId).where('topology_id', '=', topologyId).orderBy('edge_id').execute();
}

export async function savedPositions(db: Kysely<DB>, organisationId: string, topologyId: string): Promise<Map<string, { x: number; y: number }>> {
  const rows = await db.selectFrom('topology_nodes').select(['node_id', 'x', 'y']).where('organisation_id', '=', organisationId).where('topology_id', '=', topologyId).execute();
  return new Map(rows.map((r) => [r.node_id, { x: r.x, y: r.y }]));
}

/**
 * Replaces a view's nodes and edges (set-based: one statement each over unnest/jsonb, whatever the
 * size): nodes gone are deleted with their positions and edges; the others are upserted with
 * the positions given.
 */
export async function replaceView(
  db: Kysely<DB>,
  organisationId: string,
  topologyId: string,
  nodes: { id: string; kind: string; label: string; data: Record<string, unknown>; x: number; y: number }[],
  edges: { id: string; source: string; target: string; kind: string; label: string; data: Record<string, unknown> }[],
): Promise<void> {
  await sql`delete from topology_edges where organisation_id = ${organisationId} and topology_id = ${topologyId}`.execute(db);
  await sql`delete from topology_nodes where organisation_id = ${organisationId} and topology_id = ${topologyId} and not (node_id = any(${nodes.map((n) => n.id)}::text[]))`.execute(db);
  if (nodes.length) {
    await sql`
      insert into topology_nodes (organisation_id, topology_id, node_id, kind, label, data, x, y)
      select ${organisationId}, ${topologyId}, n.id, n.kind, n.label, n.data, n.x, n.y
      from jsonb_to_recordset(${JSON.stringify(nodes)}::jsonb) as n(id text, kind text, label text, data jsonb, x float8, y float8)
      on conflict (organisation_id, topology_id, node_id) do update set kind = excluded.kind, label = excluded.label, data = excluded.data, x = excluded.x, y = excluded.y`.execute(db);
  }
  if (edges.length) {
    await sql`
      insert into topology_edges (organisation_id, topology_id, edge_id, source, target, kind, label, data)
      select ${organisationId}, ${topologyId}, e.id, e.source, e.target, e.kind, e.label, e.data
      from jsonb_to_recordset(${JSON.stringify(edges)}::jsonb) as e(id text, source text, target text, kind text, label text, data jsonb)`.execute(db);
  }
}

export async function markBuilt(db: Kysely<DB>, organisationId: string, topologyId: string, counts: { nodes: number; edges: number }, at: Date): Promise<void> {
  await sql`update topologies set status = 'ready', failure_reason = null, node_count = ${counts.nodes}, edge_count = ${counts.edges}, built_at = ${at}, updated_at = now()
    where organisation_id = ${organisationId} and id = ${topologyId}`.execute(db);
}

export async function markFailed(db: Kysely<DB>, organisationId: string, topologyId: string, reason: string): Promise<void> {
  await sql`update topologies set status = 'failed', failure_reason = ${reason}, updated_at = now() where organisation_id = ${organisationId} and id = ${topologyId}`.execute(db);
}

export async function logTopologyChanges(db: Kysely<DB>, organisationId: string, ids: string[]): Promise<void> {
  if (!ids.length) return;
  await sql`insert into change_log (organisation_id, entity_type, entity_id, action)
    select ${organisationId}, 'topology', id, 'updated' from unnest(${ids}::uuid[]) as id`.execute(db);
}

/** Saves positions of existing nodes (the caller checked they exist); returns how many rows changed. */
export async function savePositions(db: Kysely<DB>, organisationId: string, topologyId: string, positions: { nodeId: string; x: number; y: number }[]): Promise<number> {
  const r = await sql`
    update topology_nodes n set x = p.x, y = p.y
    from jsonb_to_recordset(${JSON.stringify(positions)}::jsonb) as p("nodeId" text, x float8, y float8)
    where n.organisation_id = ${organisationId} and n.topology_id = ${topologyId} and n.node_id = p."nodeId"`.execute(db);
  return Number(r.numAffectedRows ?? 0);
}

export async function nodeIds(db: Kysely<DB>, organisationId: string, topologyId: string): Promise<Set<string>> {
  const rows = await db.selectFrom('topology_nodes').select('node_id').where('organisation_id', '=', organisationId).where('topology_id', '=', topologyId).execute();
  return new Set(rows.map((r) => r.node_id));
}

// --- Share links ----------------------------------------------------------------------------

export async function putShare(db: Kysely<DB>, organisationId: string, topologyId: string, tokenHash: string, expiresAt: Date, userId: string | null): Promise<void> {
  await sql`insert into topology_shares (organisation_id, topology_id, token_hash, expires_at, created_by_user_id)
    values (${organisationId}, ${topologyId}, ${tokenHash}, ${expiresAt}, ${userId})
    on conflict (organisation_id, topology_id) do update set token_hash = excluded.token_hash, expires_at = excluded.expires_at,
      created_by_user_id = excluded.created_by_user_id, created_at = now()`.execute(db);
}

export async function deleteShare(db: Kysely<DB>, organisationId: string, topologyId: string): Promise<number> {
  const r = await db.deleteFrom('topology_shares').where('organisation_id', '=', organisationId).where('topology_id', '=', topologyId).executeTakeFirst();
  return Number(r.numDeletedRows);
}

export async function activeShare(db: Kysely<DB>, organisationId: string, topologyId: string, now: Date): Promise<{ expires_at: string } | undefined> {
  return (await sql<{ expires_at: string }>`select ${rfc3339('expires_at')} as expires_at from topology_shares
    where organisation_id = ${organisationId} and topology_id = ${topologyId} and expires_at > ${now}`.execute(db)).rows[0];
}

/** The view a live share token opens: its organisation and topology, nothing else. */
export async function shareByToken(db: Kysely<DB>, tokenHash: string, now: Date): Promise<{ organisation_id: string; topology_id: string; expires_at: string } | undefined> {
  return (await sql<{ organisation_id: string; topology_id: string; expires_at: string }>`
    select organisation_id, topology_id, ${rfc3339('expires_at')} as expires_at from topology_shares where token_hash = ${tokenHash} and expires_at > ${now}`.execute(db)).rows[0];
}
