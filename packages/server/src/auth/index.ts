import { RateLimiter } from '../http/rate-limit.js';
import type { Module } from '../module.js';
import { registerAuthHook } from './auth.hook.js';
import { registerAuthRoutes } from './auth.routes.js';

/**
 * Credentials: the hook that authenticates every request and applies the rate limits (so this
 * module comes first in the list), sign-in, sessions, password change, key introspection.
 */
export const authModule: Module = {
  name: 'auth',
  routes(app, { database, db, config }) {
    const limiter = new RateLimiter();
    registerAuthHook(app, { database, config, limiter });
    registerAuthRoutes(app, { db, config, limiter });
  },
};
