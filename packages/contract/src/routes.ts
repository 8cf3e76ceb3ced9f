import type { RouteDef } from './route-def.js';
import { authRoutes } from './routes/auth.js';
import { daemonRoutes } from './routes/daemon.js';
import { eventRoutes } from './routes/events.js';
import { healthRoutes } from './routes/health.js';
import { inventoryReadRoutes, inventoryRoutes, inventoryWriteRoutes } from './routes/inventory.js';
import { jobRoutes } from './routes/jobs.js';
import { metaRoutes } from './routes/meta.js';
import { metricsRoutes } from './routes/metrics.js';
import { notificationRoutes } from './routes/notifications.js';
import { scanRoutes } from './routes/scans.js';
import { topologyRoutes } from './routes/topology.js';

export {
  authRoutes,
  daemonRoutes,
  eventRoutes,
  healthRoutes,
  inventoryReadRoutes,
  inventoryRoutes,
  inventoryWriteRoutes,
  jobRoutes,
  metaRoutes,
  metricsRoutes,
  notificationRoutes,
  scanRoutes,
  topologyRoutes,
};

/**
 * Every route of the service, one table per domain (routes/*.ts). The order of the tables is
 * the order of the paths in `/openapi.json` (a path first appears with its first route), which
 * is why the host topology sits between the inventory's collections and its writes; the golden
 * test of the server holds the document byte for byte. A key in two tables would silently
 * override the first: the contract's tests check that the tables are disjoint.
 */
export const routes = {
  ...healthRoutes,
  ...metaRoutes,
  ...authRoutes,
  ...inventoryReadRoutes,
  ...topologyRoutes,
  ...inventoryWriteRoutes,
  ...scanRoutes,
  ...daemonRoutes,
  ...metricsRoutes,
  ...jobRoutes,
  ...notificationRoutes,
  ...eventRoutes,
} as const satisfies Record<string, RouteDef>;

export type RouteName = keyof typeof routes;
