import { Graph, layout } from '@dagrejs/dagre';
import { VIEW_NODE_HEIGHT, VIEW_NODE_WIDTH } from '@surveyor/contract';
import type { GraphEdge, GraphNode } from './graph.js';

export interface Point { x: number; y: number }

/** Gap kept between the positioned part of a view and new nodes placed below it. */
const GAP = 80;

/** A layered left-to-right layout of the whole graph (dagre); top-left corners of the node boxes. */
export function layeredLayout(nodes: GraphNode[], edges: GraphEdge[]): Map<string, Point> {
  const g = new Graph({ multigraph: true });
  g.setGraph({ rankdir: 'LR', nodesep: 24, ranksep: 140, marginx: 20, marginy: 20 });
  g.setDefaultEdgeLabel(() => ({}));
  for (const n of nodes) g.setNode(n.id, { width: VIEW_NODE_WIDTH, height: VIEW_NODE_HEIGHT });
  for (const e of edges) if (e.source !== e.target) g.setEdge(e.source, e.target, {}, e.id);
  layout(g);
  return new Map(nodes.map((n) => {
    const p = g.node(n.id) as { x: number; y: number };
    return [n.id, { x: Math.round(p.x - VIEW_NODE_WIDTH / 2), y: Math.round(p.y - VIEW_NODE_HEIGHT / 2) }];
  }));
}

/**
 * Positions for a rebuilt view: a node that had a position keeps it; new nodes are placed by the
 * layered layout of the whole graph. A new node linked to positioned nodes moves with them (the
 * mean shift of those neighbours from their layout place); the others are laid out below
 * everything already positioned. Nodes no longer in the graph are simply not returned.
 */
export function placeNodes(nodes: GraphNode[], edges: GraphEdge[], kept: Map<string, Point>): Map<string, Point> {
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
  for (const e of edges) {
    neighbours.set(e.source, [...(neighbours.get(e.source) ?? []), e.target]);
    neighbours.set(e.target, [...(neighbours.get(e.target) ?? []), e.source]);
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
    const bottom = Math.max(...[...out.values()].map((p) => p.y)) + VIEW_NODE_HEIGHT + GAP;
    const left = Math.min(...[...out.values()].map((p) => p.x));
    const top = Math.min(...loose.map((n) => laid.get(n.id)!.y));
    const minX = Math.min(...loose.map((n) => laid.get(n.id)!.x));
    for (const n of loose) {
      const p = laid.get(n.id)!;
      out.set(n.id, { x: p.x - minX + left, y: p.y - top + bottom });
    }
  }
  return out;
}
