import { routes } from '@surveyor/contract';
import type { FastifyInstance } from 'fastify';
import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.js';
import { keyActor, sessionPrincipal } from '../http/principals.js';
import { addRoute } from '../http/route.js';
import * as networks from './networks.service.js';

/** The console's network lifecycle: edit, delete, overlapping ranges (creation is the inventory's public POST). */
export function registerNetworkRoutes(app: FastifyInstance, deps: { db: Kysely<DB> }): void {
  const { db } = deps;
  addRoute(app, routes.patchNetwork, async (request) => networks.patchNetwork(db, keyActor(request), request.params.id, request.body));
  addRoute(app, routes.deleteNetwork, async (request, reply) => {
    await networks.deleteNetwork(db, keyActor(request), request.params.id);
    return reply.code(204).send();
  });
  addRoute(app, routes.networkOverlaps, async (request) => networks.networkOverlaps(db, sessionPrincipal(request).organisationId, request.query.cidr, request.query.exceptId));
}
