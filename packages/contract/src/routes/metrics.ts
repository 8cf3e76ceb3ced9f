import { type RouteDef, route } from '../route-def.js';

/** Prometheus metrics of one organisation. */
export const metricsRoutes = {
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
} as const satisfies Record<string, RouteDef>;
