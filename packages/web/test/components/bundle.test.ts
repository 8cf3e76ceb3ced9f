import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';

// The entry bundle's budget (issue 23): what a browser must download before the console shows
// anything (index.html's module script and the chunks it preloads, and its stylesheets), at most
// 250 KB gzipped. Screens load on first visit (src/app/router.tsx), so a new screen or a heavy
// library used by one screen does not count against it; a library pulled into the shell does.
// The build (`npm run build`, run by `npm install`) writes packages/web/dist.

const BUDGET_BYTES = 250 * 1024;
const dist = fileURLToPath(new URL('../../dist/', import.meta.url));

/** The assets index.html makes the browser fetch before it can render. */
function entryAssets(): string[] {
  const html = readFileSync(path.join(dist, 'index.html'), 'utf8');
  const refs = [
    ...html.matchAll(/<script[^>]*\btype="module"[^>]*\bsrc="([^"]+)"/g),
    ...html.matchAll(/<link[^>]*\brel="(?:modulepreload|stylesheet)"[^>]*\bhref="([^"]+)"/g),
  ].map((m) => m[1]!);
  return [...new Set(refs)];
}

const gzipped = (asset: string) => gzipSync(readFileSync(path.join(dist, asset.replace(/^\//, '')))).length;

describe('the console build', () => {
  it('keeps the entry bundle (script, preloaded chunks, styles) under 250 KB gzipped', () => {
    const assets = entryAssets();
    expect(assets.some((a) => a.endsWith('.js'))).toBe(true);
    const sizes = Object.fromEntries(assets.map((a) => [a, gzipped(a)]));
    const total = Object.values(sizes).reduce((a, b) => a + b, 0);
    expect(total, `entry assets gzipped: ${JSON.stringify(sizes)}`).toBeLessThanOrEqual(BUDGET_BYTES);
  });

  it('loads each screen of the route table in a chunk of its own, outside the entry', () => {
    const router = readFileSync(fileURLToPath(new URL('../../src/app/router.tsx', import.meta.url)), 'utf8');
    const screens = [...router.matchAll(/import\('\.\.\/features\/[\w-]+\/(\w+)'\)/g)].map((m) => m[1]!);
    expect(screens.length).toBeGreaterThanOrEqual(20);
    const chunks = readdirSync(path.join(dist, 'assets'));
    const entry = entryAssets().map((a) => path.basename(a));
    for (const name of screens) {
      const chunk = chunks.find((f) => f.startsWith(`${name}-`) && f.endsWith('.js'));
      expect(chunk, `a chunk for ${name}`).toBeDefined();
      expect(entry).not.toContain(chunk);
    }
  });
});
