import { type Kysely, sql } from 'kysely';
import type { DB } from '../db/schema.js';

// What a host page shows of a host's other rows (its addresses, its MACs, how many services it
// has open) is stored on the host (migration 0038), so a page is one index range scan over `hosts`.
// The writers of those rows call `refreshHostSummaries` in their transaction with the hosts whose
// rows they changed: reconciliation (addresses, interfaces, services: the daemons' batches and the
// cloud syncs), a completed scan's absence marking, and host merges. It is an explicit call rather
// than a trigger because the writers already know which hosts changed (a rescan that changes
// nothing refreshes nothing, where a trigger would see every last-seen refresh), and because
// statement triggers with transition tables do not run on Citus-distributed tables (docs/citus.md).
// The same for what a certificates page shows of a certificate's other rows: its state (migration
// 0045), which the view certificate_states computes from the certificates of its endpoint and the
// services of its host; and for a service's exposure (migration 0046), which the view
// service_exposure computes from the service and the cloud resources of its host.

/** The stored columns, computed from scratch from the rows of host `h`. */
const computedSummary = (h: string) => {
  const host = sql.ref(h);
  return {
    addresses: sql<string[]>`array(select host(a.address) from host_addresses a where a.organisation_id = ${host}.organisation_id and a.host_id = ${host}.id order by a.address)`,
    macs: sql<string[]>`array(select distinct m.mac::text from (
        select mac from host_addresses a where a.organisation_id = ${host}.organisation_id and a.host_id = ${host}.id and a.mac is not null
        union all select mac from host_interfaces i where i.organisation_id = ${host}.organisation_id and i.host_id = ${host}.id and i.mac is not null
      ) m order by 1)`,
    openPortCount: sql<number>`(select count(*)::int from services s where s.organisation_id = ${host}.organisation_id and s.host_id = ${host}.id and s.state = 'open' and s.gone_at is null)`,
  };
};

/**
 * Recomputes the stored page columns of these hosts of the organisation from their rows; and for
 * them and the hosts of `dependentHostIds` (hosts whose certificates or cloud resources were
 * written), the stored state of their certificates and the exposure of their services; in the
 * caller's transaction, one statement for each (absent ids are skipped, an unchanged row is not
 * rewritten). Call it after the writes, with every host whose addresses, interface MACs or
 * services changed, and every host a certificate or a cloud resource was written, seen or marked
 * gone for (a host given needlessly costs one recomputation, nothing else).
 */
export async function refreshHostSummaries(db: Kysely<DB>, organisationId: string, hostIds: readonly string[], dependentHostIds: readonly string[] = []): Promise<void> {
  const ids = [...new Set(hostIds)].sort();
  const all = [...new Set([...ids, ...dependentHostIds])].sort();
  if (all.length === 0) return;
  // Locked first, in id order, in a statement of its own: the updates below then take their
  // snapshots after any other transaction refreshing the same hosts has committed, so they count
  // that transaction's rows too. (Within one statement a row lock waited for does not renew the
  // subqueries' snapshot: the later writer would store a summary without the earlier one's rows.)
  // NO KEY UPDATE, the lock the update takes anyway: a FOR UPDATE would also wait for the KEY SHARE
  // locks that both batches' inserts of addresses and services hold on their hosts (foreign keys),
  // each batch waiting for the other.
  // Each id in turn (sorted above) probes the primary key: `id = any(...) order by id` read the
  // organisation's hosts in key order, filtering by the ids, a scan growing with the inventory.
  await sql`select 1 from unnest(${all}::uuid[]) as v(id) cross join lateral (select 1 from hosts where organisation_id = ${organisationId} and id = v.id for no key update) h`.execute(db);
  if (ids.length > 0) {
    const c = computedSummary('h');
    await sql`
      update hosts t set addresses = v.addresses, macs = v.macs, open_port_count = v.open_port_count
      from (
        select h.id, ${c.addresses} as addresses, ${c.macs} as macs, ${c.openPortCount} as open_port_count
        from hosts h where h.organisation_id = ${organisationId} and h.id = any(${ids}::uuid[])
      ) v
      where t.organisation_id = ${organisationId} and t.id = v.id
        and (t.addresses, t.macs, t.open_port_count) is distinct from (v.addresses, v.macs, v.open_port_count)`.execute(db);
  }
  // The state as the view defines it, for the certificates of these hosts (their host index).
  await sql`
    update certificates t set state = v.state
    from certificate_states v
    where t.organisation_id = ${organisationId} and t.host_id = any(${all}::uuid[])
      and v.organisation_id = t.organisation_id and v.id = t.id and t.state <> v.state`.execute(db);
  // The exposure as the view defines it, for the services of these hosts that a cloud account
  // lists now or that were exposed (the view is asked only for those: a daemon's host has none).
  // A scalar subquery per service: joined, the planner hashed the view over every cloud resource
  // of the organisation for each batch.
  await sql`
    update services t set exposed_via = v.via
    from (
      select s.id, (select e.via from service_exposure e where e.organisation_id = s.organisation_id and e.service_id = s.id) as via
      from services s
      where s.organisation_id = ${organisationId} and s.host_id = any(${all}::uuid[])
        and (s.exposed_via is not null or exists (select 1 from cloud_resources c where c.organisation_id = s.organisation_id and c.host_id = s.host_id and c.gone_at is null))
    ) v
    where t.organisation_id = ${organisationId} and t.id = v.id and t.exposed_via is distinct from v.via`.execute(db);
}

/** What a new host's page shows, from the rows just written for it: addresses and MACs as written (any order, repeats allowed). */
export interface NewHostSummary {
  hostId: string;
  addresses: string[];
  macs: string[];
  openPortCount: number;
}

/** One host's list as an array literal: addresses and MACs hold no comma, brace, quote or space. */
const arrayLiteral = (xs: string[]) => `{${xs.join(',')}}`;

/**
 * Stores the page columns of hosts created in the caller's transaction, from the rows it wrote for
 * them (all they have: no other transaction sees a host before its creator commits), instead of
 * reading them back: PostgreSQL orders the addresses and MACs and removes repeats as the
 * computation from the rows does. One statement; about a tenth of refreshHostSummaries's cost.
 */
export async function storeNewHostSummaries(db: Kysely<DB>, organisationId: string, hosts: readonly NewHostSummary[]): Promise<void> {
  if (hosts.length === 0) return;
  await sql`
    update hosts t set
      addresses = array(select host(a) from unnest(v.a::inet[]) a group by a order by a),
      macs = array(select m::text from unnest(v.m::macaddr[]) m group by m order by 1),
      open_port_count = v.c
    from unnest(${hosts.map((h) => h.hostId)}::uuid[], ${hosts.map((h) => arrayLiteral(h.addresses))}::text[], ${hosts.map((h) => arrayLiteral(h.macs))}::text[], ${hosts.map((h) => h.openPortCount)}::int[]) as v(id, a, m, c)
    where t.organisation_id = ${organisationId} and t.id = v.id`.execute(db);
}
