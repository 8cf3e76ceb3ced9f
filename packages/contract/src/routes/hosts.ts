import { z } from 'zod';
import { Timestamp, Uuid } from '../common.js';
import { type RouteDef, route } from '../route-def.js';

/** What the daemons reported of one host's layer 2/3 (decisions.md "Observation elements"), and who reports being on its ports. */
export const HostDetail = z.object({
  hostId: Uuid,
  interfaces: z
    .array(
      z.object({
        name: z.string(),
        mac: z.string().nullable().describe('Lower-case colon form.'),
        addresses: z.array(z.string()).describe('The host\'s addresses seen with this interface\'s MAC, sorted.'),
        lastSeenAt: Timestamp,
      }),
    )
    .describe('Interfaces by name (natural order: eth2 before eth10).'),
  vlans: z
    .array(z.object({ vlanId: z.number().int(), name: z.string().nullable(), tagged: z.array(z.string()), untagged: z.array(z.string()), lastSeenAt: Timestamp }))
    .describe('VLANs by id, with their tagged and untagged member interfaces (each list in natural order).'),
  lagGroups: z
    .array(z.object({ name: z.string(), protocol: z.enum(['lacp', 'static']).nullable(), members: z.array(z.string()), lastSeenAt: Timestamp }))
    .describe('Link aggregation groups by name, with their member interfaces (natural order).'),
  routes: z
    .array(
      z.object({
        destination: z.string().describe('CIDR.'),
        nextHop: z.string().nullable(),
        nextHopHostId: Uuid.nullable().describe('The inventory host holding the next hop\'s address, if any.'),
        interface: z.string().nullable(),
        metric: z.number().int().nullable(),
        lastSeenAt: Timestamp,
      }),
    )
    .describe('Routes by destination, then interface.'),
  portMap: z
    .array(
      z.object({
        port: z.string().nullable().describe('The port of this host the reporting host names (LLDP/CDP remote port id).'),
        hostId: Uuid.describe('The host reporting this host as its neighbour.'),
        hostname: z.string().nullable(),
        fqdn: z.string().nullable(),
        address: z.string().nullable().describe('The reporting host\'s first address.'),
        localInterface: z.string().describe('The reporting host\'s own interface on that link.'),
        protocol: z.enum(['lldp', 'cdp']),
        lastSeenAt: Timestamp,
        goneAt: Timestamp.nullable().describe('When the reporting host was marked gone (its record of the link stays as last reported); null while present.'),
      }),
    )
    .describe(
      'The hosts that report this one as their LLDP/CDP neighbour (its management address is one of this host\'s addresses, its chassis id one of its MACs, or its system name its hostname or FQDN), ' +
        'sorted by port naturally (Gi1/0/2 before Gi1/0/10), ports not named last.',
    ),
  cloud: z
    .array(
      z.object({
        accountId: Uuid,
        accountName: z.string(),
        provider: z.enum(['aws', 'kubernetes']),
        kind: z.enum(['instance', 'interface', 'node', 'pod', 'service', 'ingress']).describe('What the provider calls it (`interface`: an AWS network interface of no instance, such as a load balancer\'s).'),
        providerId: z.string().describe('An EC2 instance id; a Kubernetes object\'s uid.'),
        name: z.string().nullable(),
        state: z.string().describe('As the provider says: running, stopped…; a node Ready/NotReady; a pod\'s phase; a service\'s type.'),
        location: z.string().nullable().describe('An AWS region; a Kubernetes namespace.'),
        labels: z.record(z.string(), z.string()).describe('Tags (AWS) or labels (Kubernetes).'),
        details: z.record(z.string(), z.unknown()).describe('What else the provider says: instance type, VPC, subnet, security groups, image; kubelet version, owning workload, node…'),
        publicAddresses: z.array(z.string()),
        inbound: z
          .array(z.object({ groupId: z.string(), protocol: z.enum(['tcp', 'udp', 'icmp', 'all']), fromPort: z.number().int().nullable(), toPort: z.number().int().nullable(), cidrs: z.array(z.string()) }))
          .describe('AWS: the inbound rules of its security groups.'),
        ports: z.array(z.object({ protocol: z.enum(['tcp', 'udp']), port: z.number().int(), name: z.string().optional(), exposed: z.boolean(), via: z.string().optional() })).describe('Kubernetes: the ports a service publishes.'),
        firstListedAt: Timestamp,
        changedAt: Timestamp.describe('When the provider\'s record of it last changed.'),
        goneAt: Timestamp.nullable().describe('The first sync that no longer listed it; null while listed.'),
      }),
    )
    .describe('What cloud accounts list as this host (its provenance), listed ones first.'),
});
export type HostDetail = z.infer<typeof HostDetail>;

/** A host's page in the console (internal). */
export const hostRoutes = {
  getHostDetail: route({
    method: 'GET',
    url: '/api/v1/hosts/:id/detail',
    operationId: 'getHostDetail',
    summary: 'A host\'s interfaces, VLANs, LAG groups and routes as the daemons reported them, its port map, and what cloud accounts list it as',
    description:
      'The layer 2/3 facts the daemons reported for this host (each as last reported; an absent field never erased a stored one) and, for a switch, which hosts report being on which of its ports. ' +
      'A host of another organisation is 404 `not_found`.',
    tags: ['console'],
    internal: true,
    auth: { kind: 'session' },
    params: z.object({ id: Uuid }),
    errors: ['not_found'],
    response: { 200: HostDetail },
  }),
} as const satisfies Record<string, RouteDef>;
