import { z } from 'zod';
import { Problem, problemCodes } from './common.js';
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
 * nullable enum lists null among its values (zod leaves it out).
 */
function nullableEnums(node: unknown): void {
  if (Array.isArray(node)) return node.forEach(nullableEnums);
  if (node === null || typeof node !== 'object') return;
  const o = node as JsonSchema;
  if (o.nullable === true && Array.isArray(o.enum) && !o.enum.includes(null)) o.enum = [...o.enum, null];
  for (const v of Object.values(o)) nullableEnums(v);
}

function toSchema(schema: z.ZodType, io: 'input' | 'output'): JsonSchema {
  const out = z.toJSONSchema(schema, { target: 'openapi-3.0', io, unrepresentable: 'any' }) as JsonSchema;
  delete out.$schema;
  nullableEnums(out);
  return out;
}

const problemRef = { $ref: '#/components/schemas/Problem' };
const problemResponse = (description: string) => ({
  description,
  content: { 'application/problem+json': { schema: problemRef } },
});

function openApiPath(url: string): string {
  return url.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
}

function parameters(r: RouteDef): unknown[] {
  const out: unknown[] = [];
  for (const [where, obj] of [['path', r.params], ['query', r.querystring]] as const) {
    if (!obj) continue;
    for (const [name, field] of Object.entries(obj.shape as Record<string, z.ZodType>)) {
      const schema = toSchema(field, 'input');
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

function responses(r: RouteDef): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [status, { schema, codes }] of documentedResponses(r)) {
    if (codes.length > 0) {
      const list = codes.map((c) => `\`${c}\``).join(', ');
      out[status] = { ...problemResponse(`${statusMeanings[status] ?? `Status ${status}`}. \`code\`: ${list}.`), 'x-problem-codes': codes };
      continue;
    }
    const description = status < 300 ? 'Success' : `Status ${status}`;
    if (schema === null) {
      out[status] = r.produces ? { description, content: { [r.produces]: { schema: { type: 'string' } } } } : { description };
    } else {
      out[status] = { description, content: { [r.produces ?? 'application/json']: { schema: toSchema(schema, 'output') } } };
    }
  }
  return out;
}

/** Builds the OpenAPI 3.0.3 document of every non-internal route. Pure: same input, same document. */
export function generateOpenApi(routeDefs: readonly RouteDef[], options: OpenApiOptions): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const r of routeDefs) {
    if (r.internal && !options.includeInternal) continue;
    const path = openApiPath(r.url);
    const operation: Record<string, unknown> = {
      operationId: r.operationId,
      summary: r.summary,
      description: [r.description, r.auth.kind === 'apiKey' && r.auth.scope ? `Requires scope \`${r.auth.scope}\`.` : undefined].filter(Boolean).join('\n\n') || r.summary,
      tags: r.tags,
      security: security(r),
      ...(r.auth.kind === 'apiKey' && r.auth.scope ? { 'x-required-scope': r.auth.scope } : {}),
      responses: responses(r),
    };
    const params = parameters(r);
    if (params.length) operation.parameters = params;
    if (r.body) {
      operation.requestBody = { required: !r.body.safeParse(undefined).success, content: { 'application/json': { schema: toSchema(r.body, 'input') } } };
    }
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
        'Errors are RFC 9457 problem details (`application/problem+json`); clients branch on `code`:',
        codes,
      ].join('\n\n'),
    },
    ...(options.serverUrl ? { servers: [{ url: options.serverUrl }] } : {}),
    paths,
    components: {
      schemas: { Problem: toSchema(Problem, 'output') },
      securitySchemes: {
        apiKey: { type: 'http', scheme: 'bearer', description: 'API key (`svk_…`). Its scopes are capped by the current role of the membership that owns it.' },
        daemonKey: { type: 'http', scheme: 'bearer', description: 'Daemon key (`svd_…`); every daemon call but register also sends `X-Daemon-ID`.' },
        session: { type: 'apiKey', in: 'cookie', name: 'surveyor_session', description: 'Browser session; state-changing calls also send `X-CSRF-Token`.' },
      },
    },
  };
}
