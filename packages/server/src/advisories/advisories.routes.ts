import { routes } from '@surveyor/contract';
import type { FastifyInstance } from 'fastify';
import { AppError } from '../errors.js';
import { sessionPrincipal } from '../http/principals.js';
import { addRoute } from '../http/route.js';
import type { WebDeps } from '../module.js';
import { mirrorStatus } from './advisories.repo.js';
import { importAdvisoriesAs } from './import.service.js';
import type { MatchCounts } from './match.service.js';

/** The console's advisory import, and "match now" through the job runner. */
export function registerAdvisoryRoutes(app: FastifyInstance, { db, jobs, config }: Pick<WebDeps, 'db' | 'jobs' | 'config'>): void {
  addRoute(
    app,
    routes.adminAdvisoryImport,
    async (request) => {
      const p = sessionPrincipal(request);
      if (!config.advisoryUpload) {
        throw new AppError('forbidden', 'Advisory uploads are turned off on this deployment (SERVICE_ADVISORY_UPLOAD=deny): the mirror is shared by every organisation. Ask the operator to import with `surveyor advisories import` or to set SERVICE_ADVISORY_FEED_URL.');
      }
      return importAdvisoriesAs(db, { type: 'session', userId: p.userId, requestId: request.id }, p.organisationId, [request.body]);
    },
    { bodyLimit: config.ingestBodyLimitBytes },
  );
  addRoute(app, routes.advisoryMirror, async (request) => {
    sessionPrincipal(request);
    const s = await mirrorStatus(db);
    return { advisories: s.advisories, nvd: s.nvd, osv: s.osv, withdrawn: s.withdrawn, feed: { url: s.url === null ? null : withoutCredentials(s.url), confirmedAt: s.confirmedAt, lastAttemptAt: s.lastAttemptAt, lastError: s.lastError }, uploadsAllowed: config.advisoryUpload };
  });
  addRoute(app, routes.adminCveMatch, async (request) => jobs.runFor<MatchCounts>('cve.match', sessionPrincipal(request).organisationId, 'admin'));
}

/** A URL as it may be shown: userinfo and query (an API key may ride there) left out. */
function withoutCredentials(url: string): string {
  try {
    const u = new URL(url);
    u.username = '';
    u.password = '';
    u.search = '';
    return u.toString();
  } catch {
    return '(not a URL)';
  }
}
