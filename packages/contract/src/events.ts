import { z } from 'zod';
import { Timestamp, Uuid } from './common.js';

// Events (spec 6, decisions.md "Events and alerts"): every kind the service emits, what its
// subject is, how severe it is, and the schema of its `data`. The server writes events only
// through `events/emit.ts`, which checks `data` against these schemas.

export const EventSeverity = z.enum(['info', 'warning', 'critical']);
export type EventSeverity = z.output<typeof EventSeverity>;

const NullableTimestamp = Timestamp.nullable();

/**
 * One entry per event kind: the subject's type, the severity (or `computed` where the emitter
 * decides per event: `tls.expiring` by threshold, `vulnerability.opened` by the finding's
 * severity), and the schema of `data`. Objects are loose: a receiver ignores what it does not know.
 */
export const eventKindInfo = {
  'tls.expiring': {
    subject: 'certificate',
    severity: 'computed',
    description: 'A certificate crossed an expiry threshold (30, 14, 7, 1 days, or expired). Only current certificates (not replaced on their endpoint, service not gone). Severity: 30/14 days info, 7/1 days warning, expired critical.',
    data: z.looseObject({
      thresholdDays: z.number().int(),
      expired: z.boolean(),
      notAfter: Timestamp,
      daysLeft: z.number().int(),
      subject: z.string().nullable(),
      issuer: z.string().nullable(),
      sha256: z.string(),
      hostId: Uuid.nullable(),
      address: z.string().nullable(),
      port: z.number().int().nullable(),
    }),
  },
  'daemon.offline': {
    subject: 'daemon',
    severity: 'critical',
    description: 'An online daemon has been quiet for more than 300 s (once per quiet episode).',
    data: z.looseObject({ name: z.string(), siteId: Uuid.nullable(), lastHeartbeatAt: NullableTimestamp, quietSeconds: z.number().nullable() }),
  },
  'daemon.online': {
    subject: 'daemon',
    severity: 'info',
    description: 'A daemon announced offline heartbeated again (the quiet episode ends); `reason` says why when it came back `degraded`.',
    data: z.looseObject({ name: z.string(), status: z.string(), reason: z.string().nullable().optional(), offlineSince: NullableTimestamp, lastHeartbeatAt: NullableTimestamp, quietSeconds: z.number().nullable() }),
  },
  'scan.completed': {
    subject: 'scan_session',
    severity: 'info',
    description: 'The final batch of a scan session arrived.',
    data: z.looseObject({
      cidr: z.string(),
      daemonId: Uuid,
      goneServices: z.number().int().describe('Services marked gone inside the scanned CIDR.'),
      hostsScanned: z.number().int().optional(),
      portsScanned: z.number().int().optional(),
      durationMs: z.number().int().optional(),
      hostsTotal: z.number().int().optional(),
    }),
  },
  'scan.failed': {
    subject: 'scan_session',
    severity: 'warning',
    description: 'A scan session ended without completing (for example a stalled session superseded by a new scan).',
    data: z.looseObject({ networkId: Uuid, reason: z.string() }),
  },
  'scan.stalled': {
    subject: 'scan_session',
    severity: 'warning',
    description: 'A running session whose daemon stopped heartbeating, or that received no batch for SERVICE_SCAN_STALL_SECONDS.',
    data: z.looseObject({ daemonId: Uuid, networkId: Uuid }),
  },
  'vulnerability.opened': {
    subject: 'vulnerability',
    severity: 'computed',
    description: 'A critical or high finding was opened, or moved back to open (written by a database trigger on findings).',
    data: z.looseObject({
      cveId: z.string(),
      advisoryId: z.string().nullable(),
      severity: z.string(),
      score: z.number().nullable(),
      summary: z.string().nullable(),
      hostId: Uuid.nullable(),
      serviceId: Uuid.nullable(),
      reopened: z.boolean().optional(),
    }),
  },
  'job.failed': {
    subject: 'job',
    severity: 'critical',
    description: 'A scheduled job failed after a run that did not (once per failure episode), for the job as a whole or for one organisation.',
    data: z.looseObject({ job: z.string(), scope: z.enum(['job', 'organisation']), attempts: z.number().int(), error: z.string().nullable() }),
  },
  'member.created': {
    subject: 'user',
    severity: 'info',
    description: 'The identity provider (SCIM) provisioned a member, or took over an existing one.',
    data: z.looseObject({ email: z.string(), role: z.string(), via: z.literal('scim') }),
  },
  'member.updated': {
    subject: 'user',
    severity: 'info',
    description: 'The identity provider changed a member: attributes, groups, or the role its groups give.',
    data: z.looseObject({ email: z.string(), role: z.string(), previousRole: z.string().optional(), groups: z.array(z.string()).optional(), via: z.literal('scim') }),
  },
  'member.deactivated': {
    subject: 'user',
    severity: 'warning',
    description: 'The identity provider deactivated a member (active: false): their sessions ended and their keys stopped working.',
    data: z.looseObject({ email: z.string(), sessionsEnded: z.number().int(), via: z.literal('scim') }),
  },
  'member.reactivated': {
    subject: 'user',
    severity: 'info',
    description: 'The identity provider reactivated a member: their keys work again, with the role their groups give now.',
    data: z.looseObject({ email: z.string(), role: z.string(), via: z.literal('scim') }),
  },
  'member.deleted': {
    subject: 'user',
    severity: 'warning',
    description: 'The identity provider deleted a member: the membership, its sessions and its keys are gone.',
    data: z.looseObject({ email: z.string(), sessionsEnded: z.number().int(), keysRemoved: z.number().int(), via: z.literal('scim') }),
  },
  'host.discovered': {
    subject: 'host',
    severity: 'info',
    description: 'A host seen for the first time.',
    data: z.looseObject({ fingerprint: z.string(), siteId: Uuid.nullable() }),
  },
} as const satisfies Record<string, { subject: string; severity: EventSeverity | 'computed'; description: string; data: z.ZodObject }>;

export type EventKindName = keyof typeof eventKindInfo;
/** The `data` of an event of kind K, as written. */
export type EventData<K extends EventKindName> = z.input<(typeof eventKindInfo)[K]['data']>;

/** Every event kind the service emits (decisions.md). */
export const eventKinds = Object.keys(eventKindInfo) as [EventKindName, ...EventKindName[]];
export const EventKind = z.enum(eventKinds);

/** What a new destination receives when `events` is not given: problems and their recoveries, not routine news. */
export const defaultDestinationEvents = ['tls.expiring', 'daemon.offline', 'daemon.online', 'scan.failed', 'scan.stalled', 'vulnerability.opened', 'job.failed'] as const;

/** decisions.md: `{ id, kind, occurredAt, organisationId, subject: { type, id }, data }`; what a webhook receives. */
export const EventPayload = z.object({
  id: Uuid,
  kind: z.string(),
  severity: EventSeverity,
  occurredAt: Timestamp,
  organisationId: Uuid,
  subject: z.object({ type: z.string(), id: z.string() }),
  data: z.record(z.string(), z.unknown()),
});

/**
 * The live change stream's vocabulary (`GET /api/sse`): every entity whose changes it carries, and
 * what happened to it (`started`, `finished`, `failed` are a job's). Each message is `event: <type>.<action>` with `data: ChangeMessage`. The
 * server logs changes only with these; the console maps each type to what it refreshes.
 */
export const changeTypes = ['host', 'service', 'network', 'scan', 'snapshot', 'daemon', 'topology', 'job', 'vulnerability', 'site'] as const;
export const changeActions = ['created', 'updated', 'deleted', 'started', 'finished', 'failed'] as const;
export type ChangeType = (typeof changeTypes)[number];
export type ChangeAction = (typeof changeActions)[number];
/** The stream's control events: `reset` (the resume point is too old: reload), `overflow` (the client fell behind and was closed). */
export const streamControlEvents = ['reset', 'overflow'] as const;

export const ChangeMessage = z.object({
  type: z.enum(changeTypes),
  id: z.string(),
  action: z.enum(changeActions),
  at: z.string(),
});
