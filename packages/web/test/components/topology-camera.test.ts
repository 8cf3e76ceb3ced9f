import { describe, expect, it } from 'vitest';
import {
  MAX_ZOOM,
  MIN_ZOOM,
  boundsOf,
  centreOn,
  contains,
  cullRect,
  fitCamera,
  nextInDirection,
  panBy,
  textShows,
  toScreen,
  toWorld,
  visibleRect,
  wheelFactor,
  zoomAt,
} from '../../src/features/topology/camera';

// The topology canvas's geometry (issue 24): zoom keeps the point under the pointer, fit shows the
// drawing whole without blowing a small one up, culling keeps its rectangle while a pan stays
// within the margin, text is left out (never shrunk) under 9 px, arrows go to the node in line.

const close = (a: { x: number; y: number }, b: { x: number; y: number }) => {
  expect(a.x).toBeCloseTo(b.x, 9);
  expect(a.y).toBeCloseTo(b.y, 9);
};

describe('the topology camera', () => {
  it('zooms around the pointer: the drawing point under it stays under it', () => {
    const c = { k: 0.8, x: 120, y: -40 };
    const at = { x: 333, y: 210 };
    const before = toWorld(c, at);
    for (const factor of [1.25, 1 / 1.25, 3, 0.1]) {
      const z = zoomAt(c, at, factor);
      close(toScreen(z, before), at);
    }
    expect(zoomAt(c, at, 1000).k).toBe(MAX_ZOOM);
    expect(zoomAt(c, at, 1e-6).k).toBe(MIN_ZOOM);
  });

  it('pans by screen pixels at any zoom', () => {
    const c = panBy({ k: 2, x: 10, y: 20 }, 30, -5);
    expect(c).toEqual({ k: 2, x: 40, y: 15 });
  });

  it('fits a large drawing whole and centred, and never blows a small one past 100 %', () => {
    const viewport = { width: 1000, height: 600 };
    const big = { x: -500, y: 200, width: 8000, height: 3000 };
    const c = fitCamera(big, viewport, 20);
    expect(c.k).toBeCloseTo(Math.min(960 / 8000, 560 / 3000), 9);
    expect(contains(visibleRect(c, viewport), big)).toBe(true);
    close(toScreen(c, { x: big.x + big.width / 2, y: big.y + big.height / 2 }), { x: 500, y: 300 });
    const small = fitCamera({ x: 0, y: 0, width: 200, height: 100 }, viewport);
    expect(small.k).toBe(1);
    close(toScreen(small, { x: 100, y: 50 }), { x: 500, y: 300 });
  });

  it('centres a point at a zoom', () => {
    const c = centreOn({ x: 4000, y: -300 }, { width: 800, height: 500 }, 1.5);
    close(toScreen(c, { x: 4000, y: -300 }), { x: 400, y: 250 });
  });

  it('culls to the screen and a margin, and keeps the same rectangle over a small pan', () => {
    const viewport = { width: 1000, height: 600 };
    const c = { k: 1, x: 0, y: 0 };
    const a = cullRect(c, viewport);
    expect(contains(a.rect, visibleRect(c, viewport))).toBe(true);
    // Half a screen is kept around it: a box 400 px off the right edge is still drawn, one 5,000 px off is not.
    expect(a.rect.x + a.rect.width).toBeGreaterThanOrEqual(1500);
    expect(a.rect.x + a.rect.width).toBeLessThan(5000);
    expect(cullRect(panBy(c, -20, 10), viewport).key).toBe(a.key);
    expect(cullRect(panBy(c, -3000, 0), viewport).key).not.toBe(a.key);
  });

  it('draws text only where it is at least 9 px on screen', () => {
    expect(textShows(1, 12)).toBe(true);
    expect(textShows(0.75, 12)).toBe(true);
    expect(textShows(0.74, 12)).toBe(false);
    expect(textShows(0.5, 14)).toBe(false);
    expect(textShows(2, 10)).toBe(true);
  });

  it('bounds boxes, and none for nothing', () => {
    expect(boundsOf([])).toBeNull();
    expect(boundsOf([{ x: 10, y: 20, width: 5, height: 5 }, { x: -5, y: 0, width: 10, height: 100 }])).toEqual({ x: -5, y: 0, width: 20, height: 100 });
  });

  it('moves with the arrows to the nearest node in that direction, in line first', () => {
    const nodes = [
      { id: 'a', centre: { x: 0, y: 0 } },
      { id: 'right-far', centre: { x: 400, y: 0 } },
      { id: 'right-off', centre: { x: 200, y: 90 } },
      { id: 'right', centre: { x: 250, y: 10 } },
      { id: 'below', centre: { x: 10, y: 120 } },
    ];
    expect(nextInDirection({ x: 0, y: 0 }, nodes, 'right', 'a')?.id).toBe('right');
    expect(nextInDirection({ x: 0, y: 0 }, nodes, 'down', 'a')?.id).toBe('below');
    expect(nextInDirection({ x: 0, y: 0 }, nodes, 'left', 'a')).toBeNull();
    expect(nextInDirection({ x: 0, y: 0 }, nodes, 'up', 'a')).toBeNull();
  });

  it('zooms in on a wheel turned away (negative delta) and out towards the user', () => {
    expect(wheelFactor(-100, 0)).toBeGreaterThan(1.15);
    expect(wheelFactor(100, 0)).toBeLessThan(1 / 1.15);
    expect(wheelFactor(-3, 1)).toBeCloseTo(wheelFactor(-99, 0), 9);
  });
});
