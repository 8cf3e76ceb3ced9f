import { z } from 'zod';
import { Uuid } from '../common.js';
import { AdvisoryFindingsPage, AdvisoryFindingsQuery, BulkFindingsRequest, BulkFindingsResponse, FINDINGS_BULK_MAX, FindingHistory, FindingPage, FindingsQuery } from '../findings.js';
import { type RouteDef, route } from '../route-def.js';

/** Triage of findings in the console (internal): the list, by advisory, bulk moves, a finding's history. */
export const findingRoutes = {
  listFindings: route({
    method: 'GET',
    url: '/api/v1/findings',
    operationId: 'listFindings',
    summary: 'Findings to triage: the actionable set by default, by severity then score, with the host, port/protocol and service of each',
    description:
      'Ordered by severity (critical first), then score (highest first, none last), then id; `total` counts every match. ' +
      'A bad filter value is 400 `invalid_filter`; a bad cursor 400 `invalid_cursor`.',
    tags: ['console'],
    internal: true,
    auth: { kind: 'apiKey', scope: 'inventory:read' },
    collection: true,
    querystring: FindingsQuery,
    response: { 200: FindingPage },
  }),
  listAdvisoryFindings: route({
    method: 'GET',
    url: '/api/v1/findings/advisories',
    operationId: 'listAdvisoryFindings',
    summary: 'The same findings grouped by advisory: one row per CVE with its findings, services and hosts counted',
    description: 'Ordered by severity, then score, then CVE id; the filters are those of `GET /api/v1/findings`.',
    tags: ['console'],
    internal: true,
    auth: { kind: 'apiKey', scope: 'inventory:read' },
    collection: true,
    querystring: AdvisoryFindingsQuery,
    response: { 200: AdvisoryFindingsPage },
  }),
  bulkFindings: route({
    method: 'POST',
    url: '/api/v1/findings/bulk',
    operationId: 'bulkFindings',
    summary: 'Move many findings at once (acknowledge, mark false positive, reopen) with one note',
    description:
      `\`ids\` (at most ${FINDINGS_BULK_MAX}) or every finding of \`cveId\` in the states \`from\`; one transaction, one audit row per finding moved. ` +
      `A \`cveId\` selecting more than ${FINDINGS_BULK_MAX} findings is 400 \`validation_failed\` and moves none; an id the organisation does not have is 404 \`not_found\` and moves none. ` +
      'A finding whose state does not allow the move is left as it was and listed in `refused`.',
    tags: ['console'],
    internal: true,
    auth: { kind: 'apiKey', scope: 'inventory:write' },
    body: BulkFindingsRequest,
    errors: ['not_found'],
    response: { 200: BulkFindingsResponse },
  }),
  findingHistory: route({
    method: 'GET',
    url: '/api/v1/findings/:id/history',
    operationId: 'findingHistory',
    summary: 'A finding\'s history: each change of state or note, who made it and when, oldest first',
    tags: ['console'],
    internal: true,
    auth: { kind: 'apiKey', scope: 'inventory:read' },
    params: z.object({ id: Uuid }),
    errors: ['not_found'],
    response: { 200: FindingHistory },
  }),
} as const satisfies Record<string, RouteDef>;
