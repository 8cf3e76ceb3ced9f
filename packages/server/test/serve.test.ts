import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../..', import.meta.url));
const bin = path.join(root, 'packages/server/bin/surveyor.js');

/** Starts `surveyor serve` and resolves with its stdout once it says where it listens. */
function serve(dataDir: string): Promise<{ child: ChildProcess; out: string; url: string }> {
  const child = spawn(process.execPath, [bin, 'serve'], {
    cwd: root,
    env: { PATH: process.env.PATH, SERVICE_DATA_DIR: dataDir, SERVICE_PORT: '0', SERVICE_LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`serve did not start:\n${out}`)), 30_000);
    child.stdout!.on('data', (d) => {
      out += d;
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve({ child, out, url: m[1]! });
      }
    });
    child.stderr!.on('data', (d) => (out += d));
    child.on('exit', (code) => reject(new Error(`serve exited ${code}:\n${out}`)));
  });
}

const stop = (child: ChildProcess) => new Promise<number | null>((resolve) => {
  child.removeAllListeners('exit');
  child.on('exit', (code) => resolve(code));
  child.kill('SIGTERM');
});

describe('surveyor serve on a fresh embedded database', () => {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'surveyor-serve-'));
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it('creates a first owner with a one-time password, prints the URL, serves, and stops cleanly on SIGTERM', async () => {
    const first = await serve(dataDir);
    expect(first.out).toContain('admin@surveyor.local');
    const password = /password:\s+(\S+)/.exec(first.out)?.[1];
    expect(password).toMatch(/^[A-Za-z0-9_-]{20,}$/);

    const health = await fetch(`${first.url}/api/health`);
    expect(health.status).toBe(200);
    const login = await fetch(`${first.url}/api/v1/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'admin@surveyor.local', password }),
    });
    expect(login.status).toBe(200);
    expect(((await login.json()) as { user: { mustChangePassword: boolean } }).user.mustChangePassword).toBe(true);

    expect(await stop(first.child)).toBe(0);
    expect(existsSync(path.join(dataDir, 'surveyor.lock'))).toBe(false);

    // A second start finds the owner and prints no new password.
    const second = await serve(dataDir);
    expect(second.out).not.toContain('password:');
    expect(await stop(second.child)).toBe(0);
  });
});
