import { routes } from '@surveyor/contract';
import type { FastifyInstance } from 'fastify';
import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.js';
import { keyActor } from '../http/principals.js';
import { addRoute } from '../http/route.js';
import type { CursorCodec } from '../inventory/cursor.js';
import * as findings from './findings.service.js';

/** Triage: the findings list, its advisories, bulk moves, a finding's history (internal). */
export function registerFindingRoutes(app: FastifyInstance, deps: { db: Kysely<DB>; cursors: CursorCodec }): void {
  const { db, cursors } = deps;
  addRoute(app, routes.listFindings, async (request) => findings.listFindings(db, cursors, keyActor(request).organisationId, request.query));
  addRoute(app, routes.listAdvisoryFindings, async (request) => findings.listAdvisoryFindings(db, cursors, keyActor(request).organisationId, request.query));
  addRoute(app, routes.bulkFindings, async (request) => findings.bulkMove(db, keyActor(request), request.body));
  addRoute(app, routes.findingHistory, async (request) => findings.findingHistory(db, keyActor(request).organisationId, request.params.id));
}
