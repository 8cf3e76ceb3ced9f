import type { Module } from '../module.js';
import { registerMetricsRoutes } from './metrics.routes.js';

/** GET /api/v1/metrics (spec 4.8). */
export const metricsModule: Module = {
  name: 'metrics',
  routes: (app, { db }) => registerMetricsRoutes(app, { db }),
};
