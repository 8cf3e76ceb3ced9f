import type { Module } from '../module.js';
import { registerAuditRoutes } from './audit.routes.js';

/** The audit trail every write leaves (recordAudit), readable by admins: the console's Activity screen. */
export const auditModule: Module = {
  name: 'audit',
  routes: (app, { db }) => registerAuditRoutes(app, { db }),
};
