import { routes } from '@surveyor/contract';
import type { FastifyInstance } from 'fastify';
import type { Kysely } from 'kysely';
import type { Config } from '../config.js';
import type { DB } from '../db/schema.js';
import { daemonPrincipal, keyActor, sessionPrincipal } from '../http/principals.js';
import { addRoute } from '../http/route.js';
import { claimNextJob } from '../scans/scans.service.js';
import * as daemons from './daemons.service.js';
import type { JobWaiters } from './job-waiters.js';

/** The daemon protocol (spec 4.4): register, heartbeat, job poll (observations and flows: ingest/ingest.routes.ts). */
export function registerDaemonRoutes(app: FastifyInstance, deps: { db: Kysely<DB>; config: Config; waiters: JobWaiters }): void {
  const { db, config, waiters } = deps;

  addRoute(app, routes.listDaemons, async (request) => daemons.listDaemons(db, sessionPrincipal(request).organisationId));

  addRoute(app, routes.getDaemon, async (request) => daemons.getDaemon(db, sessionPrincipal(request).organisationId, request.params.id));

  addRoute(app, routes.setDaemonEnabled, async (request) => daemons.setDaemonEnabled(db, keyActor(request), request.params.id, request.body.enabled));

  addRoute(app, routes.removeDaemon, async (request, reply) => {
    await daemons.removeDaemon(db, keyActor(request), request.params.id);
    return reply.code(204).send();
  });

  addRoute(app, routes.daemonRegister, async (request) => {
    const daemonId = await daemons.register(db, daemonPrincipal(request), request.body);
    return { daemonId, config: { heartbeatIntervalSeconds: config.daemon.heartbeatSeconds, jobPollTimeoutSeconds: config.daemon.pollTimeoutSeconds } };
  });

  addRoute(app, routes.daemonHeartbeat, async (request) => daemons.heartbeat(db, daemonPrincipal(request), request.body, config.daemon.heartbeatSeconds));

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
