import { closeSync, mkdirSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
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

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Takes the one-process lock of an embedded data folder. Throws DataDirLockedError naming the
 * holder when a live process has it; a lock left by a dead process on this host is taken over.
 * Returns the release function.
 */
export function lockDataDir(dataDir: string): () => void {
  mkdirSync(dataDir, { recursive: true });
  const file = path.join(dataDir, 'surveyor.lock');
  const me: LockInfo = { pid: process.pid, hostname: hostname(), startedAt: new Date().toISOString(), command: process.argv.slice(1).join(' ') };
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const fd = openSync(file, 'wx', 0o600);
      writeSync(fd, JSON.stringify(me));
      closeSync(fd);
      let released = false;
      const release = () => {
        if (released) return;
        released = true;
        try {
          const held = JSON.parse(readFileSync(file, 'utf8')) as LockInfo;
          if (held.pid === me.pid && held.hostname === me.hostname) unlinkSync(file);
        } catch {
          /* already gone */
        }
      };
      process.once('exit', release);
      return release;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    }
    let holder: LockInfo;
    try {
      holder = JSON.parse(readFileSync(file, 'utf8')) as LockInfo;
    } catch {
      // Half-written by a process starting this very moment, or garbage: treat as held unless it stays so.
      holder = { pid: -1, hostname: 'unknown', startedAt: 'unknown', command: 'unknown' };
      if (attempt < 2) continue;
      unlinkSync(file);
      continue;
    }
    if (holder.hostname === me.hostname && holder.pid !== process.pid && !alive(holder.pid)) {
      unlinkSync(file); // stale: its process is gone
      continue;
    }
    throw new DataDirLockedError(path.resolve(dataDir), holder);
  }
  throw new Error(`Could not take the lock ${file}`);
}
