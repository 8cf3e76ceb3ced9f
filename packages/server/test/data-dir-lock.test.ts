import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as admin from '../src/admin/admin.service.js';
import { DataDirLockedError, lockDataDir } from '../src/db/data-dir-lock.js';
import { type Database, openDatabase } from '../src/db/database.js';
import { migrate } from '../src/db/migrate.js';
import { PASSWORD } from './helpers.js';

const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));
const bin = path.join(repoRoot, 'packages/server/bin/surveyor.js');

const tempDirs: string[] = [];
function tempDir(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'surveyor-lock-'));
  tempDirs.push(dir);
  return dir;
}
afterAll(() => {
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
});

function surveyor(dataDir: string, ...argv: string[]) {
  return spawnSync(process.execPath, [bin, ...argv], {
    cwd: repoRoot,
    env: { PATH: process.env.PATH ?? '', SERVICE_DATA_DIR: dataDir },
    encoding: 'utf8',
    timeout: 30_000,
  });
}

/** The pid of a process that has exited. */
function deadPid(): number {
  const r = spawnSync(process.execPath, ['-e', '0']);
  expect(r.status).toBe(0);
  expect(() => process.kill(r.pid!, 0)).toThrow();
  return r.pid!;
}

describe('an embedded data folder open in this process', () => {
  const dataDir = tempDir();
  let database: Database | undefined;
  let organisationId = '';

  beforeAll(async () => {
    database = await openDatabase({ dataDir, poolMax: 1 });
    await migrate(database);
    organisationId = (await admin.createOrganisation(database.db, { type: 'cli' }, { name: 'Held', ownerEmail: 'owner@held.test', ownerPassword: PASSWORD })).organisationId;
  });
  afterAll(async () => {
    await database?.close();
  });

  it('is locked with this process as the holder', () => {
    const held = JSON.parse(readFileSync(path.join(dataDir, 'surveyor.lock'), 'utf8'));
    expect(held).toMatchObject({ pid: process.pid, hostname: hostname(), startedAt: expect.any(String), command: expect.any(String) });
  });

  it('is refused to a second open in the same process', async () => {
    const err = await openDatabase({ dataDir, poolMax: 1 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DataDirLockedError);
    expect((err as Error).message).toContain(`pid ${process.pid}`);
  });

  it('is refused to a second process with exit 1 and an error naming the folder and this pid', () => {
    const r = surveyor(dataDir, 'migrate');
    expect(r.error).toBeUndefined();
    expect(r.status).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain(path.resolve(dataDir));
    expect(r.stderr).toContain(`pid ${process.pid}`);
    expect(r.stderr).toContain('in use by another Surveyor process');
    // The refused process left the lock alone.
    expect(JSON.parse(readFileSync(path.join(dataDir, 'surveyor.lock'), 'utf8')).pid).toBe(process.pid);
  });

  it('opens for the next process once closed, and still holds its data', async () => {
    await database!.close();
    database = undefined;
    expect(existsSync(path.join(dataDir, 'surveyor.lock'))).toBe(false);

    const r = surveyor(dataDir, 'migrate');
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/Schema at version \d+; applied nothing\./);
    expect(existsSync(path.join(dataDir, 'surveyor.lock'))).toBe(false);

    database = await openDatabase({ dataDir, poolMax: 1 });
    const org = await database.db.selectFrom('organisations').select(['id', 'name']).where('id', '=', organisationId).executeTakeFirst();
    expect(org).toEqual({ id: organisationId, name: 'Held' });
  });

  it('is taken over by the next process when the lock was left by a dead process on this host', async () => {
    await database!.close();
    database = undefined;
    const lockFile = path.join(dataDir, 'surveyor.lock');
    const pid = deadPid();
    writeFileSync(lockFile, JSON.stringify({ pid, hostname: hostname(), startedAt: new Date(Date.now() - 3_600_000).toISOString(), command: 'surveyor serve' }));

    const r = surveyor(dataDir, 'migrate', '--json');
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ applied: [] });
    // Released on exit: neither the stale file nor a new one is left behind.
    expect(existsSync(lockFile)).toBe(false);
  });
});

describe('a stale lock', () => {
  it('left by a dead process is taken over in process, and the new lock names this process', () => {
    const dataDir = tempDir();
    const lockFile = path.join(dataDir, 'surveyor.lock');
    writeFileSync(lockFile, JSON.stringify({ pid: deadPid(), hostname: hostname(), startedAt: new Date().toISOString(), command: 'surveyor serve' }));
    const release = lockDataDir(dataDir);
    try {
      expect(JSON.parse(readFileSync(lockFile, 'utf8')).pid).toBe(process.pid);
    } finally {
      release();
    }
    expect(existsSync(lockFile)).toBe(false);
  });

  it('held by a process on another host is not taken over, since its pid cannot be checked from here', () => {
    const dataDir = tempDir();
    const lockFile = path.join(dataDir, 'surveyor.lock');
    const holder = { pid: deadPid(), hostname: `not-${hostname()}`, startedAt: new Date().toISOString(), command: 'surveyor serve' };
    writeFileSync(lockFile, JSON.stringify(holder));
    expect(() => lockDataDir(dataDir)).toThrow(DataDirLockedError);
    expect(() => lockDataDir(dataDir)).toThrow(`on not-${hostname()}`);
    expect(JSON.parse(readFileSync(lockFile, 'utf8'))).toEqual(holder);
  });

  it('that is an empty file (a crash between creating and writing it) is taken over on the first try', () => {
    const dataDir = tempDir();
    const lockFile = path.join(dataDir, 'surveyor.lock');
    writeFileSync(lockFile, '');
    const release = lockDataDir(dataDir);
    try {
      expect(JSON.parse(readFileSync(lockFile, 'utf8')).pid).toBe(process.pid);
    } finally {
      release();
    }
  });

  it('carrying this very pid from an earlier run (pid reuse, e.g. pid 1 in a restarted container) is taken over', () => {
    // The file names this process, but this process never took the lock: it can only be left
    // over by an earlier process that had the same pid and died without releasing it.
    const dataDir = tempDir();
    const lockFile = path.join(dataDir, 'surveyor.lock');
    writeFileSync(lockFile, JSON.stringify({ pid: process.pid, hostname: hostname(), startedAt: new Date(Date.now() - 86_400_000).toISOString(), command: 'surveyor serve' }));
    const release = lockDataDir(dataDir);
    release();
    expect(existsSync(lockFile)).toBe(false);
  });
});

describe('releasing the lock', () => {
  it('leaves no process exit listener behind', () => {
    const dataDir = tempDir();
    const before = process.listenerCount('exit');
    for (let i = 0; i < 3; i++) lockDataDir(dataDir)();
    expect(process.listenerCount('exit')).toBe(before);
  });
});
