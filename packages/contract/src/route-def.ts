import type { z } from 'zod';
import type { Role, Scope } from './auth.js';
import type { ProblemCode } from './common.js';

/** Who may call a route. The server enforces it; the OpenAPI document states it. */
export type RouteAuth =
  | { kind: 'none' }
  /**
   * `Authorization: Bearer <API key>` holding `scope` (any valid key when absent), capped by the key
   * owner's current role. A key without the scope is 403, or 401 with `missingScopeUnauthorized`
   * (metrics, spec 4.8); a key whose owner's role no longer allows it is 403 either way.
   */
  | { kind: 'apiKey'; scope?: Scope; missingScopeUnauthorized?: boolean }
  /** `Authorization: Bearer <daemon key>`; `daemonId` requires `X-Daemon-ID` (every daemon call but register). */
  | { kind: 'daemon'; daemonId: boolean }
  /** The browser session cookie; `minRole` for admin surfaces. State-changing methods need `X-CSRF-Token`. */
  | { kind: 'session'; minRole?: Role }
  /** `Authorization: Bearer <SCIM token>`: a key of kind scim holding `scim:manage`, its owner still admin or owner (the SCIM surface). */
  | { kind: 'scim' };

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/** One HTTP route of the service: everything about it except the handler. */
export interface RouteDef {
  method: HttpMethod;
  /** Fastify-style path, `:name` for parameters. */
  url: string;
  operationId: string;
  summary: string;
  description?: string;
  tags: string[];
  /** Internal routes (UI and session calls) are absent from `/openapi.json` and carry no compatibility promise (spec 9). */
  internal?: boolean;
  auth: RouteAuth;
  params?: z.ZodObject;
  querystring?: z.ZodObject;
  body?: z.ZodType;
  /** Status → body schema; `null` for an empty body. */
  response: Record<number, z.ZodType | null>;
  /**
   * Problem codes only this route answers (its own 404s and 409s, for example). The codes every
   * route of its kind answers (validation, credentials, CSRF, body limits, rate limits, 500, 503)
   * are added by `documentedResponses`; together they are every status the route can answer.
   */
  errors?: readonly ProblemCode[];
  /** A collection read: query errors answer unknown_parameter / limit_out_of_range / invalid_filter (spec 4.1). */
  collection?: boolean;
  /** False exempts the route from rate limits (health only, decisions.md). */
  rateLimited?: boolean;
  /** Media type of the success body when it is not JSON. */
  produces?: string;
}

/**
 * Whether the console's session cookie may call the route too: every API-key route that needs a
 * scope (the console reads and writes the inventory as its user, capped by the user's role),
 * except the metrics scrape (a scraper's key only). Internal to the console, so the public
 * document names API keys alone; a cookie-authenticated state change needs `X-CSRF-Token`.
 */
export function acceptsSession(auth: RouteAuth): auth is Extract<RouteAuth, { kind: 'apiKey' }> & { scope: NonNullable<Extract<RouteAuth, { kind: 'apiKey' }>['scope']> } {
  return auth.kind === 'apiKey' && auth.scope !== undefined && !auth.missingScopeUnauthorized;
}

export function route<const R extends RouteDef>(r: R): R {
  return r;
}
