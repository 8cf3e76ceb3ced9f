import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  resolve: {
    // Tests run the TypeScript sources of every workspace package, never a stale dist/.
    alias: { '@surveyor/contract': fileURLToPath(new URL('./packages/contract/src/index.ts', import.meta.url)) },
  },
  test: {
    // *.test.tsx: the console's component tests (packages/web/test/components), in happy-dom by their docblock.
    include: ['packages/*/test/**/*.test.ts', 'packages/web/test/**/*.test.tsx'],
    // Every response a server test receives is checked against the documented contract.
    setupFiles: ['packages/server/test/setup.ts'],
    // The default report, then the list of what was skipped for want of a program (test/system-tools.ts).
    reporters: ['default', './test/tool-skips.reporter.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    maxWorkers: 2,
  },
});
