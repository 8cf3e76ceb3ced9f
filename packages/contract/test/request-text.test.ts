import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { JsonValue, type RouteDef, Text, isWellFormedText, routes } from '../src/index.js';

// Issue 18: every text a request takes is built on the shared `Text` schema (well-formed Unicode),
// and free-form JSON on `JsonValue`. This walk names any request string that is not, so a new
// field cannot forget it.

/** String formats whose patterns admit only ASCII: a lone surrogate can never pass them. */
const ASCII_FORMATS = new Set(['uuid', 'datetime', 'email']);

type Def = { type: string; [k: string]: unknown };
const defOf = (s: z.ZodType) => (s as unknown as { _zod: { def: Def } })._zod.def;
const checksOf = (d: Def) => ((d.checks as { _zod: { def: { check: string; fn?: unknown } } }[] | undefined) ?? []).map((c) => c._zod.def);

/** Paths of request strings not built on Text, and of free-form values not built on JsonValue. */
function unchecked(schema: z.ZodType, path: string, out: string[], seen = new Set<unknown>()): string[] {
  if (seen.has(schema)) return out;
  seen.add(schema);
  const d = defOf(schema);
  const walk = (s: unknown, p: string) => unchecked(s as z.ZodType, p, out, seen);
  switch (d.type) {
    case 'string':
      if (typeof d.format === 'string' && ASCII_FORMATS.has(d.format)) break;
      if (!checksOf(d).some((c) => c.check === 'custom' && c.fn === isWellFormedText)) out.push(path);
      break;
    case 'unknown':
    case 'any':
      if (schema !== JsonValue) out.push(`${path} (free-form, not JsonValue)`);
      break;
    case 'object':
      for (const [k, v] of Object.entries(d.shape as Record<string, unknown>)) walk(v, `${path}.${k}`);
      if (d.catchall) walk(d.catchall, `${path}.*`);
      break;
    case 'array':
      walk(d.element, `${path}[]`);
      break;
    case 'record':
      walk(d.keyType, `${path}{key}`);
      walk(d.valueType, `${path}{value}`);
      break;
    case 'union':
      (d.options as unknown[]).forEach((o, i) => walk(o, `${path}|${i}`));
      break;
    case 'intersection':
      walk(d.left, path);
      walk(d.right, path);
      break;
    case 'pipe':
      walk(d.in, path);
      walk(d.out, path);
      break;
    case 'optional':
    case 'nullable':
    case 'default':
    case 'prefault':
    case 'catch':
    case 'readonly':
    case 'nonoptional':
      walk(d.innerType, path);
      break;
    case 'lazy':
      walk((d.getter as () => unknown)(), path);
      break;
    case 'number': case 'int': case 'boolean': case 'enum': case 'literal': case 'transform': case 'null': case 'undefined': case 'bigint': case 'date': case 'never':
      break;
    default:
      out.push(`${path} (unhandled zod type ${d.type})`);
  }
  return out;
}

describe('request text', () => {
  it('is the shared Text schema in every body, query and path parameter of every route', () => {
    const missing: string[] = [];
    for (const [name, r] of Object.entries(routes) as [string, RouteDef][]) {
      if (r.params) unchecked(r.params, `${name} params`, missing);
      if (r.querystring) unchecked(r.querystring, `${name} query`, missing);
      if (r.body) unchecked(r.body, `${name} body`, missing);
    }
    expect(missing).toEqual([]);
  });

  it('names a plain string, a plain record key and free-form JSON (the walk sees them)', () => {
    const s = z.object({ a: z.string().max(3).optional(), b: z.record(z.string(), z.unknown()), c: z.array(Text.max(2)), d: z.uuid() });
    expect(unchecked(s, 'x', [])).toEqual(['x.a', 'x.b{key}', 'x.b{value} (free-form, not JsonValue)']);
  });

  it('refuses a lone surrogate, in free-form JSON too, naming where', () => {
    expect(Text.safeParse('a\ud800').success).toBe(false);
    expect(Text.safeParse('😀 ok').success).toBe(true);
    const r = JsonValue.safeParse({ a: [1, { b: 'x\udc00' }] });
    expect(r.success).toBe(false);
    expect(r.error?.issues[0]?.path).toEqual(['a', 1, 'b']);
  });
});
