import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { eventKinds } from '@surveyor/contract';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.js';
import { cliVerbs, jobDefinitions, modules } from '../src/main.js';

// The composition root (src/main.ts): one list of modules, each a domain folder contributing its
// routes, jobs, event kinds and CLI verbs. These hold the house to that shape.

const src = (file: string) => readFileSync(fileURLToPath(new URL(`../src/${file}`, import.meta.url)), 'utf8');

describe('the module list of the composition root', () => {
  it('names each module once', () => {
    const names = modules.map((m) => m.name);
    expect(new Set(names).size).toBe(names.length);
  });

  it('claims every event kind of the contract in exactly one module, and no kind the contract does not have', () => {
    const claimed = modules.flatMap((m) => (m.events ?? []).map((kind) => [kind, m.name] as const));
    expect(claimed.map(([kind]) => kind).sort()).toEqual([...eventKinds].sort());
  });

  it('gives every job a unique name, and each an interval', () => {
    const jobs = jobDefinitions({ config: loadConfig({}), secretKey: Buffer.alloc(32) });
    expect(new Set(jobs.map((j) => j.name)).size).toBe(jobs.length);
    for (const j of jobs) expect(j.intervalMs).toBeGreaterThan(0);
  });

  it('gives every CLI verb a usage line starting with its name', () => {
    for (const [name, verb] of Object.entries(cliVerbs())) {
      expect(verb.usage.length).toBeGreaterThan(0);
      for (const line of verb.usage) expect(line.startsWith(`${name} `)).toBe(true);
    }
  });
});

describe('layering', () => {
  it('http/app.ts imports no domain: only the framework, the contract, configuration, errors and http/ itself', () => {
    const imports = [...src('http/app.ts').matchAll(/from '([^']+)'/g)].map((m) => m[1]!);
    const local = imports.filter((i) => i.startsWith('.'));
    expect(local.filter((i) => !i.startsWith('./') && !['../config.js', '../errors.js'].includes(i))).toEqual([]);
  });

  it('keeps SQL out of routes, services and jobs: no query in any *.routes.ts, *.service.ts or *.job.ts', () => {
    const files = readdirSync(fileURLToPath(new URL('../src', import.meta.url)), { recursive: true, encoding: 'utf8' }).filter((f) => /\.(routes|service|job)\.ts$/.test(f));
    expect(files.length).toBeGreaterThan(15);
    const withSql = files.filter((f) => /sql`|\.(selectFrom|insertInto|updateTable|deleteFrom)\(/.test(src(f)));
    expect(withSql).toEqual([]);
  });

  it('writes events only through events/emit.ts: no other source file has an insert into events', () => {
    const files = readdirSync(fileURLToPath(new URL('../src', import.meta.url)), { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts'));
    expect(files.length).toBeGreaterThan(50);
    const writers = files.filter((f) => /insert\s+into\s+events\b/i.test(src(f)));
    expect(writers).toEqual([path.join('events', 'emit.ts')]);
  });
});
