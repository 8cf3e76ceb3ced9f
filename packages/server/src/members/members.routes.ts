import { routes } from '@surveyor/contract';
import type { FastifyInstance } from 'fastify';
import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.js';
import { sessionPrincipal } from '../http/principals.js';
import { addRoute } from '../http/route.js';
import * as members from './members.service.js';

/** Settings → Members (internal, admin session). */
export function registerMemberRoutes(app: FastifyInstance, deps: { db: Kysely<DB> }): void {
  const { db } = deps;

  addRoute(app, routes.listMembers, async (request) => ({ data: await members.listMembers(db, sessionPrincipal(request)) }));

  addRoute(app, routes.addMember, async (request, reply) => reply.code(201).send(await members.addMember(db, sessionPrincipal(request), request.body, request.id)));

  addRoute(app, routes.updateMember, async (request) => members.updateMemberRole(db, sessionPrincipal(request), request.params.userId, request.body.role, request.id));

  addRoute(app, routes.removeMember, async (request, reply) => {
    await members.removeMember(db, sessionPrincipal(request), request.params.userId, request.id);
    return reply.code(204).send();
  });
}
