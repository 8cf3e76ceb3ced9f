import { CursorCodec } from '../inventory/cursor.js';
import type { Module } from '../module.js';
import { registerAssistantRoutes } from './assistant.routes.js';
import { assistantPrune } from './prune.job.js';

/** The inventory assistant (issue 27): POST /api/v1/ai/chat with read-only, organisation-scoped tools; its turns' retention (assistant.prune). */
export const assistantModule: Module = {
  name: 'assistant',
  routes: (app, { db, config, secretKey, jobs }) => registerAssistantRoutes(app, { db, config, cursors: new CursorCodec(secretKey), jobs }),
  jobs: ({ config }) => [assistantPrune(config.ai.turnsRetentionDays)],
};
