import type { Module } from '../module.js';
import { flowsRollup } from './flow-rollups.job.js';
import { registerIngestRoutes } from './ingest.routes.js';

/**
 * Observations and flows from daemons (spec 4.4, 4.5), reconciled into the inventory by
 * `reconcile` (reconcile.ts), which other sources (cloud accounts) call too.
 */
export const ingestModule: Module = {
  name: 'ingest',
  routes: (app, { db, config }) => registerIngestRoutes(app, { db, config }),
  events: ['host.discovered', 'scan.completed'],
  jobs: () => [flowsRollup()],
};
