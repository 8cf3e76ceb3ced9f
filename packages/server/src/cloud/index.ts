import type { Module } from '../module.js';
import { cloudJob } from './cloud.jobs.js';
import { registerCloudRoutes } from './cloud.routes.js';
import { makeCollectors } from './collectors.js';

/** Cloud inventory (issue 25): accounts (Settings → Cloud accounts), cloud.sync (AWS) and cloud.k8s (Kubernetes). */
export const cloudModule: Module = {
  name: 'cloud',
  routes: (app, { db, secretKey, jobs, config }) => registerCloudRoutes(app, { db, secretKey, jobs, config, collectors: makeCollectors(config.cloud) }),
  jobs: ({ secretKey, config }) => [cloudJob('aws', secretKey, makeCollectors(config.cloud)), cloudJob('kubernetes', secretKey, makeCollectors(config.cloud))],
};
