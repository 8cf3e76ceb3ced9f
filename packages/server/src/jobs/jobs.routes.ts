import { routes } from '@surveyor/contract';
import type { FastifyInstance } from 'fastify';
import { sessionPrincipal } from '../http/principals.js';
import { addRoute } from '../http/route.js';
import type { WebDeps } from '../module.js';
import { jobStatus, toJobStatus } from './status.service.js';

/** Settings → Jobs (spec 1.1 rule 7): every job the runner knows, as a whole and for the session's organisation. */
export function registerJobRoutes(app: FastifyInstance, { db, jobs }: Pick<WebDeps, 'db' | 'jobs'>): void {
  addRoute(app, routes.adminJobs, async (request) => ({ data: (await jobStatus(db, jobs.definitions, sessionPrincipal(request).organisationId)).map(toJobStatus) }));
}
