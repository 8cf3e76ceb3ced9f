import {
  DEFAULT_SHARE_HOURS,
  MAX_VIEW_NODES,
  type SavePositionsBody,
  type SharedTopologyGraph,
  type ShareTopologyBody,
  type TopologyGraph,
  type TopologyView,
  VIEW_NODE_HEIGHT,
  VIEW_NODE_WIDTH,
} from '@surveyor/contract';
import type { Kysely } from 'kysely';
import { type Actor, recordAudit } from '../audit/audit.repo.js';
import { hashToken, mintToken, tokenPrefixes } from '../auth/tokens.js';
import type { DB } from '../db/schema.js';
import { AppError } from '../errors.js';
import { type Graph, applicationGraph, networkGraph } from './graph.js';
import { placeNodes } from './layout.js';
import * as repo from './views.repo.js';

/** Share tokens: recognisable (and so redacted from logs, logger.ts) prefix + 256 random bits. */

/** A build that cannot give a view (too large to draw): the view is `failed` with this reason. */
export class ViewBuildError extends Error {}

export const toView = (t: repo.TopologyRow): TopologyView => ({
  id: t.id, siteId: t.site_id, kind: t.kind, status: t.status, name: t.name,
  nodeCount: t.node_count, edgeCount: t.edge_count, builtAt: t.built_at, failureReason: t.failure_reason,
});

async function buildGraph(db: Kysely<DB>, organisationId: string, t: repo.TopologyRow): Promise<Graph> {
  if (t.kind === 'application') {
    const deps = await repo.scopeDependencies(db, organisationId, t.site_id);
    const labels = await repo.hostLabels(db, organisationId, deps.flatMap((d) => [d.src_host_id, d.dst_host_id]));
    return applicationGraph(deps, labels);
  }
  const [hosts, vlans, lags, neighbours, memberships, routes] = [
    await repo.scopeHosts(db, organisationId, t.site_id),
    await repo.scopeVlans(db, organisationId, t.site_id),
    await repo.scopeLags(db, organisationId, t.site_id),
    await repo.scopeNeighbours(db, organisationId, t.site_id),
    await repo.scopeMemberships(db, organisationId, t.site_id),
    await repo.scopeRoutes(db, organisationId, t.site_id),
  ];
  const inScope = new Set(hosts.map((h) => h.id));
  const outsideIds = [...neighbours.map((n) => n.remote_host_id), ...routes.map((r) => r.next_hop_host_id)].filter((id): id is string => !!id && !inScope.has(id));
  const outside = outsideIds.length ? await repo.hostLabels(db, organisationId, outsideIds) : new Map();
  return networkGraph({ hosts, vlans, lags, neighbours, memberships, routes, outside });
}

/**
 * Builds one view in one transaction that first locks its topology row: an ingest marking it
 * stale meanwhile waits, and so marks the freshly built view stale after (never lost). Saved
 * positions of nodes still present are kept; new nodes are laid out; removed ones go.
 */
async function buildView(db: Kysely<DB>, organisationId: string, topologyId: string, now: Date, maxNodes: number): Promise<void> {
  await db.transaction().execute(async (trx) => {
    const t = await repo.findTopology(trx, organisationId, topologyId, true);
    if (!t) return;
    const graph = await buildGraph(trx, organisationId, t);
    if (graph.nodes.length > maxNodes) {
      throw new ViewBuildError(`The view has ${graph.nodes.length} nodes; at most ${maxNodes} are drawn. Split the hosts over more sites.`);
    }
    const positions = placeNodes(graph.nodes, graph.edges, await repo.savedPositions(trx, organisationId, topologyId));
    await repo.replaceView(trx, organisationId, topologyId, graph.nodes.map((n) => ({ ...n, ...positions.get(n.id)! })), graph.edges);
    await repo.markBuilt(trx, organisationId, topologyId, { nodes: graph.nodes.length, edges: graph.edges.length }, now);
  });
}

/**
 * Rebuilds every topology view of the organisation (network and application, each site and the
 * hosts without a site). A view that cannot be built is `failed` with the reason and the others
 * are still built; an unexpected error (the database) marks it failed too and then fails the run.
 */
export async function buildViews(db: Kysely<DB>, organisationId: string, now: Date, opts: { maxNodes?: number } = {}): Promise<TopologyView[]> {
  const maxNodes = opts.maxNodes ?? MAX_VIEW_NODES;
  await repo.ensureNetworkViews(db, organisationId);
  let unexpected: unknown;
  const topologies = await repo.listTopologies(db, organisationId);
  for (const t of topologies) {
    try {
      await buildView(db, organisationId, t.id, now, maxNodes);
    } catch (err) {
      const reason = err instanceof ViewBuildError ? err.message : `The build failed: ${String((err as Error)?.message ?? err).slice(0, 300)}`;
      await repo.markFailed(db, organisationId, t.id, reason).catch(() => undefined);
      if (!(err instanceof ViewBuildError)) unexpected ??= err;
    }
  }
  await repo.logTopologyChanges(db, organisationId, topologies.map((t) => t.id));
  if (unexpected) throw unexpected;
  return (await repo.listTopologies(db, organisationId)).map(toView);
}

async function topologyOr404(db: Kysely<DB>, organisationId: string, id: string, lock = false): Promise<repo.TopologyRow> {
  const t = await repo.findTopology(db, organisationId, id, lock);
  if (!t) throw new AppError('not_found', `No topology ${id}.`);
  return t;
}

async function graphOf(db: Kysely<DB>, organisationId: string, t: repo.TopologyRow) {
  const [nodes, edges] = [await repo.viewNodes(db, organisationId, t.id), await repo.viewEdges(db, organisationId, t.id)];
  return {
    nodes: nodes.map((n) => ({ id: n.node_id, kind: n.kind as TopologyGraph['nodes'][number]['kind'], label: n.label, data: n.data, x: n.x, y: n.y })),
    edges: edges.map((e) => ({ id: e.edge_id, source: e.source, target: e.target, kind: e.kind as TopologyGraph['edges'][number]['kind'], label: e.label, data: e.data })),
    nodeSize: { width: VIEW_NODE_WIDTH, height: VIEW_NODE_HEIGHT },
  };
}

/** A view of the organisation with its nodes, edges and positions (the console's view). */
export async function viewGraph(db: Kysely<DB>, organisationId: string, id: string, now = new Date()): Promise<TopologyGraph> {
  const t = await topologyOr404(db, organisationId, id);
  const share = await repo.activeShare(db, organisationId, id, now);
  return { topology: toView(t), ...(await graphOf(db, organisationId, t)), share: share ? { expiresAt: share.expires_at } : null };
}

/** Saves positions: every node id must be the view's, once (else 400 validation_failed naming the path). */
export async function saveViewPositions(db: Kysely<DB>, actor: Actor, organisationId: string, id: string, body: SavePositionsBody): Promise<{ saved: number }> {
  return db.transaction().execute(async (trx) => {
    await topologyOr404(trx, organisationId, id, true);
    const known = await repo.nodeIds(trx, organisationId, id);
    const seen = new Set<string>();
    const issues: { path: string; message: string }[] = [];
    body.positions.forEach((p, i) => {
      if (!known.has(p.nodeId)) issues.push({ path: `body.positions.${i}.nodeId`, message: 'not a node of this view' });
      else if (seen.has(p.nodeId)) issues.push({ path: `body.positions.${i}.nodeId`, message: 'listed twice' });
      seen.add(p.nodeId);
    });
    if (issues.length) {
      throw new AppError('validation_failed', `The request body failed validation: ${issues.slice(0, 5).map((i) => `${i.path}: ${i.message}`).join('; ')}`, { issues });
    }
    const saved = await repo.savePositions(trx, organisationId, id, body.positions);
    await recordAudit(trx, actor, { organisationId, action: 'topology.positions_saved', targetType: 'topology', targetId: id, changes: { nodes: saved } });
    return { saved };
  });
}

/** Creates (replacing any earlier link) or revokes the view's read-only share link. */
export async function shareView(
  db: Kysely<DB>, actor: Actor, organisationId: string, id: string, body: ShareTopologyBody, baseUrl: string, now = new Date(),
): Promise<{ enabled: boolean; url: string | null; expiresAt: string | null }> {
  return db.transaction().execute(async (trx) => {
    await topologyOr404(trx, organisationId, id, true);
    if (!body.enabled) {
      const revoked = await repo.deleteShare(trx, organisationId, id);
      await recordAudit(trx, actor, { organisationId, action: 'topology.share_revoked', targetType: 'topology', targetId: id, changes: { revoked } });
      return { enabled: false, url: null, expiresAt: null };
    }
    const token = mintToken('share');
    const expiresAt = new Date(now.getTime() + (body.expiresInHours ?? DEFAULT_SHARE_HOURS) * 3_600_000);
    await repo.putShare(trx, organisationId, id, hashToken(token), expiresAt, actor.userId ?? null);
    await recordAudit(trx, actor, { organisationId, action: 'topology.shared', targetType: 'topology', targetId: id, changes: { expiresAt: expiresAt.toISOString() } });
    return { enabled: true, url: `${baseUrl}/share/topology/${token}`, expiresAt: expiresAt.toISOString() };
  });
}

/** The one view a live share token opens, and nothing else; unknown, revoked or expired: 404. */
export async function sharedGraph(db: Kysely<DB>, token: string, now = new Date()): Promise<SharedTopologyGraph> {
  const share = token.startsWith(tokenPrefixes.share) ? await repo.shareByToken(db, hashToken(token), now) : undefined;
  const t = share && (await repo.findTopology(db, share.organisation_id, share.topology_id));
  if (!share || !t) throw new AppError('not_found', 'This share link does not exist, was revoked or has expired.');
  const { kind, status, name, node_count: nodeCount, edge_count: edgeCount, built_at: builtAt } = t;
  return { topology: { kind, status, name, nodeCount, edgeCount, builtAt }, ...(await graphOf(db, share.organisation_id, t)), expiresAt: share.expires_at };
}

/** The view to export (nodes, edges, positions), 404 for another organisation's id. */
export async function exportableGraph(db: Kysely<DB>, organisationId: string, id: string) {
  const t = await topologyOr404(db, organisationId, id);
  return { topology: toView(t), ...(await graphOf(db, organisationId, t)) };
}
