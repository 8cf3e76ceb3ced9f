import { CursorCodec } from '../inventory/cursor.js';
import type { Module } from '../module.js';
import { registerAssistantRoutes } from './assistant.routes.js';

/** The inventory assistant (issue 27): POST /api/v1/ai/chat with read-only, organisation-scoped tools. */
export const assistantModule: Module = {
  name: 'assistant',
  routes: (app, { db, config, secretKey, jobs }) => registerAssistantRoutes(app, { db, config, cursors: new CursorCodec(secretKey), jobs }),
};
