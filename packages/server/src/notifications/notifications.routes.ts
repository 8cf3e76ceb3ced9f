import { randomUUID } from 'node:crypto';
import { routes } from '@surveyor/contract';
import type { FastifyInstance } from 'fastify';
import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.js';
import { eventsSince } from '../events/events.js';
import { sessionPrincipal } from '../http/principals.js';
import { addRoute } from '../http/route.js';
import { listDeliveries } from './deliver.js';
import * as destinations from './destinations.js';
import { type SendOptions, send } from './senders.js';

/** Settings → Notifications (internal, admin session): destinations, a test send, deliveries, events. */
export function registerNotificationRoutes(app: FastifyInstance, deps: { db: Kysely<DB>; secretKey: Buffer; send: SendOptions }): void {
  const { db, secretKey } = deps;
  const org = (request: Parameters<typeof sessionPrincipal>[0]) => sessionPrincipal(request).organisationId;

  addRoute(app, routes.listEvents, async (request) => {
    const data = await eventsSince(db, org(request), request.query.after, request.query.limit, request.query.kind);
    return { data, nextAfter: data.length === request.query.limit ? data.at(-1)!.seq : null };
  });

  addRoute(app, routes.listDestinations, async (request) => ({ data: await destinations.listDestinations(db, org(request)) }));

  addRoute(app, routes.createDestination, async (request, reply) => reply.code(201).send(await destinations.createDestination(db, secretKey, org(request), request.body)));

  addRoute(app, routes.updateDestination, async (request) => destinations.updateDestination(db, secretKey, org(request), request.params.id, request.body));

  addRoute(app, routes.deleteDestination, async (request, reply) => {
    await destinations.deleteDestination(db, org(request), request.params.id);
    return reply.code(204).send();
  });

  addRoute(app, routes.testDestination, async (request) => {
    const organisationId = org(request);
    const d = await destinations.getDestination(db, secretKey, organisationId, request.params.id);
    const event = {
      id: randomUUID(),
      kind: 'notification.test',
      severity: 'info' as const,
      occurredAt: new Date().toISOString(),
      organisationId,
      subject: { type: 'notification_destination', id: d.id },
      data: { name: d.name, message: 'A test of this destination from Surveyor.' },
    };
    const o = await send(d.settings, event, deps.send);
    return { ok: o.ok, statusCode: o.statusCode, error: o.error, durationMs: o.durationMs };
  });

  addRoute(app, routes.listDeliveries, async (request) => ({ data: await listDeliveries(db, org(request), request.query) }));
}
