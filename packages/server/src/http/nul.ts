import type { FastifyRequest } from 'fastify';

// PostgreSQL text and jsonb cannot hold NUL (U+0000): the app's preValidation hook refuses it.

/** Requests whose JSON body text has no `\u0000` escape: no NUL to look for. */
const nulFree = new WeakSet<FastifyRequest>();

/** Whether the request's body (if any) may hold a NUL: false when its JSON text had no escape of one. */
export function mayHoldNul(request: FastifyRequest): boolean {
  return !nulFree.has(request);
}

/** Notes, for the NUL check, whether a JSON body's text could carry a NUL. Every JSON parser calls it. */
export function noteNulEscape(request: FastifyRequest, text: string): void {
  if (!text.includes('\\u0000')) nulFree.add(request);
}

/**
 * The dotted path of the first string (or key) in `value` holding U+0000, or null. Walked with an
 * explicit stack and parent links (a path is built only for the finding), so a deeply nested body
 * costs time in proportion to its size and cannot overflow the call stack.
 */
export function nulPath(value: unknown, path: (string | number)[]): string | null {
  interface Node {
    v: unknown;
    key: string | number;
    up: Node | null;
  }
  const pathOf = (n: Node | null, last?: string): string => {
    const keys: (string | number)[] = last === undefined ? [] : [last];
    for (let x = n; x; x = x.up) keys.push(x.key);
    return [...path, ...keys.reverse().slice(1)].join('.');
  };
  const stack: Node[] = [{ v: value, key: '', up: null }];
  while (stack.length > 0) {
    const n = stack.pop()!;
    const v = n.v;
    if (typeof v === 'string') {
      if (v.includes('\0')) return pathOf(n);
    } else if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) stack.push({ v: v[i], key: i, up: n });
    } else if (v !== null && typeof v === 'object') {
      const entries = Object.entries(v);
      for (const [k] of entries) if (k.includes('\0')) return pathOf(n, k.replace(/\0/g, '\\u0000'));
      for (let i = entries.length - 1; i >= 0; i--) stack.push({ v: entries[i]![1], key: entries[i]![0], up: n });
    }
  }
  return null;
}
