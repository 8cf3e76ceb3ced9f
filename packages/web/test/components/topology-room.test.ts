import { describe, expect, it } from 'vitest';
import { ROOM_GAP, makeRoom } from '../../src/features/topology/room';

// Room for open groups (issue 24): the server lays a view out with its groups closed; an open
// group's frame must not cover what is below it. Boxes under a frame move down below it, frames
// under a frame too, and nothing moves where nothing overlaps.

const box = (id: string, x: number, y: number, width = 240, height = 56, frame = false) => ({ id, frame, rect: { x, y, width, height } });

describe('room for open groups', () => {
  it('moves nothing when no frame overlaps anything', () => {
    expect(makeRoom([box('a', 0, 0), box('b', 0, 80), box('c', 300, 0, 600, 400, true)]).size).toBe(0);
  });

  it('moves the boxes a frame covers below it, and the frames below those', () => {
    const moved = makeRoom([
      box('g1', 0, 0, 1000, 600, true),
      box('g2', 0, 80),
      box('g3', 0, 160, 1000, 500, true),
      box('net', 1200, 100),
    ]);
    expect(moved.get('g2')).toBe(600 + ROOM_GAP - 80);
    // g3, a frame, goes below g1 and then below g2, which g1 pushed there.
    expect(moved.get('g3')).toBe(600 + ROOM_GAP + 56 + ROOM_GAP - 160);
    expect(moved.has('net')).toBe(false);
    expect(moved.has('g1')).toBe(false);
  });

  it('moves a frame that opens over a box above its own top down below that box', () => {
    const moved = makeRoom([box('b', 0, 0, 240, 56), box('g', 100, 40, 800, 500, true)]);
    expect(moved.get('g')).toBe(56 + ROOM_GAP - 40);
  });
});
