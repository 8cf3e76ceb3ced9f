/**
 * JSON logs, one object a line: `{ time, level, msg, ...fields }`. Secrets are never passed in, and
 * the userinfo of any URL in a logged string (`https://user:pass@host`) is taken out.
 */

export type Level = 'debug' | 'info' | 'warn' | 'error';
const ORDER: Record<Level, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  child(fields: Record<string, unknown>): Logger;
}

export function createLogger(level: Level = 'info', write: (line: string) => void = (l) => process.stdout.write(l), base: Record<string, unknown> = {}): Logger {
  const at = (l: Level) => (msg: string, fields: Record<string, unknown> = {}) => {
    if (ORDER[l] < ORDER[level]) return;
    write(`${JSON.stringify({ time: new Date().toISOString(), level: l, msg, ...base, ...fields }, errorReplacer)}\n`);
  };
  return {
    debug: at('debug'),
    info: at('info'),
    warn: at('warn'),
    error: at('error'),
    child: (fields) => createLogger(level, write, { ...base, ...fields }),
  };
}

const USERINFO = /\b([a-z][a-z0-9+.-]*:\/\/)[^/?#@\s]*@/gi;

/** `url` (or any text with URLs in it) without the userinfo part of its URLs. */
export function withoutUserinfo(text: string): string {
  return text.replace(USERINFO, '$1');
}

function errorReplacer(_key: string, value: unknown) {
  if (typeof value === 'string') return withoutUserinfo(value);
  if (value instanceof Error) return { name: value.name, message: withoutUserinfo(value.message), ...((value as { code?: unknown }).code !== undefined ? { code: (value as { code?: unknown }).code } : {}) };
  return value;
}
