import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// The console's shape (issue 23): feature folders never import each other (the app layer composes
// them), shared code flows one way (components/ and lib/ never import a feature or the app), and
// no screen pairs a URL with a type by hand: every call goes through the contract's routes.

const src = fileURLToPath(new URL('../../src/', import.meta.url));

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? files(path.join(dir, e.name)) : /\.tsx?$/.test(e.name) ? [path.join(dir, e.name)] : []));
}

/** Each relative import of the file, as a path under src/. */
function imports(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  return [...text.matchAll(/\bfrom '(\.[^']+)'/g)].map((m) => path.relative(src, path.resolve(path.dirname(file), m[1]!)));
}

const area = (rel: string) => rel.split(path.sep).slice(0, rel.startsWith(`features${path.sep}`) ? 2 : 1).join('/');

describe('the console source', () => {
  const all = files(src).map((f) => ({ file: f, rel: path.relative(src, f) }));

  it('has feature folders, each importing only itself, components/ and lib/', () => {
    const features = readdirSync(path.join(src, 'features'));
    expect(features.length).toBeGreaterThanOrEqual(10);
    const crossing = all
      .filter((f) => f.rel.startsWith('features'))
      .flatMap((f) => imports(f.file).filter((i) => area(i) !== area(f.rel) && !i.startsWith('components') && !i.startsWith('lib')).map((i) => `${f.rel} → ${i}`));
    expect(crossing).toEqual([]);
  });

  it('keeps components/ and lib/ free of features and of the app layer', () => {
    const upward = all
      .filter((f) => f.rel.startsWith('components') || f.rel.startsWith('lib'))
      .flatMap((f) => imports(f.file).filter((i) => i.startsWith('features') || i.startsWith('app')).map((i) => `${f.rel} → ${i}`));
    expect(upward).toEqual([]);
  });

  it('writes no API path by hand: URLs come from the contract (call, routePath)', () => {
    const literal = /['"`]\/api\//;
    expect(all.filter((f) => literal.test(readFileSync(f.file, 'utf8'))).map((f) => f.rel)).toEqual([]);
  });
});
