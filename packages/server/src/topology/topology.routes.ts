import { routes } from '@surveyor/contract';
import type { FastifyInstance } from 'fastify';
import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.js';
import { addRoute } from '../http/route.js';
import { keyActor } from '../http/principals.js';
import { topologySvg } from './svg.js';
import { hostTopology } from './topology.service.js';

/** Host topology as JSON and as SVG (spec 2.4, 4.2). */
export function registerTopologyRoutes(app: FastifyInstance, deps: { db: Kysely<DB> }): void {
  const { db } = deps;
  addRoute(app, routes.getHostTopology, async (request) => hostTopology(db, keyActor(request).organisationId, request.params.id, request.query.windowHours));
  addRoute(app, routes.getHostTopologySvg, async (request, reply) => {
    const org = keyActor(request).organisationId;
    const topology = await hostTopology(db, org, request.params.id, request.query.windowHours);
    const host = await db.selectFrom('hosts').select(['hostname', 'fqdn']).where('organisation_id', '=', org).where('id', '=', request.params.id).executeTakeFirst();
    return reply.type('image/svg+xml; charset=utf-8').header('Content-Security-Policy', "default-src 'none'; style-src 'unsafe-inline'").send(topologySvg(topology, host?.hostname ?? host?.fqdn ?? request.params.id));
  });
}
