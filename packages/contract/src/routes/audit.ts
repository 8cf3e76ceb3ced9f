import { AuditPage, AuditQuery } from '../notifications.js';
import { type RouteDef, route } from '../route-def.js';

/** The audit trail for admins (internal: the console's Activity screen). */
export const auditRoutes = {
  listAudit: route({
    method: 'GET',
    url: '/api/v1/admin/audit',
    operationId: 'listAudit',
    summary: 'The organisation\'s audit trail, the newest first: every write with who made it, filtered by action, target and time',
    description: 'A bad filter value is 400 `invalid_filter`; an unknown parameter 400 `unknown_parameter`; a bad cursor 400 `invalid_cursor`.',
    tags: ['admin'],
    internal: true,
    auth: { kind: 'session', minRole: 'admin' },
    collection: true,
    querystring: AuditQuery,
    response: { 200: AuditPage },
  }),
} as const satisfies Record<string, RouteDef>;
