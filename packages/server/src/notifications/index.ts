import type { Module } from '../module.js';
import { notifyCertificates } from './certificates.job.js';
import { notifyDeliver } from './deliver.js';
import { registerNotificationRoutes } from './notifications.routes.js';
import { sendOptions } from './senders.js';

/** Alerts: destinations and deliveries (Settings → Notifications), notify.deliver, tls.expiring. */
export const notificationsModule: Module = {
  name: 'notifications',
  routes: (app, { db, secretKey, config }) => registerNotificationRoutes(app, { db, secretKey, send: sendOptions(config) }),
  jobs: ({ config, secretKey }) => [notifyDeliver({ secretKey, send: sendOptions(config) }), notifyCertificates()],
  events: ['tls.expiring'],
};
