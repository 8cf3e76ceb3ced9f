import { CursorCodec } from '../inventory/cursor.js';
import type { Module } from '../module.js';
import { registerFindingRoutes } from './findings.routes.js';

/**
 * Triage of findings (issue 23): the console's list of the actionable findings with their host and
 * port, the same by advisory, bulk moves with one note, and each finding's history from the audit log.
 */
export const findingsModule: Module = {
  name: 'findings',
  routes: (app, { db, secretKey }) => registerFindingRoutes(app, { db, cursors: new CursorCodec(secretKey) }),
};
