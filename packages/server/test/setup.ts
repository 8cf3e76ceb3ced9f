import { afterAll, afterEach } from 'vitest';

// Fails the running test when a response broke the contract (see contract-check.ts).
function check() {
  const g = globalThis as { __surveyorContractViolations?: string[] };
  const found = g.__surveyorContractViolations?.splice(0) ?? [];
  if (found.length > 0) throw new Error(`Responses outside the documented contract:\n${[...new Set(found)].join('\n')}`);
}
afterEach(check);
afterAll(check);
