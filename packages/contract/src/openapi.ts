import { z } from 'zod';
import { problemCodes } from './common.js';
import { schemaNames } from './named.js';
import { documentedResponses } from './responses.js';
import type { RouteDef } from './route-def.js';

export interface OpenApiOptions {
  version: string;
  serverUrl?: string;
  /** Document the internal routes too (the test suite checks every response against it); never served. */
  includeInternal?: boolean;
}

type JsonSchema = Record<string, unknown>;

/**
 * OpenAPI 3.0.3: `nullable: true` does not admit null into an `enum` that lacks it, so every
 * nullable enum lists null among its values (zod leaves it out). A schema derived from a named one
 * (`.describe()`) is inlined whole; zod also adds an `allOf` of the named one, which is dropped.
 */
function tidy(node: unknown): void {
  if (Array.isArray(node)) return node.forEach(tidy);
  if (node === null || typeof node !== 'object') return;
  const o = node as JsonSchema;
  if (o.nullable === true && Array.isArray(o.enum) && !o.enum.includes(null)) o.enum = [...o.enum, null];
  if (Array.isArray(o.allOf) && o.allOf.length === 1 && (o.type !== undefined || o.anyOf !== undefined || o.oneOf !== undefined)) delete o.allOf;
  for (const v of Object.values(o)) tidy(v);
}

/** Converts a schema; the named ones inside it become references, collected into `components`. */
class Schemas {
  readonly components: Record<string, JsonSchema> = {};

  convert(schema: z.ZodType, io: 'input' | 'output', root = true): JsonSchema {
    const named: [z.ZodType, string][] = [];
    const out = z.toJSONSchema(schema, {
      target: 'openapi-3.0',
      io,
      unrepresentable: 'any',
      override: (ctx) => {
        const zod = ctx.zodSchema as unknown as z.ZodType;
        const id = schemaNames.get(zod);
        if (!id || zod === schema) return;
        named.push([zod, id]);
        for (const k of Object.keys(ctx.jsonSchema)) delete (ctx.jsonSchema as JsonSchema)[k];
        (ctx.jsonSchema as JsonSchema).$ref = `#/components/schemas/${id}`;
      },
    }) as JsonSchema;
    delete out.$schema;
    tidy(out);
    for (const [s, id] of named) this.add(s, id, io);
    const id = schemaNames.get(schema);
    if (root && id) {
      this.put(id, out, io);
      return { $ref: `#/components/schemas/${id}` };
    }
    return out;
  }

  add(schema: z.ZodType, id: string, io: 'input' | 'output'): void {
    if (this.components[id]) return;
    this.put(id, this.convert(schema, io, false), io);
  }

  private put(id: string, schema: JsonSchema, io: string): void {
    const before = this.components[id];
    if (before && JSON.stringify(before) !== JSON.stringify(schema)) throw new Error(`schema ${id} reads differently as ${io}: name only schemas that are the same in requests and responses`);
    this.components[id] = schema;
  }
}

const problemRef = { $ref: '#/components/schemas/Problem' };
const header = (name: string) => ({ $ref: `#/components/headers/${name}` });

function openApiPath(url: string): string {
  return url.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
}

function parameters(r: RouteDef, schemas: Schemas): unknown[] {
  const out: unknown[] = [];
  for (const [where, obj] of [['path', r.params], ['query', r.querystring]] as const) {
    if (!obj) continue;
    for (const [name, field] of Object.entries(obj.shape as Record<string, z.ZodType>)) {
      const schema = schemas.convert(field, 'input');
      const description = schema.description;
      delete schema.description;
      out.push({
        name,
        in: where,
        required: where === 'path' || !field.safeParse(undefined).success,
        ...(description ? { description } : {}),
        schema,
      });
    }
  }
  if (r.auth.kind === 'daemon' && r.auth.daemonId) {
    out.push({ name: 'X-Daemon-ID', in: 'header', required: true, description: 'The `daemonId` that register returned. Missing or malformed: 401 `unauthorized`; not a daemon of this key: 404 `not_found`.', schema: { type: 'string', format: 'uuid' } });
  }
  return out;
}

function security(r: RouteDef): unknown[] | undefined {
  switch (r.auth.kind) {
    case 'none':
      return [];
    case 'apiKey':
      return [{ apiKey: [] }];
    case 'daemon':
      return [{ daemonKey: [] }];
    case 'session':
      return [{ session: [] }];
  }
}

/** The meaning of a problem status, before its codes. */
const statusMeanings: Record<number, string> = {
  400: 'The request is malformed or failed validation; `issues` names the fields',
  401: 'Missing, unknown, expired or revoked credential',
  403: 'Authenticated but not permitted',
  404: 'No such resource in the caller\'s organisation',
  409: 'Conflicts with the current state',
  413: 'Body too large',
  415: 'Body is not JSON, or compressed other than with gzip',
  429: 'Rate limited; `Retry-After` says when to try again',
  500: 'Unexpected failure; quote `requestId`',
  503: 'A dependency (the database) is unavailable; try again shortly',
};

function responses(r: RouteDef, schemas: Schemas): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [status, { schema, codes }] of documentedResponses(r)) {
    const headers: Record<string, unknown> = { 'X-Request-Id': header('X-Request-Id') };
    if (r.rateLimited !== false) for (const h of ['RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset', 'RateLimit-Policy']) headers[h] = header(h);
    if (status === 429) headers['Retry-After'] = header('Retry-After');
    if (codes.length > 0) {
      const list = codes.map((c) => `\`${c}\``).join(', ');
      out[status] = {
        description: `${statusMeanings[status] ?? `Status ${status}`}. \`code\`: ${list}.`,
        headers,
        content: { 'application/problem+json': { schema: problemRef } },
        'x-problem-codes': codes,
      };
      continue;
    }
    const description = status < 300 ? 'Success' : `Status ${status}`;
    if (schema === null) {
      out[status] = r.produces ? { description, headers, content: { [r.produces]: { schema: { type: 'string' } } } } : { description, headers };
    } else {
      out[status] = { description, headers, content: { [r.produces ?? 'application/json']: { schema: schemas.convert(schema, 'output') } } };
    }
  }
  return out;
}

/** Tags in the order of their first route, with what each groups. */
const tagDescriptions: Record<string, string> = {
  health: 'Liveness of the service and its database; no credential, never rate limited.',
  meta: 'Documents about the API itself.',
  auth: 'Browser sessions and API keys.',
  inventory: 'The inventory of an organisation (hosts, services, networks, sites, certificates, vulnerabilities, snapshots, topologies): keyset-paginated collections, a host\'s topology, and the writes an API key may make.',
  scans: 'Scan sessions: queue a scan of a network on an online daemon, follow its progress, cancel it.',
  daemon: 'The daemon protocol: register, heartbeat, long-poll for jobs, post observations and flow records. Daemon keys only.',
  metrics: 'Prometheus metrics of the key\'s organisation.',
  admin: 'Scheduled jobs for administrators.',
  notifications: 'Events, notification destinations and deliveries.',
  events: 'The live change stream.',
};

const components = {
  headers: {
    'X-Request-Id': { description: 'The request id, on every response (a well-formed incoming `X-Request-Id` is kept); a problem\'s `requestId`.', schema: { type: 'string' } },
    'RateLimit-Limit': { description: 'Requests allowed in the current one-minute window.', schema: { type: 'integer' } },
    'RateLimit-Remaining': { description: 'Requests left in the current window.', schema: { type: 'integer' } },
    'RateLimit-Reset': { description: 'Seconds until the window resets.', schema: { type: 'integer' } },
    'RateLimit-Policy': { description: 'The limit and its window, for example `600;w=60`.', schema: { type: 'string' } },
    'Retry-After': { description: 'Seconds to wait before trying again.', schema: { type: 'integer' } },
  },
  securitySchemes: {
    apiKey: { type: 'http', scheme: 'bearer', description: 'API key (`svk_…`). Its scopes are capped by the current role of the membership that owns it.' },
    daemonKey: { type: 'http', scheme: 'bearer', description: 'Daemon key (`svd_…`); every daemon call but register also sends `X-Daemon-ID`.' },
    session: { type: 'apiKey', in: 'cookie', name: 'surveyor_session', description: 'Browser session; state-changing calls also send `X-CSRF-Token`.' },
  },
};

/** Builds the OpenAPI 3.0.3 document of every non-internal route. Pure: same input, same document. */
export function generateOpenApi(routeDefs: readonly RouteDef[], options: OpenApiOptions): Record<string, unknown> {
  const schemas = new Schemas();
  schemas.add([...schemaNames].find(([, id]) => id === 'Problem')![0], 'Problem', 'output');
  const paths: Record<string, Record<string, unknown>> = {};
  const tags: string[] = [];
  for (const r of routeDefs) {
    if (r.internal && !options.includeInternal) continue;
    const path = openApiPath(r.url);
    for (const t of r.tags) if (!tags.includes(t)) tags.push(t);
    const operation: Record<string, unknown> = {
      operationId: r.operationId,
      summary: r.summary,
      description: [r.description, r.auth.kind === 'apiKey' && r.auth.scope ? `Requires scope \`${r.auth.scope}\`.` : undefined].filter(Boolean).join('\n\n') || r.summary,
      tags: r.tags,
      security: security(r),
      ...(r.auth.kind === 'apiKey' && r.auth.scope ? { 'x-required-scope': r.auth.scope } : {}),
    };
    const params = parameters(r, schemas);
    if (params.length) operation.parameters = params;
    if (r.body) {
      operation.requestBody = { required: !r.body.safeParse(undefined).success, content: { 'application/json': { schema: schemas.convert(r.body, 'input') } } };
    }
    operation.responses = responses(r, schemas);
    (paths[path] ??= {})[r.method.toLowerCase()] = operation;
  }
  const codes = Object.entries(problemCodes)
    .map(([code, p]) => `- \`${code}\` (${p.status}): ${p.description}`)
    .join('\n');
  return {
    openapi: '3.0.3',
    info: {
      title: 'Surveyor',
      version: options.version,
      description: [
        'Network inventory control plane: the public inventory API and the daemon protocol.',
        'Anything absent from this document is internal and carries no compatibility promise.',
        'Text is well-formed Unicode: a lone UTF-16 surrogate in any request string is 400 `validation_failed`. Timestamps are RFC 3339 with an offset and name an instant from 0100-01-01T00:00:00Z to 9999-12-31T23:59:59Z; outside, 400 `validation_failed`.',
        'Every response carries `X-Request-Id`; rate-limited operations carry `RateLimit-Limit`, `RateLimit-Remaining`, `RateLimit-Reset` and `RateLimit-Policy`, and a 429 `Retry-After`.',
        'Errors are RFC 9457 problem details (`application/problem+json`); clients branch on `code`. Each operation lists, per status, the codes it answers (`x-problem-codes`):',
        codes,
      ].join('\n\n'),
      // The project declares no licence (package.json `private`, no `license`): stated as such, not invented.
      contact: { name: 'The operators of this Surveyor deployment', ...(options.serverUrl ? { url: options.serverUrl } : {}) },
      license: { name: 'UNLICENSED' },
    },
    ...(options.serverUrl ? { servers: [{ url: options.serverUrl }] } : {}),
    tags: tags.map((name) => ({ name, ...(tagDescriptions[name] ? { description: tagDescriptions[name] } : {}) })),
    paths,
    components: {
      schemas: Object.fromEntries(Object.entries(schemas.components).sort(([a], [b]) => a.localeCompare(b))),
      ...components,
    },
  };
}
