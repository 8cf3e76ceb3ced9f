import { z } from 'zod';
import { Problem, problemCodes } from './common.js';
import type { RouteDef } from './route-def.js';

export interface OpenApiOptions {
  version: string;
  serverUrl?: string;
}

type JsonSchema = Record<string, unknown>;

function toSchema(schema: z.ZodType, io: 'input' | 'output'): JsonSchema {
  const out = z.toJSONSchema(schema, { target: 'openapi-3.0', io, unrepresentable: 'any' }) as JsonSchema;
  delete out.$schema;
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

function responses(r: RouteDef): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [status, schema] of Object.entries(r.response)) {
    const description = Number(status) < 300 ? 'Success' : `Status ${status}`;
    if (schema === null) {
      out[status] = r.produces ? { description, content: { [r.produces]: { schema: { type: 'string' } } } } : { description };
    } else {
      out[status] = { description, content: { [r.produces ?? 'application/json']: { schema: toSchema(schema, 'output') } } };
    }
  }
  const add = (status: number, description: string) => {
    out[String(status)] ??= problemResponse(description);
  };
  if (r.params || r.querystring || r.body) add(400, 'Validation failed (`validation_failed`, or a query code of spec 7)');
  if (r.auth.kind !== 'none') add(401, 'Missing, unknown or revoked credential (`unauthorized`)');
  if (r.auth.kind === 'apiKey') add(403, 'The key or its owner\'s role lacks `requiredScope` (`forbidden`)');
  if (r.params) add(404, 'No such resource in the caller\'s organisation (`not_found`)');
  if (r.body) {
    add(413, 'Body too large (`payload_too_large`)');
    add(415, 'Body is not JSON (`unsupported_media_type`)');
  }
  if (r.rateLimited !== false) add(429, 'Rate limited (`rate_limited`), with `Retry-After`');
  add(500, 'Unexpected failure (`internal_error`)');
  return out;
}

/** Builds the OpenAPI 3.0.3 document of every non-internal route. Pure: same input, same document. */
export function generateOpenApi(routeDefs: readonly RouteDef[], options: OpenApiOptions): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const r of routeDefs) {
    if (r.internal) continue;
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
