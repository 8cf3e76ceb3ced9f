import type { z } from 'zod';
import { type ProblemCode, problemCodes } from './common.js';
import { type RouteDef, acceptsSession } from './route-def.js';

/** One status a route can answer: its success body schema, or the problem codes answered with it. */
export interface DocumentedResponse {
  /** The body schema of a declared (success) status; null for an empty body or a problem. */
  schema: z.ZodType | null;
  /** Problem codes answered with this status (`application/problem+json`); empty for a declared status. */
  codes: ProblemCode[];
}

/** Methods that may carry a body: a body of any of them can be malformed, too large or not JSON. */
const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/**
 * Every status a route can answer, with the problem codes of each: the statuses it declares, the
 * codes every route of its kind answers, and its own `errors`. The OpenAPI document states exactly
 * these, and the server's test suite fails on any response outside them.
 */
export function documentedResponses(r: RouteDef): Map<number, DocumentedResponse> {
  const out = new Map<number, DocumentedResponse>();
  for (const [status, schema] of Object.entries(r.response)) out.set(Number(status), { schema, codes: [] });
  const add = (code: ProblemCode) => {
    const status = problemCodes[code].status;
    const entry = out.get(status);
    if (!entry) out.set(status, { schema: null, codes: [code] });
    else if (entry.schema === null && !entry.codes.includes(code) && !(status in r.response)) entry.codes.push(code);
  };
  const takesBody = BODY_METHODS.has(r.method);
  if (r.params || r.querystring || r.body || takesBody) add('validation_failed');
  if (r.collection) for (const code of ['unknown_parameter', 'invalid_filter', 'limit_out_of_range', 'invalid_cursor'] as const) add(code);
  if (r.auth.kind !== 'none') add('unauthorized');
  if (r.auth.kind === 'apiKey') add('forbidden');
  if (acceptsSession(r.auth) && takesBody) add('csrf_failed'); // the console's cookie without its token
  if (r.auth.kind === 'session') {
    add('forbidden'); // a role below minRole, or a one-time password not changed yet
    if (takesBody) add('csrf_failed');
  }
  if (r.params || (r.auth.kind === 'daemon' && r.auth.daemonId)) add('not_found');
  for (const code of r.errors ?? []) add(code);
  if (takesBody) {
    add('payload_too_large');
    add('unsupported_media_type');
  }
  if (r.rateLimited !== false) add('rate_limited');
  add('internal_error');
  add('service_unavailable');
  return new Map([...out.entries()].sort(([a], [b]) => a - b));
}
