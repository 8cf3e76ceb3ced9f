import { routes } from '@surveyor/contract';
import type { FastifyInstance } from 'fastify';
import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.js';
import { keyActor } from '../http/principals.js';
import { addRoute } from '../http/route.js';
import { getHostDetail } from './hosts.service.js';

/** A host's page in the console (internal; any role of the organisation). */
export function registerHostRoutes(app: FastifyInstance, deps: { db: Kysely<DB> }): void {
  addRoute(app, routes.getHostDetail, async (request) => getHostDetail(deps.db, keyActor(request).organisationId, request.params.id));
}
