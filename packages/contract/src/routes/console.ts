import { type RouteDef, route } from '../route-def.js';

/**
 * The web console's files, served by the web process (internal: a browser's pages, not an API).
 * Pages count against the anonymous rate limit like any unauthenticated request; the hashed
 * assets (a handful per page load, cached for a year) do not.
 */
export const consoleRoutes = {
  consoleIndex: route({
    method: 'GET',
    url: '/',
    operationId: 'consoleIndex',
    summary: 'The web console (its HTML page)',
    tags: ['console'],
    internal: true,
    auth: { kind: 'none' },
    produces: 'text/html',
    errors: ['service_unavailable'],
    response: { 200: null },
  }),
  consoleAsset: route({
    method: 'GET',
    url: '/assets/*',
    operationId: 'consoleAsset',
    summary: 'A file of the web console (hashed name, cached for a year)',
    tags: ['console'],
    internal: true,
    auth: { kind: 'none' },
    rateLimited: false,
    produces: 'application/octet-stream',
    errors: ['not_found'],
    response: { 200: null },
  }),
  consolePage: route({
    method: 'GET',
    url: '/*',
    operationId: 'consolePage',
    summary: 'Any other page of the console (its client-side routes): the same HTML page, for a browser asking for HTML',
    description: 'Anything else (API paths, a client not asking for text/html) answers as an unknown route does: 404 `not_found`, or 405 `method_not_allowed` for a path that has other methods.',
    tags: ['console'],
    internal: true,
    auth: { kind: 'none' },
    produces: 'text/html',
    errors: ['not_found', 'method_not_allowed', 'service_unavailable'],
    response: { 200: null },
  }),
} as const satisfies Record<string, RouteDef>;
