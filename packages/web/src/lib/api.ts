import { type ClientRequest, type Problem, type RouteDef, type RouteInput, type Transport, createClient, routePath } from '@surveyor/contract';

// The console's transport for the contract's typed client: same-origin fetch with the session
// cookie, JSON both ways, the session's CSRF token on state-changing calls, a 401 sending the user
// to sign in, RFC 9457 problems turned into errors whose message is the problem's `detail`.

let csrfToken: string | null = null;

/** Kept in memory only (from login or GET /api/v1/auth/me); never in storage a script could read later. */
export function setCsrfToken(token: string | null): void {
  csrfToken = token;
}

let onUnauthorized: ((path: string) => void) | null = null;

/** What to do when a call answers 401 (the session expired or was never there): the app sends the user to sign in. */
export function setUnauthorizedHandler(handler: (path: string) => void): void {
  onUnauthorized = handler;
}

export class ApiError extends Error {
  readonly status: number;
  readonly code: string | undefined;
  readonly problem: Partial<Problem> | undefined;
  constructor(status: number, message: string, problem?: Partial<Problem>) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.code = problem?.code;
    this.problem = problem;
  }
}

export interface CallOptions {
  /** Leave a 401 to the caller (sign-in: a wrong password is a 401 to show, not an expired session). */
  no401Redirect?: boolean;
  signal?: AbortSignal;
}

async function send(base: string, request: ClientRequest, opts: CallOptions, accept = 'application/json, application/problem+json'): Promise<Response> {
  const headers: Record<string, string> = { Accept: accept };
  if (request.body !== undefined) headers['Content-Type'] = 'application/json';
  if (request.method !== 'GET' && csrfToken) headers['X-CSRF-Token'] = csrfToken;
  const init: RequestInit = { method: request.method, headers, credentials: 'same-origin' };
  if (request.body !== undefined) init.body = JSON.stringify(request.body);
  if (opts.signal) init.signal = opts.signal;
  try {
    return await fetch(base + request.path, init);
  } catch (e) {
    if ((e as Error).name === 'AbortError') throw e;
    throw new ApiError(0, 'The server cannot be reached. Check your connection and try again.');
  }
}

async function fail(path: string, res: Response, opts: CallOptions): Promise<never> {
  let problem: Partial<Problem> | undefined;
  const type = res.headers.get('content-type') ?? '';
  if (type.includes('json')) {
    try {
      problem = (await res.json()) as Partial<Problem>;
    } catch {
      problem = undefined;
    }
  }
  const detail = problem?.detail ?? `${res.status} ${res.statusText || 'request failed'}`;
  if (res.status === 401 && !opts.no401Redirect) onUnauthorized?.(path);
  throw new ApiError(res.status, detail, problem);
}

/** The console's transport, to the same origin (or to `base`). */
export function consoleTransport(base = ''): Transport<CallOptions> {
  return async (request, opts = {}) => {
    const res = await send(base, request, opts);
    if (!res.ok) return fail(request.path, res, opts);
    return { status: res.status, body: res.status === 204 ? undefined : await res.json() };
  };
}

/**
 * Calls a route of the contract: `call(routes.listHosts, { query }, { signal })` answers the
 * route's own response type (undefined for 204) and throws ApiError with the problem's detail.
 */
export const call = createClient(consoleTransport());

/**
 * Opens a route that answers a stream (`text/event-stream`, read with lib/sse.ts) through the same
 * transport as `call`: cookie, CSRF token, a 401 to the sign-in handler, and a problem answered
 * before the stream begins thrown as ApiError with its detail. Answers the body to read as it
 * arrives; aborting `signal` ends it.
 */
export async function openStream<R extends RouteDef>(route: R, input: RouteInput<R>, opts: CallOptions = {}): Promise<ReadableStream<Uint8Array>> {
  const { body, ...where } = input as { body?: unknown; params?: object; query?: object };
  const path = (routePath as (route: RouteDef, input: object) => string)(route, where);
  const request: ClientRequest = { method: route.method, path, route, ...(body !== undefined ? { body } : {}) };
  const res = await send('', request, opts, 'text/event-stream, application/problem+json');
  if (!res.ok) return fail(path, res, opts);
  if (!res.body || !(res.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
    throw new ApiError(res.status, 'The server answered without a stream. Reload the page and try again.');
  }
  return res.body;
}
