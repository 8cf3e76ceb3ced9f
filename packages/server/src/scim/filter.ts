import { type Filter, parse } from 'scim2-parse-filter';
import { ScimError } from './errors.js';
import { type Attr, attributesOf, findAttr, splitPath } from './schema.js';

// SCIM filters (RFC 7644 3.4.2.2): parsed by scim2-parse-filter (a grammar, not regular
// expressions), then checked against the resource schema and evaluated here, because the RFC's
// semantics need the schema: attribute names are case-insensitive, strings compare
// case-insensitively unless the attribute is caseExact (id, externalId), dateTimes compare as
// instants ("2026-01-01T00:00:00Z" equals "…00.000Z"), and a multi-valued attribute matches when
// any of its values does.

type ResourceType = 'User' | 'Group';
export type Resource = Record<string, unknown>;

const MAX_FILTER_LENGTH = 2048;

/** A filter ready to run on resources of one type. Throws ScimError 400 invalidFilter for a filter it cannot run. */
export interface CompiledFilter {
  test(resource: Resource): boolean;
  /** A top-level `attr eq "value"` (alone or and-ed) on one of `attrs`: a list can look it up instead of scanning. */
  equalityOn(attr: string): string | undefined;
}

interface Resolved {
  def: Attr;
  names: string[];
}

function invalid(detail: string): never {
  throw new ScimError(400, detail, 'invalidFilter');
}

function resolve(type: ResourceType, path: string, within?: Attr): Resolved {
  const names = within ? path.split('.') : splitPath(path, type);
  if (names.length === 0 || names.some((n) => n === '')) invalid(`The filter names an attribute path ${JSON.stringify(path)} that is not valid.`);
  let attrs: readonly Attr[] = within?.subAttributes ?? attributesOf(type);
  let def: Attr | undefined;
  const canonical: string[] = [];
  for (const n of names) {
    def = findAttr(attrs, n);
    if (!def) invalid(`The ${type} resource has no attribute ${JSON.stringify(path)} to filter on.`);
    canonical.push(def.name);
    attrs = def.subAttributes ?? [];
  }
  if (def!.returned === 'never') invalid(`${path} cannot be filtered on.`);
  return { def: def!, names: canonical };
}

/** The values at `names` in `r`, flattened across multi-valued attributes. */
function valuesAt(r: unknown, names: string[]): unknown[] {
  let current: unknown[] = [r];
  for (const n of names) {
    const next: unknown[] = [];
    for (const c of current) {
      if (c === null || typeof c !== 'object') continue;
      const v = (c as Record<string, unknown>)[n];
      if (Array.isArray(v)) next.push(...v);
      else if (v !== undefined && v !== null) next.push(v);
    }
    current = next;
  }
  return current;
}

function asInstant(v: unknown): number {
  return typeof v === 'string' ? Date.parse(v) : Number.NaN;
}

function compare(def: Attr, op: string, value: unknown, comp: unknown): boolean {
  switch (def.type) {
    case 'boolean': {
      const b = typeof comp === 'string' ? comp.toLowerCase() === 'true' : comp;
      if (op === 'eq') return value === b;
      return value !== b; // ne (others refused at compile time)
    }
    case 'integer': {
      const a = Number(value);
      const c = Number(comp);
      return op === 'eq' ? a === c : op === 'ne' ? a !== c : op === 'gt' ? a > c : op === 'ge' ? a >= c : op === 'lt' ? a < c : a <= c;
    }
    case 'dateTime': {
      const a = asInstant(value);
      const c = asInstant(comp);
      if (Number.isNaN(a) || Number.isNaN(c)) return false;
      return op === 'eq' ? a === c : op === 'ne' ? a !== c : op === 'gt' ? a > c : op === 'ge' ? a >= c : op === 'lt' ? a < c : a <= c;
    }
    default: {
      if (typeof value !== 'string' || typeof comp !== 'string') return op === 'ne';
      const exact = def.caseExact ?? false;
      const a = exact ? value : value.toLowerCase();
      const c = exact ? comp : comp.toLowerCase();
      switch (op) {
        case 'eq': return a === c;
        case 'ne': return a !== c;
        case 'co': return a.includes(c);
        case 'sw': return a.startsWith(c);
        case 'ew': return a.endsWith(c);
        case 'gt': return a > c;
        case 'ge': return a >= c;
        case 'lt': return a < c;
        default: return a <= c;
      }
    }
  }
}

type Test = (r: unknown) => boolean;

function compile(f: Filter, type: ResourceType, within?: Attr): Test {
  switch (f.op) {
    case 'and':
    case 'or': {
      const parts = (f as { filters: Filter[] }).filters.map((x) => compile(x, type, within));
      return f.op === 'and' ? (r) => parts.every((p) => p(r)) : (r) => parts.some((p) => p(r));
    }
    case 'not': {
      const inner = compile((f as { filter: Filter }).filter, type, within);
      return (r) => !inner(r);
    }
    case '[]': {
      const vp = f as { attrPath: string; valFilter: Filter };
      const { def, names } = resolve(type, vp.attrPath, within);
      if (def.type !== 'complex' || within) invalid(`${vp.attrPath}[…] needs a multi-valued complex attribute at the top level.`);
      const inner = compile(vp.valFilter, type, def);
      return (r) => valuesAt(r, names).some((v) => inner(v));
    }
    case 'pr': {
      const { names } = resolve(type, (f as { attrPath: string }).attrPath, within);
      return (r) => valuesAt(r, names).some((v) => v !== '' && !(typeof v === 'object' && v !== null && Object.keys(v).length === 0));
    }
    default: {
      const c = f as { op: string; attrPath: string; compValue: unknown };
      const { def, names } = resolve(type, c.attrPath, within);
      if (def.type === 'complex') invalid(`${c.attrPath} is complex: compare one of its sub-attributes (for example ${c.attrPath}.value).`);
      if (def.type === 'boolean' && !['eq', 'ne'].includes(c.op)) invalid(`${c.attrPath} is a boolean: only eq and ne apply.`);
      if (['co', 'sw', 'ew'].includes(c.op) && !['string', 'reference'].includes(def.type)) invalid(`${c.op} applies to strings; ${c.attrPath} is a ${def.type}.`);
      if (['gt', 'ge', 'lt', 'le'].includes(c.op) && def.type === 'reference') invalid(`${c.op} does not apply to the reference ${c.attrPath}.`);
      if (c.compValue === null) return c.op === 'eq' ? (r) => valuesAt(r, names).length === 0 : (r) => valuesAt(r, names).length > 0;
      if (def.type === 'dateTime' && Number.isNaN(asInstant(c.compValue))) invalid(`${c.attrPath} is a dateTime: compare it with an RFC 3339 timestamp in quotes.`);
      const any = (r: unknown) => valuesAt(r, names).some((v) => compare(def, c.op === 'ne' ? 'eq' : c.op, v, c.compValue));
      return c.op === 'ne' ? (r) => !any(r) : any;
    }
  }
}

function topLevelEqualities(f: Filter, type: ResourceType, out: Map<string, string>): void {
  if (f.op === 'and') for (const x of (f as { filters: Filter[] }).filters) topLevelEqualities(x, type, out);
  if (f.op === 'eq') {
    const c = f as { attrPath: string; compValue: unknown };
    const { names } = resolve(type, c.attrPath);
    if (names.length === 1 && typeof c.compValue === 'string') out.set(names[0]!, c.compValue);
  }
}

/** Parses and checks a filter for resources of `type`. Throws ScimError 400 invalidFilter with the reason. */
export function compileFilter(text: string, type: ResourceType): CompiledFilter {
  if (text.length > MAX_FILTER_LENGTH) invalid(`The filter is longer than ${MAX_FILTER_LENGTH} characters.`);
  let ast: Filter;
  try {
    ast = parse(text);
  } catch (e) {
    invalid(`The filter could not be parsed: ${(e as Error).message}`);
  }
  const test = compile(ast, type);
  const eq = new Map<string, string>();
  topLevelEqualities(ast, type, eq);
  return { test: (r) => test(r), equalityOn: (attr) => eq.get(attr) };
}

/**
 * Applies `attributes` / `excludedAttributes` (RFC 7644 3.4.2.5) to a resource: `id` and
 * `schemas` are always returned; a sub-attribute path keeps or drops just that sub-attribute.
 * Unknown names are ignored, as the RFC allows.
 */
export function project(resource: Resource, type: ResourceType, attributes: string[] | undefined, excluded: string[] | undefined): Resource {
  const paths = (list: string[]) => list.map((p) => splitPath(p.trim(), type)).filter((p) => p.length > 0);
  const key = (obj: Resource, name: string) => Object.keys(obj).find((k) => k.toLowerCase() === name.toLowerCase());
  if (attributes && attributes.length) {
    const out: Resource = { schemas: resource.schemas, id: resource.id };
    for (const names of paths(attributes)) {
      const top = key(resource, names[0]!);
      if (!top) continue;
      if (names.length === 1) {
        out[top] = resource[top];
        continue;
      }
      const value = resource[top];
      const pick = (v: unknown) => {
        if (!v || typeof v !== 'object') return undefined;
        const k = key(v as Resource, names[1]!);
        return k ? { [k]: (v as Resource)[k] } : undefined;
      };
      const prev = out[top];
      if (Array.isArray(value)) out[top] = value.map((v, i) => ({ ...((prev as Resource[] | undefined)?.[i] ?? {}), ...pick(v) }));
      else if (value && typeof value === 'object') out[top] = { ...((prev as Resource | undefined) ?? {}), ...pick(value) };
    }
    return out;
  }
  if (excluded && excluded.length) {
    const out: Resource = structuredClone(resource);
    for (const names of paths(excluded)) {
      const top = key(out, names[0]!);
      if (!top || top === 'id' || top === 'schemas') continue;
      if (names.length === 1) {
        delete out[top];
        continue;
      }
      const strip = (v: unknown) => {
        if (!v || typeof v !== 'object') return;
        const k = key(v as Resource, names[1]!);
        if (k) delete (v as Resource)[k];
      };
      const value = out[top];
      if (Array.isArray(value)) value.forEach(strip);
      else strip(value);
    }
    return out;
  }
  return resource;
}
