import {
  AUTO_EXPAND_NODES,
  DEFAULT_SHARE_HOURS,
  formatBytes,
  GROUP_BY_CHOICES,
  GROUP_NODE_HEIGHT,
  GROUP_NODE_WIDTH,
  GROUP_PADDING,
  MAX_VISIBLE_NODES,
  type SavePositionsBody,
  type SharedTopologyGraph,
  type ShareTopologyBody,
  type TopologyEdge,
  type TopologyGraph,
  type TopologyGraphQuery,
  type TopologyNode,
  type TopologyView,
  type UpdateTopologyBody,
  VIEW_NODE_HEIGHT,
  VIEW_NODE_WIDTH,
} from '@surveyor/contract';
import { createHash } from 'node:crypto';
import type { Kysely } from 'kysely';
import { type Actor, recordAudit } from '../audit/audit.repo.js';
import { hashToken, mintToken, tokenPrefixes } from '../auth/tokens.js';
import type { DB } from '../db/schema.js';
import { AppError } from '../errors.js';
import { type Graph, type GraphNode, applicationNodes, networkGraph } from './graph.js';
import { type HostPlace, groupGraph, netLabel } from './groups.js';
import { memberGrid, type Point, placeNodes } from './layout.js';
import * as repo from './views.repo.js';

/** A view row as the API shows it (its name from the site's current name). */
export const toView = (t: repo.TopologyRow): TopologyView => ({
  id: t.id, siteId: t.site_id, kind: t.kind, status: t.status, name: t.name,
  nodeCount: t.node_count, edgeCount: t.edge_count, builtAt: t.built_at, failureReason: t.failure_reason,
  groupBy: t.group_by, groupCount: t.group_count,
});

/**
 * The member-level graph of a view (every host, device, network and edge), and the names of its
 * VLANs. An application view's edges (one per dependency edge, hundreds of thousands at a large
 * site) stay in the database: its graph has the hosts only, and `storeDependencyEdges` stores them.
 */
async function buildGraph(db: Kysely<DB>, organisationId: string, t: repo.TopologyRow): Promise<{ graph: Graph; vlanNames: Map<number, string | null> }> {
  if (t.kind === 'application') {
    return { graph: { nodes: applicationNodes(await repo.applicationHosts(db, organisationId, t.site_id)), edges: [] }, vlanNames: new Map() };
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
  const vlanNames = new Map<number, string | null>();
  for (const v of vlans) if (!vlanNames.get(v.vlan_id)) vlanNames.set(v.vlan_id, v.name);
  return { graph: networkGraph({ hosts, vlans, lags, neighbours, memberships, routes, outside }), vlanNames };
}

/**
 * Grouped by subnet, a group that is a whole network says what its network node and each
 * member's address edge to it would: those edges go, and the network node too unless something
 * else (a route, an address of a host grouped elsewhere) leads to it. A group that is a block of a
 * larger network keeps its edge to the network (it says which network the block is part of).
 */
function dropOwnNetworks(graph: Graph, groups: GraphNode[], groupOf: Map<string, string>): void {
  const whole = new Map(groups.filter((g) => g.refId && !g.data.block).map((g) => [g.id, `network:${g.refId}`]));
  graph.edges = graph.edges.filter((e) => !(e.kind === 'subnet' && whole.get(groupOf.get(e.source) ?? '') === e.target));
  const used = new Set(graph.edges.flatMap((e) => [e.source, e.target]));
  const own = new Set(whole.values());
  graph.nodes = graph.nodes.filter((n) => !(n.kind === 'network' && own.has(n.id) && !used.has(n.id)));
}

/**
 * Builds one view in one transaction that first locks its topology row: an ingest marking it
 * stale meanwhile waits, and so marks the freshly built view stale after (never lost). Hosts are
 * grouped (groups.ts); the top level (groups, networks, devices) is laid out by placeNodes, each
 * group's members in a grid inside it. A saved position is kept while its node stays where it was
 * saved: a top-level node at the top level, a member in the same group (relative to it).
 */
async function buildView(db: Kysely<DB>, organisationId: string, topologyId: string, now: Date): Promise<boolean> {
  return db.transaction().execute(async (trx) => {
    const t = await repo.findTopology(trx, organisationId, topologyId, true);
    if (!t) return false;
    const { graph, vlanNames } = await buildGraph(trx, organisationId, t);
    const hostIds = graph.nodes.filter((n) => n.kind === 'host' && !n.data.outsideScope).map((n) => n.refId!);
    const places = new Map<string, HostPlace>((await repo.hostPlaces(trx, organisationId, hostIds)).map((p) => [p.host_id, { address: p.address, networkId: p.network_id, networkName: p.network_name, cidr: p.cidr, deviceType: p.device_type, serves: p.serves }]));
    const { groups, groupOf, members } = groupGraph(graph, t.group_by, places, vlanNames);
    if (t.group_by === 'subnet') dropOwnNetworks(graph, groups, groupOf);

    const top = [...graph.nodes.filter((n) => !groupOf.has(n.id)), ...groups];
    const kept = await repo.savedPositions(trx, organisationId, topologyId);
    const keptTop = new Map<string, Point>();
    for (const n of top) {
      const k = kept.get(n.id);
      if (k && k.group === null) keptTop.set(n.id, k);
    }
    // Members are placed now (a grid in address order, or where they were saved in the same group);
    // the top level once the edges are stored, from the pairs they fold into.
    const byId = new Map(graph.nodes.map((n) => [n.id, n]));
    const stored: repo.StoredNode[] = top.map((n) => ({ id: n.id, kind: n.kind, label: n.label, data: n.data, ...(keptTop.get(n.id) ?? { x: 0, y: 0 }), group: null, refId: n.refId ?? null }));
    for (const [group, ids] of members) {
      const grid = memberGrid(ids.length);
      ids.forEach((id, i) => {
        const n = byId.get(id)!;
        const k = kept.get(id);
        const p = k && k.group === group ? { x: k.x, y: k.y } : grid[i]!;
        stored.push({ id, kind: n.kind, label: n.label, data: n.data, ...p, group, refId: n.refId ?? null });
      });
    }
    await repo.replaceView(trx, organisationId, topologyId, stored, graph.edges, groupOf);
    const edgeCount = t.kind === 'application' ? await repo.storeDependencyEdges(trx, organisationId, topologyId, t.site_id) : graph.edges.length;
    const topPos = placeNodes(top, await repo.topLevelPairs(trx, organisationId, topologyId), keptTop);
    const moved = top.filter((n) => !keptTop.has(n.id)).map((n) => ({ nodeId: n.id, ...topPos.get(n.id)! }));
    if (moved.length) await repo.savePositions(trx, organisationId, topologyId, moved);

    const usedVlans = new Set<number>();
    for (const x of [...graph.nodes, ...graph.edges]) if (Array.isArray(x.data.vlans)) for (const v of x.data.vlans as number[]) usedVlans.add(v);
    const services = new Set<string>();
    for (const n of graph.nodes) if (Array.isArray(n.data.services)) for (const v of n.data.services as string[]) services.add(v);
    const facets = { vlans: [...usedVlans].sort((a, b) => a - b).map((id) => ({ id, name: vlanNames.get(id) ?? null })), services: [...services].sort() };
    const counts = { nodes: graph.nodes.length, edges: edgeCount, groups: groups.length, facets };
    // What the view shows, nodes where they end up: the same digest as the last build's means nothing changed.
    const placed = new Map(moved.map((m) => [m.nodeId, m]));
    const shown = stored.map((n) => {
      const p = placed.get(n.id);
      return p ? { ...n, x: p.x, y: p.y } : n;
    });
    const digest = createHash('sha256').update(JSON.stringify([shown, graph.edges, counts])).digest('base64url');
    return repo.markBuilt(trx, organisationId, topologyId, counts, now, digest);
  });
}

/** Builds a view; a failure marks it `failed` with the reason (and is returned, for the caller to raise). `changed`: what it shows differs from the last build. */
async function buildOrMarkFailed(db: Kysely<DB>, organisationId: string, topologyId: string, now: Date): Promise<{ err?: unknown; changed: boolean }> {
  try {
    return { changed: await buildView(db, organisationId, topologyId, now) };
  } catch (err) {
    await repo.markFailed(db, organisationId, topologyId, `The build failed: ${String((err as Error)?.message ?? err).slice(0, 300)}`).catch(() => undefined);
    return { err, changed: true };
  }
}

/**
 * Rebuilds every topology view of the organisation (network and application, each site and the
 * hosts without a site). There is no size ceiling (hosts are grouped); a view whose build fails
 * (the database) is marked `failed` with the reason, the others are still built, and the run fails.
 * A change row is written for each view whose content or state changed (an hourly rebuild of an
 * unchanged view writes none: issue 30).
 */
export async function buildViews(db: Kysely<DB>, organisationId: string, now: Date): Promise<TopologyView[]> {
  await repo.ensureNetworkViews(db, organisationId);
  let unexpected: unknown;
  const changed: string[] = [];
  const topologies = await repo.listTopologies(db, organisationId);
  for (const t of topologies) {
    const r = await buildOrMarkFailed(db, organisationId, t.id, now);
    unexpected ??= r.err;
    if (r.changed) changed.push(t.id);
  }
  await repo.logTopologyChanges(db, organisationId, changed);
  if (unexpected) throw unexpected;
  return (await repo.listTopologies(db, organisationId)).map(toView);
}

/** Rebuilds one view now (POST /api/v1/topology/{id}/regenerate); 404 for another organisation's id. */
export async function rebuildView(db: Kysely<DB>, organisationId: string, id: string, now = new Date()): Promise<TopologyView> {
  await topologyOr404(db, organisationId, id);
  // Asked for by a user: announced whether or not it changed.
  const { err } = await buildOrMarkFailed(db, organisationId, id, now);
  await repo.logTopologyChanges(db, organisationId, [id]);
  if (err) throw err;
  return toView((await repo.findTopology(db, organisationId, id))!);
}

/** Changes how a view groups its hosts (audited), then rebuilds it. */
export async function updateView(db: Kysely<DB>, actor: Actor, organisationId: string, id: string, body: UpdateTopologyBody, now = new Date()): Promise<TopologyView> {
  await db.transaction().execute(async (trx) => {
    const t = await topologyOr404(trx, organisationId, id, true);
    const allowed: readonly string[] = GROUP_BY_CHOICES[t.kind];
    if (!allowed.includes(body.groupBy)) {
      throw new AppError('validation_failed', `The request body failed validation: body.groupBy: a ${t.kind} view groups by ${allowed.join(' or ')}`, {
        issues: [{ path: 'body.groupBy', message: `a ${t.kind} view groups by ${allowed.join(' or ')}` }],
      });
    }
    await repo.setGroupBy(trx, organisationId, id, body.groupBy);
    await recordAudit(trx, actor, { organisationId, action: 'topology.updated', targetType: 'topology', targetId: id, changes: { groupBy: [t.group_by, body.groupBy] } });
  });
  return rebuildView(db, organisationId, id, now);
}

async function topologyOr404(db: Kysely<DB>, organisationId: string, id: string, lock = false): Promise<repo.TopologyRow> {
  const t = await repo.findTopology(db, organisationId, id, lock);
  if (!t) throw new AppError('not_found', `No topology ${id}.`);
  return t;
}

const FOLD_WORDS: Record<string, [string, string]> = { link: ['link', 'links'], subnet: ['address', 'addresses'], route: ['route', 'routes'], dependency: ['call', 'calls'] };
const many = (n: number, kind: string) => `${n} ${(FOLD_WORDS[kind] ?? ['edge', 'edges'])[n === 1 ? 0 : 1]}`;

/** A folded edge's id: stable for its ends and kind, short (its ends are in `source` and `target`). */
const foldedId = (kind: string, source: string, target: string) => `agg:${kind}:${createHash('sha256').update(`${source}|${target}`).digest('base64url').slice(0, 16)}`;

/** The label of a node from the current rows: a host's name, a network's (a group by network says its block). */
function currentLabel(n: repo.NodeRow): string {
  if (n.kind === 'host') return n.hostname ?? n.fqdn ?? n.label;
  if (n.kind === 'network' && n.network_name !== null && n.network_cidr !== null) return netLabel(n.network_name, n.network_cidr);
  if (n.kind === 'group' && n.network_name !== null && n.network_cidr !== null) {
    const { block, part, parts } = n.data as { block?: string; part?: number; parts?: number };
    return `${netLabel(n.network_name, n.network_cidr)}${block ? ` · ${block}` : ''}${part ? ` (part ${part} of ${parts})` : ''}`;
  }
  return n.label;
}

/**
 * A view as drawn (the console, exports, share pages): top-level nodes and groups, members of the
 * groups opened (`expand`; by default all when the view is small, none when large; never more than
 * MAX_VISIBLE_NODES nodes), edges folded to what is drawn, labels from the current rows, filtered
 * by VLAN or service.
 */
async function graphOf(db: Kysely<DB>, organisationId: string, t: repo.TopologyRow, query: TopologyGraphQuery = {}) {
  const topRows = await repo.visibleNodes(db, organisationId, t.id, { top: true, open: [] });
  const groupRows = topRows.filter((n) => n.kind === 'group');
  const size = new Map(groupRows.map((g) => [g.node_id, Number(g.data.members ?? 0)]));
  const asked = query.expand === undefined
    ? (t.node_count <= AUTO_EXPAND_NODES ? groupRows.map((g) => g.node_id) : [])
    : query.expand === 'all' ? groupRows.map((g) => g.node_id) : [...new Set(query.expand.split(',').map((x) => x.trim()).filter((x) => size.has(x)))];
  const open: string[] = [];
  const notExpanded: string[] = [];
  let budget = MAX_VISIBLE_NODES - topRows.length;
  for (const g of asked) {
    if (size.get(g)! <= budget) {
      open.push(g);
      budget -= size.get(g)!;
    } else notExpanded.push(g);
  }
  const memberRows = open.length ? await repo.visibleNodes(db, organisationId, t.id, { top: false, open }) : [];
  const filter = { vlan: query.vlan ?? null, service: query.service ?? null };
  const folded = await repo.foldedEdges(db, organisationId, t.id, open, filter);

  const groupAt = new Map(groupRows.map((g) => [g.node_id, { x: g.x, y: g.y }]));
  const frame = new Map<string, { right: number; bottom: number }>();
  for (const m of memberRows) {
    const f = frame.get(m.group_id!) ?? { right: 0, bottom: 0 };
    frame.set(m.group_id!, { right: Math.max(f.right, m.x + VIEW_NODE_WIDTH), bottom: Math.max(f.bottom, m.y + VIEW_NODE_HEIGHT) });
  }
  const openSet = new Set(open);
  let nodes: TopologyNode[] = [...topRows, ...memberRows].map((n) => {
    const base = { id: n.node_id, kind: n.kind as TopologyNode['kind'], label: currentLabel(n), data: n.data, group: n.group_id };
    if (n.kind === 'group') {
      const f = frame.get(n.node_id);
      const expanded = openSet.has(n.node_id);
      return {
        ...base, x: n.x, y: n.y, members: size.get(n.node_id)!, expanded,
        width: expanded && f ? Math.max(GROUP_NODE_WIDTH, f.right + GROUP_PADDING) : GROUP_NODE_WIDTH,
        height: expanded && f ? f.bottom + GROUP_PADDING : GROUP_NODE_HEIGHT,
      };
    }
    const g = n.group_id ? groupAt.get(n.group_id) : undefined;
    return { ...base, x: n.x + (g?.x ?? 0), y: n.y + (g?.y ?? 0), width: VIEW_NODE_WIDTH, height: VIEW_NODE_HEIGHT };
  });

  const services = await repo.serviceNames(db, organisationId, folded.filter((e) => e.edges === 1 && e.kind === 'dependency' && e.data?.serviceId).map((e) => e.data!.serviceId as string));
  const edges: TopologyEdge[] = folded.map((e) => {
    if (e.edges === 1 && e.data) {
      let label = e.label ?? '';
      if (e.kind === 'dependency' && services.has(e.data.serviceId as string)) {
        const name = services.get(e.data.serviceId as string);
        label = `${name ? `${name} ` : ''}${e.data.port}/${e.data.protocol}`;
      }
      return { id: e.edge_id, source: e.source, target: e.target, kind: e.kind as TopologyEdge['kind'], label, data: e.data, edges: 1 };
    }
    const ports = e.ports?.map(Number) ?? [];
    const vlans = [...new Set((e.vlans ?? []).flat(2).filter((v): v is number => typeof v === 'number'))].sort((a, b) => a - b);
    const label = [
      many(e.edges, e.kind),
      ports.length ? `port${ports.length === 1 ? '' : 's'} ${ports.slice(0, 3).join(', ')}${ports.length > 3 ? '…' : ''}` : '',
      e.bytes ? formatBytes(e.bytes) : '',
      vlans.length ? `VLAN ${vlans.slice(0, 5).join(',')}${vlans.length > 5 ? '…' : ''}` : '',
    ].filter(Boolean).join(' · ');
    // Per kind what it carries (a first screen of thousands of folded calls stays small).
    const data = e.kind === 'dependency' ? { edges: e.edges, bytes: e.bytes, flows: e.flows, ports } : e.kind === 'link' ? { edges: e.edges, vlans } : { edges: e.edges };
    return { id: foldedId(e.kind, e.source, e.target), source: e.source, target: e.target, kind: e.kind as TopologyEdge['kind'], label, data, edges: e.edges };
  });

  if (filter.vlan !== null || filter.service !== null) {
    const keep = new Set(edges.flatMap((e) => [e.source, e.target]));
    if (filter.vlan !== null) {
      for (const n of nodes) if (Array.isArray(n.data.vlans) && (n.data.vlans as number[]).includes(filter.vlan)) keep.add(n.id);
      for (const g of await repo.groupsCarryingVlan(db, organisationId, t.id, filter.vlan)) keep.add(g);
    }
    for (const n of nodes) if (keep.has(n.id) && n.group) keep.add(n.group);
    nodes = nodes.filter((n) => keep.has(n.id));
  }
  return {
    nodes,
    edges,
    nodeSize: { width: VIEW_NODE_WIDTH, height: VIEW_NODE_HEIGHT },
    groups: { total: groupRows.length, expanded: open, notExpanded },
    facets: t.facets,
    filter,
  };
}

/** A view of the organisation as drawn (the console's view). */
export async function viewGraph(db: Kysely<DB>, organisationId: string, id: string, query: TopologyGraphQuery = {}, now = new Date()): Promise<TopologyGraph> {
  const t = await topologyOr404(db, organisationId, id);
  const share = await repo.activeShare(db, organisationId, id, now);
  return { topology: toView(t), ...(await graphOf(db, organisationId, t, query)), share: share ? { expiresAt: share.expires_at } : null };
}

/** Nodes of a view matching a name, an address or a service, open group or not. */
export async function searchView(db: Kysely<DB>, organisationId: string, id: string, q: string) {
  await topologyOr404(db, organisationId, id);
  const rows = await repo.searchNodes(db, organisationId, id, q.trim(), 20);
  return {
    data: rows.map((r) => ({
      nodeId: r.node_id, kind: r.kind as TopologyNode['kind'], label: r.hostname ?? r.fqdn ?? r.label, group: r.group_id, addresses: r.addresses, matched: r.matched,
    })),
  };
}

/**
 * Saves positions (absolute, as drawn): every node id must be the view's, once (else 400
 * validation_failed naming the path). A member's is stored relative to its group (the group's
 * position in the same body, else its stored one), so it moves with the group.
 */
export async function saveViewPositions(db: Kysely<DB>, actor: Actor, organisationId: string, id: string, body: SavePositionsBody): Promise<{ saved: number }> {
  return db.transaction().execute(async (trx) => {
    await topologyOr404(trx, organisationId, id, true);
    const known = await repo.nodesNamed(trx, organisationId, id, [...new Set(body.positions.map((p) => p.nodeId))]);
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
    const moved = new Map(body.positions.map((p) => [p.nodeId, p]));
    const stored = body.positions.map((p) => {
      const k = known.get(p.nodeId)!;
      if (!k.group) return p;
      const g = moved.get(k.group) ?? { x: k.groupX, y: k.groupY };
      return { nodeId: p.nodeId, x: p.x - g.x, y: p.y - g.y };
    });
    const saved = await repo.savePositions(trx, organisationId, id, stored);
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

/** The view to export as drawn with `query` (grouped as on screen), 404 for another organisation's id. */
export async function exportableGraph(db: Kysely<DB>, organisationId: string, id: string, query: TopologyGraphQuery = {}) {
  const t = await topologyOr404(db, organisationId, id);
  return { topology: toView(t), ...(await graphOf(db, organisationId, t, query)) };
}
