import type { Module } from '../module.js';
import { registerHostRoutes } from './hosts.routes.js';

/** GET /api/v1/hosts/{id}/detail: a host's interfaces, VLANs, LAG groups, routes and port map (the console's host page). */
export const hostsModule: Module = {
  name: 'hosts',
  routes: (app, { db }) => registerHostRoutes(app, { db }),
};
