import { z } from 'zod';
import { JsonValue, Text, Timestamp, Uuid } from './common.js';
import { Cidr, IpAddress, NmapSettings } from './inventory.js';
import { parseCidr } from './net.js';

// Daemon request bodies ignore unknown fields (decisions.md): a newer daemon works with an older
// server. API write bodies stay strict.

export const DaemonStatus = z.enum(['pending', 'online', 'degraded']);

export const RegisterRequest = z.object({
  name: Text.trim().min(1).max(200),
  version: Text.max(100).default(''),
  os: Text.max(100).default(''),
  arch: Text.max(100).default(''),
  capabilities: z
    .record(Text, z.boolean())
    .default({})
    .describe('Boolean flags, including `ebpf`, `netflow` and `nmap` (whether nmap is installed).'),
  networkCidrs: z.array(Cidr).max(1024).default([]),
  bootId: Uuid.describe('Changes at every daemon start; a change counts a restart.'),
  siteCode: Text.trim().min(1).max(100).optional().describe('Binds the daemon to this site (created if no site has the code) on first registration only.'),
  metadata: z.record(Text, JsonValue).default({}),
});

export const RegisterResponse = z.object({
  daemonId: Uuid,
  config: z.object({
    heartbeatIntervalSeconds: z.number().int(),
    jobPollTimeoutSeconds: z.number().int(),
  }),
});

export const HeartbeatRequest = z.object({
  status: Text.max(50).describe('`online` or `degraded`; any other value is recorded as `degraded`.'),
  loadedSignatures: z.record(Text, z.number().int().min(0)).default({}).describe('Counts of loaded signatures, for example `{ core, custom }`.'),
  reason: Text.max(500)
    .optional()
    .describe(
      'Why the daemon is degraded (which part failed), at most 500 characters; shown in the console until the daemon heartbeats `online`. ' +
        'Ignored with `online`: an online daemon has no reason, and its heartbeat clears the one recorded before.',
    ),
});

/** A daemon as the console lists it (internal). */
export const DaemonSummary = z.object({
  id: Uuid,
  name: z.string(),
  siteId: Uuid.nullable(),
  status: DaemonStatus,
  reason: z.string().nullable().describe('Why the daemon is degraded, from its last heartbeat; null while online or when it gave none.'),
  version: z.string(),
  os: z.string(),
  arch: z.string(),
  capabilities: z.record(z.string(), z.boolean()),
  networkCidrs: z.array(z.string()),
  lastHeartbeatAt: Timestamp.nullable(),
  quietSeconds: z.number().describe('Seconds since the last heartbeat, or since registration when none came yet.'),
  silent: z.boolean().describe('`online` but quiet for more than 300 s: the `daemon.offline` alert was sent (or the next minute\'s check sends it). The console counts such a daemon as silent, not online.'),
  heartbeatIntervalSeconds: z.number().int(),
  flowsDropped: z.number().int().describe('Flow records the daemon reported dropping (its buffer overflowed), in total.'),
  restartCount: z.number().int(),
  registeredAt: Timestamp,
  disabledAt: Timestamp.nullable().describe('Since when an admin has disabled the daemon: no scan is handed to it, and it is never counted silent; null while enabled.'),
});
export const DaemonList = z.object({ data: z.array(DaemonSummary).describe('Every daemon of the organisation, the quietest first.') });

export const HeartbeatResponse = z.object({ status: DaemonStatus, serverTime: Timestamp });

export const PollRequest = z.object({
  waitSeconds: z.number().int().min(0).max(60).default(30).describe('Long-poll wait, at most 60 s. A reverse proxy in front needs a read timeout above 60 s.'),
});

export const NetworkJob = z.object({
  kind: z.literal('network'),
  sessionId: Uuid,
  target: z.object({
    cidr: z.string(),
    excludeCidrs: z.array(z.string()),
    topPortsTcp: z.number().int(),
    topPortsUdp: z.number().int(),
    nmap: NmapSettings.describe('What the daemon must do: `enabled` is false when the daemon reports no nmap, whatever was asked.'),
  }),
});
export const CancelJob = z.object({ kind: z.literal('cancel'), sessionId: Uuid });
export const PollResponse = z.discriminatedUnion('kind', [NetworkJob, CancelJob]);

// ---------------------------------------------------------------------------------------------
// Scans (spec 4.3, decisions.md "Scan sessions")

export const scanSessionStates = ['queued', 'dispatched', 'running', 'completed', 'failed', 'cancelled', 'stalled'] as const;
export const ScanSessionState = z.enum(scanSessionStates);

export const CreateScanRequest = z.strictObject({
  networkId: Uuid,
  nmap: z
    .strictObject({ enabled: z.boolean(), scripts: z.array(z.enum(['default', 'safe', 'version', 'vuln'])).max(4).default([]) })
    .optional()
    .describe('Script categories only (never script names or paths); `external` is always excluded. Absent: the network\'s setting.'),
});

export const ScanSession = z.object({
  sessionId: Uuid,
  state: ScanSessionState,
  networkId: Uuid,
  daemonId: Uuid,
  cidr: z.string(),
  nmap: NmapSettings,
  progress: z.object({
    hostsTotal: z.number().int().nullable().describe('Hosts the sweep found (from the first batch on); null before.'),
    hostsScanned: z.number().int(),
    portsScanned: z.number().int(),
    batches: z.number().int(),
    percent: z.number().nullable(),
  }),
  createdAt: Timestamp,
  dispatchedAt: Timestamp.nullable(),
  startedAt: Timestamp.nullable(),
  finishedAt: Timestamp.nullable(),
  updatedAt: Timestamp,
});

/** A session in the console's histories: with the daemon's name (kept after the daemon is removed) and the network's. */
export const SessionHistoryItem = ScanSession.extend({
  daemonName: z.string(),
  daemonRemoved: z.boolean().describe('The daemon was removed since; its sessions keep their history.'),
  networkName: z.string(),
});
export const SessionHistory = z.object({ data: z.array(SessionHistoryItem) });

// ---------------------------------------------------------------------------------------------
// Observations (spec 4.4, 4.5; decisions.md "Observation elements"). Only the identifying fields
// are required; an absent field means "not observed", never "erase".

const OptText = (max = 1000) => Text.max(max).optional();
const Mac = Text
  .regex(/^[0-9A-Fa-f]{2}([:-]?)[0-9A-Fa-f]{2}(\1[0-9A-Fa-f]{2}){4}$/, 'expected a MAC address such as 00:11:22:33:44:55')
  .transform((m) => m.replace(/[:-]/g, '').toLowerCase().replace(/(..)(?!$)/g, '$1:'));
const Fingerprint = Text.min(1).max(200).describe('Daemon-stable host key.');
const Port = z.number().int().min(0).max(65535);
const Protocol = z.enum(['tcp', 'udp', 'sctp']);

export const ObservedHost = z.object({
  fingerprint: Fingerprint,
  hostname: OptText(255),
  fqdn: OptText(255),
  vendor: OptText(200),
  os: OptText(200),
  deviceType: OptText(100),
  cpes: z
    .array(Text.max(300).regex(/^cpe:2\.3:[oh]:/i, 'expected a CPE 2.3 formatted string of an operating system (o) or hardware (h)'))
    .max(16)
    .optional()
    .describe('The CPEs of the host itself: its operating system and hardware, as service and OS detection report them; the platform NVD\'s AND configurations ask for. Added to the host\'s set; one not reported for 30 days leaves it.'),
  interfaces: z.array(z.object({ name: Text.min(1).max(100), mac: Mac.optional(), addresses: z.array(IpAddressField()).max(64).optional() })).max(256).optional(),
  parentFingerprint: Fingerprint.optional(),
});

function IpAddressField() {
  return IpAddress;
}

export const ObservedIp = z.object({ hostFingerprint: Fingerprint, address: IpAddressField(), family: z.union([z.literal(4), z.literal(6)]).optional(), mac: Mac.optional() });

export const ObservedPort = z.object({
  fingerprint: Fingerprint,
  address: IpAddressField(),
  protocol: Protocol,
  number: Port,
  state: z.enum(['open', 'closed', 'filtered']).default('open'),
  banner: OptText(4000),
});

export const ObservedService = z.object({
  fingerprint: Fingerprint,
  address: IpAddressField(),
  protocol: Protocol,
  port: Port,
  signatureId: OptText(200),
  signatureSource: z.enum(['core', 'custom', 'nmap']).optional(),
  name: OptText(100),
  product: OptText(200),
  vendor: OptText(200),
  version: OptText(100),
  cpe: OptText(500),
  confidence: z.number().int().min(0).max(100).optional(),
  evidence: OptText(4000),
});

export const ObservedNeighbor = z.object({
  fingerprint: Fingerprint,
  localInterface: Text.min(1).max(100),
  remoteChassisId: Text.min(1).max(200),
  remotePortId: OptText(200),
  remoteSystemName: OptText(255),
  managementAddress: IpAddressField().optional(),
  protocol: z.enum(['lldp', 'cdp']).optional().describe('Default lldp when never observed.'),
});

export const ObservedVlan = z.object({
  fingerprint: Fingerprint,
  vlanId: z.number().int().min(0).max(4095),
  name: OptText(100),
  tagged: z.array(Text.max(100)).max(1024).optional(),
  untagged: z.array(Text.max(100)).max(1024).optional(),
});

export const ObservedRoute = z.object({
  fingerprint: Fingerprint,
  destination: Text
    .max(50)
    .refine((d) => parseCidr(d) !== null, 'expected a CIDR (write the default route as 0.0.0.0/0 or ::/0)')
    .describe('CIDR; host bits may be set (the network is stored).'),
  nextHop: IpAddressField().optional(),
  interface: OptText(100),
  metric: z.number().int().min(0).max(2_147_483_647).optional(),
});

export const ObservedLagGroup = z.object({
  fingerprint: Fingerprint,
  name: Text.min(1).max(100),
  protocol: z.enum(['lacp', 'static']).optional(),
  members: z.array(Text.max(100)).max(64).optional(),
});

export const ObservedTls = z.object({
  fingerprint: Fingerprint,
  address: IpAddressField(),
  port: Port,
  chainPem: z.array(Text.max(20_000)).max(10).optional().describe('PEM certificates, leaf first.'),
  subject: OptText(2000),
  issuer: OptText(2000),
  notBefore: Timestamp.optional(),
  notAfter: Timestamp.optional(),
  sha256: Text
    .regex(/^(?:[0-9A-Fa-f]{64}|(?:[0-9A-Fa-f]{2}:){31}[0-9A-Fa-f]{2})$/, 'expected the SHA-256 of the leaf: 64 hex digits, colons allowed between bytes')
    .transform((h) => h.replace(/:/g, '').toLowerCase()),
}).refine((t) => (t.chainPem?.length ?? 0) > 0 || (t.notBefore !== undefined && t.notAfter !== undefined), 'send chainPem, or notBefore and notAfter');

export const FlowRecord = z.object({
  bucketStart: Timestamp.describe('Start of the bucket. A bucket that started more than 30 days ago (the retention) or more than 10 minutes ahead of the server\'s clock is not stored: it is counted in `outOfWindow` of the answer. Kept to the microsecond: digits of the fraction past the sixth are dropped.'),
  srcIp: IpAddressField(),
  dstIp: IpAddressField(),
  dstPort: Port,
  protocol: Text.min(1).max(20),
  packets: z.number().int().min(0),
  bytes: z.number().int().min(0),
  source: Text.min(1).max(50),
});

const batch = <T extends z.ZodType>(item: T) => z.array(item).max(100_000).default([]);

export const ObservationsRequest = z.object({
  sessionId: Uuid,
  final: z.boolean().default(false).describe('True on the last batch of a scan.'),
  hosts: batch(ObservedHost),
  ips: batch(ObservedIp),
  ports: batch(ObservedPort),
  services: batch(ObservedService),
  neighbors: batch(ObservedNeighbor),
  vlans: batch(ObservedVlan),
  routes: batch(ObservedRoute),
  lagGroups: batch(ObservedLagGroup),
  tls: batch(ObservedTls),
  flows: batch(FlowRecord),
  // Spec 4.4: hostsTotal is sent from the first batch on, so every batch carries stats with it.
  stats: z
    .object(
      {
        hostsScanned: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).optional(),
        portsScanned: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).optional(),
        durationMs: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).optional(),
        hostsTotal: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).describe('Hosts the sweep found: the progress denominator, sent with every batch from the first on.'),
      },
      { error: (issue) => (issue.input === undefined ? 'required: an object with at least hostsTotal' : undefined) },
    )
    .describe('Progress of the scan; required with every batch, `hostsTotal` included.'),
});

const OutOfWindow = z
  .number()
  .int()
  .describe('Flow records not stored because their bucket is outside the window: started more than 30 days ago (the retention) or more than 10 minutes ahead of the server\'s clock. Never refused: a daemon replaying an old buffer is answered, not stuck.');

export const ObservationsResponse = z.object({
  accepted: z.number().int().describe('Rows of the batch taken into the inventory (flow records outside the window excluded).'),
  dedupHits: z.number().int().describe('Rows that matched what the inventory already held, changing nothing.'),
  outOfWindow: OutOfWindow,
});

export const FlowsRequest = z.object({
  flows: z.array(FlowRecord).max(200_000),
  dropped: z.number().int().min(0).default(0).describe('Buckets the daemon\'s buffer discarded since its last successful delivery; accumulated on the daemon.'),
});
export const FlowsResponse = z.object({
  accepted: z.number().int().describe('Records stored. A retried delivery (the same body again, for example after a lost answer) is recognised by its digest, stores nothing and answers 0.'),
  outOfWindow: OutOfWindow,
});

/** Assigns a daemon to a site from the console (null clears it); such an assignment wins over the daemon's `siteCode`. */
export const SetDaemonSiteRequest = z.strictObject({ siteId: Uuid.nullable() });

export const EnrolDaemonRequest = z.strictObject({
  name: Text.trim().min(1).max(200).optional().describe('The daemon key\'s name; default `daemon key`.'),
  siteId: Uuid.optional().describe('The site the command line names with `--site`.'),
});

export const EnrolDaemonResponse = z.object({
  keyId: Uuid,
  token: z.string().describe('The daemon key, shown this once (stored hashed).'),
  command: z.string().describe('The line to run on the daemon host.'),
});

/** One daemon for its console page (internal): the summary, its key's prefix, its signatures and its recent sessions. */
export const DaemonDetail = DaemonSummary.extend({
  keyPrefix: z.string().describe('The start of the daemon key it registered with (the key itself is never shown again).'),
  loadedSignatures: z.record(z.string(), z.number()).describe('Signature counts from its last heartbeat, for example `{ core, custom }`.'),
  recentSessions: z.array(SessionHistoryItem).describe('Its 20 newest scan sessions.'),
});

/** Disables (false) or re-enables (true) a daemon from the console. */
export const SetDaemonEnabledRequest = z.strictObject({ enabled: z.boolean() });
