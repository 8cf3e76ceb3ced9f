import { z } from 'zod';
import { JsonValue, NOT_WELL_FORMED, Text, Timestamp, Uuid, isWellFormedText } from './common.js';
import { EventKind, EventPayload, EventSeverity, defaultDestinationEvents, eventKinds } from './events.js';

// Events, notification destinations and deliveries (spec 6, decisions.md "Events and alerts").

export const EventList = z.object({
  data: z.array(EventPayload.extend({ seq: z.number().int().describe('Monotonic per deployment; `after` of the next page.') })),
  nextAfter: z.number().int().nullable(),
  nextBefore: z.number().int().nullable().describe('With `order=desc`: `before` of the next (older) page; null on the last.'),
});

export const EventListQuery = z.object({
  after: z.coerce.number().int().min(0).default(0).describe('Events with a larger `seq` (oldest first).'),
  order: z.enum(['asc', 'desc']).default('asc').describe('`desc`: the newest first, paged with `before` (the console\'s event log).'),
  before: z.coerce.number().int().min(1).optional().describe('With `order=desc`: events with a smaller `seq`.'),
  limit: z.coerce.number().int().min(1).max(500).default(100),
  kind: EventKind.optional(),
  subjectId: Text.min(1).max(200).optional().describe('Only events about this subject (a daemon, host, certificate, finding, job…).'),
  since: Timestamp.optional().describe('Only events that occurred at or after this time.'),
  until: Timestamp.optional().describe('Only events that occurred before this time.'),
});

/** One audit row as the console lists it: what changed, on what, by whom, when. */
export const AuditEntry = z.object({
  id: Uuid,
  at: Timestamp,
  action: z.string().describe('`<target>.<verb>`, for example `network.created`, `vulnerability.updated`, `member.role_changed`.'),
  target: z.object({ type: z.string(), id: z.string().nullable() }),
  actor: z.object({
    type: z.enum(['key', 'session', 'cli', 'system']),
    email: z.string().nullable().describe('The member behind the session or key.'),
    keyPrefix: z.string().nullable().describe('The API key used, by its prefix.'),
    job: z.string().nullable().describe('The job that acted, for system rows (for example `cve.match`).'),
  }),
  changes: z.record(z.string(), JsonValue),
  requestId: z.string().nullable(),
});

export const AuditQuery = z.strictObject({
  action: Text.min(1).max(100).optional().describe('An action, or its start (`vulnerability.` for every change of findings).'),
  targetType: Text.min(1).max(50).optional(),
  targetId: Text.min(1).max(200).optional(),
  since: Timestamp.optional(),
  until: Timestamp.optional(),
  limit: z.coerce.number().int().min(1).max(500).default(100),
  cursor: Text.min(1).max(200).optional().describe('`nextCursor` of the previous page.'),
});
export const AuditPage = z.object({ data: z.array(AuditEntry).describe('The newest first.'), nextCursor: z.string().nullable() });

const Name = Text.trim().min(1).max(200);
const HttpUrl = z
  .url({ protocol: /^https?$/ })
  .max(2000)
  .refine(isWellFormedText, NOT_WELL_FORMED)
  .describe('http or https URL.');

export const WebhookConfig = z.object({
  url: HttpUrl,
  secret: Text
    .min(16)
    .max(200)
    .optional()
    .describe('HMAC-SHA256 key of the `X-Signature` header. Generated (and returned once) when absent on create; kept when absent on update.'),
});
export const SlackConfig = z.object({ url: HttpUrl.describe('The Slack (or compatible) incoming-webhook URL. It is a secret: stored encrypted, shown redacted.') });
export const EmailConfig = z.object({
  host: Text.trim().min(1).max(255),
  port: z.number().int().min(1).max(65535).default(587),
  secure: z.boolean().default(false).describe('TLS from the first byte (port 465). False: STARTTLS when the server offers it.'),
  requireTls: z.boolean().default(false).describe('Refuse to send unless STARTTLS succeeds.'),
  username: Text.max(320).optional(),
  password: Text.max(1000).optional().describe('Stored encrypted, never shown. Kept when absent on update.'),
  from: z.email(),
  to: z.array(z.email()).min(1).max(50),
});

const RoutingFields = {
  events: z
    .array(EventKind)
    .min(1)
    .max(eventKinds.length)
    .describe(`Event kinds this destination receives. Default: ${defaultDestinationEvents.join(', ')}.`)
    .optional(),
  minSeverity: EventSeverity.optional().describe('Events below this severity are not sent. Default info.'),
  enabled: z.boolean().optional(),
};

export const CreateDestinationRequest = z.discriminatedUnion('kind', [
  z.strictObject({ kind: z.literal('webhook'), name: Name, config: WebhookConfig, ...RoutingFields }),
  z.strictObject({ kind: z.literal('slack'), name: Name, config: SlackConfig, ...RoutingFields }),
  z.strictObject({ kind: z.literal('email'), name: Name, config: EmailConfig, ...RoutingFields }),
]);

export const UpdateDestinationRequest = z.strictObject({
  name: Name.optional(),
  config: z.record(Text, JsonValue).optional().describe('The whole configuration of the destination\'s kind (as on create); secrets left out are kept.'),
  ...RoutingFields,
});

export const DestinationKind = z.enum(['webhook', 'slack', 'email']);

export const Destination = z.object({
  id: Uuid,
  name: z.string(),
  kind: DestinationKind,
  enabled: z.boolean(),
  events: z.array(z.string()),
  minSeverity: EventSeverity,
  target: z.string().describe('Where it sends, redacted: the webhook URL without query or credentials, the Slack host, the SMTP server and recipients.'),
  createdAt: Timestamp,
  updatedAt: Timestamp,
});

export const DestinationCreated = Destination.extend({
  signingSecret: z.string().optional().describe('The webhook signing secret, when the service generated it: shown this once.'),
});

export const DestinationList = z.object({ data: z.array(Destination) });

export const DestinationTestResult = z.object({
  ok: z.boolean(),
  statusCode: z.number().int().nullable().describe('HTTP status, or SMTP reply code.'),
  error: z.string().nullable(),
  durationMs: z.number().int(),
});

export const DeliveryState = z.enum(['pending', 'delivered', 'dead']);

export const Delivery = z.object({
  id: Uuid,
  eventId: Uuid,
  eventKind: z.string(),
  subject: z
    .object({
      type: z.string().describe('`host`, `certificate`, `vulnerability`, `daemon`, `scan_session`, `job`…'),
      id: z.string(),
      name: z.string().nullable().describe('What the event is about, named: a certificate\'s subject and endpoint, a CVE id, a daemon\'s name, a network, a job; for a host, null (name it by `hostId`).'),
      hostId: Uuid.nullable().describe('The host the event concerns (the host itself, or the host of the certificate or finding); null for other subjects.'),
    })
    .describe('The event\'s subject, so a delivery says which host or certificate it concerns.'),
  destinationId: Uuid,
  state: DeliveryState,
  attempts: z.number().int(),
  nextAttemptAt: Timestamp.nullable().describe('When the next attempt is due; null once delivered or dead.'),
  lastStatus: z.number().int().nullable(),
  lastError: z.string().nullable(),
  createdAt: Timestamp,
  deliveredAt: Timestamp.nullable(),
  attemptLog: z.array(z.object({ attempt: z.number().int(), at: Timestamp, durationMs: z.number().int(), statusCode: z.number().int().nullable(), error: z.string().nullable() })),
});

export const DeliveryListQuery = z.object({
  state: DeliveryState.optional(),
  destinationId: Uuid.optional(),
  limit: z.coerce.number().int().min(1).max(200).default(50),
});

export const DeliveryList = z.object({ data: z.array(Delivery) });
