import { gzipSync } from 'node:zlib';
import { Agent, fetch } from 'undici';
import type { z } from 'zod';
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

export interface CallOptions<T extends z.ZodType> {
  /** Schema of a 200 body; a 204 answers undefined. */
  response: T;
  /** Per-attempt timeout. */
  timeoutMs?: number;
  /** Give up retrying after this long (default: keep retrying until stopped). */
  retryForMs?: number;
  /** No retries at all (heartbeats: the next tick is the retry). */
  once?: boolean;
}

const GZIP_FROM_BYTES = 1024;

/**
 * The daemon's HTTP client: bearer key, X-Daemon-ID once known, JSON bodies gzip-compressed when
 * large (until the server refuses gzip with 415, then plain), and retries of transient failures
 * (network errors, timeouts, 429 after its Retry-After, 5xx) with exponential backoff and jitter.
 * A 4xx other than 408/429 is not retried: it is thrown as a ProblemError.
 */
export class ServerClient {
  daemonId: string | undefined;
  gzip = true;
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

  async post<T extends z.ZodType>(path: string, body: unknown, opts: CallOptions<T>): Promise<z.output<T> | undefined> {
    const started = Date.now();
    for (let attempt = 0; ; attempt++) {
      if (this.stop.aborted) throw new StoppedError();
      let retryAfterMs: number | undefined;
      try {
        return await this.attempt(path, body, opts);
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

  private async attempt<T extends z.ZodType>(path: string, body: unknown, opts: CallOptions<T>): Promise<z.output<T> | undefined> {
    const json = Buffer.from(JSON.stringify(body));
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
    const res = await fetch(`${this.server}${path}`, { method: 'POST', headers, body: compress ? gzipSync(json) : json, signal, dispatcher: this.agent });
    const text = await res.text();
    if (res.status === 204) return undefined;
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
        return this.attempt(path, body, opts);
      }
      const err = new ProblemError(res.status, p.code, p.detail, path);
      const ra = Number(res.headers.get('retry-after'));
      if (Number.isFinite(ra) && ra > 0) Object.assign(err, { retryAfterMs: ra * 1000 });
      throw err;
    }
    const r = opts.response.safeParse(parsed);
    if (!r.success) throw new Error(`${path}: unexpected answer from the server (${r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')})`);
    return r.data;
  }
}
