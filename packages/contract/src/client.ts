import type { z } from 'zod';
import type { HttpMethod, RouteDef } from './route-def.js';

// One typed call per route: `call(routes.listHosts, { query })` builds the URL from the route's
// path, params and query, sends the body, and answers the route's own response type. Whoever uses
// it (the console, the daemon) supplies only the transport: credentials, CSRF, retries, gzip,
// what a 401 means to them. No URL is paired with a response type by hand.

type Success = 200 | 201 | 202 | 204;
type Out<S> = S extends z.ZodType ? z.output<S> : undefined;

/** The body a route answers on success (`undefined` for an empty 204). */
export type RouteResponse<R extends RouteDef> = {
  [K in keyof R['response'] & Success]: Out<R['response'][K]>;
}[keyof R['response'] & Success];

type Scalar = string | number | boolean;
/** A query as a caller writes it: the schema's input, each value a scalar; empty values are left out. */
type QueryInput<Q> = Q extends z.ZodObject ? { [K in keyof z.input<Q>]?: z.input<Q>[K] | null | undefined } : never;

/** What a call of route R takes: `params` when its path has some, `body` when it has one, `query` when it reads one. */
export type RouteInput<R extends RouteDef> = (R['params'] extends z.ZodObject ? { params: z.input<R['params']> } : { params?: never }) &
  (R['querystring'] extends z.ZodObject ? { query?: QueryInput<R['querystring']> } : { query?: never }) &
  (R['body'] extends z.ZodType ? { body: z.input<R['body']> } : { body?: never });

/** The request body route R takes (the input of its schema). */
export type RouteBody<R extends RouteDef> = R['body'] extends z.ZodType ? z.input<R['body']> : never;

/** Whether an input may be left out altogether (no params, no body). */
export type Optional<R extends RouteDef> = R['params'] extends z.ZodObject ? false : R['body'] extends z.ZodType ? false : true;
export type CallArgs<R extends RouteDef, O> = Optional<R> extends true ? [input?: RouteInput<R>, options?: O] : [input: RouteInput<R>, options?: O];

/** What the transport is asked to send. `path` holds the query already. */
export interface ClientRequest {
  method: HttpMethod;
  path: string;
  body?: unknown;
  route: RouteDef;
}

/** What the transport answers: the status and the parsed JSON body (undefined when empty). */
export interface ClientResponse {
  status: number;
  body: unknown;
}

/** The only thing a user of the client writes: send a request, answer its status and JSON, throw on a refusal. */
export type Transport<O> = (request: ClientRequest, options: O | undefined) => Promise<ClientResponse>;

/**
 * The path of a route with its parameters filled in (each encoded) and its query appended; values
 * that are undefined, null or '' are left out. Throws when a parameter the path names is missing.
 */
export function routePath<R extends RouteDef>(route: R, ...input: Optional<R> extends true ? [input?: Pick<RouteInput<R>, 'params' | 'query'>] : [input: Pick<RouteInput<R>, 'params' | 'query'>]): string {
  return fillPath(route, (input[0] ?? {}) as { params?: object; query?: object });
}

function fillPath(route: RouteDef, input: { params?: object; query?: object }): string {
  const params = (input.params ?? {}) as Record<string, Scalar>;
  const path = route.url.replace(/:([A-Za-z0-9_]+)/g, (_, name: string) => {
    const v = params[name];
    if (v === undefined || v === null || v === '') throw new Error(`${route.operationId}: parameter ${name} is missing`);
    return encodeURIComponent(String(v));
  });
  const search = new URLSearchParams();
  for (const [k, v] of Object.entries((input.query ?? {}) as Record<string, Scalar | null | undefined>)) {
    if (v !== undefined && v !== null && v !== '') search.set(k, String(v));
  }
  const qs = search.toString();
  return qs ? `${path}?${qs}` : path;
}

export interface ClientOptions {
  /** Check each success body against the route's response schema (the daemon does; the console trusts its own server). */
  validate?: boolean;
}

/** A function calling any route through `transport`, typed by the route. */
export type Call<O> = <R extends RouteDef>(route: R, ...args: CallArgs<R, O>) => Promise<RouteResponse<R>>;

/** Makes `call(route, { params, query, body }, options)` over a transport. */
export function createClient<O = undefined>(transport: Transport<O>, clientOptions: ClientOptions = {}): Call<O> {
  return (async <R extends RouteDef>(route: R, input?: RouteInput<R>, options?: O) => {
    const request: ClientRequest = { method: route.method, path: fillPath(route, (input ?? {}) as { params?: object; query?: object }), route };
    if (input && 'body' in input && input.body !== undefined) request.body = input.body;
    const res = await transport(request, options);
    if (!clientOptions.validate) return res.body as RouteResponse<R>;
    const schema = route.response[res.status];
    if (schema === undefined) throw new Error(`${route.operationId}: the server answered ${res.status}, which the route does not document`);
    if (schema === null) return undefined as RouteResponse<R>;
    const parsed = schema.safeParse(res.body);
    if (!parsed.success) throw new Error(`${route.operationId}: unexpected answer from the server (${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')})`);
    return parsed.data as RouteResponse<R>;
  }) as Call<O>;
}
