import { z } from 'zod';
import { Uuid } from '../common.js';
import { DaemonDetail, DaemonList, DaemonSummary, FlowsRequest, FlowsResponse, HeartbeatRequest, HeartbeatResponse, ObservationsRequest, ObservationsResponse, PollRequest, PollResponse, RegisterRequest, RegisterResponse, SetDaemonEnabledRequest } from '../daemon.js';
import { type RouteDef, route } from '../route-def.js';

/** The daemon protocol (daemon keys). */
export const daemonRoutes = {
  listDaemons: route({
    method: 'GET',
    url: '/api/v1/daemons',
    operationId: 'listDaemons',
    summary: 'The organisation\'s daemons with their status and quiet time (the console\'s Daemons screen and overview)',
    tags: ['console'],
    internal: true,
    auth: { kind: 'session' },
    response: { 200: DaemonList },
  }),
  getDaemon: route({
    method: 'GET',
    url: '/api/v1/daemons/:id',
    operationId: 'getDaemon',
    summary: 'One daemon for its console page: status and why, quiet time, facts, key prefix, recent sessions',
    description: 'A daemon of another organisation, or one removed, is 404 `not_found`.',
    tags: ['console'],
    internal: true,
    auth: { kind: 'session' },
    params: z.object({ id: Uuid }),
    errors: ['not_found'],
    response: { 200: DaemonDetail },
  }),
  setDaemonEnabled: route({
    method: 'PUT',
    url: '/api/v1/daemons/:id/enabled',
    operationId: 'setDaemonEnabled',
    summary: 'Disable a daemon (no scan is handed to it) or enable it again',
    description:
      'A disabled daemon keeps its key and may heartbeat and report flows, but takes no scan: scans of its site go to another online daemon, or are refused with 409 `no_daemon_online`. ' +
      'Its queued sessions not yet handed over are marked `failed` at once (so the network can be scanned elsewhere); a session it already runs may finish, and a cancellation still reaches it. ' +
      'It is never counted silent nor announced with `daemon.offline`. Setting the current state again is a no-op.',
    tags: ['console'],
    internal: true,
    auth: { kind: 'session', minRole: 'admin' },
    params: z.object({ id: Uuid }),
    body: SetDaemonEnabledRequest,
    errors: ['not_found'],
    response: { 200: DaemonSummary },
  }),
  removeDaemon: route({
    method: 'DELETE',
    url: '/api/v1/daemons/:id',
    operationId: 'removeDaemon',
    summary: 'Remove a daemon: its key is revoked at once and it leaves every list',
    description:
      'The daemon key it registered with is revoked: its next request (and that of any other daemon started with the same key) is 401. ' +
      'Its unfinished sessions are marked `failed`; its past sessions keep their history and its name. A daemon registering later under the same name (with a new key) is a new daemon.',
    tags: ['console'],
    internal: true,
    auth: { kind: 'session', minRole: 'admin' },
    params: z.object({ id: Uuid }),
    errors: ['not_found'],
    response: { 204: null },
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
    errors: ['session_cancelled'],
    response: { 200: ObservationsResponse },
  }),
  daemonFlows: route({
    method: 'POST',
    url: '/api/v1/daemon/flows',
    operationId: 'daemonFlows',
    summary: 'Post flow records; each is resolved to the inventory by (dstIp, dstPort) and by source address',
    description:
      'No session id. Records are stored as sent and resolved when read (host topology), so a flow seen before its host was found resolves once it is; unknown peers have null ids. ' +
      'A retried delivery (the same body again) is recognised by its digest and stores nothing. `dropped` accumulates on the daemon (a delivery of `dropped` alone is counted each time). gzip bodies accepted. ' +
      'A record whose bucket started more than 30 days ago (the retention) or more than 10 minutes ahead of the server\'s clock is not stored and not refused: it is counted in `outOfWindow`, so a daemon replaying an old buffer is not refused forever. ' +
      'A timestamp outside 0100-01-01T00:00:00Z to 9999-12-31T23:59:59Z is 400 `validation_failed`.',
    tags: ['daemon'],
    auth: { kind: 'daemon', daemonId: true },
    body: FlowsRequest,
    response: { 200: FlowsResponse },
  }),
} as const satisfies Record<string, RouteDef>;
