import { type PointerEvent as ReactPointerEvent, memo, useRef } from 'react';
import type { Point, Rect } from './camera';
import type { Drawn } from './Canvas';

/** The top-level boxes, drawn once per drawing (not at every camera move). */
const Boxes = memo(function Boxes({ nodes }: { nodes: readonly Drawn[] }) {
  return (
    <g className="topo-minimap-boxes">
      {nodes.map((d) => <rect key={d.id} className={`topo-mini-${d.n.kind}`} x={d.rect.x} y={d.rect.y} width={d.rect.width} height={d.rect.height} />)}
    </g>
  );
});

/**
 * The whole drawing small, bottom right, with the part on screen outlined: a click or a drag
 * there moves the view (for the pointer; keyboard users pan with the arrows).
 */
export function Minimap({ nodes, bounds, view, onMove }: { nodes: readonly Drawn[]; bounds: Rect; view: Rect; onMove: (centre: Point) => void }) {
  const svg = useRef<SVGSVGElement>(null);
  const pad = Math.max(bounds.width, bounds.height) * 0.04;
  const box = `${bounds.x - pad} ${bounds.y - pad} ${bounds.width + 2 * pad} ${bounds.height + 2 * pad}`;
  const move = (e: ReactPointerEvent<SVGSVGElement>) => {
    const m = svg.current?.getScreenCTM();
    if (!m) return;
    const p = new DOMPoint(e.clientX, e.clientY).matrixTransform(m.inverse());
    onMove({ x: p.x, y: p.y });
  };
  return (
    <svg
      ref={svg}
      className="topo-minimap"
      viewBox={box}
      preserveAspectRatio="xMidYMid meet"
      aria-hidden="true"
      data-testid="topology-minimap"
      onPointerDown={(e) => {
        e.stopPropagation();
        e.currentTarget.setPointerCapture(e.pointerId);
        move(e);
      }}
      onPointerMove={(e) => e.currentTarget.hasPointerCapture(e.pointerId) && move(e)}
      onPointerUp={(e) => e.currentTarget.releasePointerCapture(e.pointerId)}
    >
      <Boxes nodes={nodes} />
      <rect className="topo-minimap-view" x={view.x} y={view.y} width={view.width} height={view.height} vectorEffect="non-scaling-stroke" />
    </svg>
  );
}
