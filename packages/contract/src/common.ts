import { z } from 'zod';

/** True when `s` is well-formed Unicode: no lone UTF-16 surrogate (U+D800 to U+DFFF unpaired). */
export function isWellFormedText(s: string): boolean {
  return s.isWellFormed();
}

export const NOT_WELL_FORMED = 'must be well-formed Unicode text (a lone UTF-16 surrogate such as \\uD800 is refused)';

/**
 * Every text a request takes (bodies, query and path parameters, record keys) is this schema or
 * built on it: a lone surrogate is refused with 400 `validation_failed` naming the field, since
 * PostgreSQL can store it neither as text nor as jsonb. A contract test walks every route's
 * request schemas and names any string that is not built on it.
 */
export const Text = z.string().refine(isWellFormedText, NOT_WELL_FORMED);

/** The path, inside `value`, of the first string or key that is not well-formed, or null. */
export function malformedTextPath(value: unknown): (string | number)[] | null {
  const stack: { v: unknown; path: (string | number)[] }[] = [{ v: value, path: [] }];
  while (stack.length > 0) {
    const { v, path } = stack.pop()!;
    if (typeof v === 'string') {
      if (!v.isWellFormed()) return path;
    } else if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) stack.push({ v: v[i], path: [...path, i] });
    } else if (v !== null && typeof v === 'object') {
      for (const [k, x] of Object.entries(v)) {
        if (!k.isWellFormed()) return [...path, k];
        stack.push({ v: x, path: [...path, k] });
      }
    }
  }
  return null;
}

/** Free-form JSON a request carries (daemon `metadata`, a destination's `config`): its strings and keys well-formed too. */
export const JsonValue = z.unknown().superRefine((v, ctx) => {
  const path = malformedTextPath(v);
  if (path) ctx.addIssue({ code: 'custom', path, message: NOT_WELL_FORMED });
});

/** Resource ids are UUIDs (spec 2.1). */
export const Uuid = z.uuid();

/** The first and last instants a timestamp may name (see Timestamp). */
export const TIMESTAMP_MIN = '0100-01-01T00:00:00Z';
export const TIMESTAMP_MAX = '9999-12-31T23:59:59Z';
const TIMESTAMP_MIN_MS = Date.parse(TIMESTAMP_MIN);
const TIMESTAMP_MAX_MS = Date.parse(TIMESTAMP_MAX);

/** True when the RFC 3339 text names an instant from TIMESTAMP_MIN to TIMESTAMP_MAX. */
export function isStorableTimestamp(t: string): boolean {
  const ms = Date.parse(t);
  return ms >= TIMESTAMP_MIN_MS && ms <= TIMESTAMP_MAX_MS;
}

/** The widest UTC offset PostgreSQL reads (±15:59); real zones span -12:00 to +14:00. */
const OFFSET = /([+-])(\d{2}):(\d{2})$/;

/** True unless the text's offset is wider than PostgreSQL reads (`+23:00`: "time zone displacement out of range"). */
export function hasStorableOffset(t: string): boolean {
  const m = OFFSET.exec(t);
  return m === null || Number(m[2]) <= 15;
}

/**
 * Every timestamp, in requests and responses: RFC 3339 with an explicit offset, `format:
 * date-time` (spec 2.1), naming an instant from 0100-01-01T00:00:00Z to 9999-12-31T23:59:59Z. The
 * bounds are what both drivers store and read back: PostgreSQL has no year 0 (`0000-…` fails);
 * years 1 to 99 come back from PGlite as 1901 to 1999; and an instant after 9999 (`9999-12-31T23:59:59-14:00`)
 * cannot be written back with a four-digit year. Its offset is at most ±15:59, the widest PostgreSQL
 * reads (RFC 3339's grammar allows ±23:59; no zone is beyond -12:00 or +14:00). Otherwise: 400
 * `validation_failed` naming the field.
 */
export const Timestamp = z.iso
  .datetime({ offset: true })
  .refine(isStorableTimestamp, `must name an instant from ${TIMESTAMP_MIN} to ${TIMESTAMP_MAX}`)
  .refine(hasStorableOffset, 'must have a UTC offset from -15:59 to +15:59');

/** The stable problem codes (decisions.md, "Errors"), with the status each is answered with. */
export const problemCodes = {
  validation_failed: { status: 400, title: 'Request validation failed', description: 'The body, a path parameter or a query parameter failed validation; malformed JSON too. `issues` lists what was wrong.' },
  unknown_parameter: { status: 400, title: 'Unknown query parameter', description: 'A query parameter the endpoint does not accept. `detail` names the accepted ones.' },
  invalid_filter: { status: 400, title: 'Invalid filter value', description: 'A collection filter has a value outside its allowed set (never answered with an empty page).' },
  limit_out_of_range: { status: 400, title: 'Limit out of range', description: '`limit` is not an integer from 1 to 500. It is refused, never clamped.' },
  invalid_cursor: { status: 400, title: 'Invalid cursor', description: 'The cursor was altered, belongs to another collection or organisation, or is malformed.' },
  unauthorized: { status: 401, title: 'Unauthorized', description: 'Missing, unknown, expired or revoked credential.' },
  forbidden: { status: 403, title: 'Forbidden', description: 'Authenticated but not permitted. `requiredScope` names the scope (or role) that is missing.' },
  csrf_failed: { status: 403, title: 'CSRF token missing or wrong', description: 'A cookie-authenticated state-changing request without the session\'s `X-CSRF-Token` header.' },
  not_found: { status: 404, title: 'Not found', description: 'No such resource or route in the caller\'s organisation. Another organisation\'s resource is also 404.' },
  method_not_allowed: { status: 405, title: 'Method not allowed', description: 'The path exists but not with this method. The `Allow` header lists the methods it has.' },
  duplicate: { status: 409, title: 'Duplicate', description: 'The resource already exists and is not silently upserted.' },
  conflict: { status: 409, title: 'Conflict', description: 'The request conflicts with the current state of the resource.' },
  no_daemon_online: { status: 409, title: 'No daemon online', description: 'No online daemon can take the scan; nothing was queued.' },
  nmap_unavailable: { status: 409, title: 'nmap unavailable', description: 'nmap was requested but the daemon has no nmap capability.' },
  scan_already_active: { status: 409, title: 'Scan already active', description: 'The network already has a queued or running session (`sessionId`).' },
  invalid_transition: { status: 409, title: 'Invalid state transition', description: 'The state change is not allowed; `detail` names the allowed next states.' },
  session_cancelled: { status: 409, title: 'Scan session cancelled', description: 'A batch for a cancelled scan session.' },
  payload_too_large: { status: 413, title: 'Payload too large', description: 'The body is larger than the server accepts (`SERVICE_BODY_LIMIT_BYTES`).' },
  unsupported_media_type: { status: 415, title: 'Unsupported media type', description: 'The body is not `application/json`.' },
  rate_limited: { status: 429, title: 'Rate limited', description: 'Too many requests. `Retry-After` says when to try again; `RateLimit-*` headers describe the window.' },
  upstream_error: { status: 502, title: 'Upstream error', description: 'A provider the request needed (a cloud API, the assistant\'s model) refused or failed; `detail` says what it answered (never a credential).' },
  upstream_timeout: { status: 504, title: 'Upstream timeout', description: 'A provider the request needed (the assistant\'s model) did not answer in time.' },
  internal_error: { status: 500, title: 'Internal error', description: 'An unexpected failure. The `requestId` finds it in the server log; no detail is shown to the client.' },
  service_unavailable: { status: 503, title: 'Service unavailable', description: 'A dependency (the database, a provider) is unavailable or not configured.' },
} as const satisfies Record<string, { status: number; title: string; description: string }>;

export type ProblemCode = keyof typeof problemCodes;
export const ProblemCodeSchema = z.enum(Object.keys(problemCodes) as [ProblemCode, ...ProblemCode[]]);

export const ProblemIssue = z.object({
  path: z.string().describe('Dotted path of the offending field, for example `body.cidr` or `query.limit`.'),
  message: z.string(),
});

/** RFC 9457 problem details (spec 7), `application/problem+json`. */
export const Problem = z
  .object({
    type: z.string().describe('`{SERVICE_BASE_URL}/problems#{code}`'),
    title: z.string(),
    status: z.number().int(),
    code: ProblemCodeSchema,
    detail: z.string(),
    requestId: z.string().describe('Also returned as the `X-Request-Id` header.'),
    requiredScope: z.string().optional().describe('Present on scope refusals.'),
    issues: z.array(ProblemIssue).optional().describe('Present on validation failures.'),
  })
  .catchall(z.unknown());
export type Problem = z.infer<typeof Problem>;

/** True for any UUID text (any version), case-insensitive. */
export function isUuid(s: string): boolean {
  return /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(s);
}
