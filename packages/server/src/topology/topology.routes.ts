import { routes } from '@surveyor/contract';
import type { FastifyInstance } from 'fastify';
import { addRoute } from '../http/route.js';
import { keyActor, sessionPrincipal } from '../http/principals.js';
import type { WebDeps } from '../module.js';
import type { DependencyBuild } from './dependencies.js';
import { topologySvg } from './svg.js';
import { hostTopology, hostTopologyDrawing } from './topology.service.js';

/** Host topology as JSON and as SVG (spec 2.4, 4.2). */
export function registerTopologyRoutes(app: FastifyInstance, { db, jobs }: Pick<WebDeps, 'db' | 'jobs'>): void {
  addRoute(app, routes.getHostTopology, async (request) => hostTopology(db, keyActor(request).organisationId, request.params.id, request.query.windowHours));
  addRoute(app, routes.getHostTopologySvg, async (request, reply) => {
    const org = keyActor(request).organisationId;
    const { topology, label } = await hostTopologyDrawing(db, org, request.params.id, request.query.windowHours);
    return reply.type('image/svg+xml; charset=utf-8').header('Content-Security-Policy', "default-src 'none'; style-src 'unsafe-inline'").send(topologySvg(topology, label));
  });

  // Spec 4.6: rebuild the application topology now, through the job runner (same lock, status, job.failed).
  addRoute(app, routes.adminDependencyTick, async (request) => jobs.runFor<DependencyBuild>('topology.dependencies', sessionPrincipal(request).organisationId, 'admin'));
}
