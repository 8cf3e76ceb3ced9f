import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import openapiTS, { astToString } from 'openapi-typescript';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type TestApp, buildTestApp } from './helpers.js';

// Issue 18: a typed client generated from the served document (openapi-typescript) type-checks a
// short scenario, so a document change that breaks generated clients fails CI. Offline, seconds.

const SCENARIO = `
import type { components, paths } from './schema.js';

type ListHosts = paths['/api/v1/hosts']['get'];
type HostQuery = NonNullable<ListHosts['parameters']['query']>;
type HostPage = ListHosts['responses'][200]['content']['application/json'];
type Host = components['schemas']['Host'];
type Problem = components['schemas']['Problem'];

/** Pages through every host by cursor. */
export async function allHosts(fetchPage: (query: HostQuery) => Promise<HostPage>): Promise<Host[]> {
  const hosts: Host[] = [];
  let cursor: string | undefined;
  for (;;) {
    const page = await fetchPage({ limit: 100, ...(cursor === undefined ? {} : { cursor }) });
    hosts.push(...page.data);
    if (!page.hasMore || page.nextCursor === null) return hosts;
    cursor = page.nextCursor;
  }
}
export const names = (h: Host): (string | null)[] => [h.hostname, h.fqdn, ...h.addresses];

type CreateNetwork = paths['/api/v1/networks']['post'];
type NewNetwork = NonNullable<CreateNetwork['requestBody']>['content']['application/json'];
export const lab: NewNetwork = { name: 'lab', cidr: '10.0.0.0/24', scanIntervalMinutes: 60 };
type Created = CreateNetwork['responses'][201]['content']['application/json'];
export const cidrOf = (n: Created): string => n.cidr;

type Duplicate = CreateNetwork['responses'][409]['content']['application/problem+json'];
export function isDuplicate(p: Duplicate): boolean {
  const code: Problem['code'] = p.code;
  return code === 'duplicate';
}
// @ts-expect-error not a problem code
export const wrong: Problem['code'] = 'no_such_code';
`;

describe('a client generated from /openapi.json', () => {
  let t: TestApp;
  let dir: string;
  beforeAll(async () => {
    t = await buildTestApp();
    dir = mkdtempSync(join(tmpdir(), 'surveyor-client-'));
  });
  afterAll(async () => {
    rmSync(dir, { recursive: true, force: true });
    await t.close();
  });

  it('type-checks a scenario: page through hosts, create a network, read a problem code', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/openapi.json' });
    expect(res.statusCode).toBe(200);
    writeFileSync(join(dir, 'schema.ts'), astToString(await openapiTS(res.json(), { silent: true })));
    writeFileSync(join(dir, 'scenario.ts'), SCENARIO);
    const program = ts.createProgram([join(dir, 'scenario.ts')], {
      strict: true, noEmit: true, noUncheckedIndexedAccess: true, target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext, skipLibCheck: true, types: [], lib: ['lib.es2022.d.ts'],
    });
    const diagnostics = ts.getPreEmitDiagnostics(program).map((d) => `${d.file?.fileName.split('/').pop() ?? ''}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`);
    expect(diagnostics).toEqual([]);
  });
});
