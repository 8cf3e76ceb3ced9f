import { HealthResponse } from '../health.js';
import { type RouteDef, route } from '../route-def.js';

/** Liveness: the one route without a credential or a rate limit. */
export const healthRoutes = {
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
} as const satisfies Record<string, RouteDef>;
