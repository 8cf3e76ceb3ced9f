import { type Kysely, sql } from 'kysely';
import type { DB } from '../db/schema.js';
import { likeLiteral, rfc3339 } from '../db/sql.js';

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
  group_by: 'subnet' | 'vlan' | 'service';
  group_count: number;
  facets: { vlans: { id: number; name: string | null }[]; services: string[] };
}

/**
 * A view's name from its site's current name (a renamed site shows at once, no rebuild needed):
 * `Network (<site>)` or `Application dependencies (<site>)`; `no site` for the hosts without one.
 * `t` is the topologies row.
 */
export const topologyName = (t: string) => sql<string>`(case ${sql.ref(`${t}.kind`)} when 'network' then 'Network (' else 'Application dependencies (' end
  || coalesce((select s.name from sites s where s.organisation_id = ${sql.ref(`${t}.organisation_id`)} and s.id = ${sql.ref(`${t}.site_id`)}), 'no site') || ')')`;

const topologyColumns = sql`t.id, t.site_id, t.kind, t.status, ${topologyName('t')} as name, t.node_count, t.edge_count, ${rfc3339('t.built_at')} as built_at, t.failure_reason,
  t.group_by, t.group_count, t.facets`;

/** Every site has a network view, and so do the hosts without a site (application views: rebuildDependencies). */
export async function ensureNetworkViews(db: Kysely<DB>, organisationId: string): Promise<void> {
  await sql`
    insert into topologies (organisation_id, site_id, kind, status, name)
    select ${organisationId}, site_id, 'network', 'pending', 'Network (' || name || ')'
    from (select s.id as site_id, s.name from sites s where s.organisation_id = ${organisationId} union all select null::uuid, 'no site') scopes
    on conflict (organisation_id, kind, coalesce(site_id, '00000000-0000-0000-0000-000000000000'::uuid)) do nothing`.execute(db);
}

export async function listTopologies(db: Kysely<DB>, organisationId: string): Promise<TopologyRow[]> {
  return (await sql<TopologyRow>`select ${topologyColumns} from topologies t where t.organisation_id = ${organisationId} order by t.kind, t.seq`.execute(db)).rows;
}

export async function findTopology(db: Kysely<DB>, organisationId: string, id: string, lock = false): Promise<TopologyRow | undefined> {
  return (await sql<TopologyRow>`select ${topologyColumns} from topologies t where t.organisation_id = ${organisationId} and t.id = ${id} ${lock ? sql`for update of t` : sql``}`.execute(db)).rows[0];
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

/** A host of an application view: its label, addresses, the services it is called on and the one called most (by flows). */
export interface ApplicationHostRow { id: string; label: string; addresses: string[]; services: string[]; called_most: string | null }

/** How a called service is named in an application view: its name, else port/protocol. */
const serviceName = (s: string) => sql`coalesce(${sql.ref(`${s}.name`)}, ${sql.ref(`${s}.port`)} || '/' || ${sql.ref(`${s}.protocol`)})`;

/** The hosts of a scope's dependency edges (callers and called), aggregated in the database. */
export async function applicationHosts(db: Kysely<DB>, organisationId: string, siteId: string | null): Promise<ApplicationHostRow[]> {
  return (await sql<ApplicationHostRow>`
    with d as (
      select e.src_host_id, e.dst_host_id, e.dst_service_id, e.flows from dependency_edges e
      where e.organisation_id = ${organisationId} and ${inScope('e.site_id', siteId)}
    ), ids as (
      select src_host_id as id from d union select dst_host_id from d
    ), offered as (
      select d.dst_host_id as id, ${serviceName('s')} as service, sum(d.flows) as flows
      from d join services s on s.organisation_id = ${organisationId} and s.id = d.dst_service_id group by 1, 2
    )
    select h.id,
      coalesce(h.hostname, h.fqdn, (select host(a.address) from host_addresses a where a.organisation_id = h.organisation_id and a.host_id = h.id order by a.address limit 1), h.id::text) as label,
      array(select host(a.address) from host_addresses a where a.organisation_id = h.organisation_id and a.host_id = h.id order by a.address) as addresses,
      array(select o.service from offered o where o.id = h.id order by o.service) as services,
      (select o.service from offered o where o.id = h.id order by o.flows desc, o.service limit 1) as called_most
    from ids join hosts h on h.organisation_id = ${organisationId} and h.id = ids.id
    order by h.id`.execute(db)).rows;
}

/**
 * A scope's dependency edges stored as the view's edges, in the database (never held in the
 * process, whatever their number): one `dep:<calling host>|<service>` edge per dependency edge,
 * labelled with the service, with the groups of its ends read from the view's nodes (stored first).
 */
export async function storeDependencyEdges(db: Kysely<DB>, organisationId: string, topologyId: string, siteId: string | null): Promise<number> {
  // The view's nodes were written in this transaction: the planner's statistics do not know them
  // (a first build: none at all) and would pair each edge with every node (a nested loop, hours at
  // 200,000 edges). A batch over many rows: hash joins (the caller's transaction resets it).
  await sql`set local enable_nestloop = off`.execute(db);
  const r = await sql`
    insert into topology_edges (organisation_id, topology_id, edge_id, source, target, kind, label, data, source_group, target_group)
    select ${organisationId}, ${topologyId}, 'dep:' || e.src_host_id || '|' || e.dst_service_id, ns.node_id, nt.node_id, 'dependency',
      coalesce(s.name || ' ', '') || s.port || '/' || s.protocol,
      jsonb_build_object('serviceId', s.id, 'service', ${serviceName('s')}, 'port', s.port, 'protocol', s.protocol,
        'bytes', e.bytes::float8, 'flows', e.flows::float8, 'lastSeenAt', ${rfc3339('e.last_seen_at')}),
      ns.group_id, nt.group_id
    from dependency_edges e
    join services s on s.organisation_id = e.organisation_id and s.id = e.dst_service_id
    join topology_nodes ns on ns.organisation_id = e.organisation_id and ns.topology_id = ${topologyId} and ns.node_id = 'host:' || e.src_host_id
    join topology_nodes nt on nt.organisation_id = e.organisation_id and nt.topology_id = ${topologyId} and nt.node_id = 'host:' || e.dst_host_id
    where e.organisation_id = ${organisationId} and ${inScope('e.site_id', siteId)}`.execute(db);
  await sql`set local enable_nestloop = on`.execute(db);
  return Number(r.numAffectedRows ?? 0);
}

/** The distinct (drawn source, drawn target) pairs of a view with every group closed: what the top level is laid out by. */
export async function topLevelPairs(db: Kysely<DB>, organisationId: string, topologyId: string): Promise<{ id: string; source: string; target: string }[]> {
  return (await sql<{ id: string; source: string; target: string }>`
    select p.source || '|' || p.target as id, p.source, p.target from (
      select distinct coalesce(source_group, source) as source, coalesce(target_group, target) as target
      from topology_edges where organisation_id = ${organisationId} and topology_id = ${topologyId}
    ) p where p.source <> p.target order by 1`.execute(db)).rows;
}

// --- The stored view ------------------------------------------------------------------------

export interface HostPlaceRow { host_id: string; address: string | null; network_id: string | null; network_name: string | null; cidr: string | null; device_type: string | null; serves: boolean }
/**
 * Each host's first address (IPv4 first) and the most specific inventory network holding it (the
 * subnet groups), its device type and whether it offers a service (the role groups).
 */
export async function hostPlaces(db: Kysely<DB>, organisationId: string, hostIds: string[]): Promise<HostPlaceRow[]> {
  if (!hostIds.length) return [];
  return (await sql<HostPlaceRow>`
    select h.id as host_id, host(fa.address) as address, nw.id as network_id, nw.name as network_name, nw.cidr::text as cidr,
      hr.device_type, exists (select 1 from services v where v.organisation_id = ${organisationId} and v.host_id = h.id and v.state = 'open' and v.gone_at is null) as serves
    from unnest(${hostIds}::uuid[]) as h(id)
    join hosts hr on hr.organisation_id = ${organisationId} and hr.id = h.id
    left join lateral (select a.address from host_addresses a where a.organisation_id = ${organisationId} and a.host_id = h.id order by a.address limit 1) fa on true
    left join lateral (select n.id, n.name, n.cidr from networks n where n.organisation_id = ${organisationId} and fa.address <<= n.cidr order by masklen(n.cidr) desc, n.id limit 1) nw on true`.execute(db)).rows;
}

/** A stored node as drawn: positions absolute for top-level nodes, relative to the group for members. */
export interface NodeRow {
  node_id: string;
  kind: string;
  label: string;
  data: Record<string, unknown>;
  x: number;
  y: number;
  group_id: string | null;
  /** Current names of what the node stands for (null when it is gone or not a host/network). */
  hostname: string | null;
  fqdn: string | null;
  network_name: string | null;
  network_cidr: string | null;
}

const nodeColumns = sql`n.node_id, n.kind, n.label, n.data, n.x, n.y, n.group_id, h.hostname, h.fqdn, nw.name as network_name, nw.cidr::text as network_cidr`;
const nodeJoins = sql`
  left join hosts h on n.kind = 'host' and h.organisation_id = n.organisation_id and h.id = n.ref_id
  left join networks nw on n.kind in ('network', 'group') and nw.organisation_id = n.organisation_id and nw.id = n.ref_id`;

/** The top-level nodes and groups of a view (`top`), or the members of the groups in `open`. */
export async function visibleNodes(db: Kysely<DB>, organisationId: string, topologyId: string, which: { top: boolean; open: string[] }): Promise<NodeRow[]> {
  return (await sql<NodeRow>`
    select ${nodeColumns} from topology_nodes n ${nodeJoins}
    where n.organisation_id = ${organisationId} and n.topology_id = ${topologyId} and ${which.top ? sql`n.group_id is null` : sql`n.group_id = any(${which.open}::text[])`}
    order by n.node_id`.execute(db)).rows;
}

/** Folded edges: one per (drawn source, drawn target, kind); `edge` is the edge itself when it stands alone. */
export interface FoldedEdgeRow {
  source: string;
  target: string;
  kind: string;
  edges: number;
  edge_id: string;
  label: string | null;
  data: Record<string, unknown> | null;
  bytes: number;
  flows: number;
  ports: string[] | null;
  vlans: unknown[] | null;
}

/**
 * The edges of a view as drawn with the groups in `open` open: an end inside a closed group is
 * drawn at the group (an address's edge to a network always is: the group frame says where its
 * members are); edges inside one closed group are not drawn. Filtered by VLAN or service.
 */
export async function foldedEdges(
  db: Kysely<DB>, organisationId: string, topologyId: string, open: string[], filter: { vlan: number | null; service: string | null },
): Promise<FoldedEdgeRow[]> {
  return (await sql<FoldedEdgeRow>`
    with e as (
      select e.kind, e.edge_id, e.label, e.data,
        case when e.source_group is null or (e.kind <> 'subnet' and e.source_group = any(${open}::text[])) then e.source else e.source_group end as s,
        case when e.target_group is null or (e.kind <> 'subnet' and e.target_group = any(${open}::text[])) then e.target else e.target_group end as t
      from topology_edges e
      where e.organisation_id = ${organisationId} and e.topology_id = ${topologyId}
        ${filter.vlan !== null ? sql`and e.data->'vlans' @> ${JSON.stringify([filter.vlan])}::jsonb` : sql``}
        ${filter.service !== null ? sql`and e.data->>'service' = ${filter.service}` : sql``}
    ), by_port as (
      select s, t, kind, e.data->>'port' as port, count(*)::int as n, min(edge_id) as edge_id, min(label) as label, (array_agg(data))[1] as data,
        sum(coalesce((data->>'bytes')::float8, 0)) as bytes, sum(coalesce((data->>'flows')::float8, 0)) as flows,
        case when kind = 'link' then jsonb_agg(data->'vlans') end as vlans
      from e where s <> t group by s, t, kind, e.data->>'port'
    )
    select s as source, t as target, kind, sum(n)::int as edges, min(edge_id) as edge_id,
      case when sum(n) = 1 then min(label) end as label, case when sum(n) = 1 then (array_agg(data))[1] end as data,
      sum(bytes)::float8 as bytes, sum(flows)::float8 as flows,
      (array_agg(port order by bytes desc, port) filter (where port is not null))[1:10] as ports,
      case when kind = 'link' then jsonb_agg(vlans) end as vlans
    from by_port group by s, t, kind order by s, t, kind`.execute(db)).rows;
}

/** Groups holding a member that carries VLAN `vlan` (the VLAN filter keeps them). */
export async function groupsCarryingVlan(db: Kysely<DB>, organisationId: string, topologyId: string, vlan: number): Promise<Set<string>> {
  const r = await sql<{ group_id: string }>`
    select distinct group_id from topology_nodes where organisation_id = ${organisationId} and topology_id = ${topologyId} and group_id is not null and data->'vlans' @> ${JSON.stringify([vlan])}::jsonb`.execute(db);
  return new Set(r.rows.map((x) => x.group_id));
}

/** Current names of services (the labels of dependency edges). */
export async function serviceNames(db: Kysely<DB>, organisationId: string, ids: string[]): Promise<Map<string, string | null>> {
  if (!ids.length) return new Map();
  const r = await sql<{ id: string; name: string | null }>`select id, name from services where organisation_id = ${organisationId} and id = any(${[...new Set(ids)]}::uuid[])`.execute(db);
  return new Map(r.rows.map((x) => [x.id, x.name]));
}

export interface SearchRow { node_id: string; kind: string; group_id: string | null; label: string; hostname: string | null; fqdn: string | null; addresses: string[]; matched: string; rank: number }
/** Nodes of a view matching `q`: by name (substring), address (prefix) or service (name or product prefix). */
export async function searchNodes(db: Kysely<DB>, organisationId: string, topologyId: string, q: string, limit: number): Promise<SearchRow[]> {
  const contains = `%${likeLiteral(q)}%`;
  const prefix = `${likeLiteral(q)}%`;
  return (await sql<SearchRow>`
    with m as (
      select n.node_id, n.kind, n.group_id, n.label, h.hostname, h.fqdn, n.ref_id,
        case
          when coalesce(h.hostname, '') ilike ${contains} or coalesce(h.fqdn, '') ilike ${contains} or (h.id is null and n.label ilike ${contains}) then 0
          when exists (select 1 from host_addresses a where a.organisation_id = n.organisation_id and a.host_id = n.ref_id and host(a.address) like ${prefix}) then 1
          when exists (select 1 from services v where v.organisation_id = n.organisation_id and v.host_id = n.ref_id and (v.name ilike ${prefix} or v.product ilike ${prefix})) then 2
        end as rank
      from topology_nodes n
      left join hosts h on n.kind = 'host' and h.organisation_id = n.organisation_id and h.id = n.ref_id
      where n.organisation_id = ${organisationId} and n.topology_id = ${topologyId} and n.kind <> 'group'
    )
    select m.node_id, m.kind, m.group_id, m.label, m.hostname, m.fqdn, m.rank,
      case m.rank when 0 then 'name' when 1 then 'address' else 'service' end as matched,
      coalesce(array(select host(a.address) from host_addresses a where a.organisation_id = ${organisationId} and a.host_id = m.ref_id order by a.address), '{}') as addresses
    from m where m.rank is not null order by m.rank, coalesce(m.hostname, m.fqdn, m.label), m.node_id limit ${limit}`.execute(db)).rows;
}

export async function setGroupBy(db: Kysely<DB>, organisationId: string, topologyId: string, groupBy: string): Promise<void> {
  await sql`update topologies set group_by = ${groupBy}, updated_at = now() where organisation_id = ${organisationId} and id = ${topologyId}`.execute(db);
}

/** Every node's stored position and group (a member's relative to it). */
export async function savedPositions(db: Kysely<DB>, organisationId: string, topologyId: string): Promise<Map<string, { x: number; y: number; group: string | null }>> {
  const rows = await db.selectFrom('topology_nodes').select(['node_id', 'x', 'y', 'group_id']).where('organisation_id', '=', organisationId).where('topology_id', '=', topologyId).execute();
  return new Map(rows.map((r) => [r.node_id, { x: r.x, y: r.y, group: r.group_id }]));
}

export interface StoredNode { id: string; kind: string; label: string; data: Record<string, unknown>; x: number; y: number; group: string | null; refId: string | null }
export interface StoredEdge { id: string; source: string; target: string; kind: string; label: string; data: Record<string, unknown>; sourceGroup: string | null; targetGroup: string | null }

const CHUNK = 5000;
const chunks = <T>(xs: T[]) => Array.from({ length: Math.ceil(xs.length / CHUNK) }, (_, i) => xs.slice(i * CHUNK, (i + 1) * CHUNK));

/**
 * Replaces a view's nodes and edges, set-based in chunks of CHUNK rows (bounded memory whatever
 * the size): every edge goes, nodes gone are deleted, the others upserted with their positions.
 * An edge is stored with the groups of its ends (`groupOf`: member node id → its group).
 */
export async function replaceView(
  db: Kysely<DB>, organisationId: string, topologyId: string, nodes: StoredNode[],
  edges: Omit<StoredEdge, 'sourceGroup' | 'targetGroup'>[], groupOf: ReadonlyMap<string, string>,
): Promise<void> {
  await sql`delete from topology_edges where organisation_id = ${organisationId} and topology_id = ${topologyId}`.execute(db);
  // NOT IN over a subquery: one hashed set, not the whole array compared with every row.
  await sql`delete from topology_nodes where organisation_id = ${organisationId} and topology_id = ${topologyId}
    and node_id not in (select unnest(${nodes.map((n) => n.id)}::text[]))`.execute(db);
  for (const part of chunks(nodes)) {
    await sql`
      insert into topology_nodes (organisation_id, topology_id, node_id, kind, label, data, x, y, group_id, ref_id)
      select ${organisationId}, ${topologyId}, n.id, n.kind, n.label, n.data, n.x, n.y, n.group, n."refId"
      from jsonb_to_recordset(${JSON.stringify(part)}::jsonb) as n(id text, kind text, label text, data jsonb, x float8, y float8, "group" text, "refId" uuid)
      on conflict (organisation_id, topology_id, node_id) do update set kind = excluded.kind, label = excluded.label, data = excluded.data, x = excluded.x, y = excluded.y,
        group_id = excluded.group_id, ref_id = excluded.ref_id`.execute(db);
  }
  for (const plain of chunks(edges)) {
    // Each edge with the groups of its ends, a chunk at a time (not a second copy of every edge).
    const part: StoredEdge[] = plain.map((e) => ({ ...e, sourceGroup: groupOf.get(e.source) ?? null, targetGroup: groupOf.get(e.target) ?? null }));
    await sql`
      insert into topology_edges (organisation_id, topology_id, edge_id, source, target, kind, label, data, source_group, target_group)
      select ${organisationId}, ${topologyId}, e.id, e.source, e.target, e.kind, e.label, e.data, e."sourceGroup", e."targetGroup"
      from jsonb_to_recordset(${JSON.stringify(part)}::jsonb) as e(id text, source text, target text, kind text, label text, data jsonb, "sourceGroup" text, "targetGroup" text)`.execute(db);
  }
}

export async function markBuilt(
  db: Kysely<DB>, organisationId: string, topologyId: string,
  counts: { nodes: number; edges: number; groups: number; facets: TopologyRow['facets'] }, at: Date, digest: string,
): Promise<boolean> {
  const r = await sql<{ changed: boolean }>`
    update topologies t set status = 'ready', failure_reason = null, node_count = ${counts.nodes}, edge_count = ${counts.edges}, group_count = ${counts.groups},
      facets = ${JSON.stringify(counts.facets)}::jsonb, built_at = ${at}, updated_at = now(), content_digest = ${digest}
    from (select content_digest from topologies where organisation_id = ${organisationId} and id = ${topologyId}) before
    where t.organisation_id = ${organisationId} and t.id = ${topologyId}
    returning before.content_digest is distinct from ${digest} as changed`.execute(db);
  return r.rows[0]?.changed ?? false;
}

export async function markFailed(db: Kysely<DB>, organisationId: string, topologyId: string, reason: string): Promise<void> {
  await sql`update topologies set status = 'failed', failure_reason = ${reason}, content_digest = null, updated_at = now() where organisation_id = ${organisationId} and id = ${topologyId}`.execute(db);
}

export async function logTopologyChanges(db: Kysely<DB>, organisationId: string, ids: string[]): Promise<void> {
  if (!ids.length) return;
  await sql`insert into change_log (organisation_id, entity_type, entity_id, action)
    select ${organisationId}, 'topology', id, 'updated' from unnest(${ids}::uuid[]) as id`.execute(db);
}

/** Saves positions of existing nodes (the caller checked they exist; members' relative); returns how many rows changed. */
export async function savePositions(db: Kysely<DB>, organisationId: string, topologyId: string, positions: { nodeId: string; x: number; y: number }[]): Promise<number> {
  const r = await sql`
    update topology_nodes n set x = p.x, y = p.y
    from jsonb_to_recordset(${JSON.stringify(positions)}::jsonb) as p("nodeId" text, x float8, y float8)
    where n.organisation_id = ${organisationId} and n.topology_id = ${topologyId} and n.node_id = p."nodeId"`.execute(db);
  return Number(r.numAffectedRows ?? 0);
}

/** The nodes named (of this view), each with its group and that group's position (to store a member relative to it). */
export async function nodesNamed(db: Kysely<DB>, organisationId: string, topologyId: string, ids: string[]): Promise<Map<string, { group: string | null; groupX: number; groupY: number }>> {
  const r = await sql<{ node_id: string; group_id: string | null; gx: number | null; gy: number | null }>`
    select n.node_id, n.group_id, g.x as gx, g.y as gy from topology_nodes n
    left join topology_nodes g on g.organisation_id = n.organisation_id and g.topology_id = n.topology_id and g.node_id = n.group_id
    where n.organisation_id = ${organisationId} and n.topology_id = ${topologyId} and n.node_id = any(${ids}::text[])`.execute(db);
  return new Map(r.rows.map((x) => [x.node_id, { group: x.group_id, groupX: x.gx ?? 0, groupY: x.gy ?? 0 }]));
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
