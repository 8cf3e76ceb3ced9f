import type { Module } from '../module.js';
import { registerOverviewRoutes } from './overview.routes.js';

/** GET /api/v1/overview: the console overview's figures no list already answers. */
export const overviewModule: Module = {
  name: 'overview',
  routes: (app, { db }) => registerOverviewRoutes(app, { db }),
};
