import type { Module } from '../module.js';
import { topologyDependencies } from './dependencies.job.js';
import { registerTopologyRoutes } from './topology.routes.js';

/** Host topology (spec 4.2), application topology from flows (topology.dependencies) and its admin run. */
export const topologyModule: Module = {
  name: 'topology',
  routes: (app, deps) => registerTopologyRoutes(app, deps),
  jobs: () => [topologyDependencies()],
};
