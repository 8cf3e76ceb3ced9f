import type { Module } from '../module.js';
import { registerSiteRoutes } from './sites.routes.js';

/** Sites from the console, a daemon's site assignment (which wins over its `siteCode`) and daemon enrolment. */
export const sitesModule: Module = {
  name: 'sites',
  routes(app, { db, config }) {
    registerSiteRoutes(app, { db, config });
  },
};
