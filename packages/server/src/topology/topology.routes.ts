import { routes } from '@surveyor/contract';
import type { FastifyInstance } from 'fastify';
import { addRoute } from '../http/route.js';
import { keyActor, sessionPrincipal } from '../http/principals.js';
import type { WebDeps } from '../module.js';
import type { TopologyBuild } from './dependencies.job.js';
import { exportFileName, toDrawio, toMermaid } from './export.js';
import { sharedTopologyPage } from './share-page.js';
import { topologySvg } from './svg.js';
import { hostTopology, hostTopologyDrawing } from './topology.service.js';
import { exportableGraph, rebuildView, saveViewPositions, searchView, sharedGraph, shareView, updateView, viewGraph } from './views.service.js';

/** Host topology as JSON and as SVG (spec 2.4, 4.2). */
export function registerTopologyRoutes(app: FastifyInstance, { db, jobs, config }: Pick<WebDeps, 'db' | 'jobs' | 'config'>): void {
  addRoute(app, routes.getHostTopology, async (request) => hostTopology(db, keyActor(request).organisationId, request.params.id, request.query.windowHours));
  addRoute(app, routes.getHostTopologySvg, async (request, reply) => {
    const org = keyActor(request).organisationId;
    const { topology, label } = await hostTopologyDrawing(db, org, request.params.id, request.query.windowHours);
    return reply.type('image/svg+xml; charset=utf-8').header('Content-Security-Policy', "default-src 'none'; style-src 'unsafe-inline'").send(topologySvg(topology, label));
  });

  // Spec 4.6: rebuild the application topology now, through the job runner (same lock, status, job.failed).
  addRoute(app, routes.adminDependencyTick, async (request) => jobs.runFor<TopologyBuild>('topology.dependencies', sessionPrincipal(request).organisationId, 'admin'));

  // Topology views (issue #15): rebuilt by the same job; positions, share links and exports.
  addRoute(app, routes.regenerateTopology, async (request) => ({
    data: (await jobs.runFor<TopologyBuild>('topology.dependencies', sessionPrincipal(request).organisationId, 'admin')).views,
  }));
  addRoute(app, routes.regenerateTopologyView, async (request) => rebuildView(db, sessionPrincipal(request).organisationId, request.params.id));
  addRoute(app, routes.updateTopology, async (request) => {
    const p = sessionPrincipal(request);
    return updateView(db, { type: 'session', userId: p.userId, requestId: request.id }, p.organisationId, request.params.id, request.body);
  });
  addRoute(app, routes.getTopologyGraph, async (request) => viewGraph(db, sessionPrincipal(request).organisationId, request.params.id, request.query));
  addRoute(app, routes.searchTopology, async (request) => searchView(db, sessionPrincipal(request).organisationId, request.params.id, request.query.q));
  addRoute(app, routes.saveTopologyPositions, async (request) => {
    const p = sessionPrincipal(request);
    return saveViewPositions(db, { type: 'session', userId: p.userId, requestId: request.id }, p.organisationId, request.params.id, request.body);
  });
  addRoute(app, routes.shareTopology, async (request) => {
    const p = sessionPrincipal(request);
    return shareView(db, { type: 'session', userId: p.userId, requestId: request.id }, p.organisationId, request.params.id, request.body, config.baseUrl);
  });
  addRoute(app, routes.exportTopology, async (request, reply) => {
    const g = await exportableGraph(db, sessionPrincipal(request).organisationId, request.params.id, request.query);
    const [body, type, ext] = request.params.format === 'mermaid' ? [toMermaid(g), 'text/vnd.mermaid; charset=utf-8', 'mmd'] : [toDrawio(g), 'application/xml; charset=utf-8', 'drawio'];
    return reply.type(type).header('Content-Disposition', `attachment; filename="${exportFileName(g.topology, ext)}"`).send(body);
  });
  // The share link: no credential (the token is one); the view alone, never cached or indexed.
  const shared = (reply: { header(k: string, v: string): unknown }) => {
    reply.header('Cache-Control', 'no-store');
    reply.header('Referrer-Policy', 'no-referrer');
    reply.header('X-Robots-Tag', 'noindex');
  };
  addRoute(app, routes.getSharedTopology, async (request, reply) => {
    shared(reply);
    return sharedGraph(db, request.params.token);
  });
  addRoute(app, routes.sharedTopologyPage, async (request, reply) => {
    shared(reply);
    const page = sharedTopologyPage(await sharedGraph(db, request.params.token));
    return reply.type('text/html; charset=utf-8').header('Content-Security-Policy', "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:").send(page);
  });
}
