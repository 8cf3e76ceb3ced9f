import { randomBytes, scrypt as scryptCb, timingSafeEqual, type ScryptOptions } from 'node:crypto';

const scrypt = (pw: string, salt: Buffer, len: number, opts: ScryptOptions) =>
  new Promise<Buffer>((resolve, reject) => scryptCb(pw, salt, len, opts, (err, key) => (err ? reject(err) : resolve(key))));

// OWASP's scrypt floor is N=2^17,r=8,p=1; we use N=2^15,r=8,p=3 (same cost class, 32 MiB each).
const PARAMS = { N: 32768, r: 8, p: 3 };
const KEYLEN = 32;

/** Hashes a password with scrypt: `scrypt$N$r$p$salt$hash` (base64url parts). */
export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await scrypt(password.normalize('NFKC'), salt, KEYLEN, { ...PARAMS, maxmem: 256 * 1024 * 1024 });
  return ['scrypt', PARAMS.N, PARAMS.r, PARAMS.p, salt.toString('base64url'), key.toString('base64url')].join('$');
}

/** True when `password` matches `stored`; false for a malformed hash. Never throws. */
export async function verifyPassword(password: string, stored: string | null): Promise<boolean> {
  const parts = (stored ?? '').split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') {
    await hashPassword(password); // same cost whether or not the user exists
    return false;
  }
  const [, n, r, p, salt, hash] = parts as [string, string, string, string, string, string];
  try {
    const expected = Buffer.from(hash, 'base64url');
    const key = await scrypt(password.normalize('NFKC'), Buffer.from(salt, 'base64url'), expected.length, {
      N: Number(n), r: Number(r), p: Number(p), maxmem: 256 * 1024 * 1024,
    });
    return timingSafeEqual(key, expected);
  } catch {
    return false;
  }
}

/** A random password for first-run owners and CLI-created users (24 characters). */
export function generatePassword(): string {
  return randomBytes(18).toString('base64url');
}
