import { z } from 'zod';
import { ApiKeyCreated, ApiKeyInfo, ChangePasswordRequest, CreateApiKeyRequest, KeyIntrospection, LoginRequest, type Role, type Scope, SessionInfo } from './auth.js';
import { Uuid } from './common.js';
import { HostTopology, TopologyQuery } from './topology.js';
import { CreateScanRequest, HeartbeatRequest, HeartbeatResponse, FlowsRequest, FlowsResponse, ObservationsRequest, ObservationsResponse, PollRequest, PollResponse, RegisterRequest, RegisterResponse, ScanSession } from './daemon.js';
import {
  type CollectionName,
  CreateNetworkRequest,
  CreateSnapshotRequest,
  Network,
  Page,
  PatchVulnerabilityRequest,
  Snapshot,
  Vulnerability,
  collectionItems,
  listQueries,
} from './inventory.js';
import { HealthResponse } from './health.js';
import { AdminSnapshotResponse, DependencyTickResponse, JobStatusList } from './jobs.js';
import {
  CreateDestinationRequest,
  DeliveryList,
  DeliveryListQuery,
  Destination,
  DestinationCreated,
  DestinationList,
  DestinationTestResult,
  EventList,
  EventListQuery,
  UpdateDestinationRequest,
} from './notifications.js';

/** Who may call a route. The server enforces it; the OpenAPI document states it. */
export type RouteAuth =
  | { kind: 'none' }
  /**
   * `Authorization: Bearer <API key>` holding `scope` (any valid key when absent), capped by the key
   * owner's current role. A key without the scope is 403, or 401 with `missingScopeUnauthorized`
   * (metrics, spec 4.8); a key whose owner's role no longer allows it is 403 either way.
   */
  | { kind: 'apiKey'; scope?: Scope; missingScopeUnauthorized?: boolean }
  /** `Authorization: Bearer <daemon key>`; `daemonId` requires `X-Daemon-ID` (every daemon call but register). */
  | { kind: 'daemon'; daemonId: boolean }
  /** The browser session cookie; `minRole` for admin surfaces. State-changing methods need `X-CSRF-Token`. */
  | { kind: 'session'; minRole?: Role };

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/** One HTTP route of the service: everything about it except the handler. */
export interface RouteDef {
  method: HttpMethod;
  /** Fastify-style path, `:name` for parameters. */
  url: string;
  operationId: string;
  summary: string;
  description?: string;
  tags: string[];
  /** Internal routes (UI and session calls) are absent from `/openapi.json` and carry no compatibility promise (spec 9). */
  internal?: boolean;
  auth: RouteAuth;
  params?: z.ZodObject;
  querystring?: z.ZodObject;
  body?: z.ZodType;
  /** Status → body schema; `null` for an empty body. */
  response: Record<number, z.ZodType | null>;
  /** A collection read: query errors answer unknown_parameter / limit_out_of_range / invalid_filter (spec 4.1). */
  collection?: boolean;
  /** False exempts the route from rate limits (health only, decisions.md). */
  rateLimited?: boolean;
  /** Media type of the success body when it is not JSON. */
  produces?: string;
}

function route<const R extends RouteDef>(r: R): R {
  return r;
}

const AnyDocument = z.record(z.string(), z.unknown());

const collectionSummaries: Record<CollectionName, string> = {
  hosts: 'Hosts: addresses, MACs, names, OS and device type, first and last seen',
  services: 'Services: a port of a host and what runs on it',
  networks: 'Networks the organisation scans',
  sites: 'Sites',
  certificates: 'TLS certificates seen on hosts',
  vulnerabilities: 'Vulnerabilities (findings) on services',
  snapshots: 'Inventory snapshots',
  topologies: 'Topology views (read-only)',
};

function collectionRoute<const N extends CollectionName>(name: N) {
  return route({
    method: 'GET',
    url: `/api/v1/${name}` as `/api/v1/${N}`,
    operationId: `list${name[0]!.toUpperCase()}${name.slice(1)}` as const,
    summary: collectionSummaries[name],
    description:
      'Keyset-paginated in insertion order. `nextCursor` is opaque and bound to this collection, these filters and your organisation. ' +
      'An unknown parameter gives 400 `unknown_parameter`, a bad filter value 400 `invalid_filter`, a bad `limit` 400 `limit_out_of_range`, a bad cursor 400 `invalid_cursor`.',
    tags: ['inventory'],
    auth: { kind: 'apiKey', scope: 'inventory:read' },
    collection: true,
    querystring: listQueries[name] as (typeof listQueries)[N],
    response: { 200: Page(collectionItems[name] as (typeof collectionItems)[N]) },
  });
}

export const routes = {
  getHealth: route({
    method: 'GET',
    url: '/api/health',
    operationId: 'getHealth',
    summary: 'Liveness and database round trip',
    description: 'No credential, never rate limited. 503 with `ok: false` when the database does not answer within 2 seconds. Used as the container health check.',
    tags: ['health'],
    auth: { kind: 'none' },
    rateLimited: false,
    response: { 200: HealthResponse, 503: HealthResponse },
  }),
  getOpenApi: route({
    method: 'GET',
    url: '/openapi.json',
    operationId: 'getOpenApi',
    summary: 'This OpenAPI 3.0.3 document',
    tags: ['meta'],
    internal: true,
    auth: { kind: 'none' },
    response: { 200: AnyDocument },
  }),
  listProblems: route({
    method: 'GET',
    url: '/problems',
    operationId: 'listProblems',
    summary: 'Every problem `code` with its status and meaning (HTML; JSON with `Accept: application/json`)',
    tags: ['meta'],
    internal: true,
    auth: { kind: 'none' },
    response: { 200: null },
    produces: 'text/html',
  }),
  login: route({
    method: 'POST',
    url: '/api/v1/auth/login',
    operationId: 'login',
    summary: 'Open a browser session (sets the HttpOnly session cookie)',
    description: 'Rate limited per client address; a wrong email and a wrong password give the same 401.',
    tags: ['auth'],
    internal: true,
    auth: { kind: 'none' },
    body: LoginRequest,
    response: { 200: SessionInfo },
  }),
  logout: route({
    method: 'POST',
    url: '/api/v1/auth/logout',
    operationId: 'logout',
    summary: 'End the browser session and clear its cookie',
    tags: ['auth'],
    internal: true,
    auth: { kind: 'session' },
    response: { 204: null },
  }),
  me: route({
    method: 'GET',
    url: '/api/v1/auth/me',
    operationId: 'me',
    summary: 'The session\'s user, organisation, role and CSRF token',
    tags: ['auth'],
    internal: true,
    auth: { kind: 'session' },
    response: { 200: SessionInfo },
  }),
  changePassword: route({
    method: 'POST',
    url: '/api/v1/auth/password',
    operationId: 'changePassword',
    summary: 'Change the session user\'s password; every other session of the user ends',
    tags: ['auth'],
    internal: true,
    auth: { kind: 'session' },
    body: ChangePasswordRequest,
    response: { 204: null },
  }),
  listHosts: collectionRoute('hosts'),
  listServices: collectionRoute('services'),
  listNetworks: collectionRoute('networks'),
  listSites: collectionRoute('sites'),
  listCertificates: collectionRoute('certificates'),
  listVulnerabilities: collectionRoute('vulnerabilities'),
  listSnapshots: collectionRoute('snapshots'),
  listTopologies: collectionRoute('topologies'),
  getHostTopology: route({
    method: 'GET',
    url: '/api/v1/hosts/:id/topology',
    operationId: 'getHostTopology',
    summary: 'A host\'s ports, callers and destinations (from flows) and LLDP/CDP neighbours',
    tags: ['inventory'],
    auth: { kind: 'apiKey', scope: 'inventory:read' },
    params: z.object({ id: Uuid }),
    querystring: TopologyQuery,
    response: { 200: HostTopology },
  }),
  getHostTopologySvg: route({
    method: 'GET',
    url: '/api/v1/hosts/:id/topology.svg',
    operationId: 'getHostTopologySvg',
    summary: 'The host topology drawn as SVG: callers left, the host centre, destinations right',
    description: 'States in the image the window it drew and how many peers it left out. No raster variant.',
    tags: ['inventory'],
    auth: { kind: 'apiKey', scope: 'inventory:read' },
    params: z.object({ id: Uuid }),
    querystring: TopologyQuery,
    response: { 200: null },
    produces: 'image/svg+xml',
  }),
  createNetwork: route({
    method: 'POST',
    url: '/api/v1/networks',
    operationId: 'createNetwork',
    summary: 'Add a network to scan',
    description: 'A CIDR with host bits set is refused (400), never truncated. A second network with the same CIDR gives 409 `duplicate`. A `siteId` of another organisation is 404.',
    tags: ['inventory'],
    auth: { kind: 'apiKey', scope: 'inventory:write' },
    body: CreateNetworkRequest,
    response: { 201: Network },
  }),
  patchVulnerability: route({
    method: 'PATCH',
    url: '/api/v1/vulnerabilities/:id',
    operationId: 'patchVulnerability',
    summary: 'Change a vulnerability\'s state (acknowledge, mark false positive, reopen)',
    description:
      'Allowed moves: open → acknowledged | false_positive; acknowledged → open | false_positive; false_positive → open; resolved → none (only the matcher reopens it). ' +
      'Setting the current state is a 200 no-op. A refused move is 409 `invalid_transition` naming the allowed next states.',
    tags: ['inventory'],
    auth: { kind: 'apiKey', scope: 'inventory:write' },
    params: z.object({ id: Uuid }),
    body: PatchVulnerabilityRequest,
    response: { 200: Vulnerability },
  }),
  createSnapshot: route({
    method: 'POST',
    url: '/api/v1/snapshots',
    operationId: 'createSnapshot',
    summary: 'Take an inventory snapshot now',
    description: '`stats` counts each entity type in one consistent read. `reason` defaults to `manual`; `scheduled` is reserved for the daily job (400).',
    tags: ['inventory'],
    auth: { kind: 'apiKey', scope: 'inventory:write' },
    body: CreateSnapshotRequest,
    response: { 201: Snapshot },
  }),
  createScan: route({
    method: 'POST',
    url: '/api/v1/scans',
    operationId: 'createScan',
    summary: 'Queue a scan of a network on an online daemon of its site',
    description:
      'The daemon is an online daemon of the network\'s site; for a network without a site, an online daemon whose reported `networkCidrs` contain it. ' +
      'None: 409 `no_daemon_online` (nothing queued). nmap asked but the daemon has none: 409 `nmap_unavailable`. ' +
      'A queued or running session for the network: 409 `scan_already_active` with its `sessionId`. A stalled session of the network is superseded: marked `failed`.',
    tags: ['scans'],
    auth: { kind: 'apiKey', scope: 'scan:run' },
    body: CreateScanRequest,
    response: { 202: ScanSession },
  }),
  getScan: route({
    method: 'GET',
    url: '/api/v1/scans/:id',
    operationId: 'getScan',
    summary: 'A scan session: its state and progress',
    tags: ['scans'],
    auth: { kind: 'apiKey', scope: 'inventory:read' },
    params: z.object({ id: Uuid }),
    response: { 200: ScanSession },
  }),
  cancelScan: route({
    method: 'POST',
    url: '/api/v1/scans/:id/cancel',
    operationId: 'cancelScan',
    summary: 'Cancel a scan session; a dispatched or running one is told through a `cancel` job',
    description: 'A finished session (completed, failed, cancelled) answers 409 `conflict`. A cancelled session never removes anything from the inventory.',
    tags: ['scans'],
    auth: { kind: 'apiKey', scope: 'scan:run' },
    params: z.object({ id: Uuid }),
    response: { 200: ScanSession },
  }),
  daemonRegister: route({
    method: 'POST',
    url: '/api/v1/daemon/register',
    operationId: 'daemonRegister',
    summary: 'Register a daemon (idempotent by name within the organisation)',
    description: 'A restarting daemon keeps its id. `siteCode` binds a site on first registration only; a site set in the UI always wins.',
    tags: ['daemon'],
    auth: { kind: 'daemon', daemonId: false },
    body: RegisterRequest,
    response: { 200: RegisterResponse },
  }),
  daemonHeartbeat: route({
    method: 'POST',
    url: '/api/v1/daemon/heartbeat',
    operationId: 'daemonHeartbeat',
    summary: 'Report liveness and status',
    tags: ['daemon'],
    auth: { kind: 'daemon', daemonId: true },
    body: HeartbeatRequest,
    response: { 200: HeartbeatResponse },
  }),
  daemonPoll: route({
    method: 'POST',
    url: '/api/v1/daemon/jobs/poll',
    operationId: 'daemonPoll',
    summary: 'Long-poll for a job (at most 60 s); 204 with an empty body when none came',
    description: 'Answers at once when a job is queued, else waits until one is queued for this daemon (woken across processes by PostgreSQL NOTIFY) or `waitSeconds` pass.',
    tags: ['daemon'],
    auth: { kind: 'daemon', daemonId: true },
    body: PollRequest,
    response: { 200: PollResponse, 204: null },
  }),
  daemonObservations: route({
    method: 'POST',
    url: '/api/v1/daemon/observations',
    operationId: 'daemonObservations',
    summary: 'Post a batch of a scan\'s observations; the control plane reconciles them into the inventory',
    description:
      'One transaction per batch; idempotent (a replayed, split or duplicated batch changes nothing further). Absent fields mean "not observed", never "erase". ' +
      'The first batch moves the session to running, `final` completes it; only a completed session marks absent what it did not see inside its CIDR. ' +
      'A batch for a cancelled session is 409 `session_cancelled`; for an unknown session 404. Bodies may be gzip-compressed (`Content-Encoding: gzip`), up to `SERVICE_INGEST_BODY_LIMIT_BYTES` (413 above).',
    tags: ['daemon'],
    auth: { kind: 'daemon', daemonId: true },
    body: ObservationsRequest,
    response: { 200: ObservationsResponse },
  }),
  daemonFlows: route({
    method: 'POST',
    url: '/api/v1/daemon/flows',
    operationId: 'daemonFlows',
    summary: 'Post flow records; each is resolved to the inventory by (dstIp, dstPort) and by source address',
    description:
      'No session id. Records are stored as sent and resolved when read (host topology), so a flow seen before its host was found resolves once it is; unknown peers have null ids. ' +
      'A retried delivery (the same body again) is recognised by its digest and stores nothing. `dropped` accumulates on the daemon (a delivery of `dropped` alone is counted each time). gzip bodies accepted.',
    tags: ['daemon'],
    auth: { kind: 'daemon', daemonId: true },
    body: FlowsRequest,
    response: { 200: FlowsResponse },
  }),
  introspectKey: route({
    method: 'GET',
    url: '/api/v1/auth/key',
    operationId: 'introspectKey',
    summary: 'The calling API key: its organisation, owner, role and the scopes it holds now',
    description: '`effectiveScopes` is the key\'s scopes capped by the owner\'s current role, re-read on every request.',
    tags: ['auth'],
    internal: true,
    auth: { kind: 'apiKey' },
    response: { 200: KeyIntrospection },
  }),
  listApiKeys: route({
    method: 'GET',
    url: '/api/v1/auth/keys',
    operationId: 'listApiKeys',
    summary: 'API keys of the organisation: an admin or owner sees all, others their own',
    tags: ['auth'],
    internal: true,
    auth: { kind: 'session' },
    response: { 200: z.object({ data: z.array(ApiKeyInfo) }) },
  }),
  createApiKey: route({
    method: 'POST',
    url: '/api/v1/auth/keys',
    operationId: 'createApiKey',
    summary: 'Mint an API key for the session user; scopes above the user\'s role are refused. The token is shown once.',
    tags: ['auth'],
    internal: true,
    auth: { kind: 'session' },
    body: CreateApiKeyRequest,
    response: { 201: ApiKeyCreated },
  }),
  revokeApiKey: route({
    method: 'DELETE',
    url: '/api/v1/auth/keys/:id',
    operationId: 'revokeApiKey',
    summary: 'Revoke an API key (own keys; an admin or owner any key of the organisation)',
    tags: ['auth'],
    internal: true,
    auth: { kind: 'session' },
    params: z.object({ id: Uuid }),
    response: { 204: null },
  }),
  getMetrics: route({
    method: 'GET',
    url: '/api/v1/metrics',
    operationId: 'getMetrics',
    summary: 'Prometheus metrics of the key\'s organisation (text exposition format 0.0.4)',
    description:
      'One key serves one tenant. A key without `metrics:read` gets 401 naming the scope. Count metrics list every state of their enumeration, 0 where nothing is counted; ' +
      'age metrics appear only where the thing exists (no snapshot ever: no `service_snapshot_age_seconds`). Computed at scrape time with a fixed number of queries.',
    tags: ['metrics'],
    auth: { kind: 'apiKey', scope: 'metrics:read', missingScopeUnauthorized: true },
    response: { 200: null },
    produces: 'text/plain; version=0.0.4',
  }),
  adminSnapshot: route({
    method: 'POST',
    url: '/api/v1/admin/snapshot',
    operationId: 'adminSnapshot',
    summary: 'Run the inventory.snapshot job now for the session\'s organisation: today\'s scheduled snapshot, taken if it does not exist yet',
    description: 'Idempotent per UTC day, like the job. A snapshot with another reason is `POST /api/v1/snapshots`.',
    tags: ['admin'],
    internal: true,
    auth: { kind: 'session', minRole: 'admin' },
    response: { 200: AdminSnapshotResponse },
  }),
  adminDependencyTick: route({
    method: 'POST',
    url: '/api/v1/admin/dependency-tick',
    operationId: 'adminDependencyTick',
    summary: 'Run the topology.dependencies job now for the session\'s organisation: rebuild the application topology from recent flows',
    tags: ['admin'],
    internal: true,
    auth: { kind: 'session', minRole: 'admin' },
    response: { 200: DependencyTickResponse },
  }),
  adminJobs: route({
    method: 'GET',
    url: '/api/v1/admin/jobs',
    operationId: 'adminJobs',
    summary: 'Status of the scheduled jobs (Settings → Jobs): each job as a whole, and its last run for the session\'s organisation',
    tags: ['admin'],
    internal: true,
    auth: { kind: 'session', minRole: 'admin' },
    response: { 200: JobStatusList },
  }),
  listEvents: route({
    method: 'GET',
    url: '/api/v1/admin/events',
    operationId: 'listEvents',
    summary: 'The organisation\'s events (decisions.md payload), oldest first after `after`',
    tags: ['notifications'],
    internal: true,
    auth: { kind: 'session', minRole: 'admin' },
    querystring: EventListQuery,
    response: { 200: EventList },
  }),
  listDestinations: route({
    method: 'GET',
    url: '/api/v1/admin/notifications/destinations',
    operationId: 'listDestinations',
    summary: 'Notification destinations of the organisation (secrets never shown)',
    tags: ['notifications'],
    internal: true,
    auth: { kind: 'session', minRole: 'admin' },
    response: { 200: DestinationList },
  }),
  createDestination: route({
    method: 'POST',
    url: '/api/v1/admin/notifications/destinations',
    operationId: 'createDestination',
    summary: 'Add a webhook, Slack-compatible or SMTP destination, with the event kinds and minimum severity it receives',
    description: 'Connection settings are stored encrypted under SERVICE_SECRET_KEY. A second destination with the same name (case-insensitive): 409 `duplicate`.',
    tags: ['notifications'],
    internal: true,
    auth: { kind: 'session', minRole: 'admin' },
    body: CreateDestinationRequest,
    response: { 201: DestinationCreated },
  }),
  updateDestination: route({
    method: 'PATCH',
    url: '/api/v1/admin/notifications/destinations/:id',
    operationId: 'updateDestination',
    summary: 'Change a destination: name, routing, enabled, or its configuration (secrets left out are kept)',
    tags: ['notifications'],
    internal: true,
    auth: { kind: 'session', minRole: 'admin' },
    params: z.object({ id: Uuid }),
    body: UpdateDestinationRequest,
    response: { 200: Destination },
  }),
  deleteDestination: route({
    method: 'DELETE',
    url: '/api/v1/admin/notifications/destinations/:id',
    operationId: 'deleteDestination',
    summary: 'Remove a destination and its queued deliveries',
    tags: ['notifications'],
    internal: true,
    auth: { kind: 'session', minRole: 'admin' },
    params: z.object({ id: Uuid }),
    response: { 204: null },
  }),
  testDestination: route({
    method: 'POST',
    url: '/api/v1/admin/notifications/destinations/:id/test',
    operationId: 'testDestination',
    summary: 'Send a `notification.test` event to the destination now and report what its server answered (nothing is queued or retried)',
    tags: ['notifications'],
    internal: true,
    auth: { kind: 'session', minRole: 'admin' },
    params: z.object({ id: Uuid }),
    response: { 200: DestinationTestResult },
  }),
  listDeliveries: route({
    method: 'GET',
    url: '/api/v1/admin/notifications/deliveries',
    operationId: 'listDeliveries',
    summary: 'Recent alert deliveries, newest first, with every attempt\'s status code and error',
    tags: ['notifications'],
    internal: true,
    auth: { kind: 'session', minRole: 'admin' },
    querystring: DeliveryListQuery,
    response: { 200: DeliveryList },
  }),
  sse: route({
    method: 'GET',
    url: '/api/sse',
    operationId: 'streamChanges',
    summary: 'Live stream of the organisation\'s inventory changes (Server-Sent Events)',
    description:
      'Each change of the change log as `id: <change id>`, `event: <type>.<action>`, `data: {"type","id","action","at"}`; a comment line every 15 s. ' +
      '`Last-Event-ID` (or `?lastEventId=`) resumes from the change log of the last 24 hours; older, the stream starts with `event: reset` (reload). ' +
      'A client that does not read is sent `event: overflow` and closed. Proxies must not buffer it (`X-Accel-Buffering: no` is sent).',
    tags: ['events'],
    internal: true,
    auth: { kind: 'session' },
    querystring: z.object({ lastEventId: z.coerce.number().int().min(0).optional() }),
    response: { 200: null },
    produces: 'text/event-stream',
  }),
} as const satisfies Record<string, RouteDef>;

export type RouteName = keyof typeof routes;
