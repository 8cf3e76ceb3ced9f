import { type Kysely, sql } from 'kysely';
import type { DB } from '../db/schema.js';
import { rollupMarks, windowFlows } from '../ingest/flow-rollups.js';
import { rfc3339 } from '../db/sql.js';

/** Flows older than this do not make application-topology edges. */
export const DEPENDENCY_WINDOW_HOURS = 24;

export interface DependencyTopology {
  topologyId: string;
  siteId: string | null;
  status: 'ready';
  nodeCount: number;
  edgeCount: number;
}

export interface DependencyBuild {
  windowHours: number;
  from: string;
  builtAt: string;
  edges: number;
  topologies: DependencyTopology[];
}

/**
 * Rebuilds the organisation's application topology (job topology.dependencies): one edge per
 * (calling host, called service) seen in the flows of the last DEPENDENCY_WINDOW_HOURS, resolved
 * as `flows_resolved` resolves them, with bytes, packets, flow count and last seen; then marks the
 * `application` topology of each site (and of hosts without a site) `ready` with its node and edge
 * counts. One transaction, serialised per organisation: a reader sees the old edges or the new.
 */
export async function rebuildDependencies(db: Kysely<DB>, organisationId: string, now: Date): Promise<DependencyBuild> {
  const from = new Date(now.getTime() - DEPENDENCY_WINDOW_HOURS * 3_600_000);
  return db.transaction().execute(async (trx) => {
    await sql`select pg_advisory_xact_lock(hashtext('surveyor.dependencies'), hashtext(${organisationId}))`.execute(trx);
    await sql`delete from dependency_edges where organisation_id = ${organisationId}`.execute(trx);
    const marks = await rollupMarks(trx, organisationId);
    // Aggregate the window's flows per conversation first (hourly rollups where rolled up), then resolve the (far fewer) aggregated
    // rows with one pass over the organisation's addresses and services (hash joins: a batch job
    // over many rows, not a per-row lookup), exactly as flows_resolved resolves them.
    await sql`set local enable_nestloop = off`.execute(trx);
    const inserted = await sql<{ n: number }>`
      with agg as (
        select src_ip, dst_ip, dst_port, case when protocol in ('tcp', 'udp', 'sctp') then protocol else 'tcp' end as protocol,
               sum(bytes) as bytes, sum(packets) as packets, sum(flows) as flows, max(last_seen) as last_seen
        from (${windowFlows(organisationId, from, now, marks, sql`true`)}) w
        group by 1, 2, 3, 4
      ), addrs as (
        select distinct on (address) address, host_id from host_addresses where organisation_id = ${organisationId} order by address, host_id
      ), called as materialized (
        -- Each service at each address of its host (the address resolving to that host): joined
        -- to the conversations on all three keys at once. Joined separately, the planner may pair
        -- conversations and services on (port, protocol) first: every conversation with every
        -- service on its port, a product of millions of rows at a few thousand hosts.
        select da.address, s.port, s.protocol, da.host_id, s.id
        from addrs da join services s on s.organisation_id = ${organisationId} and s.host_id = da.host_id
      ), resolved as (
        select sa.host_id as src_host_id, c.host_id as dst_host_id, c.id as dst_service_id, agg.bytes, agg.packets, agg.flows, agg.last_seen
        from agg
        join addrs sa on sa.address = agg.src_ip
        join called c on c.address = agg.dst_ip and c.port = agg.dst_port and c.protocol = agg.protocol
      ), e as (
        insert into dependency_edges (organisation_id, site_id, src_host_id, dst_host_id, dst_service_id, bytes, packets, flows, last_seen_at, built_at)
        select ${organisationId}, h.site_id, r.src_host_id, r.dst_host_id, r.dst_service_id, r.bytes, r.packets, r.flows, r.last_seen, ${now}
        from (
          select src_host_id, dst_service_id, min(dst_host_id::text)::uuid as dst_host_id, sum(bytes) as bytes, sum(packets) as packets, sum(flows) as flows, max(last_seen) as last_seen
          from resolved group by src_host_id, dst_service_id
        ) r
        join hosts h on h.organisation_id = ${organisationId} and h.id = r.dst_host_id
        returning 1
      )
      select count(*)::int as n from e`.execute(trx);
    await sql`set local enable_nestloop = on`.execute(trx);
    // Every site has an application topology, even an empty one; so do the hosts without a site.
    const topologies = await sql<{ id: string; site_id: string | null; node_count: number; edge_count: number }>`
      with scopes as (
        select s.id as site_id, s.name from sites s where s.organisation_id = ${organisationId}
        union all select null::uuid, 'no site'
      ), counts as (
        select sc.site_id, sc.name,
               (select count(*) from dependency_edges e where e.organisation_id = ${organisationId} and e.site_id is not distinct from sc.site_id)::int as edge_count,
               (select count(*) from (select src_host_id from dependency_edges e where e.organisation_id = ${organisationId} and e.site_id is not distinct from sc.site_id
                                      union select dst_host_id from dependency_edges e where e.organisation_id = ${organisationId} and e.site_id is not distinct from sc.site_id) n)::int as node_count
        from scopes sc
      )
      insert into topologies (organisation_id, site_id, kind, status, name, node_count, edge_count, built_at, updated_at)
      select ${organisationId}, site_id, 'application', 'ready', 'Application dependencies (' || name || ')', node_count, edge_count, ${now}, now() from counts
      on conflict (organisation_id, kind, coalesce(site_id, '00000000-0000-0000-0000-000000000000'::uuid)) do update set
        status = 'ready', node_count = excluded.node_count, edge_count = excluded.edge_count, built_at = excluded.built_at, updated_at = now()
      returning id, site_id, node_count, edge_count`.execute(trx);
    // The change log of these topologies is written once, by buildViews, which the job runs next.
    return {
      windowHours: DEPENDENCY_WINDOW_HOURS,
      from: from.toISOString(),
      builtAt: now.toISOString(),
      edges: inserted.rows[0]!.n,
      topologies: topologies.rows.map((t) => ({ topologyId: t.id, siteId: t.site_id, status: 'ready' as const, nodeCount: t.node_count, edgeCount: t.edge_count })),
    };
  });
}

/** The organisation's dependency edges (for the API response of a rebuild and for tests). */
export async function dependencyEdges(db: Kysely<DB>, organisationId: string) {
  const r = await sql<{ site_id: string | null; src_host_id: string; dst_host_id: string; dst_service_id: string; bytes: number; packets: number; flows: number; last_seen_at: string }>`
    select site_id, src_host_id, dst_host_id, dst_service_id, bytes, packets, flows, ${rfc3339('last_seen_at')} as last_seen_at
    from dependency_edges where organisation_id = ${organisationId} order by src_host_id, dst_service_id`.execute(db);
  return r.rows;
}

/**
 * A network added to (or changed in, or removed from) the inventory: its network views no longer
 * match the inventory, so the `ready` ones go `stale` in the caller's transaction. Those are the
 * views of the network's own site and of every site (or "no site") with a host that has an address
 * in one of `cidrs` or a route to exactly one of them: a network view places its scope's addresses
 * in the most specific network containing them (views.repo.ts scopeMemberships, scopeRoutes),
 * whatever the network's site. Application views do not show networks and are left alone.
 */
export async function markNetworkViewsStale(db: Kysely<DB>, organisationId: string, network: { siteId: string | null; cidrs: string[] }): Promise<void> {
  await sql`
    with sites as (
      select ${network.siteId}::uuid as site_id where ${network.siteId}::uuid is not null
      union
      select h.site_id from host_addresses a join hosts h on h.organisation_id = a.organisation_id and h.id = a.host_id
      where a.organisation_id = ${organisationId} and a.address <<= any(${network.cidrs}::cidr[])
      union
      select h.site_id from host_routes r join hosts h on h.organisation_id = r.organisation_id and h.id = r.host_id
      where r.organisation_id = ${organisationId} and r.destination = any(${network.cidrs}::cidr[])
    )
    update topologies t set status = 'stale', content_digest = null, updated_at = now()
    from sites s
    where t.organisation_id = ${organisationId} and t.kind = 'network' and t.status = 'ready' and t.site_id is not distinct from s.site_id`.execute(db);
}

/**
 * An inventory change makes the organisation's built topologies `stale` (they describe the
 * inventory as it was) for the site of every host it changed, directly or through one of its
 * services; the next build makes them `ready` again.
 */
export async function markTopologiesStale(db: Kysely<DB>, organisationId: string, changed: { hostIds: Iterable<string>; serviceIds: Iterable<string> }): Promise<void> {
  await sql`
    with sites as (
      select distinct site_id from hosts where organisation_id = ${organisationId} and id = any(${[...new Set(changed.hostIds)]}::uuid[])
      union
      select distinct h.site_id from services v join hosts h on h.organisation_id = v.organisation_id and h.id = v.host_id
      where v.organisation_id = ${organisationId} and v.id = any(${[...new Set(changed.serviceIds)]}::uuid[])
    )
    update topologies t set status = 'stale', content_digest = null, updated_at = now()
    from sites s
    where t.organisation_id = ${organisationId} and t.status = 'ready' and t.site_id is not distinct from s.site_id`.execute(db);
}
