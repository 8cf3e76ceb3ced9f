import { routes } from '@surveyor/contract';
import type { FastifyInstance } from 'fastify';
import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.js';
import { keyActor } from '../http/principals.js';
import { addRoute } from '../http/route.js';
import { getOverview } from './overview.service.js';

/** The console's overview figures (internal; any role of the organisation). */
export function registerOverviewRoutes(app: FastifyInstance, deps: { db: Kysely<DB> }): void {
  addRoute(app, routes.getOverview, async (request, reply) => reply.header('Cache-Control', 'no-store').send(await getOverview(deps.db, keyActor(request).organisationId)));
}
