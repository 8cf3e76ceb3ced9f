import type { Problem } from '@surveyor/contract';

// The one way the console talks to the API: same-origin fetch with the session cookie, JSON both
// ways, the session's CSRF token on state-changing calls, RFC 9457 problems turned into errors
// whose message is the problem's `detail`.

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

type Query = Record<string, string | number | undefined | null>;

export interface CallOptions {
  method?: 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';
  query?: Query;
  body?: unknown;
  /** Leave a 401 to the caller (sign-in: a wrong password is a 401 to show, not an expired session). */
  no401Redirect?: boolean;
  signal?: AbortSignal;
}

export function withQuery(path: string, query?: Query): string {
  if (!query) return path;
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== null && v !== '') params.set(k, String(v));
  const qs = params.toString();
  return qs ? `${path}?${qs}` : path;
}

async function send(path: string, opts: CallOptions): Promise<Response> {
  const method = opts.method ?? 'GET';
  const headers: Record<string, string> = { Accept: 'application/json, application/problem+json' };
  if (opts.body !== undefined) headers['Content-Type'] = 'application/json';
  if (method !== 'GET' && csrfToken) headers['X-CSRF-Token'] = csrfToken;
  const init: RequestInit = { method, headers, credentials: 'same-origin' };
  if (opts.body !== undefined) init.body = JSON.stringify(opts.body);
  if (opts.signal) init.signal = opts.signal;
  try {
    return await fetch(withQuery(path, opts.query), init);
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

/** Calls the API and returns its JSON (undefined for 204). Throws ApiError with the problem's detail. */
export async function api<T>(path: string, opts: CallOptions = {}): Promise<T> {
  const res = await send(path, opts);
  if (!res.ok) return fail(path, res, opts);
  if (res.status === 204) return undefined as T;
  return (await res.json()) as T;
}

