import { routes } from '@surveyor/contract';
import type { FastifyInstance } from 'fastify';
import { sessionPrincipal } from '../http/principals.js';
import { addRoute } from '../http/route.js';
import type { ChangeStreams } from './sse.js';

/** The resume point: the `Last-Event-ID` header a reconnecting EventSource sends, or `?lastEventId=`. */
function resumeFrom(header: string | string[] | undefined, query: number | undefined): number | null {
  const h = Array.isArray(header) ? header[0] : header;
  if (h !== undefined && /^\d{1,18}$/.test(h.trim())) return Number(h.trim());
  return query ?? null;
}

/** Spec 4.9: GET /api/sse, the organisation's live change stream (session cookie). */
export function registerSseRoutes(app: FastifyInstance, deps: { streams: ChangeStreams }): void {
  addRoute(app, routes.sse, async (request, reply) => {
    const { organisationId, sessionId } = sessionPrincipal(request);
    await deps.streams.start();
    reply.hijack();
    const headers = {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache, no-transform',
      'x-accel-buffering': 'no',
      connection: 'keep-alive',
      'x-request-id': request.id,
    };
    // HEAD: the headers a GET would get, and the end of the response (no stream is opened).
    if (request.method === 'HEAD') return void reply.raw.writeHead(200, headers).end();
    reply.raw.writeHead(200, headers);
    request.raw.socket.setNoDelay(true);
    request.raw.socket.setKeepAlive(true, 30_000);
    await deps.streams.open(organisationId, sessionId, reply.raw, resumeFrom(request.headers['last-event-id'], request.query.lastEventId));
  });
}
