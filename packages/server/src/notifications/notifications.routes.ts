import { routes } from '@surveyor/contract';
import type { FastifyInstance } from 'fastify';
import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.js';
import { eventsBefore, eventsSince } from '../events/events.js';
import { keyActor, sessionPrincipal } from '../http/principals.js';
import { addRoute } from '../http/route.js';
import { listDeliveries } from './deliver.js';
import * as destinations from './destinations.js';
import type { SendOptions } from './senders.js';

/** Settings → Notifications (internal, admin session): destinations, a test send, deliveries, events. */
export function registerNotificationRoutes(app: FastifyInstance, deps: { db: Kysely<DB>; secretKey: Buffer; send: SendOptions }): void {
  const { db, secretKey } = deps;
  const org = (request: Parameters<typeof sessionPrincipal>[0]) => sessionPrincipal(request).organisationId;

  addRoute(app, routes.listEvents, async (request) => {
    const q = request.query;
    const filter = { kind: q.kind, subjectId: q.subjectId, since: q.since, until: q.until };
    if (q.order === 'desc') {
      const data = await eventsBefore(db, org(request), q.before, q.limit, filter);
      return { data, nextAfter: null, nextBefore: data.length === q.limit ? data.at(-1)!.seq : null };
    }
    const data = await eventsSince(db, org(request), q.after, q.limit, q.kind, filter);
    return { data, nextAfter: data.length === q.limit ? data.at(-1)!.seq : null, nextBefore: null };
  });

  addRoute(app, routes.listDestinations, async (request) => ({ data: await destinations.listDestinations(db, org(request)) }));

  addRoute(app, routes.createDestination, async (request, reply) => reply.code(201).send(await destinations.createDestination(db, secretKey, keyActor(request), request.body)));

  addRoute(app, routes.updateDestination, async (request) => destinations.updateDestination(db, secretKey, keyActor(request), request.params.id, request.body));

  addRoute(app, routes.deleteDestination, async (request, reply) => {
    await destinations.deleteDestination(db, keyActor(request), request.params.id);
    return reply.code(204).send();
  });

  addRoute(app, routes.testDestination, async (request) => destinations.testDestination(db, secretKey, org(request), request.params.id, deps.send));

  addRoute(app, routes.listDeliveries, async (request) => ({ data: await listDeliveries(db, org(request), request.query) }));
}
