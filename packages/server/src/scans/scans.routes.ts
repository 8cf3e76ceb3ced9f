import { routes } from '@surveyor/contract';
import type { FastifyInstance } from 'fastify';
import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.js';
import { keyActor, sessionPrincipal } from '../http/principals.js';
import { addRoute } from '../http/route.js';
import * as scans from './scans.service.js';

/** Scan sessions: queue, read, cancel (spec 4.3, decisions.md). */
export function registerScanRoutes(app: FastifyInstance, deps: { db: Kysely<DB> }): void {
  const { db } = deps;
  addRoute(app, routes.createScan, async (request, reply) => reply.code(202).send(await scans.createScan(db, keyActor(request), request.body)));
  addRoute(app, routes.listNetworkScans, async (request) => scans.listNetworkScans(db, sessionPrincipal(request).organisationId, request.query.networkId, request.query.limit));
  addRoute(app, routes.getScan, async (request) => scans.getScan(db, keyActor(request).organisationId, request.params.id));
  addRoute(app, routes.cancelScan, async (request) => scans.cancelScan(db, keyActor(request), request.params.id));
}
