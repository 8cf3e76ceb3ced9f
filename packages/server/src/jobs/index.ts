import type { Module } from '../module.js';
import { registerJobRoutes } from './jobs.routes.js';

/** The job runner's own surface: job status (Settings → Jobs). `job.failed` is emitted by the runner. */
export const jobsModule: Module = {
  name: 'jobs',
  routes: (app, deps) => registerJobRoutes(app, deps),
  events: ['job.failed'],
};
