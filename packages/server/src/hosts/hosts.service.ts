import type { HostDetail } from '@surveyor/contract';
import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.js';
import { AppError } from '../errors.js';
import { provenanceOf } from '../cloud/cloud.repo.js';
import * as repo from './hosts.repo.js';

/** Natural order of interface and port names: digits compare as numbers (Gi1/0/2 before Gi1/0/10). */
export const naturalOrder = new Intl.Collator('en', { numeric: true, sensitivity: 'base' }).compare;

const iso = (d: Date) => new Date(d).toISOString();
/** Interface names in natural order. */
const natural = (names: string[]) => [...names].sort(naturalOrder);

/** A host's interfaces, VLANs, LAG groups, routes and port map; 404 for a host the organisation does not have. */
export async function getHostDetail(db: Kysely<DB>, organisationId: string, hostId: string): Promise<HostDetail> {
  if (!(await repo.hostExists(db, organisationId, hostId))) throw new AppError('not_found', `No host ${hostId}.`);
  const [interfaces, vlans, lagGroups, routes, ports, cloud] = await Promise.all([
    repo.interfaces(db, organisationId, hostId),
    repo.vlans(db, organisationId, hostId),
    repo.lagGroups(db, organisationId, hostId),
    repo.routes(db, organisationId, hostId),
    repo.reportedOnPorts(db, organisationId, hostId),
    provenanceOf(db, organisationId, hostId),
  ]);
  return {
    hostId,
    interfaces: interfaces.sort((a, b) => naturalOrder(a.name, b.name)).map((i) => ({ name: i.name, mac: i.mac, addresses: i.addresses, lastSeenAt: iso(i.last_seen_at) })),
    vlans: vlans.map((v) => ({ vlanId: v.vlan_id, name: v.name, tagged: natural(v.tagged), untagged: natural(v.untagged), lastSeenAt: iso(v.last_seen_at) })),
    lagGroups: lagGroups.map((l) => ({ name: l.name, protocol: l.protocol, members: natural(l.members), lastSeenAt: iso(l.last_seen_at) })),
    routes: routes.map((r) => ({ destination: r.destination, nextHop: r.next_hop, nextHopHostId: r.next_hop_host_id, interface: r.interface || null, metric: r.metric, lastSeenAt: iso(r.last_seen_at) })),
    portMap: ports
      .sort((a, b) => (a.port === null ? 1 : b.port === null ? -1 : naturalOrder(a.port, b.port)) || naturalOrder(a.hostname ?? a.fqdn ?? a.host_id, b.hostname ?? b.fqdn ?? b.host_id))
      .map((p) => ({ port: p.port, hostId: p.host_id, hostname: p.hostname, fqdn: p.fqdn, address: p.address, localInterface: p.local_interface, protocol: p.protocol, lastSeenAt: iso(p.last_seen_at), goneAt: p.gone_at && iso(p.gone_at) })),
    cloud: cloud.map((c) => ({
      accountId: c.account_id, accountName: c.account_name, provider: c.provider, kind: c.kind, providerId: c.provider_id, name: c.name, state: c.state, location: c.location,
      labels: c.labels, details: c.data, publicAddresses: c.public_addresses, inbound: c.inbound as HostDetail['cloud'][number]['inbound'], ports: c.ports as HostDetail['cloud'][number]['ports'],
      firstListedAt: iso(c.first_seen_at), changedAt: iso(c.last_seen_at), goneAt: c.gone_at && iso(c.gone_at),
    })),
  };
}
