// The canvas's geometry, kept out of React so it can be tested alone: a camera (scale and
// translation: a point of the drawing at (x, y) shows at (x·k + tx, y·k + ty) on screen), zoom
// around a point, fit, the part of the drawing on screen (culling), the level of detail, and the
// node a keyboard arrow goes to.

export type Point = { x: number; y: number };
export type Size = { width: number; height: number };
export type Rect = Point & Size;
export type Camera = { k: number; x: number; y: number };

/** The zoom's bounds: 2 % shows a 5,000-node drawing whole on a laptop screen; 400 % is plenty to read. */
export const MIN_ZOOM = 0.02;
export const MAX_ZOOM = 4;
/** One step of the zoom buttons and keys; a wheel notch zooms by a fraction of it. */
export const ZOOM_STEP = 1.25;
/** Text smaller than this on screen is not drawn (it would not be read): boxes show without it. */
export const MIN_TEXT_PX = 9;
/** Font sizes of the drawing (pixels of the drawing, at 100 %). */
export const TEXT = { node: 12, detail: 11, group: 14, edge: 10 } as const;

export const clampZoom = (k: number) => Math.min(MAX_ZOOM, Math.max(MIN_ZOOM, k));

/** Whether text of `px` drawing pixels is drawn at zoom `k` (never shrunk to fit: left out). */
export const textShows = (k: number, px: number) => px * k >= MIN_TEXT_PX - 1e-9;

/** The screen point of a drawing point. */
export const toScreen = (c: Camera, p: Point): Point => ({ x: p.x * c.k + c.x, y: p.y * c.k + c.y });
/** The drawing point under a screen point. */
export const toWorld = (c: Camera, p: Point): Point => ({ x: (p.x - c.x) / c.k, y: (p.y - c.y) / c.k });

/** Zooms by `factor` keeping the drawing point under the screen point `at` where it is. */
export function zoomAt(c: Camera, at: Point, factor: number): Camera {
  const k = clampZoom(c.k * factor);
  const r = k / c.k;
  return { k, x: at.x - (at.x - c.x) * r, y: at.y - (at.y - c.y) * r };
}

export const panBy = (c: Camera, dx: number, dy: number): Camera => ({ k: c.k, x: c.x + dx, y: c.y + dy });

/**
 * The camera showing `bounds` whole and centred in `viewport`, `padding` screen pixels around it,
 * never above `maxZoom` (a small drawing is not blown up past 100 %).
 */
export function fitCamera(bounds: Rect, viewport: Size, padding = 32, maxZoom = 1): Camera {
  const w = Math.max(viewport.width - 2 * padding, 1);
  const h = Math.max(viewport.height - 2 * padding, 1);
  const k = clampZoom(Math.min(maxZoom, w / Math.max(bounds.width, 1), h / Math.max(bounds.height, 1)));
  return { k, x: viewport.width / 2 - (bounds.x + bounds.width / 2) * k, y: viewport.height / 2 - (bounds.y + bounds.height / 2) * k };
}

/** The camera putting drawing point `p` at the viewport's centre, at zoom `k`. */
export const centreOn = (p: Point, viewport: Size, k: number): Camera => ({ k, x: viewport.width / 2 - p.x * k, y: viewport.height / 2 - p.y * k });

/** The part of the drawing the viewport shows. */
export function visibleRect(c: Camera, viewport: Size): Rect {
  const a = toWorld(c, { x: 0, y: 0 });
  return { x: a.x, y: a.y, width: viewport.width / c.k, height: viewport.height / c.k };
}

/** The smallest rectangle holding every one of `rects` (null for none). */
export function boundsOf(rects: Iterable<Rect>): Rect | null {
  let x0 = Infinity;
  let y0 = Infinity;
  let x1 = -Infinity;
  let y1 = -Infinity;
  for (const r of rects) {
    x0 = Math.min(x0, r.x);
    y0 = Math.min(y0, r.y);
    x1 = Math.max(x1, r.x + r.width);
    y1 = Math.max(y1, r.y + r.height);
  }
  return x0 === Infinity ? null : { x: x0, y: y0, width: x1 - x0, height: y1 - y0 };
}

export const intersects = (a: Rect, b: Rect) => a.x <= b.x + b.width && b.x <= a.x + a.width && a.y <= b.y + b.height && b.y <= a.y + a.height;

export const contains = (outer: Rect, inner: Rect) =>
  inner.x >= outer.x && inner.y >= outer.y && inner.x + inner.width <= outer.x + outer.width && inner.y + inner.height <= outer.y + outer.height;

/**
 * What to draw: the visible part of the drawing with half a screen more on every side, its edges
 * snapped outwards to a grid (a quarter screen, rounded to a power of two: it changes only with
 * the zoom's octave). A small pan keeps the same rectangle (`key`), so the elements drawn are not
 * recomputed at every pointer move.
 */
export function cullRect(c: Camera, viewport: Size): { rect: Rect; key: string } {
  const v = visibleRect(c, viewport);
  const step = 2 ** Math.ceil(Math.log2(Math.max(v.width, v.height, 1) / 4));
  const x0 = Math.floor((v.x - v.width / 2) / step) * step;
  const y0 = Math.floor((v.y - v.height / 2) / step) * step;
  const x1 = Math.ceil((v.x + v.width * 1.5) / step) * step;
  const y1 = Math.ceil((v.y + v.height * 1.5) / step) * step;
  return { rect: { x: x0, y: y0, width: x1 - x0, height: y1 - y0 }, key: `${x0},${y0},${x1},${y1}` };
}

/** The rectangle around a segment (an edge), for culling. */
export const segmentRect = (a: Point, b: Point): Rect => ({ x: Math.min(a.x, b.x), y: Math.min(a.y, b.y), width: Math.abs(a.x - b.x), height: Math.abs(a.y - b.y) });

export type Direction = 'left' | 'right' | 'up' | 'down';

/**
 * The node an arrow key goes to from `from`: among those lying in that direction (within 60° of
 * it), the nearest, distance across the direction counting double so a node in line wins.
 */
export function nextInDirection<T extends { id: string; centre: Point }>(from: Point, candidates: readonly T[], dir: Direction, self?: string): T | null {
  const [ux, uy] = dir === 'left' ? [-1, 0] : dir === 'right' ? [1, 0] : dir === 'up' ? [0, -1] : [0, 1];
  let best: T | null = null;
  let bestScore = Infinity;
  for (const c of candidates) {
    if (c.id === self) continue;
    const dx = c.centre.x - from.x;
    const dy = c.centre.y - from.y;
    const along = dx * ux + dy * uy;
    const across = Math.abs(dx * uy - dy * ux);
    if (along <= 0 || across > along * Math.sqrt(3)) continue;
    const score = along + 2 * across;
    if (score < bestScore) {
      bestScore = score;
      best = c;
    }
  }
  return best;
}

/** The wheel's zoom factor for a wheel event's vertical delta (pixels): a mouse notch (~100 px) is about 1.2×. */
export const wheelFactor = (deltaY: number, deltaMode: number) => Math.exp(-(deltaMode === 1 ? deltaY * 33 : deltaMode === 2 ? deltaY * 800 : deltaY) * 0.0018);
