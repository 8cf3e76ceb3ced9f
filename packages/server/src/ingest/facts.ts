// The facts `reconcile` takes: what an observer saw, normalised (canonical addresses and MACs,
// lower-case SHA-256), one row per observation, independent of any wire format. An absent field
// means "not observed", never "erase". Every row names its host by a fingerprint: the observer's
// stable key for the host, bound to a host of the organisation on first sight (host_fingerprints;
// unique per organisation, so a source other than the daemons must namespace its keys).

/** The fingerprints a cloud account's sync binds (`aws:<account>:<id>`, `k8s:<account>:<uid>`), as a PostgreSQL regular expression: every other fingerprint is a daemon's. */
export const CLOUD_FINGERPRINT = '^(aws|k8s):';

export interface InterfaceFact {
  name: string;
  mac?: string | undefined;
  addresses?: string[] | undefined;
}

export interface HostFact {
  fingerprint: string;
  hostname?: string | undefined;
  fqdn?: string | undefined;
  vendor?: string | undefined;
  os?: string | undefined;
  deviceType?: string | undefined;
  /** The host's own CPEs (operating system, hardware): replace its set when given. */
  cpes?: string[] | undefined;
  parentFingerprint?: string | undefined;
  interfaces?: InterfaceFact[] | undefined;
}

export interface AddressFact {
  fingerprint: string;
  address: string;
  mac?: string | undefined;
}

/** A port seen in a state (a port scan). */
export interface PortFact {
  fingerprint: string;
  address: string;
  protocol: string;
  port: number;
  state: string;
  banner?: string | undefined;
}

/** What runs on a port (a service identification); it keeps the port's stored state. */
export interface ServiceFact {
  fingerprint: string;
  address: string;
  protocol: string;
  port: number;
  signatureId?: string | undefined;
  signatureSource?: string | undefined;
  name?: string | undefined;
  product?: string | undefined;
  vendor?: string | undefined;
  version?: string | undefined;
  cpe?: string | undefined;
  confidence?: number | undefined;
  evidence?: string | undefined;
}

/** A certificate served on a port: its chain (leaf first), or at least its validity dates (RFC 3339). */
export interface CertificateFact {
  fingerprint: string;
  address: string;
  port: number;
  sha256: string;
  chainPem?: string[] | undefined;
  subject?: string | undefined;
  issuer?: string | undefined;
  notBefore?: string | undefined;
  notAfter?: string | undefined;
}

export interface NeighbourFact {
  fingerprint: string;
  localInterface: string;
  remoteChassisId: string;
  remotePortId?: string | undefined;
  remoteSystemName?: string | undefined;
  managementAddress?: string | undefined;
  protocol?: string | undefined;
}

export interface VlanFact {
  fingerprint: string;
  vlanId: number;
  name?: string | undefined;
  tagged?: string[] | undefined;
  untagged?: string[] | undefined;
}

/** A route; the destination is a CIDR whose host bits may be set (its network is stored). */
export interface RouteFact {
  fingerprint: string;
  destination: string;
  nextHop?: string | undefined;
  interface?: string | undefined;
  metric?: number | undefined;
}

export interface LagGroupFact {
  fingerprint: string;
  name: string;
  protocol?: string | undefined;
  members?: string[] | undefined;
}

export interface Facts {
  hosts: HostFact[];
  addresses: AddressFact[];
  ports: PortFact[];
  services: ServiceFact[];
  certificates: CertificateFact[];
  neighbours: NeighbourFact[];
  vlans: VlanFact[];
  routes: RouteFact[];
  lagGroups: LagGroupFact[];
}

/** How many observation rows the facts hold (what a batch reports as accepted). */
export function rowsOf(f: Facts): number {
  return f.hosts.length + f.addresses.length + f.ports.length + f.services.length + f.certificates.length + f.neighbours.length + f.vlans.length + f.routes.length + f.lagGroups.length;
}

/**
 * Keeps one row per key, merging later rows into the first so a later absent value never erases
 * an earlier one. Rows are the caller's own freshly mapped objects: they are merged in place.
 */
export function mergeBy<T extends object>(items: T[], key: (t: T) => string): T[] {
  const out = new Map<string, T>();
  for (const item of items) {
    const k = key(item);
    const prev = out.get(k) as Record<string, unknown> | undefined;
    if (prev === undefined) {
      out.set(k, item);
      continue;
    }
    const next = item as Record<string, unknown>;
    for (const f in next) {
      const v = next[f];
      if (v !== undefined && v !== null) prev[f] = v;
    }
  }
  return [...out.values()];
}

/** An absent value as the null a column takes. */
export const orNull = <T>(v: T | undefined): T | null => (v === undefined ? null : v);
