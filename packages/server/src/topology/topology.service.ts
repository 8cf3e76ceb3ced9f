import type { HostTopology } from '@surveyor/contract';
import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.js';
import { AppError } from '../errors.js';
import * as repo from './topology.repo.js';

const peer = (r: repo.PeerRow) => ({
  hostId: r.host_id,
  address: r.address,
  hostname: r.hostname,
  ports: r.ports.map(Number),
  protocols: r.protocols,
  bytes: Number(r.bytes),
  packets: Number(r.packets),
  flows: r.flows,
  lastSeenAt: r.last_seen_at,
});

/** Spec 2.4: ports from scans, callers and destinations from flows in the window, LLDP/CDP neighbours. */
export async function hostTopology(db: Kysely<DB>, organisationId: string, hostId: string, windowHours: number, now = new Date()): Promise<HostTopology> {
  if (!(await repo.hostExists(db, organisationId, hostId))) throw new AppError('not_found', `No host ${hostId}.`);
  const from = new Date(now.getTime() - windowHours * 3_600_000);
  const [ports, inbound, outbound, neighbours, sources] = [
    await repo.hostPorts(db, organisationId, hostId),
    await repo.flowPeers(db, organisationId, hostId, from, 'in'),
    await repo.flowPeers(db, organisationId, hostId, from, 'out'),
    (await repo.neighbours(db, organisationId, hostId)).rows,
    await repo.sources(db, organisationId),
  ];
  return {
    hostId,
    ports: ports.map((p) => ({ serviceId: p.id, port: p.port, protocol: p.protocol, state: p.state, name: p.name, product: p.product, version: p.version })),
    inbound: inbound.map(peer),
    outbound: outbound.map(peer),
    neighbours: neighbours.map((n) => ({
      localInterface: n.local_interface, remoteChassisId: n.remote_chassis_id, remotePortId: n.remote_port_id, remoteSystemName: n.remote_system_name,
      managementAddress: n.management_address, protocol: n.protocol, hostId: n.host_id,
    })),
    sources,
    window: { hours: windowHours, from: from.toISOString(), to: now.toISOString() },
  };
}

/** The host topology and the name to draw in its centre (hostname, else FQDN, else the id). */
export async function hostTopologyDrawing(db: Kysely<DB>, organisationId: string, hostId: string, windowHours: number): Promise<{ topology: HostTopology; label: string }> {
  const topology = await hostTopology(db, organisationId, hostId, windowHours);
  const names = await repo.hostNames(db, organisationId, hostId);
  return { topology, label: names?.hostname ?? names?.fqdn ?? hostId };
}
