import { accessSync, appendFileSync, constants, mkdirSync } from 'node:fs';
import path from 'node:path';

// Tests that need a program of the machine (nmap, lldpd, softflowd, Chromium, promtool) ask for it
// here. On a developer's machine without it they are skipped with one line naming the program and
// the package that installs it, and `npm test` lists them at its end (test/tool-skips.reporter.ts);
// under CI (CI=true), which installs them all (.ci/run), a missing program fails the run instead,
// so CI can never silently lose those tests.

/** Debian's package for each program a test may ask for. */
const PACKAGES = {
  nmap: 'nmap',
  lldpd: 'lldpd',
  lldpcli: 'lldpd',
  softflowd: 'softflowd',
  gcc: 'gcc',
  openssl: 'openssl',
  ip: 'iproute2',
  ps: 'procps',
  promtool: 'prometheus',
  nginx: 'nginx',
  chromium: 'chromium',
  xz: 'xz-utils',
  dpkg: 'dpkg',
  rpm: 'rpm',
} as const;
export type Tool = keyof typeof PACKAGES;

/** Where skip records go: the reporter names a folder for the run (a lone vitest run has none). */
export const SKIP_DIR_ENV = 'SURVEYOR_TOOL_SKIPS_DIR';

/** The full path of `name` on PATH, or null. Never throws. */
export function onPath(name: string): string | null {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    if (!dir) continue;
    const file = path.join(dir, name);
    try {
      accessSync(file, constants.X_OK);
      return file;
    } catch {
      // not here
    }
  }
  return null;
}

/**
 * Records that `what` is skipped and why: one line on stderr now, and one line in the run's list
 * that `npm test` prints at its end. Under CI it throws instead (CI must run every test).
 */
export function skipOrFail(what: string, why: string, packages: readonly string[] = []): false {
  if (process.env.CI === 'true' || process.env.CI === '1') throw new Error(`CI must run ${what}, but ${why}`);
  console.warn(`[skipped] ${what}: ${why}`);
  const dir = process.env[SKIP_DIR_ENV];
  if (dir) {
    mkdirSync(dir, { recursive: true });
    const record: ToolSkip = { what, why, packages: [...packages] };
    appendFileSync(path.join(dir, `${process.pid}.jsonl`), `${JSON.stringify(record)}\n`);
  }
  return false;
}

/** One skip, as the reporter reads it back. */
export interface ToolSkip {
  what: string;
  why: string;
  /** Debian packages that would let it run. */
  packages: string[];
}

/**
 * Whether every program of `tools` is on PATH. When one is missing: false after saying so (see
 * `skipOrFail`), or under CI an error. Use as `describe.skipIf(!haveTools('…', ['nmap']))(…)`.
 */
export function haveTools(what: string, tools: readonly Tool[]): boolean {
  const missing = tools.filter((t) => !onPath(t));
  if (missing.length === 0) return true;
  const packages = [...new Set(missing.map((t) => PACKAGES[t]))];
  return skipOrFail(what, `${missing.join(', ')} ${missing.length === 1 ? 'is' : 'are'} not on PATH (apt-get install ${packages.join(' ')})`, packages);
}
