import type { Module } from '../module.js';
import { registerScimRoutes } from './scim.routes.js';

/** SCIM 2.0 provisioning (issue 26): /api/scim/v2 for Okta and Microsoft Entra ID, and Settings → SCIM. */
export const scimModule: Module = {
  name: 'scim',
  routes: (app, { db, config }) => registerScimRoutes(app, { db, config }),
  events: ['member.created', 'member.updated', 'member.deactivated', 'member.reactivated', 'member.deleted'],
};
