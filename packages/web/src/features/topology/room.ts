import { type Rect, intersects } from './camera';

// Room for open groups. The server lays a view out with every group closed (a 240 × 56 box) and
// draws an open group as a frame around its members from the same corner, so a frame can cover
// the boxes below it, or another frame. Until the layout leaves room itself, the canvas makes
// it: top-level boxes are taken from top to bottom, and one that would overlap an open frame
// drawn above it (or, being a frame, a box above it) moves down below it, members with their group.
// Nothing moves where nothing overlaps.

/** Space kept between a frame and what it pushed down. */
export const ROOM_GAP = 24;

export interface Placed {
  id: string;
  rect: Rect;
  /** An open group's frame. */
  frame: boolean;
}

/** How far down each top-level box moves (only those that move are listed). */
export function makeRoom(tops: readonly Placed[]): Map<string, number> {
  const order = [...tops].sort((a, b) => a.rect.y - b.rect.y || a.rect.x - b.rect.x);
  const placed: Placed[] = [];
  const frames: Placed[] = [];
  const moved = new Map<string, number>();
  for (const t of order) {
    let r = t.rect;
    // Each push moves the box below one obstacle: at most as many pushes as boxes placed.
    for (let guard = 0; guard <= placed.length; guard++) {
      const against = t.frame ? placed : frames;
      const hit = against.find((p) => (p.frame || t.frame) && intersects(shrink(r), p.rect));
      if (!hit) break;
      r = { ...r, y: hit.rect.y + hit.rect.height + ROOM_GAP };
    }
    if (r.y !== t.rect.y) moved.set(t.id, r.y - t.rect.y);
    const p = { id: t.id, rect: r, frame: t.frame };
    placed.push(p);
    if (t.frame) frames.push(p);
  }
  return moved;
}

/** Touching edges do not count as overlapping. */
const shrink = (r: Rect): Rect => ({ x: r.x + 0.5, y: r.y + 0.5, width: Math.max(r.width - 1, 0), height: Math.max(r.height - 1, 0) });
