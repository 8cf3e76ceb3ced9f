import { routes } from '@surveyor/contract';
import type { FastifyInstance } from 'fastify';
import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.js';
import { keyActor } from '../http/principals.js';
import { addRoute } from '../http/route.js';
import { collectMetrics } from './metrics.js';

/** Spec 4.8: the organisation's metrics for a Prometheus scraper. */
export function registerMetricsRoutes(app: FastifyInstance, deps: { db: Kysely<DB> }): void {
  addRoute(app, routes.getMetrics, async (request, reply) =>
    reply.type('text/plain; version=0.0.4; charset=utf-8').header('Cache-Control', 'no-store').send(await collectMetrics(deps.db, keyActor(request).organisationId)),
  );
}
