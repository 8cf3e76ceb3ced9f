import { z } from 'zod';
import { Uuid } from '../common.js';
import { CreateScanRequest, ScanSession, SessionHistory } from '../daemon.js';
import { type RouteDef, route } from '../route-def.js';

/** Scan sessions: queue, read, cancel (API keys). */
export const scanRoutes = {
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
    errors: ['not_found', 'no_daemon_online', 'nmap_unavailable', 'scan_already_active'],
    response: { 202: ScanSession },
  }),
  listNetworkScans: route({
    method: 'GET',
    url: '/api/v1/scans',
    operationId: 'listNetworkScans',
    summary: 'A network\'s scan sessions, newest first (the console\'s history of a network)',
    description:
      'The sessions of `networkId` in the session\'s organisation, newest (`createdAt`) first, at most `limit` (default 20), each with the name of its daemon (kept after the daemon is removed). ' +
      'A network that does not exist in the session\'s organisation (another organisation\'s included) answers 404 `not_found`.',
    tags: ['console'],
    internal: true,
    auth: { kind: 'session' },
    querystring: z.strictObject({ networkId: Uuid, limit: z.coerce.number().int().min(1).max(100).default(20) }),
    errors: ['not_found'],
    response: { 200: SessionHistory },
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
    errors: ['conflict'],
    response: { 200: ScanSession },
  }),
} as const satisfies Record<string, RouteDef>;
