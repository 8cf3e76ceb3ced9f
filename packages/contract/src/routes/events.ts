import { z } from 'zod';
import { type RouteDef, route } from '../route-def.js';

/** The live change stream (Server-Sent Events; internal). */
export const eventRoutes = {
  sse: route({
    method: 'GET',
    url: '/api/sse',
    operationId: 'streamChanges',
    summary: 'Live stream of the organisation\'s inventory changes (Server-Sent Events)',
    description:
      'Each change of the change log as `id: <change id>`, `event: <type>.<action>`, `data: {"type","id","action","at"}`; a comment line every 15 s. ' +
      '`Last-Event-ID` (or `?lastEventId=`) resumes from the change log of the last 24 hours; older, or past changes since pruned (SERVICE_CHANGE_LOG_RETENTION_DAYS), the stream starts with `event: reset` (reload). ' +
      'A job run\'s `job.started`, and its `job.finished` when no status changed, come without `id:`: they are not stored, so not replayed. ' +
      'A client that does not read is sent `event: overflow` and closed. Proxies must not buffer it (`X-Accel-Buffering: no` is sent).',
    tags: ['events'],
    internal: true,
    auth: { kind: 'session' },
    querystring: z.object({ lastEventId: z.coerce.number().int().min(0).optional() }),
    response: { 200: null },
    produces: 'text/event-stream',
  }),
} as const satisfies Record<string, RouteDef>;
