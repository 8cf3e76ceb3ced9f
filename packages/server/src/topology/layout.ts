import { Graph, layout } from '@dagrejs/dagre';
import { GROUP_HEADER, GROUP_NODE_HEIGHT, GROUP_NODE_WIDTH, GROUP_PADDING, VIEW_NODE_HEIGHT, VIEW_NODE_WIDTH } from '@surveyor/contract';
import type { GraphEdge, GraphNode } from './graph.js';

export interface Point { x: number; y: number }
export interface Size { width: number; height: number }

/** The box of a top-level node: a closed group's, or a node's. */
export const boxOf = (n: Pick<GraphNode, 'kind'>): Size => (n.kind === 'group' ? { width: GROUP_NODE_WIDTH, height: GROUP_NODE_HEIGHT } : { width: VIEW_NODE_WIDTH, height: VIEW_NODE_HEIGHT });

/** Above this many top-level nodes the layered layout (quadratic at worst) gives way to a grid. */
export const MAX_LAYERED_NODES = 1500;
/**
 * Above this many top-level edges (distinct pairs after folding) it gives way to a grid too: dagre's
 * time grows with the square of the edges (crossing reduction over the dummy nodes of long edges),
 * and a large site's application view folds to thousands of group pairs (every caller block to
 * every server block): 144 groups and 2,288 edges took 24 s, 1,144 edges 4.6 s, 763 edges 2.2 s
 * (bench/topology-views.mjs, 2 cores). So dense a drawing shows no layers anyway.
 */
export const MAX_LAYERED_EDGES = 1000;
const MEMBER_GAP = { x: 16, y: 16 };

/**
 * A group's members in a grid inside its frame, in the order given (address order), about twice
 * as wide as tall: positions relative to the group's top-left corner, below its title band.
 */
export function memberGrid(count: number): Point[] {
  const cols = Math.max(1, Math.ceil(Math.sqrt(count * 2)));
  return Array.from({ length: count }, (_, i) => ({
    x: GROUP_PADDING + (i % cols) * (VIEW_NODE_WIDTH + MEMBER_GAP.x),
    y: GROUP_HEADER + Math.floor(i / cols) * (VIEW_NODE_HEIGHT + MEMBER_GAP.y),
  }));
}

/** A plain grid of top-level nodes in the order given (a view too large for the layered layout). */
function gridLayout(nodes: GraphNode[]): Map<string, Point> {
  const cols = Math.max(1, Math.ceil(Math.sqrt(nodes.length * 2)));
  const cell = { w: GROUP_NODE_WIDTH + 40, h: GROUP_NODE_HEIGHT + 40 };
  return new Map(nodes.map((n, i) => [n.id, { x: 20 + (i % cols) * cell.w, y: 20 + Math.floor(i / cols) * cell.h }]));
}

/** Gap kept between the positioned part of a view and new nodes placed below it. */
const GAP = 80;

/** A layered left-to-right layout of the whole graph (dagre); top-left corners of the node boxes. */
export function layeredLayout(nodes: GraphNode[], edges: Pick<GraphEdge, 'id' | 'source' | 'target'>[]): Map<string, Point> {
  if (nodes.length > MAX_LAYERED_NODES) return gridLayout(nodes);
  const drawn = edges.filter((e) => e.source !== e.target);
  if (drawn.length > MAX_LAYERED_EDGES) return gridLayout(nodes);
  const g = new Graph({ multigraph: true });
  g.setGraph({ rankdir: 'LR', nodesep: 24, ranksep: 140, marginx: 20, marginy: 20 });
  g.setDefaultEdgeLabel(() => ({}));
  for (const n of nodes) g.setNode(n.id, boxOf(n));
  for (const e of drawn) g.setEdge(e.source, e.target, {}, e.id);
  layout(g);
  return new Map(nodes.map((n) => {
    const p = g.node(n.id) as { x: number; y: number };
    const b = boxOf(n);
    return [n.id, { x: Math.round(p.x - b.width / 2), y: Math.round(p.y - b.height / 2) }];
  }));
}

/**
 * Positions for a rebuilt view: a node that had a position keeps it; new nodes are placed by the
 * layered layout of the whole graph. A new node linked to positioned nodes moves with them (the
 * mean shift of those neighbours from their layout place); the others are laid out below
 * everything already positioned. Nodes no longer in the graph are simply not returned.
 */
export function placeNodes(nodes: GraphNode[], edges: Pick<GraphEdge, 'id' | 'source' | 'target'>[], kept: Map<string, Point>): Map<string, Point> {
  const out = new Map<string, Point>();
  for (const n of nodes) {
    const p = kept.get(n.id);
    if (p) out.set(n.id, p);
  }
  const fresh = nodes.filter((n) => !out.has(n.id));
  if (!fresh.length) return out;
  const laid = layeredLayout(nodes, edges);
  if (!out.size) return laid;

  const neighbours = new Map<string, string[]>();
  const link = (a: string, b: string) => {
    const list = neighbours.get(a);
    if (list) list.push(b);
    else neighbours.set(a, [b]);
  };
  for (const e of edges) {
    link(e.source, e.target);
    link(e.target, e.source);
  }
  const loose: GraphNode[] = [];
  for (const n of fresh) {
    const anchors = (neighbours.get(n.id) ?? []).filter((m) => out.has(m));
    if (!anchors.length) {
      loose.push(n);
      continue;
    }
    const dx = anchors.reduce((s, m) => s + out.get(m)!.x - laid.get(m)!.x, 0) / anchors.length;
    const dy = anchors.reduce((s, m) => s + out.get(m)!.y - laid.get(m)!.y, 0) / anchors.length;
    const p = laid.get(n.id)!;
    out.set(n.id, { x: Math.round(p.x + dx), y: Math.round(p.y + dy) });
  }
  if (loose.length) {
    const bottom = [...out.values()].reduce((m, p) => Math.max(m, p.y), -Infinity) + GROUP_NODE_HEIGHT + GAP;
    const left = [...out.values()].reduce((m, p) => Math.min(m, p.x), Infinity);
    const top = loose.reduce((m, n) => Math.min(m, laid.get(n.id)!.y), Infinity);
    const minX = loose.reduce((m, n) => Math.min(m, laid.get(n.id)!.x), Infinity);
    for (const n of loose) {
      const p = laid.get(n.id)!;
      out.set(n.id, { x: p.x - minX + left, y: p.y - top + bottom });
    }
  }
  return out;
}
