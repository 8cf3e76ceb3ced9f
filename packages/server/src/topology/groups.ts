import { MAX_GROUP_MEMBERS, type TopologyGroupBy, canonicalIp, parseIp } from '@surveyor/contract';
import type { Graph, GraphNode } from './graph.js';

/** Where a host sits: its first address and the most specific inventory network holding it. */
export interface HostPlace {
  address: string | null;
  networkId: string | null;
  networkName: string | null;
  cidr: string | null;
  /** The device type a scan found (nmap's: switch, router, printer, general purpose…). */
  deviceType?: string | null;
  /** Whether the host offers a service (not gone). */
  serves?: boolean;
}

/** More top-level groups than this: hosts outside every network are gathered in coarser blocks. */
export const MAX_TOP_GROUPS = 300;

export interface Grouping {
  /** The group nodes (kind `group`), in key order. */
  groups: GraphNode[];
  /** Member node id → its group node id. */
  groupOf: Map<string, string>;
  /** Group node id → its members' node ids, in address order. */
  members: Map<string, string[]>;
}

/** A network by its name, with its CIDR unless the name already says it. */
export const netLabel = (name: string, cidr: string) => (name.includes(cidr) ? name : `${name} ${cidr}`.trim());

/** The block of `prefix` bits holding an address, as CIDR text (the address's canonical form). */
export function blockOf(address: string, v4Prefix: number, v6Prefix: number): string | null {
  const bytes = parseIp(address);
  if (!bytes) return null;
  const prefix = bytes.length === 4 ? v4Prefix : v6Prefix;
  const masked = bytes.map((b, i) => {
    const bit = i * 8;
    if (bit >= prefix) return 0;
    if (bit + 8 <= prefix) return b;
    return b & (0xff << (8 - (prefix - bit)));
  });
  const text = bytes.length === 4 ? masked.join('.') : canonicalIp(Array.from({ length: 8 }, (_, i) => ((masked[i * 2]! << 8) | masked[i * 2 + 1]!).toString(16)).join(':'));
  return `${text}/${prefix}`;
}

/** A sort key putting addresses in numeric order (IPv4 before IPv6); no address last. */
const addressKey = (a: string | null) => {
  const b = a ? parseIp(a) : null;
  return b ? `${b.length === 4 ? 4 : 6}:${b.map((x) => x.toString(16).padStart(2, '0')).join('')}` : '~';
};

interface Key { key: string; label: string; refId: string | null; data: Record<string, unknown> }

/**
 * The subnet key of a host: its network (cut into /24 or /64 blocks when larger), or the block of
 * its address outside every network (`coarse`: /16 or /48; `outside`: one group), or no address.
 */
function subnetKey(place: HostPlace | undefined, outsideLevel: 'fine' | 'coarse' | 'one'): Key {
  const address = place?.address ?? null;
  if (!address) return { key: 'none', label: 'No address', refId: null, data: {} };
  if (place?.networkId && place.cidr) {
    const prefix = Number(place.cidr.split('/')[1]);
    const v4 = !place.cidr.includes(':');
    const cut = v4 ? 24 : 64;
    if (prefix >= cut) return { key: `net:${place.networkId}`, label: netLabel(place.networkName ?? '', place.cidr), refId: place.networkId, data: { cidr: place.cidr } };
    const block = blockOf(address, 24, 64)!;
    return { key: `net:${place.networkId}:${block}`, label: `${netLabel(place.networkName ?? '', place.cidr)} · ${block}`, refId: place.networkId, data: { cidr: place.cidr, block } };
  }
  if (outsideLevel === 'one') return { key: 'outside', label: 'Outside known networks', refId: null, data: {} };
  const block = outsideLevel === 'fine' ? blockOf(address, 24, 64) : blockOf(address, 16, 48);
  return { key: `addr:${block}`, label: `${block} (no network)`, refId: null, data: { block } };
}

/**
 * Groups the hosts of a view (issue 24): each host of the scope in one group by `groupBy` (see
 * TopologyGroupBy); devices, networks and hosts outside the scope stay at the top level. A group
 * of more than MAX_GROUP_MEMBERS is cut into parts in address order; when hosts outside every
 * network would make more than MAX_TOP_GROUPS groups, their blocks widen (then they share one).
 */
export function groupGraph(graph: Graph, groupBy: TopologyGroupBy, places: Map<string, HostPlace>, vlanNames: Map<number, string | null>): Grouping {
  const members = graph.nodes.filter((n) => n.kind === 'host' && !n.data.outsideScope);
  const hostOf = (n: GraphNode) => n.data.hostId as string;

  // VLANs a host carries: its own (a switch) and those of the links it is on.
  const vlansOf = new Map<string, Set<number>>();
  const addVlans = (id: string, vs: unknown) => {
    if (!Array.isArray(vs)) return;
    const set = vlansOf.get(id) ?? new Set<number>();
    for (const v of vs) if (typeof v === 'number') set.add(v);
    vlansOf.set(id, set);
  };
  // The service each host is called on most (application views), by flows.
  const calls = new Map<string, Map<string, number>>();
  // Hosts that carry VLANs or are on 3 LLDP/CDP links or more: network devices (the role grouping;
  // a server running lldpd names its one switch, a switch is named by many).
  const networkDevice = new Set<string>();
  const links = new Map<string, number>();
  for (const n of members) {
    addVlans(n.id, n.data.vlans);
    if (Array.isArray(n.data.vlans) && n.data.vlans.length) networkDevice.add(n.id);
  }
  for (const e of graph.edges) {
    if (e.kind === 'link') {
      addVlans(e.source, e.data.vlans);
      addVlans(e.target, e.data.vlans);
      for (const end of [e.source, e.target]) if ((links.set(end, (links.get(end) ?? 0) + 1).get(end) ?? 0) >= 3) networkDevice.add(end);
    } else if (e.kind === 'dependency' && typeof e.data.service === 'string') {
      const m = calls.get(e.target) ?? new Map<string, number>();
      m.set(e.data.service, (m.get(e.data.service) ?? 0) + Number(e.data.flows ?? 1));
      calls.set(e.target, m);
    }
  }

  const keyOf = (n: GraphNode, outsideLevel: 'fine' | 'coarse' | 'one'): Key => {
    if (groupBy === 'vlan') {
      const vs = [...(vlansOf.get(n.id) ?? [])].sort((a, b) => a - b);
      if (vs.length) {
        const name = vlanNames.get(vs[0]!);
        return { key: `vlan:${vs[0]}`, label: `VLAN ${vs[0]}${name ? ` · ${name}` : ''}`, refId: null, data: { vlan: vs[0] } };
      }
    } else if (groupBy === 'role') {
      const place = places.get(hostOf(n));
      const type = place?.deviceType?.trim().toLowerCase();
      if (type) return { key: `role:${type}`, label: type[0]!.toUpperCase() + type.slice(1), refId: null, data: { role: type } };
      if (networkDevice.has(n.id)) return { key: 'role:~network', label: 'Network devices (LLDP/CDP, VLANs, LAGs)', refId: null, data: { role: 'network device' } };
      if (place?.serves) return { key: 'role:~server', label: 'Servers (offer a service)', refId: null, data: { role: 'server' } };
    } else if (groupBy === 'service') {
      const m = calls.get(n.id);
      if (m?.size) {
        const [service] = [...m].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))[0]!;
        return { key: `service:${service}`, label: service, refId: null, data: { service } };
      }
    }
    return subnetKey(places.get(hostOf(n)), outsideLevel);
  };

  let keys = new Map<string, Key>();
  for (const level of ['fine', 'coarse', 'one'] as const) {
    keys = new Map(members.map((n) => [n.id, keyOf(n, level)]));
    if (new Set([...keys.values()].map((k) => k.key)).size <= MAX_TOP_GROUPS) break;
  }

  const byKey = new Map<string, { key: Key; nodes: GraphNode[] }>();
  for (const n of members) {
    const k = keys.get(n.id)!;
    const entry = byKey.get(k.key) ?? { key: k, nodes: [] };
    entry.nodes.push(n);
    byKey.set(k.key, entry);
  }
  const groups: GraphNode[] = [];
  const groupOf = new Map<string, string>();
  const membersOf = new Map<string, string[]>();
  for (const [key, { key: k, nodes }] of [...byKey].sort((a, b) => (a[0] < b[0] ? -1 : 1))) {
    const sorted = nodes
      .map((n) => ({ n, sort: addressKey(places.get(hostOf(n))?.address ?? null) }))
      .sort((a, b) => (a.sort < b.sort ? -1 : a.sort > b.sort ? 1 : a.n.id < b.n.id ? -1 : 1))
      .map((x) => x.n);
    const parts = Math.ceil(sorted.length / MAX_GROUP_MEMBERS);
    for (let p = 0; p < parts; p++) {
      const slice = sorted.slice(p * MAX_GROUP_MEMBERS, (p + 1) * MAX_GROUP_MEMBERS);
      const id = `group:${groupBy}:${key}${parts > 1 ? `#${p + 1}` : ''}`;
      groups.push({
        id,
        kind: 'group',
        label: parts > 1 ? `${k.label} (part ${p + 1} of ${parts})` : k.label,
        refId: k.refId,
        data: { key, members: slice.length, ...k.data, ...(parts > 1 ? { part: p + 1, parts } : {}) },
      });
      for (const n of slice) groupOf.set(n.id, id);
      membersOf.set(id, slice.map((n) => n.id));
    }
  }
  return { groups, groupOf, members: membersOf };
}
