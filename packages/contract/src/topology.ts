import { z } from 'zod';
import { Timestamp, Uuid } from './common.js';

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
