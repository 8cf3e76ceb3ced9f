import type { Module } from '../module.js';
import { eventsPrune } from './prune.job.js';
import { ChangeStreams } from './sse.js';
import { registerSseRoutes } from './sse.routes.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** The live streams of this process (for tests and the benchmark). */
    changeStreams: ChangeStreams;
  }
}

/**
 * The live change stream, GET /api/sse (spec 4.9), and the retention of the change log, events
 * and deliveries (events.prune). Events themselves are written through emit.ts.
 */
export const eventsModule: Module = {
  name: 'events',
  routes(app, { database, logger, config }) {
    const streams = new ChangeStreams(database, logger.child({ component: 'sse' }), config.sse);
    app.decorate('changeStreams', streams);
    app.addHook('preClose', async () => streams.stop()); // end the streams so close does not wait for them
    registerSseRoutes(app, { streams });
  },
  jobs: ({ config }) => [eventsPrune(config.retention)],
};
