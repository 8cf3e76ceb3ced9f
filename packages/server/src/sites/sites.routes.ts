import { routes } from '@surveyor/contract';
import type { FastifyInstance } from 'fastify';
import type { Kysely } from 'kysely';
import type { Config } from '../config.js';
import type { DB } from '../db/schema.js';
import { keyActor } from '../http/principals.js';
import { addRoute } from '../http/route.js';
import * as sites from './sites.service.js';

/** The console's site writes, daemon site assignment and daemon enrolment (reads: GET /api/v1/sites, GET /api/v1/daemons). */
export function registerSiteRoutes(app: FastifyInstance, deps: { db: Kysely<DB>; config: Config }): void {
  const { db, config } = deps;

  addRoute(app, routes.createSite, async (request, reply) => reply.code(201).send(await sites.createSite(db, keyActor(request), request.body)));

  addRoute(app, routes.renameSite, async (request) => sites.renameSite(db, keyActor(request), request.params.id, request.body));

  addRoute(app, routes.deleteSite, async (request, reply) => {
    await sites.deleteSite(db, keyActor(request), request.params.id);
    return reply.code(204).send();
  });

  addRoute(app, routes.setDaemonSite, async (request) => sites.setDaemonSite(db, keyActor(request), request.params.id, request.body.siteId));

  addRoute(app, routes.enrolDaemon, async (request, reply) => reply.code(201).send(await sites.enrolDaemon(db, keyActor(request), config.baseUrl, request.body)));
}
