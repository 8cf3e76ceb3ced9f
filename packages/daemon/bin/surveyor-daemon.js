#!/usr/bin/env node
// The `surveyor-daemon` command. The TypeScript is compiled by the root `prepare` script (run by
// `npm install`); if dist/ is missing (a tree copied without it), build it once, then run.
import { existsSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const entry = new URL('../dist/bin.js', import.meta.url);
if (!existsSync(fileURLToPath(entry))) {
  const root = fileURLToPath(new URL('../../..', import.meta.url));
  execFileSync(process.execPath, [fileURLToPath(new URL('../../../node_modules/typescript/bin/tsc', import.meta.url)), '-b', 'packages/contract', 'packages/daemon'], { cwd: root, stdio: 'inherit' });
}
await import(entry.href);
