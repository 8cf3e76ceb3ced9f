import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Reporter } from 'vitest/node';
import { SKIP_DIR_ENV, type ToolSkip } from './system-tools.js';

// Prints, at the end of `npm test`, what was skipped for want of a program of the machine (see
// test/system-tools.ts), so a user knows what they did not run. Test files run in worker
// processes, which inherit the folder named here and leave one line per skip in it.

export default class ToolSkipsReporter implements Reporter {
  private dir = '';

  onInit(): void {
    this.dir = path.join(tmpdir(), `surveyor-tool-skips-${process.pid}`);
    process.env[SKIP_DIR_ENV] = this.dir;
  }

  onTestRunStart(): void {
    rmSync(this.dir, { recursive: true, force: true });
    mkdirSync(this.dir, { recursive: true });
  }

  onTestRunEnd(): void {
    const skips = new Map<string, ToolSkip>();
    for (const f of existsSync(this.dir) ? readdirSync(this.dir) : []) {
      for (const l of readFileSync(path.join(this.dir, f), 'utf8').split('\n')) {
        if (!l) continue;
        const skip = JSON.parse(l) as ToolSkip;
        skips.set(`${skip.what}: ${skip.why}`, skip);
      }
    }
    rmSync(this.dir, { recursive: true, force: true });
    if (skips.size === 0) return;
    const packages = [...new Set([...skips.values()].flatMap((s) => s.packages))].sort();
    const out = [
      '',
      `Skipped for want of a program (or of root) on this machine (${skips.size}); CI (bash .ci/run) runs them all:`,
      ...[...skips.keys()].sort().map((l) => `  - ${l}`),
      ...(packages.length ? [`To run them here: apt-get install ${packages.join(' ')}`] : []),
      '',
    ];
    process.stdout.write(`${out.join('\n')}\n`);
  }
}
