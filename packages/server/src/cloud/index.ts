import type { Module } from '../module.js';
import { cloudJob } from './cloud.jobs.js';
import { registerCloudRoutes } from './cloud.routes.js';
import { collectors } from './collectors.js';

/** Cloud inventory (issue 25): accounts (Settings → Cloud accounts), cloud.sync (AWS) and cloud.k8s (Kubernetes). */
export const cloudModule: Module = {
  name: 'cloud',
  routes: (app, { db, secretKey, jobs }) => registerCloudRoutes(app, { db, secretKey, jobs, collectors }),
  jobs: ({ secretKey }) => [cloudJob('aws', secretKey, collectors), cloudJob('kubernetes', secretKey, collectors)],
};
