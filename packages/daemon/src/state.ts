import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** What the daemon keeps across restarts in its state folder (state.json). */
export interface DaemonState {
  daemonId?: string;
  name?: string;
  server?: string;
  registeredAt?: string;
}

export class StateStore {
  readonly file: string;
  constructor(readonly dir: string) {
    this.file = join(dir, 'state.json');
  }

  /** The saved state; empty when none was saved yet. A corrupt file is an error (never silently a new identity). */
  load(): DaemonState {
    let text: string;
    try {
      text = readFileSync(this.file, 'utf8');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return {};
      throw e;
    }
    const parsed = JSON.parse(text) as unknown;
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error(`${this.file} does not hold a JSON object`);
    return parsed as DaemonState;
  }

  /** Writes the state atomically (a temporary file renamed over the old one), readable by the owner only. */
  save(state: DaemonState): void {
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    const tmp = `${this.file}.${process.pid}.tmp`;
    writeFileSync(tmp, `${JSON.stringify(state, null, 2)}\n`, { mode: 0o600 });
    renameSync(tmp, this.file);
  }
}
