import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, describeConfig, loadConfig } from '../src/config.js';
import { decryptSecret, encryptSecret, resolveSecretKey } from '../src/crypto/secrets.js';

const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));
const bin = path.join(repoRoot, 'packages/server/bin/surveyor.js');

const tempDirs: string[] = [];
function tempDir(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'surveyor-config-'));
  tempDirs.push(dir);
  return dir;
}
afterAll(() => {
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
});

/** The ConfigError `fn` throws (fails the test when it throws nothing or something else). */
function configError(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return e as ConfigError;
  }
  throw new Error('expected a ConfigError, nothing was thrown');
}

describe('loadConfig', () => {
  it('applies the documented defaults to an empty environment', () => {
    const c = loadConfig({});
    expect(c.host).toBe('127.0.0.1');
    expect(c.port).toBe(8080);
    expect(c.dbPoolMax).toBe(25);
    expect(c.jobsInWeb).toBe(true);
    expect(c.version).toBe('0.1.0-dev');
    expect(c.rateLimits.keyPerMinute).toBe(1200);
    expect(c.rateLimits.daemonPerMinute).toBe(600);
    expect(c.rateLimits.anonPerMinute).toBe(300);
    expect(c.dataDir).toBe('./data');
    expect(c.databaseUrl).toBeUndefined();
    expect(c.secretKey).toBeUndefined();
    expect(c.baseUrl).toBe('http://127.0.0.1:8080');
  });

  it('derives the base URL from the host and port, bracketing an IPv6 host', () => {
    expect(loadConfig({ SERVICE_HOST: '0.0.0.0', SERVICE_PORT: '9000' }).baseUrl).toBe('http://0.0.0.0:9000');
    expect(loadConfig({ SERVICE_HOST: '::1', SERVICE_PORT: '8443' }).baseUrl).toBe('http://[::1]:8443');
  });

  it('prefers SERVICE_BASE_URL and drops its trailing slashes', () => {
    expect(loadConfig({ SERVICE_BASE_URL: 'https://surveyor.example.com/' }).baseUrl).toBe('https://surveyor.example.com');
  });

  it('parses valid values of every kind', () => {
    const c = loadConfig({
      SERVICE_PORT: '0',
      SERVICE_JOBS_IN_WEB: 'no',
      SERVICE_DB_POOL_MAX: '3',
      DATABASE_URL: 'postgresql://u@db.example:5432/surveyor',
      SERVICE_SECRET_KEY: 'a'.repeat(64),
      SERVICE_RATE_LIMIT_KEY_PER_MINUTE: '5',
    });
    expect(c.port).toBe(0);
    expect(c.jobsInWeb).toBe(false);
    expect(c.dbPoolMax).toBe(3);
    expect(c.databaseUrl).toBe('postgresql://u@db.example:5432/surveyor');
    expect(c.secretKey).toBe('a'.repeat(64));
    expect(c.rateLimits.keyPerMinute).toBe(5);
  });

  it('takes a DATABASE_URL naming a Unix socket directory as its host (URL-encoded), as pg reads it', () => {
    const url = 'postgres://surveyor@%2Fvar%2Frun%2Fpostgresql/surveyor';
    expect(loadConfig({ DATABASE_URL: url, SERVICE_SECRET_KEY: 'a'.repeat(64) }).databaseUrl).toBe(url);
    expect(new pg.Client({ connectionString: url })).toMatchObject({ host: '/var/run/postgresql', user: 'surveyor', database: 'surveyor' });
  });

  it('treats an empty string as unset', () => {
    expect(loadConfig({ SERVICE_PORT: '', SERVICE_HOST: '' })).toMatchObject({ port: 8080, host: '127.0.0.1' });
  });

  it.each([
    ['SERVICE_PORT', 'abc'],
    ['SERVICE_PORT', '70000'],
    ['SERVICE_PORT', '80.5'],
    ['SERVICE_JOBS_IN_WEB', 'maybe'],
    ['DATABASE_URL', 'mysql://x'],
    ['SERVICE_SECRET_KEY', 'short'],
    ['SERVICE_RATE_LIMIT_KEY_PER_MINUTE', '0'],
    ['SERVICE_DB_POOL_MAX', '0'],
    ['SERVICE_LOG_LEVEL', 'loud'],
    ['SERVICE_BASE_URL', 'ftp://surveyor.example'],
  ])('throws a ConfigError naming %s when it is %j', (name, value) => {
    const e = configError(() => loadConfig({ [name]: value }));
    expect(e.message).toContain(name);
    expect(e.problems).toHaveLength(1);
    expect(e.problems[0]).toMatch(new RegExp(`^${name}: `));
  });

  it('refuses a blank SERVICE_PORT instead of listening on a random port', () => {
    // Number(' ') is 0, and 0 means "pick a free port": a whitespace value must not slip through.
    const e = configError(() => loadConfig({ SERVICE_PORT: ' ' }));
    expect(e.message).toContain('SERVICE_PORT');
  });

  it('names every bad variable at once', () => {
    const e = configError(() => loadConfig({ SERVICE_PORT: 'abc', SERVICE_JOBS_IN_WEB: 'maybe' }));
    expect(e.problems.map((p) => p.split(':')[0]).sort()).toEqual(['SERVICE_JOBS_IN_WEB', 'SERVICE_PORT']);
  });

  it('describes every variable it reads, with its default', () => {
    const vars = describeConfig();
    const names = vars.map((v) => v.name);
    expect(names).toEqual(expect.arrayContaining(['DATABASE_URL', 'SERVICE_DATA_DIR', 'SERVICE_PORT', 'SERVICE_SECRET_KEY', 'SERVICE_RATE_LIMIT_KEY_PER_MINUTE']));
    expect(vars.find((v) => v.name === 'SERVICE_PORT')?.default).toBe(8080);
  });

  it('the README\'s configuration table lists every variable it reads, and no other, each with its default', () => {
    const readme = readFileSync(path.join(repoRoot, 'README.md'), 'utf8');
    const rows = new Map([...readme.matchAll(/^\| `((?:SERVICE|DATABASE)_[A-Z0-9_]+|[A-Z][A-Z0-9_]+_URL)` \| ([^|]*) \|/gm)].map((m) => [m[1]!, m[2]!.trim()]));
    const vars = describeConfig();
    expect([...rows.keys()].sort()).toEqual(vars.map((v) => v.name).sort());
    for (const v of vars) {
      if (v.default === undefined || v.default === '') continue;
      expect(rows.get(v.name), v.name).toContain(`\`${String(v.default)}\``);
    }
  });
});

describe('surveyor serve with a bad variable', () => {
  it('exits non-zero before listening, naming the variable on stderr', () => {
    const r = spawnSync(process.execPath, [bin, 'serve'], {
      cwd: repoRoot,
      env: { PATH: process.env.PATH ?? '', SERVICE_PORT: 'abc' },
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(r.error).toBeUndefined();
    expect(r.status).not.toBe(0);
    expect(r.status).not.toBeNull();
    expect(r.stderr).toContain('SERVICE_PORT');
    expect(r.stdout).not.toContain('listening');
  });
});

describe('resolveSecretKey', () => {
  it('generates SERVICE_DATA_DIR/secret.key with mode 0600 on the embedded database, and returns the same key again', () => {
    const dataDir = path.join(tempDir(), 'nested', 'data');
    const config = loadConfig({ SERVICE_DATA_DIR: dataDir });
    const first = resolveSecretKey(config);
    expect(first).toHaveLength(32);
    const file = path.join(dataDir, 'secret.key');
    expect(existsSync(file)).toBe(true);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(readFileSync(file, 'utf8').trim()).toBe(first.toString('hex'));
    const second = resolveSecretKey(config);
    expect(second.equals(first)).toBe(true);
  });

  it('uses SERVICE_SECRET_KEY, hex or base64, and writes no file', () => {
    const dataDir = tempDir();
    const raw = randomBytes(32);
    expect(resolveSecretKey(loadConfig({ SERVICE_DATA_DIR: dataDir, SERVICE_SECRET_KEY: raw.toString('hex') })).equals(raw)).toBe(true);
    expect(resolveSecretKey(loadConfig({ SERVICE_DATA_DIR: dataDir, SERVICE_SECRET_KEY: raw.toString('base64') })).equals(raw)).toBe(true);
    expect(existsSync(path.join(dataDir, 'secret.key'))).toBe(false);
  });

  it('requires SERVICE_SECRET_KEY with DATABASE_URL, naming it', () => {
    const dataDir = tempDir();
    const config = loadConfig({ DATABASE_URL: 'postgres://u@127.0.0.1:5432/db', SERVICE_DATA_DIR: dataDir });
    const e = configError(() => resolveSecretKey(config));
    expect(e.message).toContain('SERVICE_SECRET_KEY');
    expect(existsSync(path.join(dataDir, 'secret.key'))).toBe(false);
  });
});

describe('encryptSecret / decryptSecret', () => {
  const key = randomBytes(32);

  it('round-trips a value, sealing it differently each time', () => {
    const a = encryptSecret(key, 'community-string-é', 'row-1');
    const b = encryptSecret(key, 'community-string-é', 'row-1');
    expect(a).toMatch(/^v1\./);
    expect(a).not.toContain('community');
    expect(a).not.toBe(b);
    expect(decryptSecret(key, a, 'row-1')).toBe('community-string-é');
    expect(decryptSecret(key, b, 'row-1')).toBe('community-string-é');
    expect(decryptSecret(key, encryptSecret(key, ''), '')).toBe('');
  });

  it('refuses a tampered value', () => {
    const sealed = encryptSecret(key, 'secret', 'ctx');
    const parts = sealed.split('.');
    const ct = Buffer.from(parts[3]!, 'base64url');
    ct[0] = ct[0]! ^ 0xff;
    const tampered = [parts[0], parts[1], parts[2], ct.toString('base64url')].join('.');
    expect(() => decryptSecret(key, tampered, 'ctx')).toThrow();
    const tag = Buffer.from(parts[2]!, 'base64url');
    tag[0] = tag[0]! ^ 0x01;
    expect(() => decryptSecret(key, [parts[0], parts[1], tag.toString('base64url'), parts[3]].join('.'), 'ctx')).toThrow();
    expect(() => decryptSecret(key, 'not-sealed', 'ctx')).toThrow(/not a sealed secret/);
  });

  it('refuses a wrong key', () => {
    const sealed = encryptSecret(key, 'secret', 'ctx');
    expect(() => decryptSecret(randomBytes(32), sealed, 'ctx')).toThrow();
  });

  it('refuses a wrong context', () => {
    const sealed = encryptSecret(key, 'secret', 'device:1');
    expect(() => decryptSecret(key, sealed, 'device:2')).toThrow();
    expect(() => decryptSecret(key, sealed)).toThrow();
  });
});
