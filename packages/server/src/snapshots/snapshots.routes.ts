import { routes } from '@surveyor/contract';
import type { FastifyInstance } from 'fastify';
import { keyActor, sessionPrincipal } from '../http/principals.js';
import { addRoute } from '../http/route.js';
import type { WebDeps } from '../module.js';
import { createSnapshot, diffSnapshots, type takeScheduledSnapshot } from './snapshots.service.js';

/** Snapshot writes (spec 4.3), the diff of two (issue 15), and "take a snapshot now" (spec 4.6, through the job runner). The collection read is with the inventory's. */
export function registerSnapshotRoutes(app: FastifyInstance, { db, jobs }: Pick<WebDeps, 'db' | 'jobs'>): void {
  addRoute(app, routes.createSnapshot, async (request, reply) => reply.code(201).send(await createSnapshot(db, keyActor(request), request.body)));

  addRoute(app, routes.snapshotDiff, async (request) => diffSnapshots(db, sessionPrincipal(request).organisationId, request.params.id, request.query));

  addRoute(app, routes.adminSnapshot, async (request) =>
    jobs.runFor<Awaited<ReturnType<typeof takeScheduledSnapshot>>>('inventory.snapshot', sessionPrincipal(request).organisationId, 'admin'),
  );
}
