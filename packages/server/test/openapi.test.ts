import { readFileSync, writeFileSync } from 'node:fs';
import { Validator } from '@seriousme/openapi-schema-validator';
import { generateOpenApi, problemCodes } from '@surveyor/contract';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { contractRoutes } from '../src/http/app.js';
import { type TestApp, buildTestApp } from './helpers.js';

type Json = Record<string, unknown>;

interface Operation {
  path: string;
  method: string;
  operation: Json;
}

const OPERATION_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];
const PROBLEM_REF = '#/components/schemas/Problem';

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** `/api/v1/things/:id` → `/api/v1/things/{id}` and back. */
const toOpenApiPath = (url: string) => url.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
const toFastifyPath = (path: string) => path.replace(/\{([A-Za-z0-9_]+)\}/g, ':$1');

/** Every operation of the document, as path + lower-case method. */
function operationsOf(doc: Json): Operation[] {
  const out: Operation[] = [];
  for (const [path, item] of Object.entries((doc.paths ?? {}) as Record<string, Json>)) {
    for (const method of OPERATION_METHODS) {
      const operation = item[method];
      if (isObject(operation)) out.push({ path, method, operation });
    }
  }
  return out;
}

/** Keywords whose values are instance data, not schemas or OpenAPI objects: the walk does not enter them. */
const DATA_KEYWORDS = new Set(['example', 'examples', 'default', 'enum']);

/**
 * Visits every object and array of the document with its JSON pointer, except inside instance
 * data. `isNameMap` is true for a `properties` object, whose keys are property names, not keywords.
 */
function walk(node: unknown, pointer: string, visit: (obj: Json, pointer: string, isNameMap: boolean) => void, parentKey = ''): void {
  if (Array.isArray(node)) {
    node.forEach((item, i) => walk(item, `${pointer}/${i}`, visit));
    return;
  }
  if (!isObject(node)) return;
  visit(node, pointer, parentKey === 'properties');
  for (const [key, value] of Object.entries(node)) {
    if (DATA_KEYWORDS.has(key) && parentKey !== 'properties') continue;
    walk(value, `${pointer}/${key.replaceAll('~', '~0').replaceAll('/', '~1')}`, visit, key);
  }
}

/** Follows a local `$ref` (`#/a/b`) inside `doc`. */
function deref(doc: Json, schema: Json): Json {
  let current = schema;
  for (let hops = 0; typeof current.$ref === 'string'; hops++) {
    if (hops > 20) throw new Error(`$ref cycle at ${schema.$ref}`);
    const ref = current.$ref;
    if (!ref.startsWith('#/')) throw new Error(`non-local $ref ${ref}`);
    let target: unknown = doc;
    for (const part of ref.slice(2).split('/')) target = isObject(target) ? target[part.replaceAll('~1', '/').replaceAll('~0', '~')] : undefined;
    if (!isObject(target)) throw new Error(`unresolvable $ref ${ref}`);
    current = target;
  }
  return current;
}

/** A string schema with `format: date-time`, directly, through a `$ref`, or in every branch of a composition. */
function isDateTime(doc: Json, raw: Json): boolean {
  const schema = deref(doc, raw);
  if (schema.type === 'string' && schema.format === 'date-time') return true;
  if (Array.isArray(schema.allOf) && schema.allOf.some((s) => isObject(s) && isDateTime(doc, s))) return true;
  for (const key of ['anyOf', 'oneOf'] as const) {
    const branches = schema[key];
    if (Array.isArray(branches) && branches.length > 0 && branches.every((s) => isObject(s) && isDateTime(doc, s))) return true;
  }
  return false;
}

/** Every `*At` property of every schema of the document, at any depth, with whether it is `date-time`. */
function timestampProperties(doc: Json): { pointer: string; schema: unknown; dateTime: boolean }[] {
  const found: { pointer: string; schema: unknown; dateTime: boolean }[] = [];
  walk(doc, '#', (obj, pointer, isNameMap) => {
    if (!isNameMap) return;
    for (const [name, schema] of Object.entries(obj)) {
      if (name.endsWith('At')) found.push({ pointer: `${pointer}/${name}`, schema, dateTime: isObject(schema) && isDateTime(doc, schema) });
    }
  });
  return found;
}

/**
 * Every (method, path) the app has registered, read from the router's own listing. Each line is
 * `<tree prefix>├── <segment> (<METHODS>)`; a node's full path is its ancestors' segments joined.
 */
function registeredRoutes(app: FastifyInstance): { method: string; url: string }[] {
  const out: { method: string; url: string }[] = [];
  const pathAtDepth: string[] = [];
  let current = '';
  for (const line of app.printRoutes({ commonPrefix: false }).split('\n')) {
    if (line.trim() === '') continue;
    let methods: string | undefined;
    const node = /^((?:│ {3}| {4})*)(?:├── |└── )(\S+)(?: \(([^)]*)\))?/.exec(line);
    if (node) {
      const depth = node[1]!.length / 4;
      pathAtDepth.length = depth;
      current = (depth > 0 ? pathAtDepth[depth - 1]! : '') + node[2]!;
      pathAtDepth.push(current);
      methods = node[3];
    } else {
      // A further route group of the same node (different constraints): `<prefix><segment> (<METHODS>)`.
      const more = /^[│ ]*\S+ \(([^)]*)\)/.exec(line);
      if (!more) throw new Error(`cannot read printRoutes line: ${JSON.stringify(line)}`);
      methods = more[1];
    }
    for (const method of methods?.split(', ') ?? []) out.push({ method, url: current });
  }
  return out;
}

const key = (method: string, url: string) => `${method.toUpperCase()} ${url}`;

/**
 * The public document exactly as served today. The contract's route tables may be rearranged
 * freely; what clients see may change only on purpose, by regenerating this file.
 */
const GOLDEN = new URL('./fixtures/openapi.public.json', import.meta.url);
const REGENERATE = 'If the change to the public API is intended, regenerate it with `UPDATE_OPENAPI_GOLDEN=1 npx vitest run packages/server/test/openapi.test.ts` and commit the file.';

describe('GET /openapi.json', () => {
  let t: TestApp;
  let body: string;
  let doc: Json;
  let operations: Operation[];
  const publicRoutes = contractRoutes.filter((r) => !r.internal);
  const internalRoutes = contractRoutes.filter((r) => r.internal);

  beforeAll(async () => {
    t = await buildTestApp();
    const res = await t.app.inject({ method: 'GET', url: '/openapi.json' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    body = res.body;
    doc = res.json();
    operations = operationsOf(doc);
  });
  afterAll(() => t.close());

  it('is byte for byte the golden document test/fixtures/openapi.public.json', () => {
    if (process.env.UPDATE_OPENAPI_GOLDEN === '1') writeFileSync(GOLDEN, body);
    const golden = readFileSync(GOLDEN, 'utf8');
    // Indented first, so that a difference (order included) shows as a readable line diff.
    expect(JSON.stringify(JSON.parse(body), null, 2), `/openapi.json differs from the golden document. ${REGENERATE}`).toBe(JSON.stringify(JSON.parse(golden), null, 2));
    expect(body === golden, `/openapi.json differs from the golden document in its bytes only (serialisation). ${REGENERATE}`).toBe(true);
  });

  describe('as an OpenAPI 3.0 document', () => {
    it('declares openapi 3.0.3 exactly', () => {
      expect(doc.openapi).toBe('3.0.3');
    });

    it('is valid under the OpenAPI 3.0 JSON schema of an independent validator, $refs included', async () => {
      const validator = new Validator();
      const result = await validator.validate(structuredClone(doc));
      expect(result.errors).toBeUndefined();
      expect(result.valid).toBe(true);
      expect(validator.version).toBe('3.0');
    });

    it('would be refused by that validator with a 3.1-style numeric exclusiveMinimum, so the check above has teeth', async () => {
      const broken = structuredClone(doc) as { components: { schemas: { Problem: { properties: { status: Json } } } } };
      broken.components.schemas.Problem.properties.status.exclusiveMinimum = 99;
      const result = await new Validator().validate(broken as unknown as Json);
      expect(result.valid).toBe(false);
    });

    it('uses no JSON Schema construct that 3.0 lacks: numeric exclusive bounds, const, type arrays or $schema', () => {
      const offences: string[] = [];
      const visited: string[] = [];
      walk(doc, '#', (obj, pointer, isNameMap) => {
        visited.push(pointer);
        if (isNameMap) return;
        for (const bound of ['exclusiveMinimum', 'exclusiveMaximum']) {
          if (bound in obj && typeof obj[bound] !== 'boolean') offences.push(`${pointer}: ${bound} is ${JSON.stringify(obj[bound])}, not a boolean`);
        }
        if ('const' in obj) offences.push(`${pointer}: const`);
        if (Array.isArray(obj.type)) offences.push(`${pointer}: type ${JSON.stringify(obj.type)} is an array`);
        if ('$schema' in obj) offences.push(`${pointer}: $schema`);
      });
      expect(offences).toEqual([]);
      // The walk reached nested schemas (array items inside a component), not just the top level.
      expect(visited).toContain('#/components/schemas/Problem/properties/issues/items/properties/path');
    });

    it('gives every *At property format date-time, nullable ones too, in the served document and in the generator\'s rendering of every contract route', () => {
      // The public routes may not carry timestamps yet; rendering the internal routes as well
      // (the same generator, same schemas) makes sure the walk has something to look at.
      const everyRoute = generateOpenApi(
        contractRoutes.map((r) => ({ ...r, internal: false })),
        { version: 'test' },
      );
      const served = timestampProperties(doc);
      const rendered = timestampProperties(everyRoute);
      expect(served.filter((p) => !p.dateTime)).toEqual([]);
      expect(rendered.filter((p) => !p.dateTime)).toEqual([]);
      expect(served.length + rendered.length).toBeGreaterThan(0);
      // Nullable timestamps (for example an API key's `revokedAt`) are among those checked.
      expect(rendered.filter((p) => isObject(p.schema) && p.schema.nullable === true).length).toBeGreaterThan(0);
    });
  });

  describe('matches the routes the app registers', () => {
    it('documents every non-internal contract route at its path and method, with the same operationId', () => {
      expect(publicRoutes.length).toBeGreaterThan(0);
      for (const r of publicRoutes) {
        const operation = (doc.paths as Record<string, Json | undefined>)[toOpenApiPath(r.url)]?.[r.method.toLowerCase()];
        expect(operation, key(r.method, r.url)).toBeDefined();
        expect((operation as Json).operationId, key(r.method, r.url)).toBe(r.operationId);
      }
      expect(operations).toHaveLength(publicRoutes.length);
    });

    it('documents no internal route: /api/health is there, /api/v1/auth/login is not', () => {
      const paths = doc.paths as Record<string, Json | undefined>;
      expect(paths['/api/health']?.get).toBeDefined();
      expect(paths['/api/v1/auth/login']).toBeUndefined();
      expect(internalRoutes.length).toBeGreaterThan(0);
      for (const r of internalRoutes) {
        expect(paths[toOpenApiPath(r.url)]?.[r.method.toLowerCase()], key(r.method, r.url)).toBeUndefined();
      }
      const operationIds = operations.map((o) => o.operation.operationId);
      for (const r of internalRoutes) expect(operationIds).not.toContain(r.operationId);
    });

    it('documents only operations that the app actually serves', () => {
      expect(operations.length).toBeGreaterThan(0);
      for (const { path, method } of operations) {
        expect(t.app.hasRoute({ method: method.toUpperCase() as 'GET', url: toFastifyPath(path) }), key(method, path)).toBe(true);
      }
    });

    it('has every contract route registered in the app, internal ones too', () => {
      for (const r of contractRoutes) {
        expect(t.app.hasRoute({ method: r.method, url: r.url }), key(r.method, r.url)).toBe(true);
      }
    });

    it('has no registered route that the contract does not declare', () => {
      const registered = registeredRoutes(t.app);
      // The listing was read correctly: every entry is a route the router knows.
      for (const r of registered) expect(t.app.hasRoute({ method: r.method as 'GET', url: r.url }), key(r.method, r.url)).toBe(true);
      const registeredKeys = new Set(registered.map((r) => key(r.method, r.url)));
      // Fastify adds HEAD to every GET route by itself; a HEAD route without a GET would count.
      // The SCIM surface (/api/scim/v2) is described by RFC 7644 and its own discovery documents
      // (ServiceProviderConfig, ResourceTypes, Schemas; test/scim.test.ts), not by /openapi.json.
      const counted = [...registeredKeys].filter((k) => !(k.startsWith('HEAD ') && registeredKeys.has(k.replace(/^HEAD /, 'GET '))) && !k.includes(' /api/scim/v2/'));
      // Every route listed is declared (the test above has every declared route registered; the
      // router's listing leaves out a wildcard under a static segment, `/assets/*`).
      const declared = new Set(contractRoutes.map((r) => key(r.method, r.url)));
      expect(counted.filter((k) => !declared.has(k))).toEqual([]);
      expect(counted.length).toBeGreaterThanOrEqual(declared.size - 1);
    });
  });

  describe('errors and operations', () => {
    it('describes Problem with the required fields of spec 7 and every problem code of the contract', () => {
      const problem = (doc.components as { schemas: Record<string, Json> }).schemas.Problem;
      expect(problem).toBeDefined();
      expect(problem!.type).toBe('object');
      expect([...(problem!.required as string[])].sort()).toEqual(['code', 'detail', 'requestId', 'status', 'title', 'type']);
      const properties = problem!.properties as Record<string, Json>;
      expect(properties.type?.type).toBe('string');
      expect(properties.title?.type).toBe('string');
      expect(properties.status?.type).toBe('integer');
      expect(properties.detail?.type).toBe('string');
      expect(properties.requestId?.type).toBe('string');
      expect(properties.requiredScope?.type).toBe('string');
      expect(properties.issues?.type).toBe('array');
      expect(properties.code?.type).toBe('string');
      expect(properties.code?.enum).toEqual(Object.keys(problemCodes));
    });

    it('gives every operation an operationId, unique across the document', () => {
      expect(operations.length).toBeGreaterThan(0);
      const ids = operations.map((o) => o.operation.operationId);
      for (const [i, id] of ids.entries()) {
        expect(typeof id === 'string' && id.length > 0, key(operations[i]!.method, operations[i]!.path)).toBe(true);
      }
      expect(new Set(ids).size).toBe(ids.length);
    });

    it('declares on every operation a 500 response whose body is the Problem schema', () => {
      expect(operations.length).toBeGreaterThan(0);
      for (const { path, method, operation } of operations) {
        const responses = operation.responses as Record<string, { content?: Record<string, { schema?: Json }> }>;
        expect(responses['500']?.content?.['application/problem+json']?.schema, key(method, path)).toEqual({ $ref: PROBLEM_REF });
      }
    });
  });
});
