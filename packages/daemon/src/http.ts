import { gzipSync } from 'node:zlib';
import { Agent, fetch } from 'undici';
import { type Call, type ClientRequest, type ClientResponse, createClient } from '@surveyor/contract';
import type { Logger } from './log.js';

/** A refusal from the server: an RFC 9457 problem (status, `code`, `detail`). */
export class ProblemError extends Error {
  constructor(
    readonly status: number,
    readonly code: string | undefined,
    readonly detail: string | undefined,
    readonly path: string,
  ) {
    super(`${path}: ${status}${code ? ` ${code}` : ''}${detail ? `: ${detail}` : ''}`);
  }
}

export class StoppedError extends Error {
  constructor() {
    super('stopped');
  }
}

/** Exponential backoff with full jitter: a random delay in [0, min(cap, base * 2^attempt)]. */
export function backoffMs(attempt: number, baseMs = 500, capMs = 30_000, random = Math.random): number {
  return Math.round(random() * Math.min(capMs, baseMs * 2 ** Math.min(attempt, 30)));
}

/** Resolves after `ms`, or rejects with StoppedError when `signal` aborts first. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(new StoppedError());
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(new StoppedError());
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

export interface CallOptions {
  /** Per-attempt timeout. */
  timeoutMs?: number;
  /** Give up retrying after this long (default: keep retrying until stopped). */
  retryForMs?: number;
  /** No retries at all (heartbeats: the next tick is the retry). */
  once?: boolean;
}

const GZIP_FROM_BYTES = 1024;

/**
 * The daemon's transport for the contract's typed client (`client.call(routes.daemonHeartbeat,
 * { body })`, each answer checked against the route's response schema): bearer key, X-Daemon-ID
 * once known, JSON bodies gzip-compressed when large (until the server refuses gzip with 415, then
 * plain), and retries of transient failures (network errors, timeouts, 429 after its Retry-After,
 * 5xx) with exponential backoff and jitter. A 4xx other than 408/429 is not retried: it is thrown
 * as a ProblemError.
 */
export class ServerClient {
  daemonId: string | undefined;
  gzip = true;
  /** Calls a route of the daemon protocol; answers its response (undefined for a 204). */
  readonly call: Call<CallOptions> = createClient<CallOptions>((request, opts) => this.send(request, opts ?? {}), { validate: true });
  /** The daemon's own connection pool (keep-alive), closed with the daemon so no socket outlives it. */
  private readonly agent = new Agent({ keepAliveTimeout: 30_000, connect: { timeout: 15_000 } });

  constructor(
    private readonly server: string,
    private readonly key: string,
    private readonly log: Logger,
    private readonly stop: AbortSignal,
    private readonly userAgent = 'surveyor-daemon',
  ) {
    stop.addEventListener('abort', () => void this.agent.destroy().catch(() => undefined), { once: true });
  }

  private async send(request: ClientRequest, opts: CallOptions): Promise<ClientResponse> {
    const { path } = request;
    const started = Date.now();
    for (let attempt = 0; ; attempt++) {
      if (this.stop.aborted) throw new StoppedError();
      let retryAfterMs: number | undefined;
      try {
        return await this.attempt(request, opts);
      } catch (e) {
        if (e instanceof StoppedError || this.stop.aborted) throw new StoppedError();
        const transient = !(e instanceof ProblemError) || e.status >= 500 || e.status === 408 || e.status === 429;
        if (!transient || opts.once) throw e;
        if (opts.retryForMs !== undefined && Date.now() - started > opts.retryForMs) throw e;
        retryAfterMs = (e as { retryAfterMs?: number }).retryAfterMs;
        const wait = Math.max(retryAfterMs ?? 0, backoffMs(attempt));
        this.log.warn('server call failed; retrying', { path, attempt: attempt + 1, retryInMs: wait, error: e instanceof ProblemError ? { status: e.status, code: e.code } : e });
        await sleep(wait, this.stop);
      }
    }
  }

  private async attempt(request: ClientRequest, opts: CallOptions): Promise<ClientResponse> {
    const { path } = request;
    const json = Buffer.from(JSON.stringify(request.body ?? {}));
    const compress = this.gzip && json.length >= GZIP_FROM_BYTES;
    const headers: Record<string, string> = {
      authorization: `Bearer ${this.key}`,
      'content-type': 'application/json',
      accept: 'application/json',
      'user-agent': this.userAgent,
      ...(this.daemonId ? { 'x-daemon-id': this.daemonId } : {}),
      ...(compress ? { 'content-encoding': 'gzip' } : {}),
    };
    const signal = AbortSignal.any([this.stop, AbortSignal.timeout(opts.timeoutMs ?? 30_000)]);
    const res = await fetch(`${this.server}${path}`, { method: request.method, headers, body: compress ? gzipSync(json) : json, signal, dispatcher: this.agent });
    const text = await res.text();
    if (res.status === 204) return { status: 204, body: undefined };
    let parsed: unknown;
    try {
      parsed = text === '' ? undefined : JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    if (!res.ok) {
      const p = (parsed ?? {}) as { code?: string; detail?: string };
      if (res.status === 415 && compress && p.code === 'unsupported_media_type') {
        // This server does not take gzip bodies: send plain from now on, at once.
        this.gzip = false;
        this.log.info('the server refuses gzip request bodies; sending them uncompressed');
        return this.attempt(request, opts);
      }
      const err = new ProblemError(res.status, p.code, p.detail, path);
      const ra = Number(res.headers.get('retry-after'));
      if (Number.isFinite(ra) && ra > 0) Object.assign(err, { retryAfterMs: ra * 1000 });
      throw err;
    }
    return { status: res.status, body: parsed };
  }
}
