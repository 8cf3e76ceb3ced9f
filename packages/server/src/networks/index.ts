import type { Module } from '../module.js';
import { registerNetworkRoutes } from './networks.routes.js';

/** Networks after they are added (the public POST is the inventory's): edit, delete, and the overlap warning. */
export const networksModule: Module = {
  name: 'networks',
  routes: (app, { db }) => registerNetworkRoutes(app, { db }),
};
