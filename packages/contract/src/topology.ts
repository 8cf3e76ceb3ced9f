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

/** Largest node count a view is built with; a bigger view is `failed`, saying so. Also bounds a positions body. */
export const MAX_VIEW_NODES = 2000;
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

export const TopologyView = Topology.pick({ id: true, siteId: true, kind: true, status: true, name: true, nodeCount: true, edgeCount: true, builtAt: true }).extend({
  failureReason: z.string().nullable().describe('Why the last build failed (status `failed`).'),
});
export type TopologyView = z.infer<typeof TopologyView>;

export const TopologyNode = z.object({
  id: z.string().describe('Stable: `host:<host id>`, `device:<LLDP/CDP chassis id>`, `network:<network id>`.'),
  kind: z.enum(['host', 'device', 'network']),
  label: z.string(),
  data: z.record(z.string(), z.unknown()).describe('What the node stands for: host id and addresses, VLANs, services offered, CIDR.'),
  x: z.number().describe('Left edge of the node box.'),
  y: z.number().describe('Top edge of the node box.'),
});
export type TopologyNode = z.infer<typeof TopologyNode>;

export const TopologyEdge = z.object({
  id: z.string().describe('Stable: `link:…` (LLDP/CDP, one per LAG), `subnet:…` (an address in a network), `route:…`, `dep:<host id>|<service id>`.'),
  source: z.string(),
  target: z.string(),
  kind: z.enum(['link', 'subnet', 'route', 'dependency']),
  label: z.string(),
  data: z.record(z.string(), z.unknown()),
});
export type TopologyEdge = z.infer<typeof TopologyEdge>;

export const TopologyGraph = z.object({
  topology: TopologyView,
  nodes: z.array(TopologyNode),
  edges: z.array(TopologyEdge),
  nodeSize: z.object({ width: z.number(), height: z.number() }),
  share: z.object({ expiresAt: Timestamp }).nullable().describe('The active share link, if any (its URL is shown once, when created).'),
});
export type TopologyGraph = z.infer<typeof TopologyGraph>;

export const SharedTopologyGraph = TopologyGraph.omit({ share: true, topology: true }).extend({
  topology: TopologyView.pick({ kind: true, status: true, name: true, nodeCount: true, edgeCount: true, builtAt: true }),
  expiresAt: Timestamp,
});
export type SharedTopologyGraph = z.infer<typeof SharedTopologyGraph>;

export const RegenerateTopologyResponse = z.object({ data: z.array(TopologyView) });

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
