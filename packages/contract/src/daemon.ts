import { z } from 'zod';
import { Timestamp, Uuid } from './common.js';
import { Cidr, NmapSettings } from './inventory.js';

// Daemon request bodies ignore unknown fields (decisions.md): a newer daemon works with an older
// server. API write bodies stay strict.

export const DaemonStatus = z.enum(['pending', 'online', 'degraded']);

export const RegisterRequest = z.object({
  name: z.string().trim().min(1).max(200),
  version: z.string().max(100).default(''),
  os: z.string().max(100).default(''),
  arch: z.string().max(100).default(''),
  capabilities: z
    .record(z.string(), z.boolean())
    .default({})
    .describe('Boolean flags, including `ebpf`, `netflow` and `nmap` (whether nmap is installed).'),
  networkCidrs: z.array(Cidr).max(1024).default([]),
  bootId: Uuid.describe('Changes at every daemon start; a change counts a restart.'),
  siteCode: z.string().trim().min(1).max(100).optional().describe('Binds the daemon to this site (created if no site has the code) on first registration only.'),
  metadata: z.record(z.string(), z.unknown()).default({}),
});

export const RegisterResponse = z.object({
  daemonId: Uuid,
  config: z.object({
    heartbeatIntervalSeconds: z.number().int(),
    jobPollTimeoutSeconds: z.number().int(),
  }),
});

export const HeartbeatRequest = z.object({
  status: z.string().max(50).describe('`online` or `degraded`; any other value is recorded as `degraded`.'),
  loadedSignatures: z.record(z.string(), z.number().int().min(0)).default({}).describe('Counts of loaded signatures, for example `{ core, custom }`.'),
});

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
