import { closeSync, linkSync, mkdirSync, openSync, readFileSync, renameSync, unlinkSync, writeSync } from 'node:fs';
import { hostname } from 'node:os';
import path from 'node:path';

export class DataDirLockedError extends Error {
  constructor(readonly dataDir: string, readonly holder: LockInfo) {
    super(
      `The data folder ${dataDir} is in use by another Surveyor process (pid ${holder.pid} on ${holder.hostname}, ` +
        `started ${holder.startedAt}, command: ${holder.command}). Stop that process first, or point SERVICE_DATA_DIR elsewhere. ` +
        'The embedded database allows one process per folder; run PostgreSQL (DATABASE_URL) for more.',
    );
    this.name = 'DataDirLockedError';
  }
}

interface LockInfo {
  pid: number;
  hostname: string;
  startedAt: string;
  command: string;
}

/** Lock files this process holds now: a file naming our pid but absent here is a dead namesake's. */
const held = new Set<string>();

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function sleep(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

function readLock(file: string): LockInfo | null {
  try {
    const info = JSON.parse(readFileSync(file, 'utf8')) as LockInfo;
    return typeof info.pid === 'number' ? info : null;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') throw e;
    return null;
  }
}

/** Moves a stale lock aside, unless it changed since we judged it stale (then puts it back). */
function removeStale(file: string, judged: LockInfo | null): void {
  const aside = `${file}.${process.pid}.stale`;
  try {
    renameSync(file, aside);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return; // someone else removed it
    throw e;
  }
  const now = readLock(aside);
  if (JSON.stringify(now) !== JSON.stringify(judged)) {
    try {
      linkSync(aside, file); // a live lock taken meanwhile: restore it (fails if yet another appeared)
    } catch {
      /* the newer lock file stands */
    }
  }
  unlinkSync(aside);
}

/**
 * Takes the one-process lock of an embedded data folder. Throws DataDirLockedError naming the
 * holder when a live process has it; a lock left by a dead process on this host (our own pid
 * included, after a restart in a container) or an unreadable one is taken over.
 * Returns the release function.
 */
export function lockDataDir(dataDir: string): () => void {
  mkdirSync(dataDir, { recursive: true });
  const file = path.resolve(dataDir, 'surveyor.lock');
  const me: LockInfo = { pid: process.pid, hostname: hostname(), startedAt: new Date().toISOString(), command: process.argv.slice(1).join(' ') };
  for (let attempt = 0; attempt < 5; attempt++) {
    try {
      const fd = openSync(file, 'wx', 0o600);
      writeSync(fd, JSON.stringify(me));
      closeSync(fd);
      held.add(file);
      const release = () => {
        process.removeListener('exit', release);
        if (!held.delete(file)) return;
        try {
          const info = readLock(file);
          if (info?.pid === me.pid && info.hostname === me.hostname) unlinkSync(file);
        } catch {
          /* already gone */
        }
      };
      process.on('exit', release);
      return release;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    }
    let holder: LockInfo | null;
    try {
      holder = readLock(file);
    } catch {
      continue; // vanished between our open and read
    }
    if (!holder) {
      // Empty or garbage: a process may be writing it this very moment. Give it a moment first.
      sleep(100);
      let again: LockInfo | null;
      try {
        again = readLock(file);
      } catch {
        continue;
      }
      if (again) continue;
      removeStale(file, null);
      continue;
    }
    const ours = holder.pid === process.pid && held.has(file);
    if (holder.hostname === me.hostname && !ours && (holder.pid === process.pid || !alive(holder.pid))) {
      removeStale(file, holder);
      continue;
    }
    throw new DataDirLockedError(path.resolve(dataDir), holder);
  }
  throw new Error(`Could not take the lock ${file}; remove it if no Surveyor process uses ${dataDir}.`);
}
