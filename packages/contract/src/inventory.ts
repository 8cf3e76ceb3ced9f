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

const CANONICAL_IPV4 = /^(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)$/;

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
  schedule: z
    .object({
      checkedAt: Timestamp,
      outcome: z.enum(['queued', 'skipped']),
      detail: z.string().nullable().describe('The session queued, or why none was (the refusal code and its message).'),
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
  lastSeenAt: Timestamp,
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

export const listQueries = {
  hosts: z.strictObject({
    ...page,
    siteId: Uuid.optional(),
    search: Text
      .trim()
      .min(2, 'search needs at least 2 characters')
      .max(255)
      .optional()
      .describe('At least 2 characters. A UUID matches the host id; an IPv4/IPv6 address or CIDR matches by address; anything else matches hostname or FQDN (case-insensitive prefix).'),
  }),
  services: z.strictObject({ ...page, hostId: Uuid.optional() }),
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
