import type { Module } from '../module.js';
import { registerHealthRoutes } from './health.routes.js';

/** GET /api/health (spec 4.7). */
export const healthModule: Module = {
  name: 'health',
  routes: (app, { database, config }) => registerHealthRoutes(app, { database, version: config.version }),
};
