import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { type Config, ConfigError } from '../config.js';

function parseKey(text: string, source: string): Buffer {
  const t = text.trim();
  const key = /^[0-9a-fA-F]{64}$/.test(t) ? Buffer.from(t, 'hex') : Buffer.from(t, 'base64');
  if (key.length !== 32) throw new ConfigError([`${source}: expected 32 bytes as 64 hex characters or base64`]);
  return key;
}

/**
 * The key that encrypts stored secrets. SERVICE_SECRET_KEY when set; on the embedded database,
 * SERVICE_DATA_DIR/secret.key, created (mode 0600) on first use. With DATABASE_URL it must be set:
 * every process of a deployment needs the same key.
 */
export function resolveSecretKey(config: Config): Buffer {
  if (config.secretKey) return parseKey(config.secretKey, 'SERVICE_SECRET_KEY');
  if (config.databaseUrl) throw new ConfigError(['SERVICE_SECRET_KEY: required when DATABASE_URL is set (generate one with: openssl rand -hex 32)']);
  const file = path.join(config.dataDir, 'secret.key');
  if (existsSync(file)) return parseKey(readFileSync(file, 'utf8'), file);
  mkdirSync(config.dataDir, { recursive: true });
  const key = randomBytes(32);
  try {
    writeFileSync(file, `${key.toString('hex')}\n`, { mode: 0o600, flag: 'wx' });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'EEXIST') return parseKey(readFileSync(file, 'utf8'), file); // another process won the race
    throw e;
  }
  chmodSync(file, 0o600);
  return key;
}

/** AES-256-GCM: `v1.<iv>.<tag>.<ciphertext>` in base64url. `context` binds the value to its place (e.g. a row id). */
export function encryptSecret(key: Buffer, plaintext: string, context = ''): string {
  const iv = randomBytes(12);
  const c = createCipheriv('aes-256-gcm', key, iv);
  c.setAAD(Buffer.from(context));
  const ct = Buffer.concat([c.update(plaintext, 'utf8'), c.final()]);
  return ['v1', iv, c.getAuthTag(), ct].map((p) => (typeof p === 'string' ? p : p.toString('base64url'))).join('.');
}

/** Reverses encryptSecret; throws when the value was altered, or the key or context differ. */
export function decryptSecret(key: Buffer, sealed: string, context = ''): string {
  const [v, iv, tag, ct] = sealed.split('.');
  if (v !== 'v1' || !iv || !tag || ct === undefined) throw new Error('not a sealed secret');
  const d = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'), { authTagLength: 16 });
  d.setAAD(Buffer.from(context));
  d.setAuthTag(Buffer.from(tag, 'base64url'));
  return Buffer.concat([d.update(Buffer.from(ct, 'base64url')), d.final()]).toString('utf8');
}
