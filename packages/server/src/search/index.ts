import type { Module } from '../module.js';
import { registerSearchRoutes } from './search.routes.js';

/** GET /api/v1/search: the console's one search box over hosts, services, CVEs and networks. */
export const searchModule: Module = {
  name: 'search',
  routes: (app, { db }) => registerSearchRoutes(app, { db }),
};
