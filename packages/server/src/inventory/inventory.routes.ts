import { type CollectionName, routeOfCollection as collections, routes } from '@surveyor/contract';
import type { FastifyInstance } from 'fastify';
import type { Kysely } from 'kysely';
import type { Database } from '../db/database.js';
import type { DB } from '../db/schema.js';
import { keyActor, sessionPrincipal } from '../http/principals.js';
import { addRoute } from '../http/route.js';
import type { CursorCodec } from './cursor.js';
import * as inventory from './inventory.service.js';

/** The eight collection reads and the inventory writes (spec 4.1, 4.3). */
export function registerInventoryRoutes(app: FastifyInstance, deps: { db: Kysely<DB>; database: Database; cursors: CursorCodec }): void {
  const { db, database, cursors } = deps;
  for (const [name, def] of Object.entries(collections) as [CollectionName, (typeof collections)[CollectionName]][]) {
    addRoute(app, def, async (request, reply) => {
      const page = await inventory.collectionPage(db, cursors, keyActor(request).organisationId, name, request.query as never, database);
      // A page writer's text is the response as it is (what the route's serializer would write).
      if (typeof page === 'string') reply.type('application/json; charset=utf-8');
      return page;
    });
  }

  addRoute(app, routes.countServices, async (request) => inventory.countServices(db, keyActor(request).organisationId, request.query));

  addRoute(app, routes.lookupByIds, async (request) => inventory.lookup(db, sessionPrincipal(request).organisationId, request.query));

  addRoute(app, routes.createNetwork, async (request, reply) => reply.code(201).send(await inventory.createNetwork(db, keyActor(request), request.body)));

  addRoute(app, routes.patchVulnerability, async (request) => inventory.patchVulnerability(db, keyActor(request), request.params.id, request.body));
}
