/** Verdict of one counted request. */
export interface RateVerdict {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Seconds until the window resets. */
  resetSeconds: number;
}

/**
 * Fixed one-minute windows per bucket, in this process's memory. Limits therefore apply per
 * web process; with N processes behind a balancer a client gets at most N times the limit.
 */
export class RateLimiter {
  private readonly windows = new Map<string, { start: number; count: number }>();
  private hits = 0;

  constructor(private readonly windowMs = 60_000, private readonly now: () => number = Date.now) {}

  /** Counts one request against `bucket`; a request over `limit` is refused and still counted. */
  hit(bucket: string, limit: number): RateVerdict {
    const now = this.now();
    if (++this.hits % 10_000 === 0) this.sweep(now);
    let w = this.windows.get(bucket);
    if (!w || now - w.start >= this.windowMs) {
      w = { start: now, count: 0 };
      this.windows.set(bucket, w);
    }
    w.count++;
    return {
      allowed: w.count <= limit,
      limit,
      remaining: Math.max(0, limit - w.count),
      resetSeconds: Math.max(1, Math.ceil((w.start + this.windowMs - now) / 1000)),
    };
  }

  private sweep(now: number): void {
    for (const [k, w] of this.windows) if (now - w.start >= this.windowMs) this.windows.delete(k);
  }
}

/** The `RateLimit-*` headers (IETF draft) and, when refused, `Retry-After`. */
export function rateLimitHeaders(v: RateVerdict): Record<string, string> {
  return {
    'RateLimit-Limit': String(v.limit),
    'RateLimit-Remaining': String(v.remaining),
    'RateLimit-Reset': String(v.resetSeconds),
    'RateLimit-Policy': `${v.limit};w=60`,
    ...(v.allowed ? {} : { 'Retry-After': String(v.resetSeconds) }),
  };
}
