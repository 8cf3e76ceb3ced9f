import { routes } from '@surveyor/contract';
import type { FastifyInstance } from 'fastify';
import type { Database } from '../db/database.js';
import { addRoute } from '../http/route.js';

/** `GET /api/health` (spec 4.7): 200 when the database answers within 2 s, else 503 with ok=false. */
export function registerHealthRoutes(app: FastifyInstance, deps: { database: Database; version: string }): void {
  addRoute(app, routes.getHealth, async (_request, reply) => {
    const ok = await deps.database.ping(2000);
    return reply.code(ok ? 200 : 503).send({ ok, version: deps.version, ts: new Date().toISOString() });
  });
}
