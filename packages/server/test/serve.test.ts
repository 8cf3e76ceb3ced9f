import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../..', import.meta.url));
const bin = path.join(root, 'packages/server/bin/surveyor.js');

interface Started {
  child: ChildProcess;
  /** stdout: the log, one JSON record a line. */
  out: string;
  /** stderr: the first-run block, and nothing else on a healthy start. */
  err: string;
  url: string;
  /** The process that serves (for `npm start`, not npm's own). */
  pid: number;
}

/** Starts `command args` and resolves once its log has the `listening` record. */
function start(command: string, args: string[], env: Record<string, string>): Promise<Started> {
  const child = spawn(command, args, { cwd: root, env: { PATH: process.env.PATH ?? '', SERVICE_PORT: '0', SERVICE_LOG_LEVEL: 'info', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  return new Promise((resolve, reject) => {
    let out = '';
    let err = '';
    const timer = setTimeout(() => reject(new Error(`serve did not start:\n${out}${err}`)), 60_000);
    child.stdout!.on('data', (d) => {
      out += d;
      const line = out.split('\n').find((l) => l.includes('"listening on') || / listening on /.test(l));
      if (line) {
        clearTimeout(timer);
        const record = JSON.parse(line) as { url: string; pid: number };
        // Give a block that follows on stderr a moment to arrive.
        setTimeout(() => resolve({ child, out, err, url: record.url, pid: record.pid }), 200);
      }
    });
    child.stderr!.on('data', (d) => (err += d));
    child.on('exit', (code) => reject(new Error(`serve exited ${code}:\n${out}${err}`)));
  });
}

const serve = (dataDir: string) => start(process.execPath, [bin, 'serve'], { SERVICE_DATA_DIR: dataDir });

/** Every stdout line is a JSON log record. */
function records(out: string): { level: string; msg: string; [k: string]: unknown }[] {
  return out.trimEnd().split('\n').map((l) => {
    expect(() => JSON.parse(l), l).not.toThrow();
    return JSON.parse(l);
  });
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

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
    // The one-time password reaches the operator on stderr, and never the log.
    expect(first.err).toContain('admin@surveyor.local');
    const password = /password:\s+(\S+)/.exec(first.err)?.[1];
    expect(password).toMatch(/^[A-Za-z0-9_-]{20,}$/);
    expect(first.out).not.toContain(password);
    const log = records(first.out);
    expect(log.find((r) => r.msg.startsWith('Surveyor ') && r.msg.includes(' listening on '))).toMatchObject({ level: 'info', url: first.url, database: 'embedded', pid: first.child.pid });
    expect(log.some((r) => r.msg.startsWith('first run:'))).toBe(true);

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
    expect(second.out).not.toContain('password');
    expect(second.err).toBe('');
    records(second.out);
    expect(await stop(second.child)).toBe(0);
    // Two starts of the real build, the first creating and migrating a fresh embedded database (up to
    // 60 s each under a loaded CI: start() says so), as the npm start test below allows.
  }, 150_000);

  it('starts without loading the cloud providers’ SDKs (they load when an account is first synced or tested), the SMTP and webhook clients, the assistant’s provider client or the PDF library', async () => {
    // A loader hook in the child names every module file it loads on stderr (cloud/collectors.ts
    // imports the providers on first use; kept in the heap once loaded, the Kubernetes client
    // alone is ~15 MB of source that every full collection of the web process marks again).
    const hook = `data:text/javascript,${encodeURIComponent(
      `import { register } from 'node:module'; register('data:text/javascript,' + encodeURIComponent("export async function load(url, context, next) { if (url.startsWith('file:')) process.stderr.write('loaded ' + url + '\\\\n'); return next(url, context); }"));`,
    )}`;
    const started = await start(process.execPath, ['--import', hook, bin, 'serve'], { SERVICE_DATA_DIR: dataDir });
    const loaded = started.err.split('\n').filter((l) => l.startsWith('loaded '));
    // The hook saw the server's own modules and its framework (else the check below proves nothing).
    expect(loaded.some((l) => l.includes('/packages/server/dist/cloud/collectors.js'))).toBe(true);
    expect(loaded.some((l) => l.includes('/node_modules/fastify/'))).toBe(true);
    expect(loaded.filter((l) => /@kubernetes\/client-node|@aws-sdk\/|\/dist\/cloud\/(aws|kubernetes)\.js/.test(l))).toEqual([]);
    // Nor the SMTP and webhook clients (notifications/senders.ts loads them for the first mail or
    // webhook), the assistant's provider client (assistant/chat.service.ts, the first question) or
    // pdf-lib (attestation/pdf.ts, the first attestation made or read).
    expect(loaded.filter((l) => /\/node_modules\/(nodemailer|openai|undici|pdf-lib)\//.test(l))).toEqual([]);
    expect(await stop(started.child)).toBe(0);
  }, 90_000);
});

describe('npm start', () => {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'surveyor-npm-start-'));
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it('runs the server in the process npm starts, so SIGTERM to npm stops the server (no orphan)', async () => {
    const env: Record<string, string> = { SERVICE_DATA_DIR: dataDir };
    for (const k of ['HOME', 'npm_config_cache']) if (process.env[k]) env[k] = process.env[k]!;
    const npm = await start('npm', ['start', '--silent'], env);
    try {
      expect(npm.pid).not.toBe(npm.child.pid);
      expect(alive(npm.pid)).toBe(true);
      expect((await fetch(`${npm.url}/api/health`)).status).toBe(200);
      records(npm.out);
      expect(await stop(npm.child)).toBe(0);
      const deadline = Date.now() + 15_000;
      while (alive(npm.pid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      expect(alive(npm.pid)).toBe(false);
      expect(existsSync(path.join(dataDir, 'surveyor.lock'))).toBe(false);
    } finally {
      if (alive(npm.pid)) process.kill(npm.pid, 'SIGKILL');
    }
  }, 90_000);
});
