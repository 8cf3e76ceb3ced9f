import type { Module } from '../module.js';
import { registerConsoleRoutes } from './console.routes.js';

/** The web console's files (packages/web, built by npm install), served at `/`. */
export const consoleModule: Module = {
  name: 'console',
  routes: (app, deps) => registerConsoleRoutes(app, deps),
};
