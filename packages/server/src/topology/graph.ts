import { netLabel } from './groups.js';
import type * as repo from './views.repo.js';

export interface GraphNode {
  id: string;
  kind: 'host' | 'device' | 'network' | 'group';
  label: string;
  data: Record<string, unknown>;
  /** The host or network the node stands for: its current name is read through it. */
  refId?: string | null;
}
export interface GraphEdge { id: string; source: string; target: string; kind: 'link' | 'subnet' | 'route' | 'dependency'; label: string; data: Record<string, unknown> }
export interface Graph { nodes: GraphNode[]; edges: GraphEdge[] }

/** Stable node ids: derived from what the node stands for, never from a build. */
export const hostNode = (hostId: string) => `host:${hostId}`;
export const deviceNode = (chassisId: string) => `device:${chassisId}`;
export const networkNode = (networkId: string) => `network:${networkId}`;

const sortedUnique = <T>(xs: Iterable<T>) => [...new Set(xs)].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));

export interface NetworkInputs {
  hosts: repo.ScopeHost[];
  vlans: repo.VlanRow[];
  lags: repo.LagRow[];
  neighbours: repo.NeighbourRow[];
  memberships: repo.MembershipRow[];
  routes: repo.RouteRow[];
  /** Labels of hosts outside the scope that a neighbour or next hop names. */
  outside: Map<string, { label: string; addresses: string[] }>;
}

const hostLabel = (h: { hostname: string | null; fqdn: string | null; addresses: string[]; id: string }) => h.hostname ?? h.fqdn ?? h.addresses[0] ?? h.id;

/**
 * The layer 2/3 view of a scope: its hosts; LLDP/CDP links between them and to neighbours the
 * inventory does not hold (devices, by chassis id), one edge per LAG when the interfaces are
 * aggregated, with the VLANs the interfaces carry; each address in the inventory network that
 * holds it; routes to a known network or through a known next hop.
 */
export function networkGraph(input: NetworkInputs): Graph {
  const nodes = new Map<string, GraphNode>();
  const edges = new Map<string, GraphEdge>();
  const vlansOf = new Map<string, repo.VlanRow[]>();
  for (const v of input.vlans) vlansOf.set(v.host_id, [...(vlansOf.get(v.host_id) ?? []), v]);
  const lagOf = new Map<string, repo.LagRow>(); // `${hostId}#${interface}` → its LAG
  for (const l of input.lags) for (const m of l.members) lagOf.set(`${l.host_id}#${m}`, l);

  for (const h of input.hosts) {
    const vlans = (vlansOf.get(h.id) ?? []).map((v) => v.vlan_id);
    nodes.set(hostNode(h.id), { id: hostNode(h.id), kind: 'host', label: hostLabel(h), refId: h.id, data: { hostId: h.id, addresses: h.addresses, vlans } });
  }
  const ensureHost = (hostId: string) => {
    const id = hostNode(hostId);
    if (!nodes.has(id)) {
      const o = input.outside.get(hostId);
      nodes.set(id, { id, kind: 'host', label: o?.label ?? hostId, refId: hostId, data: { hostId, addresses: o?.addresses ?? [], vlans: [], outsideScope: true } });
    }
    return id;
  };

  // VLANs an interface (or the LAG it belongs to, or a LAG's members) carries on a host.
  const interfaceVlans = (hostId: string, iface: string, lag: repo.LagRow | undefined) => {
    const names = new Set([iface, ...(lag ? [lag.name, ...lag.members] : [])]);
    return sortedUnique((vlansOf.get(hostId) ?? []).filter((v) => [...v.tagged, ...v.untagged].some((i) => names.has(i))).map((v) => v.vlan_id));
  };

  for (const n of input.neighbours) {
    const local = hostNode(n.host_id);
    const remote = n.remote_host_id ? ensureHost(n.remote_host_id) : deviceNode(n.remote_chassis_id);
    if (!n.remote_host_id && !nodes.has(remote)) {
      nodes.set(remote, {
        id: remote, kind: 'device', label: n.remote_system_name ?? n.remote_chassis_id,
        data: { chassisId: n.remote_chassis_id, systemName: n.remote_system_name, managementAddress: n.management_address, vlans: [] },
      });
    }
    if (remote === local) continue;
    const localLag = lagOf.get(`${n.host_id}#${n.local_interface}`);
    const remoteLag = n.remote_host_id && n.remote_port_id ? lagOf.get(`${n.remote_host_id}#${n.remote_port_id}`) : undefined;
    // Endpoints: the LAG when the interface is a member; the whole node when only the other side
    // is known to aggregate (its members all lead there); else the interface. Both sides reporting
    // the same link (each its own LLDP view) give the same id, and so one edge.
    const aggregated = !!(localLag || remoteLag);
    const a = `${local}#${localLag?.name ?? (aggregated ? '' : n.local_interface)}`;
    const b = `${remote}#${remoteLag?.name ?? (aggregated ? '' : (n.remote_port_id ?? ''))}`;
    const [first, second] = [a, b].sort() as [string, string];
    const id = `link:${first}|${second}`;
    const vlans = interfaceVlans(n.host_id, n.local_interface, localLag);
    const prev = edges.get(id);
    const members = sortedUnique([...((prev?.data.members as string[] | undefined) ?? []), ...(localLag ? [n.local_interface] : [])]);
    const protocols = sortedUnique([...((prev?.data.protocols as string[] | undefined) ?? []), n.protocol]);
    const allVlans = sortedUnique([...((prev?.data.vlans as number[] | undefined) ?? []), ...vlans]);
    const lag = localLag?.name ?? (prev?.data.lag as string | null | undefined) ?? remoteLag?.name ?? null;
    const end = (x: string) => x.slice(x.lastIndexOf('#') + 1);
    const source = first.slice(0, first.lastIndexOf('#'));
    const target = second.slice(0, second.lastIndexOf('#'));
    edges.set(id, {
      id, source, target, kind: 'link',
      label: [lag ? `LAG ${lag}` : `${end(first)} – ${end(second)}`, allVlans.length ? `VLAN ${allVlans.join(',')}` : ''].filter(Boolean).join(' · '),
      data: { protocols, lag, members, vlans: allVlans, interfaces: { [source]: end(first), [target]: end(second) } },
    });
  }

  for (const m of input.memberships) {
    const net = networkNode(m.network_id);
    if (!nodes.has(net)) nodes.set(net, { id: net, kind: 'network', label: netLabel(m.network_name, m.cidr), refId: m.network_id, data: { networkId: m.network_id, cidr: m.cidr, vlans: [] } });
    const id = `subnet:${hostNode(m.host_id)}|${net}`;
    const prev = edges.get(id);
    const addresses = sortedUnique([...((prev?.data.addresses as string[] | undefined) ?? []), m.address]);
    edges.set(id, { id, source: hostNode(m.host_id), target: net, kind: 'subnet', label: addresses.join(', '), data: { addresses } });
  }

  for (const r of input.routes) {
    let target: string | undefined;
    if (r.network_id) {
      target = networkNode(r.network_id);
      if (!nodes.has(target)) nodes.set(target, { id: target, kind: 'network', label: netLabel(r.network_name ?? '', r.network_cidr ?? ''), refId: r.network_id, data: { networkId: r.network_id, cidr: r.network_cidr, vlans: [] } });
    } else if (r.next_hop_host_id && r.next_hop_host_id !== r.host_id) {
      target = ensureHost(r.next_hop_host_id);
    }
    if (!target) continue;
    const source = hostNode(r.host_id);
    const id = `route:${source}|${target}`;
    const prev = edges.get(id);
    const destinations = sortedUnique([...((prev?.data.destinations as string[] | undefined) ?? []), r.destination]);
    edges.set(id, { id, source, target, kind: 'route', label: `via ${r.next_hop ?? r.interface} → ${destinations.join(', ')}`, data: { destinations, nextHop: r.next_hop, interface: r.interface } });
  }
  return { nodes: [...nodes.values()], edges: [...edges.values()] };
}

/**
 * The application view of a scope: the hosts of its dependency edges, one edge per (calling host,
 * called service) labelled with the service; each host lists the services it offers in the view.
 */
export function applicationGraph(deps: repo.DependencyRow[], labels: Map<string, { label: string; addresses: string[] }>): Graph {
  const nodes = new Map<string, GraphNode>();
  const offered = new Map<string, Set<string>>();
  const ids = new Map<string, string>(); // host id → its node id: one string per host, not one per edge end
  const node = (hostId: string) => {
    let id = ids.get(hostId);
    if (id !== undefined) return id;
    id = hostNode(hostId);
    ids.set(hostId, id);
    nodes.set(id, { id, kind: 'host', label: labels.get(hostId)?.label ?? hostId, refId: hostId, data: { hostId, addresses: labels.get(hostId)?.addresses ?? [], services: [] } });
    return id;
  };
  const edges = deps.map((d): GraphEdge => {
    const service = d.service_name ?? `${d.port}/${d.protocol}`;
    const target = node(d.dst_host_id);
    offered.set(target, (offered.get(target) ?? new Set()).add(service));
    return {
      id: `dep:${d.src_host_id}|${d.dst_service_id}`,
      source: node(d.src_host_id),
      target,
      kind: 'dependency',
      label: `${d.service_name ? `${d.service_name} ` : ''}${d.port}/${d.protocol}`,
      data: { serviceId: d.dst_service_id, service, port: d.port, protocol: d.protocol, bytes: Number(d.bytes), flows: Number(d.flows), lastSeenAt: d.last_seen_at },
    };
  });
  for (const [id, s] of offered) nodes.get(id)!.data.services = sortedUnique(s);
  return { nodes: [...nodes.values()], edges };
}
