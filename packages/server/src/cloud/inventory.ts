// What a cloud provider's inventory holds, normalised. The collectors (aws.ts over
// @aws-sdk/client-ec2, kubernetes.ts over @kubernetes/client-node) produce it from the SDKs'
// answers; sync.service.ts turns it into the facts `reconcile` takes, and keeps the provider's own
// record of each resource (tags, state, rules) beside the host it became.

/** A port the provider publishes for a resource (a Kubernetes service's port), and whether the internet reaches it. */
export interface CloudPort {
  protocol: 'tcp' | 'udp';
  port: number;
  /** The provider's name for it (a Kubernetes port name), if any. */
  name?: string | undefined;
  /** Reachable from the internet as the provider is configured (a LoadBalancer, a NodePort, an ingress). */
  exposed: boolean;
  /** Why it is exposed, for people: `LoadBalancer`, `NodePort 30080`, `ingress shop/web`. */
  via?: string | undefined;
}

/** An inbound rule of a security group (AWS), as it applies to the instances holding the group. */
export interface InboundRule {
  groupId: string;
  /** `all` is AWS's IpProtocol "-1". */
  protocol: 'tcp' | 'udp' | 'icmp' | 'all';
  /** Null with `all` (every port). */
  fromPort: number | null;
  toPort: number | null;
  /** IPv4 and IPv6 ranges the rule admits (`0.0.0.0/0`, `::/0`, …); group-to-group rules are left out. */
  cidrs: string[];
}

/** A resource that holds addresses: an EC2 instance or network interface, a Kubernetes node, pod, service or ingress. */
export interface CloudMachine {
  /** The provider's id: an instance id (`i-0abc…`); a Kubernetes object's `metadata.uid`. */
  providerId: string;
  /** `interface`: an AWS network interface (ENI) of no instance: a load balancer's, a NAT gateway's, a Lambda's, a database's. */
  kind: 'instance' | 'interface' | 'node' | 'pod' | 'service' | 'ingress';
  /** A display name: the `Name` tag; a Kubernetes `namespace/name` (a node: its name). */
  name: string | null;
  /** The provider's state: `running`, `stopped`, `terminated`, …; a node `Ready`/`NotReady`; a pod's phase; a service's type. */
  state: string;
  /** An AWS region; a Kubernetes namespace (null for a node). */
  location: string | null;
  /** Canonical addresses (IPv4 dotted, IPv6 lower-case compressed) inside the provider's networks. */
  privateAddresses: string[];
  /** Addresses the internet routes to it (an instance's public IPv4 and its IPv6, a load balancer's). */
  publicAddresses: string[];
  /** An operating system as the provider says it (`Linux/UNIX`, `Windows`, a node's OS image). */
  os: string | null;
  /** Tags (AWS) or labels (Kubernetes), bounded by the collector (at most 50, values cut at 256 characters). */
  labels: Record<string, string>;
  /** What else the provider says, for the host page: instance type, VPC, subnet, security groups, image, kubelet version, owning workload, node name, … */
  details: Record<string, string | number | boolean | string[] | null>;
  /** AWS: the inbound rules of its security groups. */
  inbound: InboundRule[];
  /** Kubernetes: the ports a service publishes (on the service itself). */
  ports: CloudPort[];
}

/** A network the provider defines: a VPC or subnet (AWS). */
export interface CloudNetwork {
  providerId: string;
  kind: 'vpc' | 'subnet';
  name: string | null;
  /** IPv4 and IPv6 CIDRs. */
  cidrs: string[];
  location: string | null;
  /** The VPC a subnet belongs to. */
  parentId?: string | null | undefined;
}

/** One collection: everything an account lists now. */
export interface CloudInventory {
  machines: CloudMachine[];
  networks: CloudNetwork[];
  /** What was skipped and why (a region that refused us, a malformed record): shown with the sync's outcome. */
  warnings: string[];
  /**
   * What was not listed whole (a region that refused, a resource kind not readable, a cap reached):
   * a resource there that is missing from this collection is not marked gone.
   */
  partial?: { all?: boolean; locations?: string[]; kinds?: CloudMachine['kind'][] } | undefined;
  /** Kubernetes: the list `resourceVersion` of each resource kind, for the next collection's increments. */
  cursor?: Record<string, string> | undefined;
}

/** The most labels (tags) a resource keeps, and the length a value is cut at: a provider's record stays bounded. */
export const MAX_LABELS = 50;
export const MAX_LABEL_VALUE = 256;

/** At most MAX_LABELS labels (by key order), each value cut at MAX_LABEL_VALUE characters. */
export function boundedLabels(labels: Record<string, string> | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const key of Object.keys(labels ?? {}).sort().slice(0, MAX_LABELS)) out[key] = labels![key]!.slice(0, MAX_LABEL_VALUE);
  return out;
}
