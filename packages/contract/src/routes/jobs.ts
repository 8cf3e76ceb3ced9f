import { AdminSnapshotResponse, DependencyTickResponse, JobStatusList } from '../jobs.js';
import { type RouteDef, route } from '../route-def.js';

/** Scheduled jobs for admins: run one now, see their status (internal). */
export const jobRoutes = {
  adminSnapshot: route({
    method: 'POST',
    url: '/api/v1/admin/snapshot',
    operationId: 'adminSnapshot',
    summary: 'Run the inventory.snapshot job now for the session\'s organisation: today\'s scheduled snapshot, taken if it does not exist yet',
    description: 'Idempotent per UTC day, like the job. A snapshot with another reason is `POST /api/v1/snapshots`.',
    tags: ['admin'],
    internal: true,
    auth: { kind: 'session', minRole: 'admin' },
    errors: ['conflict'],
    response: { 200: AdminSnapshotResponse },
  }),
  adminDependencyTick: route({
    method: 'POST',
    url: '/api/v1/admin/dependency-tick',
    operationId: 'adminDependencyTick',
    summary: 'Run the topology.dependencies job now for the session\'s organisation: rebuild the application topology from recent flows',
    tags: ['admin'],
    internal: true,
    auth: { kind: 'session', minRole: 'admin' },
    errors: ['conflict'],
    response: { 200: DependencyTickResponse },
  }),
  adminJobs: route({
    method: 'GET',
    url: '/api/v1/admin/jobs',
    operationId: 'adminJobs',
    summary: 'Status of the scheduled jobs (Settings → Jobs): each job as a whole, and its last run for the session\'s organisation',
    tags: ['admin'],
    internal: true,
    auth: { kind: 'session', minRole: 'admin' },
    response: { 200: JobStatusList },
  }),
} as const satisfies Record<string, RouteDef>;
