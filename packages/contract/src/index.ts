// Shared building blocks: problems and common fields, network addresses.
export * from './common.js';
export * from './net.js';

// Request and response schemas, per domain.
export * from './health.js';
export * from './auth.js';
export * from './inventory.js';
export * from './daemon.js';
export * from './topology.js';
export * from './jobs.js';
export * from './advisories.js';
export * from './findings.js';
export * from './search.js';
export * from './events.js';
export * from './notifications.js';
export * from './cloud.js';
export * from './scim.js';
export * from './assistant.js';
export * from './format.js';

// Routes: what a route is, then every route (one table per domain), then the OpenAPI document of them.
export type { HttpMethod, RouteAuth, RouteDef } from './route-def.js';
export { acceptsSession } from './route-def.js';
export * from './routes.js';
export * from './responses.js';
export * from './openapi.js';
export * from './client.js';
