import { fileURLToPath } from 'node:url';
import { configDefaults, defineConfig } from 'vitest/config';

// The files that drive the assistant's `openai` client against the local fake provider. They run
// with a module graph of their own (isolate: true): in a run where a worker's files shared one
// graph, these once failed in CI (the provider's 429 answered 500: its error was not recognised
// as the client's), an order-dependent clash that no local order reproduced.
const OWN_GRAPH = [
  'packages/server/test/assistant.test.ts',
  'packages/server/test/contract-fuzz.test.ts',
  'packages/server/test/scim-assistant-hardening.test.ts',
  'packages/web/test/assistant.e2e.test.ts',
  'packages/web/test/walk.e2e.test.ts',
];

// *.test.tsx: the console's component tests (packages/web/test/components), in happy-dom by their docblock.
const ALL = ['packages/*/test/**/*.test.ts', 'packages/web/test/**/*.test.tsx'];

export default defineConfig({
  resolve: {
    // Tests run the TypeScript sources of every workspace package, never a stale dist/.
    alias: { '@surveyor/contract': fileURLToPath(new URL('./packages/contract/src/index.ts', import.meta.url)) },
  },
  test: {
    // Every response a server test receives is checked against the documented contract.
    setupFiles: ['packages/server/test/setup.ts'],
    // The default report, then the list of what was skipped for want of a program (test/system-tools.ts).
    reporters: ['default', './test/tool-skips.reporter.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    maxWorkers: 2,
    projects: [
      // Each worker process runs its files one after another with the modules it already loaded:
      // importing the server's modules afresh for each file was a fifth of the suite's time. Files
      // keep their own state: each builds its app, database and servers in beforeAll and closes
      // them in afterAll; none mocks a module (vi.mock), and the component tests unstub the fetch
      // they stub after each test.
      { extends: true, test: { name: 'shared', include: ALL, exclude: [...configDefaults.exclude, ...OWN_GRAPH], isolate: false } },
      { extends: true, test: { name: 'own-graph', include: OWN_GRAPH } },
    ],
  },
});
