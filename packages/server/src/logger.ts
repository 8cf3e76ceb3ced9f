import { pino, type DestinationStream, type Logger } from 'pino';

/** Keys whose values never reach a log line, whatever their depth. */
const SECRET_KEY = /pass(word|phrase)?|secret|token|authorization|cookie|api[-_]?key|credential|community|private[-_]?key/i;
/**
 * Tokens the service mints (svk_, svd_, svm_, svs_, svx_ session, svt_ topology share link), and Bearer values and Basic
 * credentials (base64, 8 characters or more, so that "basic auth failed" stays readable) inside
 * free text, any case.
 */
const SECRET_TEXT = /\b(sv[kdmsxt]_[A-Za-z0-9_-]{8,})|(\bBearer\s+)[^\s"',;]+|(\bBasic\s+)[A-Za-z0-9+/]{8,}={0,2}/gi;
const REDACTED = '[redacted]';

/** URL credentials (`scheme://user:password@host`) inside free text. */
const URL_PASSWORD = /(\b[a-z][a-z0-9+.-]*:\/\/[^:/@\s]*):[^@\s]*@/gi;

/** A text with the service's tokens, bearer values and URL passwords masked. */
export function redactText(text: string): string {
  return text.replace(SECRET_TEXT, (_m, _tok, bearer, basic) => `${bearer ?? basic ?? ''}${REDACTED}`).replace(URL_PASSWORD, `$1:${REDACTED}@`);
}

/** Returns a copy of `value` with secret-looking keys and token-looking strings replaced. Never throws. */
export function redact(value: unknown, depth = 0): unknown {
  if (typeof value === 'string') return redactText(value);
  if (value === null || typeof value !== 'object' || depth > 8) return value;
  if (value instanceof Error) {
    const out: Record<string, unknown> = { type: value.name, message: redact(value.message, depth + 1), stack: redact(value.stack, depth + 1) };
    for (const [k, v] of Object.entries(value)) {
      // Raw bytes (Node's rawPacket of a bad request) may hold headers: never logged.
      out[k] = SECRET_KEY.test(k) ? REDACTED : Buffer.isBuffer(v) || v instanceof Uint8Array ? `[${v.length} bytes omitted]` : redact(v, depth + 1);
    }
    return out;
  }
  if (Buffer.isBuffer(value) || value instanceof Uint8Array) return `[${value.length} bytes omitted]`;
  if (Array.isArray(value)) return value.map((v) => redact(v, depth + 1));
  // Class instances (a request, a Date) are left to their serializers, which redact themselves.
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) out[k] = SECRET_KEY.test(k) && v != null && v !== '' ? REDACTED : redact(v, depth + 1);
  return out;
}

/**
 * The JSON logger of every process. Redaction runs on the merged object, on message strings and
 * in the serializers (pino applies them after `formatters.log`),
 * so a token pasted into a URL, an error message or a nested field is masked as well as a header.
 */
export function createLogger(level: string, destination?: DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service: 'surveyor' },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: {
        level: (label) => ({ level: label }),
        log: (obj) => redact(obj) as Record<string, unknown>,
      },
      hooks: {
        logMethod(args, method) {
          method.apply(this, args.map((a) => (typeof a === 'string' ? (redact(a) as string) : a)) as Parameters<typeof method>);
        },
      },
      serializers: {
        // Method, path and client only: headers and bodies never reach a log line.
        req: (r: { method?: string; url?: string; ip?: string; socket?: { remoteAddress?: string } }) => ({
          method: r.method,
          url: redact(r.url),
          remoteAddress: r.ip ?? r.socket?.remoteAddress,
        }),
        res: (r: { statusCode?: number }) => ({ statusCode: r.statusCode }),
        err: (e: unknown) => redact(e),
        error: (e: unknown) => redact(e),
      },
    },
    destination,
  );
}
