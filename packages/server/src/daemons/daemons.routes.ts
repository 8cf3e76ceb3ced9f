import { routes } from '@surveyor/contract';
import type { FastifyInstance } from 'fastify';
import type { Kysely } from 'kysely';
import type { Config } from '../config.js';
import type { DB } from '../db/schema.js';
import { daemonPrincipal } from '../http/principals.js';
import { noteNulEscape } from '../http/nul.js';
import { addRoute } from '../http/route.js';
import { ingestFlows } from '../ingest/flows.js';
import { ingestObservationBatch } from '../ingest/ingest.service.js';
import { claimNextJob } from '../scans/scans.service.js';
import * as daemons from './daemons.service.js';
import type { JobWaiters } from './job-waiters.js';

/** The daemon protocol (spec 4.4): register, heartbeat, job poll. */
export function registerDaemonRoutes(app: FastifyInstance, deps: { db: Kysely<DB>; config: Config; waiters: JobWaiters }): void {
  const { db, config, waiters } = deps;

  addRoute(app, routes.daemonRegister, async (request) => {
    const daemonId = await daemons.register(db, daemonPrincipal(request), request.body);
    return { daemonId, config: { heartbeatIntervalSeconds: config.daemon.heartbeatSeconds, jobPollTimeoutSeconds: config.daemon.pollTimeoutSeconds } };
  });

  addRoute(app, routes.daemonHeartbeat, async (request) => daemons.heartbeat(db, daemonPrincipal(request), request.body, config.daemon.heartbeatSeconds));

  // Observation and flow batches are the large bodies (megabytes): parsed with plain JSON.parse,
  // without the prototype-poisoning scan of every other route. Their schemas hold only objects of
  // known keys (no records), so validation drops a `__proto__` or `constructor` key anyway.
  void app.register(async (ingest) => {
    ingest.removeContentTypeParser('application/json');
    ingest.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
      if (body === '') return done(Object.assign(new Error('The body is empty but declared as JSON.'), { statusCode: 400, code: 'FST_ERR_CTP_EMPTY_JSON_BODY' }), undefined);
      noteNulEscape(request, body as string);
      try {
        done(null, JSON.parse(body as string));
      } catch (err) {
        done(Object.assign(err as Error, { statusCode: 400 }), undefined);
      }
    });
    addRoute(ingest, routes.daemonObservations, async (request) => ingestObservationBatch(db, daemonPrincipal(request), request.body), { bodyLimit: config.ingestBodyLimitBytes });
    addRoute(ingest, routes.daemonFlows, async (request) => ingestFlows(db, daemonPrincipal(request), request.body), { bodyLimit: config.ingestBodyLimitBytes });
  });

  addRoute(app, routes.daemonPoll, async (request, reply) => {
    const p = daemonPrincipal(request);
    const daemon = await daemons.ownDaemon(db, p);
    const deadline = Date.now() + request.body.waitSeconds * 1000;
    // A client that hangs up releases its waiter at once.
    const gone = new AbortController();
    request.raw.once('close', () => gone.abort());
    reply.raw.once('close', () => gone.abort());
    for (;;) {
      const job = await claimNextJob(db, p.organisationId, daemon.id);
      if (job) return reply.code(200).send(job);
      const left = deadline - Date.now();
      if (left <= 0 || gone.signal.aborted || waiters.stopped) return reply.code(204).send();
      await waiters.wait(daemon.id, left, gone.signal);
    }
  });
}
