import type { Module } from '../module.js';
import { registerDaemonRoutes } from './daemons.routes.js';
import { JobWaiters } from './job-waiters.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** Long polls waiting in this process (for metrics and tests). */
    jobWaiters: JobWaiters;
  }
}

/** The daemon protocol (spec 4.4): register, heartbeat, long-poll for jobs; quiet daemons. */
export const daemonsModule: Module = {
  name: 'daemons',
  async routes(app, { database, db, config }) {
    const waiters = new JobWaiters();
    await waiters.start(database);
    app.decorate('jobWaiters', waiters);
    app.addHook('preClose', async () => waiters.stop()); // wake long polls so close does not wait 60 s
    registerDaemonRoutes(app, { db, config, waiters });
  },
  events: ['daemon.offline', 'daemon.online'],
};
