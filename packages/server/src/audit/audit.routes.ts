import { routes } from '@surveyor/contract';
import type { FastifyInstance } from 'fastify';
import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.js';
import { AppError } from '../errors.js';
import { sessionPrincipal } from '../http/principals.js';
import { addRoute } from '../http/route.js';
import { listAudit } from './audit.repo.js';

/** The audit trail for admins (internal, the console's Activity screen). */
export function registerAuditRoutes(app: FastifyInstance, { db }: { db: Kysely<DB> }): void {
  addRoute(app, routes.listAudit, async (request) => {
    const q = request.query;
    const before = q.cursor === undefined ? undefined : decodeCursor(q.cursor);
    const rows = await listAudit(db, sessionPrincipal(request).organisationId, { action: q.action, targetType: q.targetType, targetId: q.targetId, since: q.since, until: q.until }, before, q.limit + 1);
    const page = rows.slice(0, q.limit);
    const last = page.at(-1);
    return {
      data: page.map((r) => ({
        id: r.id,
        at: r.at,
        action: r.action,
        target: { type: r.target_type, id: r.target_id },
        actor: { type: r.actor_type as 'key', email: r.email, keyPrefix: r.key_prefix, job: typeof r.changes.job === 'string' ? r.changes.job : null },
        changes: r.changes,
        requestId: r.request_id,
      })),
      nextCursor: rows.length > q.limit && last ? Buffer.from(JSON.stringify([last.at_exact, last.id])).toString('base64url') : null,
    };
  });
}

/** The position after which the next page starts: the last row's exact time and id. */
function decodeCursor(cursor: string): { at: string; id: string } {
  try {
    const [at, id] = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as [unknown, unknown];
    if (typeof at === 'string' && typeof id === 'string' && /^[0-9a-f-]{36}$/.test(id) && !Number.isNaN(Date.parse(at))) return { at, id };
  } catch {
    // refused below
  }
  throw new AppError('invalid_cursor', 'The cursor is malformed: pass the nextCursor of the previous page.');
}
