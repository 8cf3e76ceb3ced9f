import { z } from 'zod';
import { Uuid } from '../common.js';
import { type RouteDef, route } from '../route-def.js';
import { HostTopology, TopologyQuery } from '../topology.js';

/** The topology of one host, as JSON and drawn as SVG. */
export const topologyRoutes = {
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
} as const satisfies Record<string, RouteDef>;
