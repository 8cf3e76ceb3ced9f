import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { SKIP_DIR_ENV, haveTools, onPath } from '../../../test/system-tools.js';

// The rule every test needing a program of the machine follows (issue 22): skipped with a notice
// naming the program and its package outside CI, a failure under CI.

describe('tests that need a program of the machine', () => {
  const saved = { PATH: process.env.PATH, CI: process.env.CI, dir: process.env[SKIP_DIR_ENV] };
  let empty: string;
  let records: string;
  beforeEach(() => {
    empty = mkdtempSync(path.join(tmpdir(), 'surveyor-empty-path-'));
    records = mkdtempSync(path.join(tmpdir(), 'surveyor-skip-records-'));
    process.env.PATH = empty;
    process.env[SKIP_DIR_ENV] = records;
  });
  afterEach(() => {
    for (const [k, v] of [['PATH', saved.PATH], ['CI', saved.CI], [SKIP_DIR_ENV, saved.dir]] as const) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
    rmSync(empty, { recursive: true, force: true });
    rmSync(records, { recursive: true, force: true });
    vi.restoreAllMocks();
  });

  it('finds a program on PATH, and nothing where PATH has none', () => {
    expect(onPath('nmap')).toBeNull();
    process.env.PATH = `${empty}${path.delimiter}${path.dirname(process.execPath)}`;
    expect(onPath(path.basename(process.execPath))).toBe(process.execPath);
  });

  it('outside CI, skips with one line naming the programs and the packages that install them, and records it for the summary', () => {
    delete process.env.CI;
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    expect(haveTools('the lab', ['nmap', 'lldpcli', 'lldpd'])).toBe(false);
    expect(warn).toHaveBeenCalledExactlyOnceWith('[skipped] the lab: nmap, lldpcli, lldpd are not on PATH (apt-get install nmap lldpd)');
    const [file] = readdirSync(records);
    expect(JSON.parse(readFileSync(path.join(records, file!), 'utf8'))).toEqual({
      what: 'the lab',
      why: 'nmap, lldpcli, lldpd are not on PATH (apt-get install nmap lldpd)',
      packages: ['nmap', 'lldpd'],
    });
  });

  it('under CI=true, fails instead of skipping', () => {
    process.env.CI = 'true';
    expect(() => haveTools('promtool checks', ['promtool'])).toThrow('CI must run promtool checks, but promtool is not on PATH (apt-get install prometheus)');
    expect(readdirSync(records)).toEqual([]);
  });

  it('runs the tests when every program is on PATH, and counts a file that is not executable as missing', () => {
    process.env.CI = 'true';
    writeFileSync(path.join(empty, 'nmap'), '#!/bin/sh\n', { mode: 0o755 });
    writeFileSync(path.join(empty, 'softflowd'), 'not a program\n', { mode: 0o644 });
    expect(haveTools('the nmap scans', ['nmap'])).toBe(true);
    expect(() => haveTools('the flow tests', ['nmap', 'softflowd'])).toThrow('softflowd is not on PATH (apt-get install softflowd)');
  });
});
