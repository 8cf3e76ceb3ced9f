import { AdvisoryImportRequest, AdvisoryImportResult, AdvisoryMirror } from '../advisories.js';
import { CveMatchResponse } from '../jobs.js';
import { type RouteDef, route } from '../route-def.js';

/** The advisory mirror for admins (internal: the console's import and "match now"). */
export const advisoryRoutes = {
  advisoryMirror: route({
    method: 'GET',
    url: '/api/v1/advisories',
    operationId: 'advisoryMirror',
    summary: 'The advisory mirror\'s counts and its feed\'s state (source, last pull, last error), and whether uploads are allowed',
    tags: ['console'],
    internal: true,
    auth: { kind: 'session' },
    response: { 200: AdvisoryMirror },
  }),
  adminAdvisoryImport: route({
    method: 'POST',
    url: '/api/v1/admin/advisories/import',
    operationId: 'adminAdvisoryImport',
    summary: 'Import advisories (an NVD CVE API 2.0 or OSV JSON document) into the mirror shared by every organisation',
    description:
      'Idempotent: a record already held at a newer modification time changes nothing, a newer one replaces it, and one at the same time replaces it only when its content differs (the content hash wins). A document without one usable record is refused (400 validation_failed) and does not confirm the mirror current. ' +
      'Matching happens on the next `cve.match` run (every 5 minutes), or now with `POST /api/v1/admin/cve-match`. ' +
      'The body may be as large as SERVICE_INGEST_BODY_LIMIT_BYTES; for whole feeds use `surveyor advisories import` or SERVICE_ADVISORY_FEED_URL.',
    tags: ['admin'],
    internal: true,
    auth: { kind: 'session', minRole: 'admin' },
    body: AdvisoryImportRequest,
    response: { 200: AdvisoryImportResult },
  }),
  adminCveMatch: route({
    method: 'POST',
    url: '/api/v1/admin/cve-match',
    operationId: 'adminCveMatch',
    summary: 'Run the cve.match job now for the session\'s organisation: pull the feed when one is configured, then match what changed',
    tags: ['admin'],
    internal: true,
    auth: { kind: 'session', minRole: 'admin' },
    errors: ['conflict'],
    response: { 200: CveMatchResponse },
  }),
} as const satisfies Record<string, RouteDef>;
