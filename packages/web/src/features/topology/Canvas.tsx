import { useMutation, useQueryClient } from '@tanstack/react-query';
import { VIEW_NODE_HEIGHT, toBoxBorder, type TopologyEdge, type TopologyGraph, type TopologyNode } from '@surveyor/contract';
import { type FocusEvent, type KeyboardEvent, type PointerEvent as ReactPointerEvent, type ReactNode, memo, useCallback, useEffect, useId, useMemo, useRef, useState } from 'react';
import { ErrorAlert } from '../../components/ErrorAlert';
import { plural } from '../../lib/format';
import { saveNodePositions, viewKeys } from './api';
import {
  type Camera,
  type Direction,
  type Point,
  type Rect,
  type Size,
  TEXT,
  ZOOM_STEP,
  boundsOf,
  centreOn,
  contains,
  cullRect,
  fitCamera,
  intersects,
  nextInDirection,
  panBy,
  segmentRect,
  textShows,
  visibleRect,
  wheelFactor,
  zoomAt,
} from './camera';
import { Minimap } from './Minimap';
import { makeRoom } from './room';

// The topology canvas (issue 24): an SVG drawn by React, moved by a camera of our own (pointer
// and wheel math in camera.ts). Only what lies on or near the screen is drawn, text only where it
// reads (≥ 9 px on screen); groups are boxes with their member count, an open group a frame
// around its members. Nodes are buttons with a roving tabindex: Tab reaches the canvas, then one
// node; arrows go from node to node; Enter opens a group or shows a node's details.

/** A node as drawn: its box (dragging included) and centre. */
export interface Drawn {
  n: TopologyNode;
  id: string;
  rect: Rect;
  centre: Point;
  /** An open group: drawn as a frame behind its members, its title band the handle. */
  frame: boolean;
  /** How far down the canvas moved it to make room for an open group (room.ts); not saved. */
  shift: number;
}
interface DrawnEdge {
  e: TopologyEdge;
  a: Point;
  b: Point;
  rect: Rect;
}

const transformOf = (c: Camera) => `translate(${c.x} ${c.y}) scale(${c.k})`;
/** The camera's translation as the page exposes it (data-camera; the tests read it). */
const cameraText = (c: Camera) => `${c.x.toFixed(1)},${c.y.toFixed(1)}`;
const middle = (r: Rect): Point => ({ x: r.x + r.width / 2, y: r.y + r.height / 2 });
const clip = (s: string, n: number) => (s.length > n ? `${s.slice(0, Math.max(n - 1, 1))}…` : s);
/** How many characters of `px` text fit in `width` (an average glyph is ~0.6 em). */
const fits = (width: number, px: number) => Math.floor((width - 16) / (px * 0.6));
const directed = (e: TopologyEdge) => e.kind === 'dependency' || e.kind === 'route';
const strings = (v: unknown) => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []);
const memberCount = (n: TopologyNode) => n.members ?? (typeof n.data.members === 'number' ? n.data.members : 0);
/** The second line of a box: a host's first address, a network's CIDR, a device's management address. */
function detailOf(n: TopologyNode): string {
  if (n.kind === 'host') return strings(n.data.addresses)[0] ?? '';
  if (n.kind === 'network') return typeof n.data.cidr === 'string' ? n.data.cidr : 'network';
  if (n.kind === 'device') return typeof n.data.managementAddress === 'string' ? n.data.managementAddress : 'device (LLDP/CDP)';
  return groupText(n).detail;
}
/** A group's title and second line: a block of a larger network shows the block, the network below. */
function groupText(n: TopologyNode): { title: string; detail: string } {
  const hosts = plural(memberCount(n), 'host');
  const block = typeof n.data.block === 'string' ? n.data.block : null;
  const at = block ? n.label.lastIndexOf(` · ${block}`) : -1;
  if (block && at > 0) return { title: block + n.label.slice(at + 3 + block.length), detail: `${n.label.slice(0, at)} · ${hosts}` };
  return { title: n.label, detail: hosts };
}
/** What a screen reader says of a node. */
export function describeNode(n: TopologyNode): string {
  if (n.kind === 'group') return `${n.label}, group of ${plural(memberCount(n), 'host')}, ${n.expanded ? 'open' : 'closed'}`;
  const detail = detailOf(n);
  return `${n.label}, ${n.kind}${detail && detail !== n.kind ? `, ${detail}` : ''}`;
}

/** Level of detail at a zoom: which texts are drawn. */
function detailAt(k: number, edgesShown: number) {
  return { name: textShows(k, TEXT.node), detail: textShows(k, TEXT.detail), group: textShows(k, TEXT.group), edge: textShows(k, TEXT.edge) && edgesShown <= 300, solid: solidAt(k) };
}
/**
 * Far enough out that a box is a few pixels tall on screen, its outline would cover it: boxes are
 * then filled in their outline's colour, with no stroke (a stroke is the costly part of drawing
 * thousands of boxes at every camera move).
 */
const solidAt = (k: number) => VIEW_NODE_HEIGHT * k < 8;
type Lod = ReturnType<typeof detailAt>;

type Look = 'plain' | 'dim' | 'near' | 'selected';
/** Boxes of one kind and look drawn as one path (far out, where they carry no text). */
interface Batch {
  key: string;
  kind: TopologyNode['kind'];
  look: Look;
  parts: string[];
  count: number;
}

/**
 * A frame's title when the zoom is too far out for its title band's text: written inside the frame,
 * over its members, at 13 px on screen (a frame is large enough to carry it; a box is not).
 */
function FrameTitle({ d, left, k }: { d: Drawn; left: number; k: number }) {
  const r = d.rect;
  if (r.width * k < 160 || r.height * k < 56) return null;
  return (
    <text x={Math.max(r.x, Math.min(left, r.x + r.width - 160 / k)) + 8 / k} y={r.y + 36 + 20 / k} className="topo-overlay-label" style={{ fontSize: `${13 / k}px`, strokeWidth: `${4 / k}px` }}>
      {clip(groupText(d.n).title, Math.floor((r.width * k - 16) / 8))}
    </text>
  );
}

/**
 * A node's box. An open group's frame also takes where the screen's left edge is (`left`, in the
 * drawing): its title stays on screen when the frame is wider than the view.
 */
const NodeBox = memo(function NodeBox({ d, lod, look, tabbable, movable, left = -Infinity }: { d: Drawn; lod: Lod; look: Look; tabbable: boolean; movable: boolean; left?: number }) {
  const { n, rect: r } = d;
  const cls = `topo-node topo-${n.kind}${movable ? ' movable' : ''}${look === 'plain' ? '' : ` ${look}`}`;
  const common = { 'data-node-id': n.id, role: 'button', tabIndex: tabbable ? 0 : -1, 'aria-label': describeNode(n) } as const;
  if (d.frame) {
    return (
      <g className={`topo-frame${look === 'dim' ? ' dim' : ''}`}>
        <rect className="topo-frame-box" x={r.x} y={r.y} width={r.width} height={r.height} rx={8} />
        <g {...common} className={`${cls} topo-frame-head`} aria-expanded>
          <title>{`${n.label}: ${plural(memberCount(n), 'host')} (click to close)`}</title>
          <rect x={r.x} y={r.y} width={r.width} height={36} rx={8} />
          {lod.group && (
            <text x={Math.max(r.x + 12, Math.min(left + 12, r.x + r.width - 320))} y={r.y + 23} className="topo-group-label">
              <tspan>{clip(groupText(n).title, fits(r.width - 120, TEXT.group))}</tspan>
              <tspan className="topo-detail" dx={10}>{groupText(n).detail}</tspan>
            </text>
          )}
          {lod.group && <text x={r.x + r.width - 14} y={r.y + 24} textAnchor="end" className="topo-toggle" aria-hidden>−</text>}
        </g>
      </g>
    );
  }
  const group = n.kind === 'group';
  return (
    <g {...common} className={cls} {...(group ? { 'aria-expanded': false } : {})}>
      <title>{`${n.label} (${group ? `group of ${plural(memberCount(n), 'host')}` : n.kind})`}</title>
      <rect x={r.x} y={r.y} width={r.width} height={r.height} rx={group ? 8 : 6} />
      {group && <rect className="topo-stack" x={r.x + 4} y={r.y + r.height} width={r.width - 8} height={4} rx={2} />}
      {(group ? lod.group : lod.name) && (
        <text x={r.x + 10} y={r.y + (group ? 23 : 19)} className={group ? 'topo-group-label' : undefined}>{clip(group ? groupText(n).title : n.label, fits(group ? r.width - 24 : r.width, group ? TEXT.group : TEXT.node))}</text>
      )}
      {lod.detail && <text x={r.x + 10} y={r.y + (group ? 44 : 35)} className="topo-detail">{clip(detailOf(n), fits(r.width, TEXT.detail))}</text>}
      {group && lod.group && <text x={r.x + r.width - 14} y={r.y + 24} textAnchor="end" className="topo-toggle" aria-hidden>+</text>}
    </g>
  );
});

export interface CanvasProps {
  graph: TopologyGraph;
  /** Admins drag nodes (the position is saved); others pan wherever they drag. */
  admin: boolean;
  /** Fit the drawing whenever this changes (a view, filter or grouping), once its answer is in. */
  fitKey: string;
  /** The graph is the answer to the current query (not the previous one shown meanwhile). */
  fresh: boolean;
  /** Centre this node (a search result) once it is drawn; the nonce asks again for the same node. */
  centre: { nodeId: string; nonce: number } | null;
  selected: string | null;
  onSelect: (id: string | null) => void;
  onToggle: (groupId: string) => void;
  /** More controls for the canvas's own toolbar (open/close all). */
  children?: ReactNode;
}

export function Canvas({ graph, admin, fitKey, fresh, centre, selected, onSelect, onToggle, children }: CanvasProps) {
  const client = useQueryClient();
  const svg = useRef<SVGSVGElement>(null);
  const hintId = useId();
  const [size, setSize] = useState<Size | null>(null);
  const [camera, setCameraState] = useState<Camera>({ k: 1, x: 0, y: 0 });
  const cam = useRef(camera);
  const world = useRef<SVGGElement>(null);
  const sizeNow = useRef<Size | null>(null);
  const frame = useRef(0);
  const trailing = useRef(0);
  const rendered = useRef({ key: '', lod: '', at: 0 });
  /**
   * Camera changes from pointer, wheel and keys, once per animation frame. The drawing's transform
   * is set on the element at once; React draws again only when what is drawn changes (the culling
   * rectangle, the level of detail) and every 150 ms meanwhile (the zoom shown, the minimap), so a
   * pan over 5,000 boxes does not re-render them at every frame.
   */
  const setCamera = useCallback((c: Camera) => {
    cam.current = c;
    if (frame.current) return;
    frame.current = requestAnimationFrame(() => {
      frame.current = 0;
      const now = cam.current;
      world.current?.setAttribute('transform', transformOf(now));
      svg.current?.setAttribute('data-zoom', String(now.k));
      svg.current?.setAttribute('data-camera', cameraText(now));
      const key = sizeNow.current ? cullRect(now, sizeNow.current).key : '';
      const lod = [TEXT.node, TEXT.detail, TEXT.group, TEXT.edge].map((px) => (textShows(now.k, px) ? 1 : 0)).join('') + (solidAt(now.k) ? 's' : '');
      const at = performance.now();
      window.clearTimeout(trailing.current);
      const sync = () => {
        rendered.current = { key, lod, at: performance.now() };
        setCameraState(cam.current);
      };
      if (key !== rendered.current.key || lod !== rendered.current.lod || at - rendered.current.at > 150) sync();
      else trailing.current = window.setTimeout(sync, 150);
    });
  }, []);
  useEffect(
    () => () => {
      cancelAnimationFrame(frame.current);
      window.clearTimeout(trailing.current);
    },
    [],
  );
  const [offsets, setOffsets] = useState<Record<string, Point>>({});
  const [focusId, setFocusId] = useState<string | null>(null);
  const [saved, setSaved] = useState<string | null>(null);
  const viewId = graph.topology.id;
  useEffect(() => setOffsets({}), [graph]);
  // "Position of … saved." speaks of the drawing it was said on.
  const groupBy = graph.topology.groupBy;
  useEffect(() => setSaved(null), [viewId, groupBy]);

  // The viewport's size follows the element's.
  useEffect(() => {
    const el = svg.current;
    if (!el) return;
    let last: Size | null = null;
    const measure = () => {
      const r = el.getBoundingClientRect();
      if (last && last.width === r.width && last.height === r.height) return;
      // The drawing point at the middle stays there (the details panel opening narrows the canvas).
      if (last) setCamera(panBy(cam.current, (r.width - last.width) / 2, (r.height - last.height) / 2));
      last = { width: r.width, height: r.height };
      sizeNow.current = last;
      setSize(last);
    };
    measure();
    const o = new ResizeObserver(measure);
    o.observe(el);
    return () => o.disconnect();
  }, [setCamera]);

  // Nodes as drawn: positions from the server, moved by a drag in progress (a group carries its members).
  const base = useMemo(() => {
    const isFrame = (n: TopologyNode) => n.kind === 'group' && !!n.expanded;
    const room = makeRoom(graph.nodes.filter((n) => !n.group).map((n) => ({ id: n.id, frame: isFrame(n), rect: { x: n.x, y: n.y, width: n.width, height: n.height } })));
    const m = new Map<string, Drawn>();
    for (const n of graph.nodes) {
      const shift = room.get(n.group ?? n.id) ?? 0;
      const rect = { x: n.x, y: n.y + shift, width: n.width, height: n.height };
      const frame = isFrame(n);
      m.set(n.id, { n, id: n.id, rect, frame, shift, centre: { x: rect.x + rect.width / 2, y: frame ? rect.y + 18 : rect.y + rect.height / 2 } });
    }
    return m;
  }, [graph]);
  const drawn = useMemo(() => {
    const moved = Object.keys(offsets);
    if (!moved.length) return base;
    const m = new Map(base);
    for (const d of base.values()) {
      const o = offsets[d.id] ?? (d.n.group ? offsets[d.n.group] : undefined);
      if (!o) continue;
      m.set(d.id, { ...d, rect: { ...d.rect, x: d.rect.x + o.x, y: d.rect.y + o.y }, centre: { x: d.centre.x + o.x, y: d.centre.y + o.y } });
    }
    return m;
  }, [base, offsets]);
  const all = useMemo(() => [...drawn.values()], [drawn]);

  const edges = useMemo(() => {
    const out: DrawnEdge[] = [];
    for (const e of graph.edges) {
      const s = drawn.get(e.source);
      const t = drawn.get(e.target);
      if (!s || !t) continue;
      // An open group's edges (its members' folded into one) leave from its frame.
      const [sc, tc] = [s.frame ? middle(s.rect) : s.centre, t.frame ? middle(t.rect) : t.centre];
      const a = toBoxBorder(tc, sc, s.rect.width / 2, s.rect.height / 2);
      const b = toBoxBorder(sc, tc, t.rect.width / 2, t.rect.height / 2);
      out.push({ e, a, b, rect: segmentRect(a, b) });
    }
    return out;
  }, [graph, drawn]);

  // The drawing's extent: the top-level boxes (an open group's frame holds its members).
  const bounds = useMemo(() => boundsOf(all.filter((d) => !d.n.group).map((d) => d.rect)), [all]);

  const fit = useCallback(() => {
    if (!size || !bounds) return;
    setCamera(fitCamera(bounds, size));
  }, [size, bounds, setCamera]);

  // A fit when asked (another view, filter or grouping), once the answer to that query is drawn.
  const fitted = useRef<string | null>(null);
  useEffect(() => {
    if (!fresh || !size || !bounds || fitted.current === fitKey) return;
    fitted.current = fitKey;
    fit();
  }, [fresh, size, bounds, fitKey, fit]);

  // A search result: centred at a readable zoom once drawn (its group may have had to open first).
  const centred = useRef<number | null>(null);
  useEffect(() => {
    if (!centre || !size || centred.current === centre.nonce) return;
    const d = drawn.get(centre.nodeId);
    if (!d) return;
    centred.current = centre.nonce;
    fitted.current = fitKey;
    setCamera(centreOn(d.centre, size, Math.max(cam.current.k, 1)));
    setFocusId(d.id);
  }, [centre, size, drawn, fitKey, setCamera]);

  // Highlight: a selected node (not a group), the edges touching it and the nodes at their other end.
  const near = useMemo(() => {
    const d = selected ? drawn.get(selected) : undefined;
    if (!d || d.n.kind === 'group') return null;
    const nodes = new Set([d.id]);
    const touching = new Set<string>();
    const touch = (id: string) => {
      for (const { e } of edges) {
        if (e.source === id || e.target === id) {
          touching.add(e.id);
          nodes.add(e.source);
          nodes.add(e.target);
        }
      }
    };
    touch(d.id);
    // A member whose edges the server folded into its group's: those stand for its own.
    if (!touching.size && d.n.group) touch(d.n.group);
    // Its group's frame stays lit: it is where the node is.
    if (d.n.group) nodes.add(d.n.group);
    return { nodes, edges: touching };
  }, [selected, drawn, edges]);

  // The roving tabindex: the node last focused, else the first in reading order.
  const first = useMemo(() => all.filter((d) => !d.n.group).sort((a, b) => a.rect.y - b.rect.y || a.rect.x - b.rect.x)[0]?.id ?? null, [all]);
  const tabbable = focusId && drawn.has(focusId) ? focusId : first;

  const look = (id: string): Look => (id === selected ? 'selected' : near ? (near.nodes.has(id) ? 'near' : 'dim') : 'plain');

  // Culling: what lies within half a screen of the viewport, plus the focused and selected nodes.
  const cull = size ? cullRect(camera, size) : null;
  const cullKey = cull?.key ?? '';
  const shown = useMemo(() => {
    const rect = cull?.rect;
    const nodes = rect ? all.filter((d) => intersects(d.rect, rect) || d.id === tabbable || d.id === selected) : all;
    const lines = rect ? edges.filter((x) => intersects(x.rect, rect)) : edges;
    return { frames: nodes.filter((d) => d.frame), boxes: nodes.filter((d) => !d.frame), lines };
  }, [all, edges, cullKey, tabbable, selected]); // cullKey stands for cull.rect
  // One object per level of detail, so the memoised boxes skip re-rendering while the zoom stays within it.
  const lod = detailAt(camera.k, shown.lines.length);
  const stableLod = useMemo(() => lod, [lod.name, lod.detail, lod.group, lod.edge, lod.solid]);
  // Far out (names left out), the boxes are bare rectangles: each kind and look is then drawn as one
  // <path> of all its boxes, so that moving the camera repaints a few elements instead of thousands
  // (Chromium's cost per frame follows the element count). The node keyboard focus is on and the one
  // selected stay elements of their own; a click or drag on a batch finds its box by position.
  const batches = useMemo(() => {
    if (stableLod.name) return { paths: [] as Batch[], boxes: shown.boxes, members: [] as Drawn[] };
    const keep = (d: Drawn) => d.n.kind === 'group' || d.id === tabbable || d.id === selected;
    const boxes: Drawn[] = [];
    const members: Drawn[] = [];
    const byClass = new Map<string, Batch>();
    for (const d of shown.boxes) {
      if (keep(d)) {
        boxes.push(d);
        continue;
      }
      members.push(d);
      const l = look(d.id);
      const key = `${d.n.kind} ${l}`;
      let b = byClass.get(key);
      if (!b) byClass.set(key, (b = { key, kind: d.n.kind, look: l, parts: [], count: 0 }));
      const r = d.rect;
      b.parts.push(`M${r.x} ${r.y}h${r.width}v${r.height}h${-r.width}z`);
      b.count++;
    }
    return { paths: [...byClass.values()], boxes, members };
  }, [shown, stableLod, tabbable, selected, near]); // look() reads selected and near
  /** The box of a batch under a point of the screen (the last drawn wins, as it is on top). */
  const batchedAt = (at: Point): string | null => {
    const c = cam.current;
    const x = (at.x - c.x) / c.k;
    const y = (at.y - c.y) / c.k;
    for (let i = batches.members.length - 1; i >= 0; i--) {
      const r = batches.members[i]!.rect;
      if (x >= r.x && x <= r.x + r.width && y >= r.y && y <= r.y + r.height) return batches.members[i]!.id;
    }
    return null;
  };

  const save = useMutation({
    mutationFn: (p: { nodeId: string; x: number; y: number }) => saveNodePositions(viewId, [p]),
    onSuccess: (_r, p) => {
      setSaved(drawn.get(p.nodeId)?.n.label ?? p.nodeId);
      void client.invalidateQueries({ queryKey: viewKeys.view(viewId) });
    },
  });

  const local = (e: { clientX: number; clientY: number }): Point => {
    const r = svg.current!.getBoundingClientRect();
    return { x: e.clientX - r.left, y: e.clientY - r.top };
  };

  const focusNode = useCallback((id: string) => {
    setFocusId(id);
    const find = () => svg.current?.querySelector<SVGGElement>(`[data-node-id="${CSS.escape(id)}"]`);
    // At once when it is drawn (the next key press starts from it), else after the render that draws it.
    const el = find();
    if (el) el.focus({ preventScroll: true });
    else requestAnimationFrame(() => find()?.focus({ preventScroll: true }));
  }, []);

  // A group opened or closed is drawn anew (a box becomes a frame): focus follows it once the answer is in.
  const refocus = useRef<string | null>(null);
  useEffect(() => {
    const id = refocus.current;
    if (!id) return;
    refocus.current = null;
    svg.current?.querySelector<SVGGElement>(`[data-node-id="${CSS.escape(id)}"]`)?.focus({ preventScroll: true });
  }, [base]);

  const activate = (id: string) => {
    const d = drawn.get(id);
    if (!d) return;
    focusNode(id);
    if (d.n.kind === 'group') {
      refocus.current = id;
      onToggle(id);
    }
    onSelect(id);
  };

  // Pointer gestures: drag the background to pan, a node to move it (admins), two fingers to pinch.
  type Gesture =
    | { kind: 'press'; pointerId: number; start: Point; cam0: Camera; nodeId: string | null; drag: boolean; moved: boolean; base: Point }
    | { kind: 'pinch'; dist0: number; mid0: Point; cam0: Camera };
  const gesture = useRef<Gesture | null>(null);
  const pointers = useRef(new Map<number, Point>());
  const pinchOf = () => {
    const [p, q] = [...pointers.current.values()] as [Point, Point];
    return { dist: Math.hypot(p.x - q.x, p.y - q.y) || 1, mid: { x: (p.x + q.x) / 2, y: (p.y + q.y) / 2 } };
  };

  const onPointerDown = (e: ReactPointerEvent<SVGSVGElement>) => {
    if (e.pointerType === 'mouse' && e.button !== 0) return;
    pointers.current.set(e.pointerId, local(e));
    svg.current?.setPointerCapture(e.pointerId);
    if (pointers.current.size === 2) {
      const g = gesture.current;
      if (g?.kind === 'press' && g.drag && g.nodeId) setOffsets((o) => ({ ...o, [g.nodeId!]: g.base }));
      const { dist, mid } = pinchOf();
      gesture.current = { kind: 'pinch', dist0: dist, mid0: mid, cam0: cam.current };
      return;
    }
    if (pointers.current.size > 2) return;
    const target = e.target as Element;
    const nodeId = target.closest('[data-node-id]')?.getAttribute('data-node-id') ?? (target.closest('[data-batch]') ? batchedAt(local(e)) : null);
    gesture.current = { kind: 'press', pointerId: e.pointerId, start: local(e), cam0: cam.current, nodeId, drag: admin && !!nodeId, moved: false, base: (nodeId && offsets[nodeId]) || { x: 0, y: 0 } };
    if (nodeId) e.preventDefault();
  };
  const onPointerMove = (e: ReactPointerEvent<SVGSVGElement>) => {
    if (!pointers.current.has(e.pointerId)) return;
    const p = local(e);
    pointers.current.set(e.pointerId, p);
    const g = gesture.current;
    if (!g) return;
    if (g.kind === 'pinch') {
      if (pointers.current.size < 2) return;
      const { dist, mid } = pinchOf();
      setCamera(zoomAt(panBy(g.cam0, mid.x - g.mid0.x, mid.y - g.mid0.y), mid, dist / g.dist0));
      return;
    }
    if (e.pointerId !== g.pointerId) return;
    const dx = p.x - g.start.x;
    const dy = p.y - g.start.y;
    if (!g.moved && Math.hypot(dx, dy) < 4) return;
    g.moved = true;
    if (g.drag && g.nodeId) {
      const id = g.nodeId;
      setOffsets((o) => ({ ...o, [id]: { x: g.base.x + dx / cam.current.k, y: g.base.y + dy / cam.current.k } }));
      setSaved(null);
    } else {
      setCamera(panBy(g.cam0, dx, dy));
    }
  };
  const onPointerUp = (e: ReactPointerEvent<SVGSVGElement>) => {
    if (!pointers.current.delete(e.pointerId)) return;
    if (svg.current?.hasPointerCapture(e.pointerId)) svg.current.releasePointerCapture(e.pointerId);
    const g = gesture.current;
    if (!g) return;
    if (g.kind === 'pinch') {
      if (pointers.current.size === 0) gesture.current = null;
      return;
    }
    if (e.pointerId !== g.pointerId) return;
    gesture.current = null;
    if (e.type === 'pointercancel') return;
    if (!g.moved) {
      if (g.nodeId) activate(g.nodeId);
      else onSelect(null);
      return;
    }
    if (g.drag && g.nodeId) {
      const d = drawn.get(g.nodeId);
      if (d) save.mutate({ nodeId: d.id, x: Math.round(d.rect.x), y: Math.round(d.rect.y - d.shift) });
    }
  };

  // The wheel: zoom at the pointer; Shift (or a sideways trackpad swipe) pans; a pinch on a trackpad arrives as Ctrl+wheel.
  useEffect(() => {
    const el = svg.current;
    if (!el) return;
    const onWheel = (e: WheelEvent) => {
      e.preventDefault();
      const r = el.getBoundingClientRect();
      const at = { x: e.clientX - r.left, y: e.clientY - r.top };
      const c = cam.current;
      if (e.ctrlKey || e.metaKey) setCamera(zoomAt(c, at, Math.exp(-e.deltaY * 0.01)));
      else if (e.shiftKey) setCamera(panBy(c, -(e.deltaX || e.deltaY), 0));
      else if (e.deltaX !== 0) setCamera(panBy(c, -e.deltaX, -e.deltaY));
      else setCamera(zoomAt(c, at, wheelFactor(e.deltaY, e.deltaMode)));
    };
    el.addEventListener('wheel', onWheel, { passive: false });
    return () => el.removeEventListener('wheel', onWheel);
  }, [setCamera]);

  const zoomBy = (factor: number) => size && setCamera(zoomAt(cam.current, { x: size.width / 2, y: size.height / 2 }, factor));

  /** Centres a node that is not wholly on screen (a keyboard move reached it). */
  const reveal = (d: Drawn) => {
    if (!size) return;
    const v = visibleRect(cam.current, size);
    if (!contains(v, d.rect)) setCamera(centreOn(d.centre, size, cam.current.k));
  };

  const onKeyDown = (e: KeyboardEvent<SVGSVGElement>) => {
    if (e.altKey || e.ctrlKey || e.metaKey) return;
    const nodeId = (e.target as Element).closest('[data-node-id]')?.getAttribute('data-node-id') ?? null;
    const arrows: Record<string, Direction> = { ArrowLeft: 'left', ArrowRight: 'right', ArrowUp: 'up', ArrowDown: 'down' };
    const dir = arrows[e.key];
    if (e.key === '+' || e.key === '=') zoomBy(ZOOM_STEP);
    else if (e.key === '-' || e.key === '_') zoomBy(1 / ZOOM_STEP);
    else if (e.key === '0') fit();
    else if (dir && nodeId && !e.shiftKey) {
      const from = drawn.get(nodeId);
      const next = from && nextInDirection(from.centre, all, dir, nodeId);
      if (next) {
        reveal(next);
        focusNode(next.id);
      }
    } else if (dir) {
      const step = 80;
      setCamera(panBy(cam.current, dir === 'left' ? step : dir === 'right' ? -step : 0, dir === 'up' ? step : dir === 'down' ? -step : 0));
    } else if ((e.key === 'Enter' || e.key === ' ') && nodeId) activate(nodeId);
    else return;
    e.preventDefault();
  };

  const focusedIn = (e: FocusEvent<SVGSVGElement>) => {
    const id = (e.target as Element).closest?.('[data-node-id]')?.getAttribute('data-node-id');
    if (id) setFocusId(id);
  };

  const topLevel = useMemo(() => all.filter((d) => !d.n.group), [all]);
  const showMinimap = !!(size && bounds && !contains(visibleRect(camera, size), bounds));
  const k = camera.k;
  const nodeCount = graph.nodes.length;
  const edgeCount = graph.edges.length;

  return (
    <div className="topo-canvas-wrap">
      <div className="toolbar topo-zoom" role="group" aria-label="Canvas">
        <button type="button" className="small" onClick={() => zoomBy(ZOOM_STEP)}>Zoom in</button>
        <button type="button" className="small" onClick={() => zoomBy(1 / ZOOM_STEP)}>Zoom out</button>
        <button type="button" className="small" onClick={fit}>Fit</button>
        <span className="topo-scale" aria-live="off">{Math.round(k * 100)} %</span>
        {children}
        {save.isPending && <span className="hint">Saving…</span>}
        {saved && !save.isPending && <span role="status" className="hint">Position of {saved} saved.</span>}
      </div>
      <ErrorAlert error={save.error} />
      <div className="topo-stage">
        <svg
          ref={svg}
          className="topo-canvas"
          role="group"
          aria-roledescription="topology drawing"
          aria-label={`${graph.topology.name}: ${plural(nodeCount, 'node')}, ${plural(edgeCount, 'edge')} shown`}
          aria-describedby={hintId}
          tabIndex={0}
          data-zoom={k}
          data-camera={cameraText(camera)}
          onPointerDown={onPointerDown}
          onPointerMove={onPointerMove}
          onPointerUp={onPointerUp}
          onPointerCancel={onPointerUp}
          onKeyDown={onKeyDown}
          onFocus={focusedIn}
        >
          <defs>
            <marker id="topo-arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">
              <path d="M0,0 L10,5 L0,10 z" className="topo-arrow" />
            </marker>
          </defs>
          <g ref={world} transform={transformOf(camera)}>
            {shown.frames.map((d) => (
              <NodeBox key={d.id} d={d} lod={stableLod} look={near ? (near.nodes.has(d.id) ? 'near' : 'dim') : d.id === selected ? 'selected' : 'plain'} tabbable={d.id === tabbable} movable={admin} left={-camera.x / k} />
            ))}
            <g className="topo-edges">
              {shown.lines.map(({ e, a, b }) => (
                <line
                  key={e.id}
                  className={`topo-edge topo-edge-${e.kind}${near ? (near.edges.has(e.id) ? ' near' : ' dim') : ''}`}
                  x1={a.x}
                  y1={a.y}
                  x2={b.x}
                  y2={b.y}
                  strokeWidth={Math.min(1.3 + Math.log2(Math.max(e.edges, 1)) * 0.8, 6)}
                  {...(directed(e) ? { markerEnd: 'url(#topo-arrow)' } : {})}
                >
                  <title>{e.edges > 1 ? `${e.label} (${plural(e.edges, 'edge')})` : e.label}</title>
                </line>
              ))}
            </g>
            {/* Edge labels under the boxes: a label never covers a node's name. */}
            {stableLod.edge &&
              shown.lines.map(({ e, a, b }) => {
                // A label only where its line is long enough to carry it (else it would sit on the boxes); the tooltip has it.
                const label = clip(e.label, 36);
                if (!label || Math.hypot(a.x - b.x, a.y - b.y) < label.length * TEXT.edge * 0.6 + 16) return null;
                return (
                  <text key={`label-${e.id}`} className={`topo-edge-label${near && !near.edges.has(e.id) ? ' dim' : ''}`} x={(a.x + b.x) / 2} y={(a.y + b.y) / 2 - 4} textAnchor="middle">
                    {label}
                  </text>
                );
              })}
            {batches.paths.length > 0 && (
              <g className="topo-batches" aria-hidden="true">
                {batches.paths.map((b) => (
                  <path key={b.key} data-batch={b.kind} data-count={b.count} className={`topo-batch topo-${b.kind}${stableLod.solid ? ' solid' : ''}${admin ? ' movable' : ''}${b.look === 'plain' ? '' : ` ${b.look}`}`} d={b.parts.join('')} />
                ))}
              </g>
            )}
            {batches.boxes.map((d) => <NodeBox key={d.id} d={d} lod={stableLod} look={look(d.id)} tabbable={d.id === tabbable} movable={admin} />)}
            {!stableLod.group && (
              <g className="topo-overlay" aria-hidden="true">
                {shown.frames.map((d) => <FrameTitle key={d.id} d={d} left={-camera.x / k} k={k} />)}
              </g>
            )}
          </g>
        </svg>
        {showMinimap && size && bounds && <Minimap nodes={topLevel} bounds={bounds} view={visibleRect(camera, size)} onMove={(p) => setCamera(centreOn(p, size, cam.current.k))} />}
      </div>
      <p id={hintId} className="hint topo-hint">
        Drag the background, Shift+scroll or swipe sideways to pan · scroll or pinch to zoom at the pointer · on the canvas: + − zoom, 0 fits, arrows pan (on a node: go to the next node), Enter opens a group or shows a node, Esc closes the details
        {admin ? ' · drag a node to move it (saved; a group carries its members)' : ''}
      </p>
    </div>
  );
}
