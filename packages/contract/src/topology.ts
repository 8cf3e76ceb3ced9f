import { z } from 'zod';
import { Text, Timestamp, Uuid } from './common.js';
import { Topology } from './inventory.js';

export const TopologyQuery = z.strictObject({
  windowHours: z.coerce.number().int().min(1).max(720).default(24).describe('Flow window in hours, 1 to 720 (30 days); default 24.'),
});

const Peer = z.object({
  hostId: Uuid.nullable().describe('Null when the address is unknown to the inventory; such peers are kept.'),
  address: z.string(),
  hostname: z.string().nullable(),
  ports: z.array(z.number().int()).describe('Destination ports of the conversations.'),
  protocols: z.array(z.string()),
  bytes: z.number().int(),
  packets: z.number().int(),
  flows: z.number().int().describe('Flow records folded into this peer.'),
  lastSeenAt: Timestamp,
});

export const HostTopology = z.object({
  hostId: Uuid,
  ports: z.array(
    z.object({
      serviceId: Uuid,
      port: z.number().int(),
      protocol: z.string(),
      state: z.string(),
      name: z.string().nullable(),
      product: z.string().nullable(),
      version: z.string().nullable(),
    }),
  ).describe('From the scans (services not gone).'),
  inbound: z.array(Peer).describe('Callers: flows whose destination is this host.'),
  outbound: z.array(Peer).describe('Destinations: flows whose source is this host.'),
  neighbours: z.array(
    z.object({
      localInterface: z.string(),
      remoteChassisId: z.string(),
      remotePortId: z.string().nullable(),
      remoteSystemName: z.string().nullable(),
      managementAddress: z.string().nullable(),
      protocol: z.string(),
      hostId: Uuid.nullable().describe('The neighbour\'s host when its management address is in the inventory.'),
    }),
  ).describe('From LLDP or CDP.'),
  sources: z.object({
    flows: z.boolean().describe('False when the organisation has no flow record at all: then empty inbound/outbound say nothing about the host.'),
    neighbours: z.boolean().describe('False when the organisation has no LLDP/CDP record at all.'),
  }),
  window: z.object({ hours: z.number().int(), from: Timestamp, to: Timestamp }),
});
export type HostTopology = z.infer<typeof HostTopology>;

// ---------------------------------------------------------------------------------------------
// Topology views (issue #15; spec 4.6, decisions.md "Other"): session endpoints of the console.
// The layout (nodes, edges, positions) is internal: the public collection only counts them (spec 2.3).

/**
 * How a view groups its hosts (issue 24): `subnet` (the most specific inventory network holding
 * the host's first address, cut into /24 (IPv4) or /64 (IPv6) blocks when larger; hosts outside
 * every network by that block of their address), `vlan` (the lowest VLAN the host carries, else
 * by subnet), `service` (application views: the service the host is called on most, else by
 * subnet) or `role` (the device type a scan found, else a network device when it reports LLDP/CDP,
 * VLANs or LAGs, else a server when it offers a service, else by subnet). Networks and LLDP/CDP
 * devices are never grouped. A group above MAX_GROUP_MEMBERS members is cut into parts of at most
 * that many, in address order.
 */
export const TopologyGroupBy = z.enum(['subnet', 'vlan', 'service', 'role']);
export type TopologyGroupBy = z.infer<typeof TopologyGroupBy>;
export const GROUP_BY_CHOICES = { network: ['subnet', 'vlan', 'role'], application: ['subnet', 'service', 'role'] } as const satisfies Record<string, readonly TopologyGroupBy[]>;
export const MAX_GROUP_MEMBERS = 400;
/** A view of at most this many nodes opens with every group expanded (its whole drawing). */
export const AUTO_EXPAND_NODES = 250;
/** At most this many nodes are sent in one answer: groups asked to expand beyond it stay closed, said so. */
export const MAX_VISIBLE_NODES = 5000;
/** Bounds a positions body. */
export const MAX_VIEW_NODES = MAX_VISIBLE_NODES;
/** A position coordinate's bound (pixels of the view), either sign. */
export const MAX_COORDINATE = 1_000_000;
/** Share links last this many hours unless asked otherwise, at most MAX_SHARE_HOURS. */
export const DEFAULT_SHARE_HOURS = 168;
export const MAX_SHARE_HOURS = 720;
/**
 * Where a line from the centre of one node box to the centre of another meets the second box's
 * border (so an arrow head shows): the console and the shared page draw edges this way.
 */
export function toBoxBorder(from: { x: number; y: number }, to: { x: number; y: number }, halfWidth: number, halfHeight: number): { x: number; y: number } {
  const dx = from.x - to.x;
  const dy = from.y - to.y;
  if (dx === 0 && dy === 0) return to;
  const t = Math.min(dx === 0 ? Infinity : halfWidth / Math.abs(dx), dy === 0 ? Infinity : halfHeight / Math.abs(dy));
  return t >= 1 ? to : { x: to.x + dx * t, y: to.y + dy * t };
}

/** Size of a node's box in the view; a position is the box's top-left corner. */
export const VIEW_NODE_WIDTH = 180;
export const VIEW_NODE_HEIGHT = 44;
/** A closed group's box; an open one is a frame around its members (its `width`/`height`). */
export const GROUP_NODE_WIDTH = 240;
export const GROUP_NODE_HEIGHT = 56;
/** An open group's frame: its title band above the members' grid, and the padding around it. */
export const GROUP_HEADER = 36;
export const GROUP_PADDING = 16;

export const TopologyView = Topology.pick({ id: true, siteId: true, kind: true, status: true, name: true, nodeCount: true, edgeCount: true, builtAt: true }).extend({
  failureReason: z.string().nullable().describe('Why the last build failed (status `failed`).'),
  groupBy: TopologyGroupBy.describe('How the view groups its hosts (recorded in the view; PATCH to change).'),
  groupCount: z.number().int().describe('Groups in the last build.'),
});
export type TopologyView = z.infer<typeof TopologyView>;

export const TopologyNode = z.object({
  id: z.string().describe('Stable: `host:<host id>`, `device:<LLDP/CDP chassis id>`, `network:<network id>`, `group:<grouping>:<key>`.'),
  kind: z.enum(['host', 'device', 'network', 'group']),
  label: z.string().describe('From the current rows (a renamed host, network or service shows its new name without a rebuild).'),
  data: z.record(z.string(), z.unknown()).describe('What the node stands for: host id and addresses, VLANs, services offered, CIDR; a group: `key`, `members`, and `cidr`/`block`, `vlan` or `service` by its grouping (`part`/`parts` when cut).'),
  x: z.number().describe('Left edge of the node box (absolute, members included).'),
  y: z.number().describe('Top edge of the node box.'),
  group: z.string().nullable().describe('The group node holding this member; null for a node drawn at the top level.'),
  members: z.number().int().optional().describe('A group: how many nodes it holds.'),
  expanded: z.boolean().optional().describe('A group: open (its members are in this answer, drawn inside its frame) or closed.'),
  width: z.number().describe('The box drawn: a node\'s size, a closed group\'s box or an open group\'s frame.'),
  height: z.number(),
});
export type TopologyNode = z.infer<typeof TopologyNode>;

export const TopologyEdge = z.object({
  id: z.string().describe('Stable: `link:…` (LLDP/CDP, one per LAG), `subnet:…` (an address in a network), `route:…`, `dep:<host id>|<service id>`; `agg:<kind>:<source>|<target>` for edges folded into one.'),
  source: z.string(),
  target: z.string(),
  kind: z.enum(['link', 'subnet', 'route', 'dependency']),
  label: z.string(),
  data: z.record(z.string(), z.unknown()).describe('Folded edges (`edges` > 1): `edges`, and per kind `bytes`, `flows`, `ports` (the most used first), `vlans`.'),
  edges: z.number().int().describe('How many edges of the view this one stands for (1, or more where an end is a closed group).'),
});
export type TopologyEdge = z.infer<typeof TopologyEdge>;

export const TopologyFacets = z.object({
  vlans: z.array(z.object({ id: z.number().int(), name: z.string().nullable() })).describe('VLANs carried in the view (network views), with the name a device reports.'),
  services: z.array(z.string()).describe('Services called in the view (application views).'),
});

export const TopologyGraph = z.object({
  topology: TopologyView,
  nodes: z.array(TopologyNode),
  edges: z.array(TopologyEdge),
  nodeSize: z.object({ width: z.number(), height: z.number() }),
  groups: z.object({
    total: z.number().int(),
    expanded: z.array(z.string()).describe('Groups open in this answer.'),
    notExpanded: z.array(z.string()).describe(`Groups asked for but left closed: opening them would send more than ${MAX_VISIBLE_NODES} nodes.`),
  }),
  facets: TopologyFacets,
  filter: z.object({ vlan: z.number().int().nullable(), service: z.string().nullable() }),
  share: z.object({ expiresAt: Timestamp }).nullable().describe('The active share link, if any (its URL is shown once, when created).'),
});
export type TopologyGraph = z.infer<typeof TopologyGraph>;

export const SharedTopologyGraph = TopologyGraph.omit({ share: true, topology: true }).extend({
  topology: TopologyView.pick({ kind: true, status: true, name: true, nodeCount: true, edgeCount: true, builtAt: true }),
  expiresAt: Timestamp,
});
export type SharedTopologyGraph = z.infer<typeof SharedTopologyGraph>;

export const RegenerateTopologyResponse = z.object({ data: z.array(TopologyView) });

/** Which groups to open, and the filters; shared by the graph, its export and the share page. */
export const TopologyGraphQuery = z.strictObject({
  expand: Text.max(20_000).optional().describe(
    `Comma-separated group node ids to open, or \`all\`. Absent: every group is open when the view has at most ${AUTO_EXPAND_NODES} nodes, none otherwise. Empty: none.`,
  ),
  vlan: z.coerce.number().int().min(1).max(4094).optional().describe('Only the links carrying this VLAN and the nodes they join or that carry it (network views).'),
  service: Text.min(1).max(200).optional().describe('Only the calls of this service and the hosts they join (application views).'),
});
export type TopologyGraphQuery = z.infer<typeof TopologyGraphQuery>;

export const UpdateTopologyBody = z.strictObject({ groupBy: TopologyGroupBy });
export type UpdateTopologyBody = z.infer<typeof UpdateTopologyBody>;

export const TopologySearchQuery = z.strictObject({ q: Text.min(1).max(200) });
export const TopologySearchResponse = z.object({
  data: z.array(z.object({
    nodeId: z.string(),
    kind: TopologyNode.shape.kind,
    label: z.string(),
    group: z.string().nullable().describe('The group to open to show it.'),
    addresses: z.array(z.string()),
    matched: z.string().describe('What matched: a name, an address or a service.'),
  })).describe('At most 20, names before addresses before services.'),
});

export const SavePositionsBody = z.strictObject({
  positions: z
    .array(
      z.strictObject({
        nodeId: Text.min(1).max(600),
        x: z.number().min(-MAX_COORDINATE).max(MAX_COORDINATE),
        y: z.number().min(-MAX_COORDINATE).max(MAX_COORDINATE),
      }),
    )
    .min(1)
    .max(MAX_VIEW_NODES),
});
export type SavePositionsBody = z.infer<typeof SavePositionsBody>;
export const SavePositionsResponse = z.object({ saved: z.number().int() });

export const ShareTopologyBody = z.discriminatedUnion('enabled', [
  z.strictObject({ enabled: z.literal(true), expiresInHours: z.number().int().min(1).max(MAX_SHARE_HOURS).optional() }),
  z.strictObject({ enabled: z.literal(false) }),
]);
export type ShareTopologyBody = z.infer<typeof ShareTopologyBody>;
export const ShareTopologyResponse = z.object({
  enabled: z.boolean(),
  url: z.string().nullable().describe('The read-only page; shown only in this answer (the token is stored hashed).'),
  expiresAt: Timestamp.nullable(),
});
export const ExportFormat = z.enum(['mermaid', 'drawio']);
