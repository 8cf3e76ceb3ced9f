import type { Module } from '../module.js';
import { inventorySnapshot } from './snapshot.job.js';
import { registerSnapshotRoutes } from './snapshots.routes.js';

/** Snapshots: manual ones (POST /api/v1/snapshots), the daily scheduled one, and taking it now. */
export const snapshotsModule: Module = {
  name: 'snapshots',
  routes: (app, deps) => registerSnapshotRoutes(app, deps),
  jobs: () => [inventorySnapshot()],
};
