import { z } from 'zod';
import { Text, Timestamp, Uuid } from './common.js';
import { canonicalIp, parseCidr } from './net.js';

// ---------------------------------------------------------------------------------------------
// Enumerations (decisions.md)

export const vulnerabilityStates = ['open', 'acknowledged', 'resolved', 'false_positive'] as const;
export const VulnerabilityState = z.enum(vulnerabilityStates);
export type VulnerabilityState = z.infer<typeof VulnerabilityState>;

export const severities = ['critical', 'high', 'medium', 'low', 'none'] as const;
export const Severity = z.enum(severities);

export const trustStatuses = ['trusted', 'expired', 'not_yet_valid', 'self_signed', 'untrusted'] as const;
export const TrustStatus = z.enum(trustStatuses);

export const snapshotReasons = ['scheduled', 'manual', 'pre_change', 'post_change', 'audit'] as const;
export const SnapshotReason = z.enum(snapshotReasons);

export const topologyKinds = ['network', 'application'] as const;
export const TopologyKind = z.enum(topologyKinds);
export const topologyStatuses = ['pending', 'ready', 'stale', 'failed'] as const;
export const TopologyStatus = z.enum(topologyStatuses);

export const PortProtocol = z.enum(['tcp', 'udp', 'sctp']);

/** Moves a PATCH may make (decisions.md, "Vulnerability transitions"). */
export const vulnerabilityPatchMoves: Record<VulnerabilityState, VulnerabilityState[]> = {
  open: ['acknowledged', 'false_positive'],
  acknowledged: ['open', 'false_positive'],
  false_positive: ['open'],
  resolved: [],
};

// ---------------------------------------------------------------------------------------------
// Addresses

/** A dotted-quad IPv4 address already in canonical form (no leading zeros): the address schema's fast path, shared with the flow route's body check. */
export const CANONICAL_IPV4 = /^(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)$/;

/** An IPv4 or IPv6 address, normalised to its canonical text (one spelling per address). */
export const IpAddress = Text
  .max(64)
  .transform((s, ctx) => {
    // Fast path: most addresses a daemon sends are already canonical IPv4 (flow batches carry
    // hundreds of thousands), so they skip the general parser.
    if (CANONICAL_IPV4.test(s)) return s;
    const canonical = canonicalIp(s);
    if (canonical === null) {
      ctx.addIssue({ code: 'custom', message: 'expected an IPv4 or IPv6 address' });
      return z.NEVER;
    }
    return canonical;
  });

/** A CIDR whose host bits are zero: refused, never truncated (spec 2.3). */
export const Cidr = Text
  .superRefine((s, ctx) => {
    const c = parseCidr(s);
    if (!c) ctx.addIssue({ code: 'custom', message: 'expected a CIDR such as 10.0.0.0/16 or 2001:db8::/48' });
    else if (!c.hostBitsZero) ctx.addIssue({ code: 'custom', message: `host bits are set below the /${c.prefix} prefix; did you mean the network address?` });
  })
  .describe('CIDR (IPv4 or IPv6); every bit below the prefix must be zero.');

// ---------------------------------------------------------------------------------------------
// Collection items

export const Site = z.object({
  id: Uuid,
  code: z.string(),
  name: z.string(),
  description: z.string().nullable(),
  createdAt: Timestamp,
  updatedAt: Timestamp,
});

export const NmapSettings = z.object({
  enabled: z.boolean(),
  scripts: z.array(z.enum(['default', 'safe', 'version', 'vuln'])).describe('nmap script categories; `external` is always excluded.'),
});

export const Network = z.object({
  id: Uuid,
  siteId: Uuid.nullable(),
  name: z.string(),
  cidr: z.string(),
  family: z.union([z.literal(4), z.literal(6)]),
  excludeCidrs: z.array(z.string()),
  scanIntervalMinutes: z.number().int().nullable().describe('Null: never scanned on a schedule.'),
  topPortsTcp: z.number().int(),
  topPortsUdp: z.number().int(),
  nmap: NmapSettings,
  lastScanAt: Timestamp.nullable().describe('When a scan of the network was last queued.'),
  activeSessionId: Uuid.nullable().describe('The session of the network queued, dispatched or running now (a new scan is refused with 409 `scan_already_active` meanwhile); null when none is.'),
  schedule: z
    .object({
      checkedAt: Timestamp,
      outcome: z.enum(['queued', 'skipped']),
      detail: z.string().nullable().describe('The session queued, or why none was (the refusal code and its message).'),
      sessionId: Uuid.nullable().describe('The session the scheduler queued (`queued`); null when it skipped. The session is gone once its network is deleted.'),
      daemonId: Uuid.nullable().describe('The daemon that session was handed to; null when it skipped.'),
    })
    .nullable()
    .describe('What the scheduler (job scan.schedule) last did for this network; null until it was first due.'),
  createdAt: Timestamp,
  updatedAt: Timestamp,
});

export const Host = z.object({
  id: Uuid,
  siteId: Uuid.nullable(),
  hostname: z.string().nullable(),
  fqdn: z.string().nullable(),
  addresses: z.array(z.string()).describe('IPv4 and IPv6 addresses, sorted.'),
  macs: z.array(z.string()).describe('MAC addresses of its interfaces, lower-case colon form.'),
  vendor: z.string().nullable(),
  os: z.string().nullable(),
  deviceType: z.string().nullable(),
  parentHostId: Uuid.nullable(),
  openPortCount: z.number().int(),
  firstSeenAt: Timestamp,
  lastSeenAt: Timestamp.describe('When a daemon last reported anything of the host (a fact, an address, a port, a service, a certificate, a neighbour, a VLAN, a route, a LAG).'),
  goneAt: Timestamp.nullable().describe(
    'When a completed scan session whose CIDR (less its exclusions) covers every address of the host, in the host\'s site, no longer found it; null while it is present. ' +
      'Only a completed session marks a host gone (a stalled, cancelled or failed one never does); a host without addresses is never marked gone. Seen again by any batch, it is back (null).',
  ),
  createdAt: Timestamp,
  updatedAt: Timestamp,
});

export const Service = z.object({
  id: Uuid,
  hostId: Uuid,
  address: z.string().nullable(),
  port: z.number().int(),
  protocol: PortProtocol,
  state: z.enum(['open', 'closed', 'filtered']),
  name: z.string().nullable(),
  product: z.string().nullable(),
  vendor: z.string().nullable(),
  version: z.string().nullable(),
  cpe: z.string().nullable().describe('CPE 2.3'),
  banner: z.string().nullable(),
  signatureId: z.string().nullable(),
  signatureSource: z.enum(['core', 'custom', 'nmap']).nullable(),
  confidence: z.number().int().nullable(),
  firstSeenAt: Timestamp,
  lastSeenAt: Timestamp,
  goneAt: Timestamp.nullable().describe('When a completed scan no longer found it.'),
  exposedVia: z
    .string()
    .nullable()
    .describe('Why the internet reaches it, when a cloud account says so (an EC2 security group admitting the port from 0.0.0.0/0 or ::/0 to an instance with a public address; a Kubernetes LoadBalancer, NodePort or ingress); null when nothing says it is exposed.'),
  createdAt: Timestamp,
  updatedAt: Timestamp,
});

/**
 * Whether a certificate is the one its endpoint presents now (issue 23). One definition, in the
 * database view `certificate_states`, read by this list, the overview's and the metric's expiry
 * counts and the `tls.expiring` alerts.
 */
export const certificateStates = ['current', 'replaced', 'gone'] as const;
export const CertificateState = z
  .enum(certificateStates)
  .describe(
    '`current`: the latest certificate seen on its endpoint (host, address and port) while the service on that port is there; ' +
      '`replaced`: a newer certificate was seen on the same endpoint since; `gone`: the service on its port is gone (or closed). ' +
      'Only current certificates are counted in the expiry windows and announced by `tls.expiring`.',
  );

export const Certificate = z.object({
  id: Uuid,
  hostId: Uuid,
  address: z.string().nullable(),
  port: z.number().int().nullable(),
  subject: z.string(),
  issuer: z.string(),
  notBefore: Timestamp,
  notAfter: Timestamp,
  fingerprint: z.string().describe('SHA-256 of the leaf certificate, hex.'),
  trustStatus: TrustStatus,
  state: CertificateState,
  firstSeenAt: Timestamp,
  lastSeenAt: Timestamp,
  createdAt: Timestamp,
  updatedAt: Timestamp,
});

export const DistributionVerdict = z.object({
  distribution: z.string().describe('The distribution and release, as far as known (`Debian 12`, `Ubuntu 22.04`, `Ubuntu`).'),
  ecosystem: z.string().nullable().describe('The OSV ecosystem of the record consulted (`Debian:12`, `Ubuntu:22.04:LTS`), or null when none applied.'),
  package: z.string().describe('The distribution\'s source package (`openssh`, `mysql-8.0`).'),
  version: z.string().nullable().describe('The package version the banner names (with the epoch the distribution uses), or null when the banner names the distribution only.'),
  verdict: z.enum(['fixed', 'affected', 'unknown']).describe('`fixed`: the distribution\'s record says this build carries the fix; `affected`: it says the build is vulnerable; `unknown`: no record of this release applies, or the banner gives no package version (Red Hat and Alpine builds say their distribution but not their release). Only `fixed` changes the finding.'),
  fixedIn: z.string().nullable().describe('The package version the distribution fixed it in.'),
  advisoryId: z.string().nullable().describe('The distribution\'s record (`DSA-5724-1`, `USN-6859-1`, `DEBIAN-CVE-2024-6387`).'),
});

export const Vulnerability = z.object({
  id: Uuid,
  serviceId: Uuid,
  hostId: Uuid,
  cveId: z.string().describe('The CVE, or the advisory id (an OSV id such as `GHSA-…`) when the advisory names no CVE. One finding per service and CVE: an NVD record and an OSV record of the same CVE make one.'),
  advisoryId: z.string().nullable().describe('The advisory that matched (`CVE-…` from NVD, or an OSV id); null for a finding recorded before the matcher.'),
  summary: z.string().nullable().describe('The advisory\'s description or summary.'),
  severity: Severity.describe('The CVSS v3 qualitative band of `score` (critical 9.0-10, high 7.0-8.9, medium 4.0-6.9, low 0.1-3.9, none 0), or the advisory\'s own rating when it has no CVSS score.'),
  score: z.number().nullable().describe('CVSS base score: v3.1 preferred, then v4.0, then v3.0. Null when the advisory has none.'),
  vector: z.string().nullable().describe('The CVSS vector of `score`.'),
  matchedCpe: z.string().nullable().describe('The service CPE (CPE 2.3) the advisory matched, or the one derived from its vendor, product and version.'),
  distribution: DistributionVerdict.nullable().describe('What the distribution\'s own advisories say of the service\'s build, when its banner names one (`OpenSSH_9.2p1 Debian-2+deb12u3`): a build the distribution fixed by a backport is kept `resolved` with this as the evidence. Null when the banner names no distribution build.'),
  state: VulnerabilityState.describe('`open` when matched; `acknowledged` and `false_positive` by PATCH; `resolved` by the matcher when the service no longer matches (gone, or another version). The matcher reopens a resolved finding whose advisory matches again and never touches `false_positive`.'),
  note: z.string().nullable(),
  firstSeenAt: Timestamp,
  lastSeenAt: Timestamp,
  stateChangedAt: Timestamp,
  resolvedAt: Timestamp.nullable(),
  createdAt: Timestamp,
  updatedAt: Timestamp,
});

export const SnapshotStats = z.object({
  hosts: z.number().int(),
  addresses: z.number().int(),
  services: z.number().int(),
  networks: z.number().int(),
  sites: z.number().int(),
  certificates: z.number().int(),
  vulnerabilities: z.number().int(),
  topologies: z.number().int(),
});

export const Snapshot = z.object({
  id: Uuid,
  siteId: Uuid.nullable(),
  reason: SnapshotReason,
  stats: SnapshotStats.describe('Row count per entity type at the moment of capture, read in one consistent snapshot.'),
  contentSha256: z.string().nullable().describe('SHA-256 of the snapshot\'s content (canonical JSON of hosts, services, certificates and vulnerabilities, read with the stats), kept for diffs and attestations.'),
  contentBytes: z.number().int().nullable().describe('Size of that content before compression.'),
  capturedAt: Timestamp,
  createdAt: Timestamp,
});

export const Topology = z.object({
  id: Uuid,
  siteId: Uuid.nullable(),
  kind: TopologyKind,
  status: TopologyStatus,
  name: z.string(),
  nodeCount: z.number().int(),
  edgeCount: z.number().int(),
  builtAt: Timestamp.nullable(),
  createdAt: Timestamp,
  updatedAt: Timestamp,
});

// ---------------------------------------------------------------------------------------------
// Collection queries (spec 2.2, 4.1). Strict: an unknown parameter is refused, naming these.

const limit = z.coerce.number().int().min(1).max(500).default(50).describe('Page size, 1 to 500 (default 50). Out of range is refused, not clamped.');
const cursor = Text.min(1).max(512).optional().describe('`nextCursor` of the previous page.');
const page = { limit, cursor };

/**
 * The certificate expiry windows of the console's overview and of the metric
 * `service_certificates_expiring`: already past, then within 1, 7, 14 and 30 days (cumulative, not yet past).
 */
export const certificateExpiryWindows = ['expired', '1d', '7d', '14d', '30d'] as const;
export const CertificateExpiryWindow = z.enum(certificateExpiryWindows);
export type CertificateExpiryWindow = z.infer<typeof CertificateExpiryWindow>;
/** Days of each window after `expired`. */
export const certificateWindowDays = { '1d': 1, '7d': 7, '14d': 14, '30d': 30 } as const;

/** What a host `search` matches (spec 2.3, extended by issue 23): the OpenAPI description and the console's hint say the same. */
export const HOST_SEARCH_RULES =
  'At least 2 characters (else 400 `invalid_filter`), case-insensitive. A UUID matches the host id; an IPv4 or IPv6 address matches that address; a CIDR the addresses inside it. ' +
  'Anything else matches a host when any of these holds: its hostname, FQDN, vendor or OS starts with the term; ' +
  'the term is a MAC address in any common notation (`aa:bb:cc:dd:ee:ff`, `AA-BB-CC-DD-EE-FF`, `aabb.ccdd.eeff`, `aabbccddeeff`), or its start in whole bytes ' +
  '(`aa:bb:cc`, `aa-bb`, `aabb.cc`, an even number of at least 6 hex digits: `aabbcc`), and an interface or address of the host has a MAC starting so; ' +
  'the term is the start of a dotted IPv4 address in whole octets (`10.1.0` or `10.1.0.`: 10.1.0.0/24; `10.1` or `10.1.`: 10.1.0.0/16; `10.`: 10.0.0.0/8) ' +
  'or of an IPv6 address in whole groups (`2001:db8` or `2001:db8:`: 2001:db8::/32), and the host has an address inside it. ' +
  'Nothing else matches (no substring inside a name, no part of an octet: `10.1.2` never matches 10.1.20.5).';
/** `true`: only what the internet reaches as a cloud account says (`exposedVia` set); `false`: only the rest. */
export const ExposedFilter = z.enum(['true', 'false']).optional().describe('`true`: only services the internet reaches, as a cloud account says (`exposedVia` set); `false`: only the others.');

/** Where the inventory knows a host from: `cloud` (a cloud account lists it now), `daemon` (a daemon observed it). */
export const hostSources = ['cloud', 'daemon'] as const;

/** How the `gone` filter of hosts and services treats what a completed scan no longer found. */
export const goneModes = ['include', 'exclude', 'only'] as const;

/** A CPE 2.3 formatted string or its start: `cpe:2.3:` and the part (`a`, `o`, `h`), then whole or partial components. */
const CPE_PREFIX = /^cpe:2\.3:[aho*](:[^:\s]*)*$/i;

/**
 * The services filters (spec 2.2 names `hostId`; issue 23 adds the rest): the collection and the
 * console's count (`GET /api/v1/services/count`) take exactly these, so a count is the number of
 * rows the same filters page through.
 */
export const serviceFilters = {
  hostId: Uuid.optional(),
  product: Text.trim()
    .min(2, 'product needs at least 2 characters')
    .max(200)
    .optional()
    .describe('At least 2 characters; case-insensitive substring of the product: `apache` matches `Apache httpd` and `Apache Tomcat`.'),
  version: Text.trim()
    .min(1)
    .max(100)
    .optional()
    .describe('Case-insensitive: the version exactly, or a version starting with it followed by a character that is not a digit: `2.4` matches `2.4`, `2.4.49` and `2.4-beta`, not `2.40`.'),
  port: z.coerce.number({ error: 'expected a port number' }).int('expected a whole port number').min(1, 'a port is 1 to 65535').max(65535, 'a port is 1 to 65535').optional().describe('Port number, 1 to 65535.'),
  protocol: PortProtocol.optional(),
  cpe: Text.trim()
    .max(300)
    .regex(CPE_PREFIX, 'expected a CPE 2.3 string or its start, such as cpe:2.3:a:apache:http_server')
    .transform((c) => c.toLowerCase().replace(/(:\*|:)+$/, ''))
    .optional()
    .describe(
      'A CPE 2.3 string or its start (`cpe:2.3:a:apache:http_server`), case-insensitive, matched on whole components: the service\'s CPE equals it or continues it with `:`, ' +
        'so `cpe:2.3:a:apache:http_server:2.4` matches version `2.4` only, never `2.4.49`; trailing `*` (any) components are ignored, so a full CPE with wildcards works as given.',
    ),
  gone: z
    .enum(goneModes)
    .optional()
    .describe('`include` (the default, as before this filter existed): present and gone services; `exclude`: only services present now; `only`: only those a completed scan no longer found (`goneAt` set).'),
  exposed: ExposedFilter,
};

export const listQueries = {
  hosts: z.strictObject({
    ...page,
    siteId: Uuid.optional(),
    search: Text
      .trim()
      .min(2, 'search needs at least 2 characters')
      .max(255)
      .optional()
      .describe(HOST_SEARCH_RULES),
    gone: z
      .enum(goneModes)
      .optional()
      .describe('`include` (the default, as before this filter existed): every host; `exclude`: only the hosts present (`goneAt` null), as the console lists them by default; `only`: only the hosts gone.'),
    source: z
      .enum(hostSources)
      .optional()
      .describe('`cloud`: hosts a cloud account (AWS, Kubernetes) lists now; `daemon`: hosts a daemon observed (a host can be both).'),
  }),
  services: z.strictObject({ ...page, ...serviceFilters }),
  networks: z.strictObject({ ...page, siteId: Uuid.optional() }),
  sites: z.strictObject({ ...page }),
  certificates: z.strictObject({
    ...page,
    hostId: Uuid.optional(),
    trustStatus: TrustStatus.optional(),
    expiring: CertificateExpiryWindow.optional().describe(
      '`expired`: `notAfter` already past, whatever `trustStatus` said when the certificate was last seen; `1d`, `7d`, `14d`, `30d`: `notAfter` within that many days from now and not yet past (the windows of the metric `service_certificates_expiring`).',
    ),
    current: z
      .enum(['true', 'false'])
      .optional()
      .describe(
        '`true`: only the certificates their endpoints present now (`state` `current`, what the overview counts and `tls.expiring` announces); ' +
          '`false`: only the others (`replaced` or `gone`). Absent: every certificate ever seen, as before this filter existed.',
      ),
  }),
  vulnerabilities: z.strictObject({ ...page, serviceId: Uuid.optional(), state: VulnerabilityState.optional(), severity: Severity.optional() }),
  snapshots: z.strictObject({
    ...page,
    siteId: Uuid.optional(),
    reason: SnapshotReason.optional(),
    order: z.enum(['asc', 'desc']).optional().describe('`desc`: the newest first; `asc` (the default): the oldest first, as every collection.'),
  }),
  topologies: z.strictObject({ ...page, siteId: Uuid.optional(), kind: TopologyKind.optional(), status: TopologyStatus.optional() }),
};
export type CollectionName = keyof typeof listQueries;

export const collectionItems = {
  hosts: Host,
  services: Service,
  networks: Network,
  sites: Site,
  certificates: Certificate,
  vulnerabilities: Vulnerability,
  snapshots: Snapshot,
  topologies: Topology,
} as const satisfies Record<CollectionName, z.ZodType>;

/** The collection envelope, the same for all eight (spec 2.1). */
export function Page<T extends z.ZodType>(item: T) {
  return z.object({
    data: z.array(item),
    nextCursor: z.string().nullable().describe('Null on the last page.'),
    hasMore: z.boolean(),
  });
}

/** The page of each collection (named `HostPage`, `ServicePage`… in `/openapi.json`). */
export const collectionPages = {
  hosts: Page(Host),
  services: Page(Service),
  networks: Page(Network),
  sites: Page(Site),
  certificates: Page(Certificate),
  vulnerabilities: Page(Vulnerability),
  snapshots: Page(Snapshot),
  topologies: Page(Topology),
} as const satisfies Record<CollectionName, z.ZodType>;

// ---------------------------------------------------------------------------------------------
// Writes (spec 4.3, decisions.md). Strict: an unknown field, organisationId included, is refused.

export const CreateNetworkRequest = z.strictObject({
  name: Text.trim().min(1).max(200),
  cidr: Cidr,
  siteId: Uuid.optional(),
  scanIntervalMinutes: z.number().int().min(15).max(10080).optional().describe('15 to 10080; absent: never scheduled.'),
  excludeCidrs: z.array(Cidr).max(256).optional(),
  topPortsTcp: z.number().int().min(0).max(65535).optional().describe('Default 1000.'),
  topPortsUdp: z.number().int().min(0).max(65535).optional().describe('Default 0.'),
  nmap: z.strictObject({ enabled: z.boolean(), scripts: NmapSettings.shape.scripts.default([]) }).optional(),
});

/**
 * The console's edit of a network (internal PATCH): every field optional, strict. The CIDR cannot
 * change: a network's sessions and history are of its range, so another range is another network.
 */
export const PatchNetworkRequest = z.strictObject({
  name: CreateNetworkRequest.shape.name.optional(),
  siteId: Uuid.nullable().optional().describe('Null: no site.'),
  scanIntervalMinutes: z.number().int().min(15).max(10080).nullable().optional().describe('15 to 10080; null: never scheduled.'),
  excludeCidrs: CreateNetworkRequest.shape.excludeCidrs,
  topPortsTcp: CreateNetworkRequest.shape.topPortsTcp,
  topPortsUdp: CreateNetworkRequest.shape.topPortsUdp,
  nmap: z
    .strictObject({ enabled: z.boolean(), scripts: NmapSettings.shape.scripts.optional().describe('Absent: the stored categories stay.') })
    .optional(),
});

/** Networks of the organisation whose range overlaps a CIDR (a warning in the console, never a refusal). */
export const NetworkOverlapsQuery = z.strictObject({
  cidr: Cidr,
  exceptId: Uuid.optional().describe('Leave this network out (the one being edited).'),
});
export const NetworkOverlaps = z.object({
  data: z
    .array(
      z.object({
        id: Uuid,
        name: z.string(),
        cidr: z.string(),
        relation: z.enum(['contains', 'within']).describe('`contains`: this network contains the CIDR asked about; `within`: it lies inside it.'),
      }),
    )
    .describe('At most 20, the widest first.'),
});

/** A site's code: how daemons name it (`--site`), unique per organisation (case-insensitive). */
export const SiteCode = Text.min(1, 'required').max(64).regex(/^[A-Za-z0-9._-]+$/, 'letters, digits, dot, underscore and hyphen only');
export const SiteName = Text.trim().min(1, 'required').max(200);

export const CreateSiteRequest = z.strictObject({ code: SiteCode, name: SiteName });

export const RenameSiteRequest = z.strictObject({ name: SiteName });

export const PatchVulnerabilityRequest = z.strictObject({
  state: VulnerabilityState,
  note: Text.max(2000).optional(),
});

/** Every field is optional, so the body may be left out entirely. */
export const CreateSnapshotRequest = z.preprocess((v) => v ?? {}, z.strictObject({
  reason: SnapshotReason.refine((r) => r !== 'scheduled', 'reason "scheduled" is reserved for the daily job')
    .default('manual')
    .describe('Default `manual`. `scheduled` is reserved for the daily job and refused (400).'),
  siteId: Uuid.optional().describe('Count only this site\'s inventory; absent: the whole organisation.'),
}));
