import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.js';
import { openDatabase } from '../src/db/database.js';
import { checkConnectionBudget } from '../src/db/open.js';
import { createLogger } from '../src/logger.js';
import { startServer } from '../src/main.js';
import { JOB_NAMES as JOBS, TEST_DATABASE_URL, type TestDatabase, createTestDatabase } from './helpers.js';

const root = fileURLToPath(new URL('../../..', import.meta.url));
const bin = path.join(root, 'packages/server/bin/surveyor.js');

/** Where a process under test keeps its database: a schema of the test PostgreSQL, or a fresh embedded data folder. */
function databaseEnv(schema: string | undefined, dataDir: string): Record<string, string> {
  return TEST_DATABASE_URL
    ? { DATABASE_URL: `${TEST_DATABASE_URL}${TEST_DATABASE_URL.includes('?') ? '&' : '?'}options=-c%20search_path%3D${schema}`, SERVICE_SECRET_KEY: randomBytes(32).toString('hex') }
    : { SERVICE_DATA_DIR: dataDir };
}

describe('where the scheduler runs (spec 1.1 rule 2)', () => {
  let testDb: TestDatabase | undefined;
  let dataDir: string;
  beforeAll(async () => {
    dataDir = mkdtempSync(path.join(tmpdir(), 'surveyor-jobs-'));
    // On PostgreSQL the processes share a migrated schema of their own.
    if (TEST_DATABASE_URL) testDb = await createTestDatabase();
  });
  afterAll(async () => {
    rmSync(dataDir, { recursive: true, force: true });
    await testDb?.drop();
  });

  it('serve runs every job by default, each ticking on its own shortly after start, and stops them on close', async () => {
    const config = loadConfig({ ...databaseEnv(testDb?.schema, path.join(dataDir, 'a')), SERVICE_PORT: '0', SERVICE_LOG_LEVEL: 'silent' });
    const server = await startServer(config, createLogger('silent'), () => {});
    try {
      expect(server.jobs?.runner.names.sort()).toEqual([...JOBS].sort());
      // The first ticks come 1 s after start, staggered by 0.5 s: within 4 s every job ran once.
      const deadline = Date.now() + 8_000;
      let ran: string[] = [];
      while (Date.now() < deadline) {
        ran = (await sql<{ job: string }>`select job from job_status where organisation_id is null order by job`.execute(server.database.db)).rows.map((r) => r.job);
        if (ran.length === JOBS.length) break;
        await new Promise((r) => setTimeout(r, 200));
      }
      expect(ran).toEqual([...JOBS].sort());
    } finally {
      await server.close();
    }
  });

  it('serve runs no job when SERVICE_JOBS_IN_WEB=false', async () => {
    const config = loadConfig({ ...databaseEnv(testDb?.schema, path.join(dataDir, 'b')), SERVICE_PORT: '0', SERVICE_LOG_LEVEL: 'silent', SERVICE_JOBS_IN_WEB: 'false' });
    const server = await startServer(config, createLogger('silent'), () => {});
    try {
      expect(server.jobs).toBeNull();
    } finally {
      await server.close();
    }
  });

  it('surveyor worker runs the jobs on its own, and exits 0 on SIGTERM once they are done', async () => {
    const child = spawn(process.execPath, [bin, 'worker'], {
      cwd: root,
      env: { PATH: process.env.PATH, ...databaseEnv(testDb?.schema, path.join(dataDir, 'c')), SERVICE_LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout!.on('data', (d) => (out += d));
    child.stderr!.on('data', (d) => (out += d));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    const deadline = Date.now() + 45_000;
    while (!/worker running/.test(out) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    const started = out.split('\n').filter((l) => l.includes('worker running')).map((l) => JSON.parse(l) as { jobs: string[] });
    expect(started[0]?.jobs.sort()).toEqual([...JOBS].sort());
    // Let every job tick once (the first 1 s after start, each next one 0.5 s later), then stop.
    await new Promise((r) => setTimeout(r, 1_000 + JOBS.length * 500 + 1_500));
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    const listed = spawn(process.execPath, [bin, 'jobs', 'list', '--json'], { cwd: root, env: { PATH: process.env.PATH, ...databaseEnv(testDb?.schema, path.join(dataDir, 'c')) } });
    let json = '';
    listed.stdout!.on('data', (d) => (json += d));
    expect(await new Promise((resolve) => listed.on('exit', resolve))).toBe(0);
    const rows = JSON.parse(json) as { job: string; organisation_id: string | null; outcome: string }[];
    expect(rows.filter((r) => r.organisation_id === null).map((r) => [r.job, r.outcome]).sort()).toEqual(JOBS.map((j) => [j, 'ok']).sort());
  }, 75_000);
});

// Needs a PostgreSQL server to read max_connections from (CI runs the suite on one).
if (TEST_DATABASE_URL) describe('the connection budget warning (spec 1.1 rule 5)', () => {
  const lines: string[] = [];
  const logger = createLogger('debug', { write: (l: string) => void lines.push(l) });

  it('warns when the process may open more connections than the server allows, naming both figures', async () => {
    const database = await openDatabase({ url: TEST_DATABASE_URL, poolMax: 1 });
    try {
      const max = (await sql<{ max: number }>`select current_setting('max_connections')::int as max`.execute(database.db)).rows[0]!.max;
      lines.length = 0;
      await checkConnectionBudget(database, logger, max + 1, 'worker');
      const warn = lines.map((l) => JSON.parse(l)).find((l) => l.level === 'warn');
      expect(warn?.msg).toMatch(/this worker may open \d+ database connections but the server allows \d+/);
      expect(warn).toMatchObject({ budget: max + 1, maxConnections: max });
      lines.length = 0;
      await checkConnectionBudget(database, logger, 2, 'worker');
      expect(lines.map((l) => JSON.parse(l)).filter((l) => ['warn', 'error', 'fatal'].includes(l.level))).toEqual([]);
    } finally {
      await database.close();
    }
  });
});
