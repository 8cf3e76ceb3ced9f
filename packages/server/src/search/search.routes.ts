import { routes } from '@surveyor/contract';
import type { FastifyInstance } from 'fastify';
import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.js';
import { keyActor } from '../http/principals.js';
import { addRoute } from '../http/route.js';
import { search } from './search.service.js';

/** The console's search box (internal; any role of the organisation). */
export function registerSearchRoutes(app: FastifyInstance, deps: { db: Kysely<DB> }): void {
  addRoute(app, routes.search, async (request) => search(deps.db, keyActor(request).organisationId, request.query.q, request.query.limit));
}
