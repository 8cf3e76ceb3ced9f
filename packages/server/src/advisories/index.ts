import type { Module } from '../module.js';
import { advisoriesVerb } from './advisories.cli.js';
import { registerAdvisoryRoutes } from './advisories.routes.js';
import { cveMatch } from './cve-match.job.js';

/**
 * Advisories and findings: the mirror of NVD and OSV records (import, feed), CPE 2.3 matching
 * with version ranges, and the job cve.match that opens and resolves findings. The findings
 * collection and PATCH are the inventory's; `vulnerability.opened` is its trigger's.
 */
export const advisoriesModule: Module = {
  name: 'advisories',
  routes: (app, deps) => registerAdvisoryRoutes(app, deps),
  jobs: ({ config }) => [cveMatch(config)],
  cli: { advisories: advisoriesVerb },
};
