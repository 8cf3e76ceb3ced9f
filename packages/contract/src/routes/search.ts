import { SearchQuery, SearchResult } from '../search.js';
import { type RouteDef, route } from '../route-def.js';

/** The console's global search (internal). */
export const searchRoutes = {
  search: route({
    method: 'GET',
    url: '/api/v1/search',
    operationId: 'search',
    summary: 'One term across hosts, services, CVEs (findings by advisory) and networks: a few of each, with how many match',
    description:
      'Each group is ordered as its list is (hosts, services, networks by insertion; CVEs by severity, then score, then id); gone hosts and services are left out, as their lists leave them out by default. ' +
      'A `q` shorter than 2 characters is 400 `invalid_filter`; an unknown parameter 400 `unknown_parameter`.',
    tags: ['console'],
    internal: true,
    auth: { kind: 'apiKey', scope: 'inventory:read' },
    collection: true,
    querystring: SearchQuery,
    response: { 200: SearchResult },
  }),
} as const satisfies Record<string, RouteDef>;
