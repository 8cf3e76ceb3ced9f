import type { Module } from '../module.js';
import { scanSchedule } from './scan-schedule.job.js';
import { scanStall } from './scan-stall.job.js';
import { registerScanRoutes } from './scans.routes.js';

/** Scan sessions: POST /api/v1/scans, the schedule and the stall watch. */
export const scansModule: Module = {
  name: 'scans',
  routes: (app, { db }) => registerScanRoutes(app, { db }),
  jobs: ({ config }) => [scanSchedule(), scanStall(config)],
  events: ['scan.stalled', 'scan.failed'],
};
