import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { KeyKind } from '../db/schema.js';

/** Recognisable prefixes, so leaked-secret scanners can find our tokens. */
export const tokenPrefixes = { api: 'svk_', daemon: 'svd_', metrics: 'svm_', scim: 'svs_', session: 'svx_', share: 'svt_' } as const satisfies Record<KeyKind | 'session' | 'share', string>;

/** A new random token: prefix + 256 bits in base64url. */
export function mintToken(kind: keyof typeof tokenPrefixes): string {
  return tokenPrefixes[kind] + randomBytes(32).toString('base64url');
}

/** SHA-256 hex of a token: the only form a token is stored in. */
export function hashToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

/** The part of a token safe to show again (prefix + 4 characters). */
export function displayPrefix(token: string): string {
  return token.slice(0, token.indexOf('_') + 5);
}

/** Constant-time string comparison. */
export function safeEqual(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}
