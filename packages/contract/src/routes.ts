import type { RouteDef } from './route-def.js';
import { advisoryRoutes } from './routes/advisories.js';
import { attestationRoutes } from './routes/attestation.js';
import { auditRoutes } from './routes/audit.js';
import { cloudRoutes } from './routes/cloud.js';
import { consoleRoutes } from './routes/console.js';
import { authRoutes } from './routes/auth.js';
import { daemonRoutes } from './routes/daemon.js';
import { eventRoutes } from './routes/events.js';
import { findingRoutes } from './routes/findings.js';
import { healthRoutes } from './routes/health.js';
import { hostRoutes } from './routes/hosts.js';
import { routeOfCollection, inventoryReadRoutes, inventoryRoutes, inventoryWriteRoutes, serviceCountRoutes } from './routes/inventory.js';
import { searchRoutes } from './routes/search.js';
import { jobRoutes } from './routes/jobs.js';
import { lookupRoutes } from './routes/lookup.js';
import { memberRoutes } from './routes/members.js';
import { metaRoutes } from './routes/meta.js';
import { metricsRoutes } from './routes/metrics.js';
import { networkRoutes } from './routes/networks.js';
import { overviewRoutes } from './routes/overview.js';
import { notificationRoutes } from './routes/notifications.js';
import { scanRoutes } from './routes/scans.js';
import { scimRoutes } from './routes/scim.js';
import { assistantRoutes } from './routes/assistant.js';
import { siteRoutes } from './routes/sites.js';
import { snapshotRoutes } from './routes/snapshots.js';
import { topologyRoutes } from './routes/topology.js';
export { Overview } from './routes/overview.js';
export { HostDetail } from './routes/hosts.js';
export { LOOKUP_MAX_IDS, LookupResult } from './routes/lookup.js';
export { ServiceCount } from './routes/inventory.js';
export { SnapshotDiff, SnapshotDiffChange, SnapshotDiffKind, SnapshotDiffQuery, SnapshotDiffSection, snapshotDiffKinds, snapshotDiffSections } from './routes/snapshots.js';

export {
  routeOfCollection,
  advisoryRoutes,
  searchRoutes,
  serviceCountRoutes,
  attestationRoutes,
  auditRoutes,
  authRoutes,
  cloudRoutes,
  consoleRoutes,
  daemonRoutes,
  eventRoutes,
  findingRoutes,
  healthRoutes,
  hostRoutes,
  inventoryReadRoutes,
  inventoryRoutes,
  inventoryWriteRoutes,
  jobRoutes,
  lookupRoutes,
  memberRoutes,
  metaRoutes,
  metricsRoutes,
  networkRoutes,
  notificationRoutes,
  overviewRoutes,
  scanRoutes,
  scimRoutes,
  assistantRoutes,
  siteRoutes,
  snapshotRoutes,
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
  ...networkRoutes,
  ...scanRoutes,
  ...daemonRoutes,
  ...siteRoutes,
  ...metricsRoutes,
  ...jobRoutes,
  ...advisoryRoutes,
  ...notificationRoutes,
  ...eventRoutes,
  ...memberRoutes,
  ...overviewRoutes,
  ...lookupRoutes,
  ...snapshotRoutes,
  ...consoleRoutes,
  ...attestationRoutes,
  ...findingRoutes,
  ...auditRoutes,
  ...hostRoutes,
  ...serviceCountRoutes,
  ...searchRoutes,
  ...cloudRoutes,
  ...scimRoutes,
  ...assistantRoutes,
} as const satisfies Record<string, RouteDef>;

export type RouteName = keyof typeof routes;
