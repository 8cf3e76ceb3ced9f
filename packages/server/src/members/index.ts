import type { Module } from '../module.js';
import { registerMemberRoutes } from './members.routes.js';

/** Settings → Members: the organisation's members and their roles. */
export const membersModule: Module = {
  name: 'members',
  routes: (app, { db }) => registerMemberRoutes(app, { db }),
};
