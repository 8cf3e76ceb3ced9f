import { z } from 'zod';
import { Uuid } from '../common.js';
import { Network, NetworkOverlaps, NetworkOverlapsQuery, PatchNetworkRequest } from '../inventory.js';
import { type RouteDef, route } from '../route-def.js';

/** The console's network lifecycle (internal): edit, delete, and the overlap warning of the add and edit forms. */
export const networkRoutes = {
  patchNetwork: route({
    method: 'PATCH',
    url: '/api/v1/networks/:id',
    operationId: 'patchNetwork',
    summary: 'Edit a network: name, site, schedule, excluded ranges, top ports, nmap',
    description:
      'Fields left out stay as they are; `scanIntervalMinutes: null` stops the schedule, `siteId: null` clears the site. ' +
      'The CIDR cannot change (its sessions and history are of that range): add a network for another range and delete this one; a `cidr` field is 400 `validation_failed` like any unknown field. ' +
      'A network or site of another organisation is 404. A session already queued keeps the settings it was queued with.',
    tags: ['console'],
    internal: true,
    auth: { kind: 'apiKey', scope: 'inventory:write' },
    params: z.object({ id: Uuid }),
    body: PatchNetworkRequest,
    errors: ['not_found'],
    response: { 200: Network },
  }),
  deleteNetwork: route({
    method: 'DELETE',
    url: '/api/v1/networks/:id',
    operationId: 'deleteNetwork',
    summary: 'Delete a network and its scan history; its hosts stay in the inventory',
    description:
      'Hosts found in the range are hosts of the inventory, not parts of the network: they stay (with their services, certificates and findings) until they are gone. ' +
      'The network\'s scan sessions are deleted with it (the audit log keeps who scanned and deleted what). ' +
      'A session queued, dispatched or running refuses it with 409 `scan_already_active` (cancel it first); a stalled one is deleted with the rest.',
    tags: ['console'],
    internal: true,
    auth: { kind: 'apiKey', scope: 'inventory:write' },
    params: z.object({ id: Uuid }),
    errors: ['not_found', 'scan_already_active'],
    response: { 204: null },
  }),
  networkOverlaps: route({
    method: 'GET',
    url: '/api/v1/networks/overlaps',
    operationId: 'networkOverlaps',
    summary: 'The networks whose range overlaps a CIDR (the add and edit forms\' warning)',
    description: 'Overlapping ranges are allowed (a warning, not a refusal): a host inside both is scanned by both. The same CIDR is a `duplicate` on create, so it is not listed here.',
    tags: ['console'],
    internal: true,
    auth: { kind: 'session' },
    querystring: NetworkOverlapsQuery,
    response: { 200: NetworkOverlaps },
  }),
} as const satisfies Record<string, RouteDef>;
