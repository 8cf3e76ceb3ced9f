import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_DATABASE_URL, type TestDatabase, createTestDatabase } from './helpers.js';

// The `surveyor` command as an operator (cron, a Kubernetes Job) runs it: a real process that
// must end by itself as soon as its work is done, whatever it opened on the way.

const root = fileURLToPath(new URL('../../..', import.meta.url));
const bin = path.join(root, 'packages/server/bin/surveyor.js');

interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** From the command's last output (its result, printed when its work is done) to its exit. */
  lingered: number;
}

/** Runs `surveyor ARGS`; a process still alive after `limitSeconds` is killed and reported with signal SIGKILL. */
function run(env: Record<string, string>, args: string[], limitSeconds = 60): Promise<Exit> {
  let lastOutput = Date.now();
  const child = spawn(process.execPath, [bin, ...args], { cwd: root, env: { PATH: process.env.PATH ?? '', SERVICE_LOG_LEVEL: 'warn', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => {
    stdout += d;
    lastOutput = Date.now();
  });
  child.stderr.on('data', (d) => {
    stderr += d;
    lastOutput = Date.now();
  });
  const kill = setTimeout(() => child.kill('SIGKILL'), limitSeconds * 1000);
  return new Promise((resolve) =>
    child.on('exit', (code, signal) => {
      clearTimeout(kill);
      resolve({ code, signal, stdout, stderr, lingered: (Date.now() - lastOutput) / 1000 });
    }),
  );
}

/** The commands a cron job or a Kubernetes Job runs, with the exit code each must end with. */
const COMMANDS: [string[], number][] = [
  [['migrate', '--json'], 0],
  [['jobs', 'run', 'inventory.snapshot', '--json'], 0],
  [['jobs', 'run', 'no.such.job'], 2],
  [['admin', 'create-org', '--name', 'Exit Test', '--owner-email', 'owner@exit.test', '--json'], 0],
  [['jobs', 'list', '--json'], 0],
  [['keys', 'public', '--json'], 0],
];

describe.each([
  ['an embedded data folder', false],
  ['PostgreSQL', true],
])('every CLI command exits by itself once done, on %s', (_where, postgres) => {
  let testDb: TestDatabase | undefined;
  let dataDir: string;
  let env: Record<string, string>;
  beforeAll(async () => {
    dataDir = mkdtempSync(path.join(tmpdir(), 'surveyor-exit-'));
    if (postgres && TEST_DATABASE_URL) {
      testDb = await createTestDatabase({ migrate: false });
      const sep = TEST_DATABASE_URL.includes('?') ? '&' : '?';
      env = { DATABASE_URL: `${TEST_DATABASE_URL}${sep}options=-c%20search_path%3D${testDb.schema}`, SERVICE_SECRET_KEY: randomBytes(32).toString('hex') };
    } else {
      env = { SERVICE_DATA_DIR: dataDir };
    }
  });
  afterAll(async () => {
    rmSync(dataDir, { recursive: true, force: true });
    await testDb?.drop();
  });

  it.skipIf(postgres && !TEST_DATABASE_URL).each(COMMANDS)('surveyor %j', async (args, code) => {
    const r = await run(env, args);
    // A pool left open kept the process alive for its 30 s idle timeout after printing its result.
    expect(r.signal, `still running after 60 s: ${r.stdout}${r.stderr}`).toBeNull();
    expect(r.code, r.stderr).toBe(code);
    expect(r.stdout + r.stderr).not.toBe('');
    expect(r.lingered).toBeLessThan(5);
  }, 90_000);
});
