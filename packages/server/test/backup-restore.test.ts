import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { cpSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.js';
import { createLogger } from '../src/logger.js';
import { type RunningServer, startServer } from '../src/main.js';
import { TEST_DATABASE_URL, type TestApp, bearer, buildTestApp, createTestDatabase, login, seedMemberWithKey } from './helpers.js';
import { createNetwork, ingest, scanningOrg, startSession } from './scanning.js';

// Backups restored for real (docs/operating.md, "Backups and restore"): data written through the
// service, backed up the documented way, restored, and read back through the API of a service
// started on the restored copy. PostgreSQL: pg_dump -Fc and pg_restore (the test database is a
// schema of the shared one, so the dump is of that schema); embedded: the data folder, copied
// while the service is stopped.

const ENV = { SERVICE_RATE_LIMIT_DAEMON_PER_MINUTE: '1000000', SERVICE_RATE_LIMIT_KEY_PER_MINUTE: '1000000', SERVICE_RATE_LIMIT_LOGIN_PER_MINUTE: '1000' };

interface Seeded {
  api: string;
  viewerEmail: string;
  snapshotIds: [string, string];
}

/** Writes an inventory through the API as a daemon and an operator would, and two snapshots around a change. */
async function seed(t: Pick<TestApp, 'app' | 'database'>): Promise<Seeded> {
  const s = await scanningOrg(t as TestApp);
  const sessionId = await startSession(t as TestApp, s, await createNetwork(t as TestApp, s, '10.20.0.0/24'));
  const observed = (fingerprint: string, address: string, ports: number[]) => ({
    ports: ports.map((number) => ({ fingerprint, address, protocol: 'tcp', number })),
    services: ports.map((port) => ({ fingerprint, address, protocol: 'tcp', port, name: `svc-${port}` })),
  });
  const a = observed('fp-a', '10.20.0.5', [22, 443]);
  expect(await ingest(t as TestApp, s.daemon, { sessionId, ...a })).toMatchObject({ accepted: 4 });
  const first = await t.app.inject({ method: 'POST', url: '/api/v1/snapshots', headers: bearer(s.api), payload: { reason: 'manual' } });
  expect(first.statusCode, first.body).toBe(201);
  const b = observed('fp-b', '10.20.0.6', [80]);
  expect(await ingest(t as TestApp, s.daemon, { sessionId, ...b, final: true, stats: { hostsTotal: 2, hostsScanned: 2, portsScanned: 3 } })).toMatchObject({ accepted: 2 });
  const second = await t.app.inject({ method: 'POST', url: '/api/v1/snapshots', headers: bearer(s.api), payload: { reason: 'manual' } });
  expect(second.statusCode, second.body).toBe(201);
  const viewerEmail = (await seedMemberWithKey(t.database, s.org, 'viewer', ['inventory:read'])).email;
  return { api: s.api, viewerEmail, snapshotIds: [first.json().id, second.json().id] };
}

/** What the API shows of the seeded data: hosts, services, snapshots, and the stored content (a snapshot diff). */
async function readBack(app: FastifyInstance, seeded: Seeded) {
  const get = async (url: string, headers: Record<string, string>) => {
    const res = await app.inject({ method: 'GET', url, headers });
    expect(res.statusCode, `${url}: ${res.body}`).toBe(200);
    return res.json();
  };
  const { cookie } = await login(app, seeded.viewerEmail);
  const [first, second] = seeded.snapshotIds;
  return {
    hosts: (await get('/api/v1/hosts?limit=100', bearer(seeded.api))).data,
    services: (await get('/api/v1/services?limit=100', bearer(seeded.api))).data,
    snapshots: (await get('/api/v1/snapshots?limit=100', bearer(seeded.api))).data,
    diff: await get(`/api/v1/snapshots/${second}/diff?against=${first}`, { cookie }),
  };
}

/** The read-back must show the seeded inventory, not merely agree with an empty one. */
function expectSeeded(seen: Awaited<ReturnType<typeof readBack>>) {
  expect(seen.hosts.map((h: { addresses: string[] }) => h.addresses).sort()).toEqual([['10.20.0.5'], ['10.20.0.6']]);
  expect(seen.services.map((s: { port: number }) => s.port).sort()).toEqual([22, 443, 80]);
  expect(seen.snapshots).toHaveLength(2);
  expect(JSON.stringify(seen.diff)).toContain('10.20.0.6');
}

if (TEST_DATABASE_URL) {
  const url = TEST_DATABASE_URL;
  describe('PostgreSQL: a pg_dump -Fc of the database, restored with pg_restore, serves the same data', () => {
    let dir: string;
    let schema: string;
    let server: RunningServer | undefined;
    beforeAll(() => {
      dir = mkdtempSync(path.join(tmpdir(), 'surveyor-backup-'));
    });
    afterAll(async () => {
      await server?.close();
      rmSync(dir, { recursive: true, force: true });
      if (schema) {
        const client = new pg.Client({ connectionString: url });
        await client.connect();
        await client.query(`drop schema if exists ${schema} cascade`);
        await client.end();
      }
    });

    it('uses client programs no older than the server (pg_dump refuses a newer server)', async () => {
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      const serverMajor = Math.floor(Number((await client.query<{ v: string }>("select current_setting('server_version_num') as v")).rows[0]!.v) / 10000);
      await client.end();
      for (const program of ['pg_dump', 'pg_restore']) {
        // Debian's postgresql-client; a missing program fails here with its name.
        const version = execFileSync(program, ['--version'], { encoding: 'utf8' });
        const major = Number(/\(PostgreSQL\) (\d+)/.exec(version)?.[1]);
        expect(major, `${program}: ${version.trim()} against server ${serverMajor}`).toBeGreaterThanOrEqual(serverMajor);
      }
    });

    it('dumps, loses the schema, restores it, and a service started on it reads the same hosts, snapshots and keys', async () => {
      const testDb = await createTestDatabase();
      schema = testDb.schema!;
      const t = await buildTestApp({ env: ENV, testDb });
      let seeded: Seeded;
      let before: Awaited<ReturnType<typeof readBack>>;
      try {
        seeded = await seed(t);
        before = await readBack(t.app, seeded);
        expectSeeded(before);
      } finally {
        await t.close();
        await testDb.database.close();
      }

      // The backup: custom format, this schema only (a deployment dumps its whole database the same way, without -n).
      const file = path.join(dir, 'surveyor.dump');
      execFileSync('pg_dump', ['--format=custom', `--schema=${schema}`, `--file=${file}`, `--dbname=${url}`]);
      expect(execFileSync('pg_restore', ['--list', file], { encoding: 'utf8' })).toMatch(/TABLE DATA \S+ hosts /);

      // The loss: the schema and everything in it.
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      await client.query(`drop schema ${schema} cascade`);
      expect((await client.query('select 1 from pg_namespace where nspname = $1', [schema])).rowCount).toBe(0);
      await client.end();

      // The restore, then the service started on it the way it always starts (migrations at start: none pending).
      execFileSync('pg_restore', ['--exit-on-error', '--no-owner', `--dbname=${url}`, file]);
      const sep = url.includes('?') ? '&' : '?';
      const config = loadConfig({
        ...ENV,
        DATABASE_URL: `${url}${sep}options=-c%20search_path%3D${schema}`,
        SERVICE_SECRET_KEY: randomBytes(32).toString('hex'),
        SERVICE_PORT: '0',
        SERVICE_LOG_LEVEL: 'silent',
        SERVICE_JOBS_IN_WEB: 'false',
      });
      server = await startServer(config, createLogger('silent'), () => {});
      const after = await readBack(server.app, seeded);
      expect(after).toEqual(before);
      // Keys are stored as hashes: the restored hash still admits the old token, and only it.
      const wrong = await server.app.inject({ method: 'GET', url: '/api/v1/hosts', headers: bearer(`${seeded.api.slice(0, -4)}AAAA`) });
      expect(wrong.statusCode).toBe(401);
      // The restored schema takes writes: its triggers, functions and per-organisation counters came back too.
      const write = await server.app.inject({ method: 'POST', url: '/api/v1/networks', headers: bearer(seeded.api), payload: { name: 'after restore', cidr: '10.21.0.0/24' } });
      expect(write.statusCode, write.body).toBe(201);
    });
  });
}

describe('embedded database: the data folder copied while the service is stopped serves the same data', () => {
  let dir: string;
  let server: RunningServer | undefined;
  beforeAll(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'surveyor-datadir-'));
  });
  afterAll(async () => {
    await server?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const start = (dataDir: string, tell: (text: string) => void) =>
    startServer(loadConfig({ ...ENV, SERVICE_DATA_DIR: dataDir, SERVICE_PORT: '0', SERVICE_LOG_LEVEL: 'silent', SERVICE_JOBS_IN_WEB: 'false' }), createLogger('silent'), tell);

  it('writes, stops, copies the folder, drops the original, and a service started on the copy reads it back', async () => {
    const original = path.join(dir, 'original');
    const copy = path.join(dir, 'copy');
    const told: string[] = [];
    server = await start(original, (text) => told.push(text));
    expect(told.join('')).toContain('First run');
    expect(existsSync(path.join(original, 'surveyor.lock'))).toBe(true);
    const seeded = await seed(server);
    const before = await readBack(server.app, seeded);
    expectSeeded(before);
    await server.close();
    server = undefined;
    // Stopped: the lock is gone, and the folder (database files and secret.key) is safe to copy.
    expect(existsSync(path.join(original, 'surveyor.lock'))).toBe(false);
    expect(readdirSync(original)).toContain('secret.key');
    cpSync(original, copy, { recursive: true });
    rmSync(original, { recursive: true, force: true });

    const toldAgain: string[] = [];
    server = await start(copy, (text) => toldAgain.push(text));
    // Not a first run: the organisation and owner came with the copy.
    expect(toldAgain).toEqual([]);
    const after = await readBack(server.app, seeded);
    expect(after).toEqual(before);
    const wrong = await server.app.inject({ method: 'GET', url: '/api/v1/hosts', headers: bearer(`${seeded.api.slice(0, -4)}AAAA`) });
    expect(wrong.statusCode).toBe(401);
  });
});
