import type { Module } from '../module.js';
import { CursorCodec } from './cursor.js';
import { registerInventoryRoutes } from './inventory.routes.js';

/**
 * The inventory API: the eight collection reads (spec 4.1), networks and the vulnerability PATCH
 * (spec 4.3). `vulnerability.opened` is written by triggers on `vulnerabilities` (migration 0011).
 */
export const inventoryModule: Module = {
  name: 'inventory',
  routes: (app, { db, database, secretKey }) => registerInventoryRoutes(app, { db, database, cursors: new CursorCodec(secretKey) }),
  events: ['vulnerability.opened'],
};
