import { routes } from '@surveyor/contract';
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { Kysely } from 'kysely';
import type { Config } from '../config.js';
import type { DB } from '../db/schema.js';
import { AppError } from '../errors.js';
import { SESSION_COOKIE } from './auth.hook.js';
import { type RateLimiter, rateLimitHeaders } from '../http/rate-limit.js';
import { sessionPrincipal } from '../http/principals.js';
import { addRoute } from '../http/route.js';
import * as auth from './auth.service.js';
import * as keys from './keys.service.js';

/** Login, logout, me and password change: the browser session surface (internal, not in OpenAPI). */
export function registerAuthRoutes(app: FastifyInstance, deps: { db: Kysely<DB>; config: Config; limiter: RateLimiter }): void {
  const { db, config, limiter } = deps;
  const secure = config.baseUrl.startsWith('https:');
  const setCookie = (reply: FastifyReply, value: string, maxAgeSeconds: number) =>
    reply.setCookie(SESSION_COOKIE, value, { httpOnly: true, sameSite: 'lax', secure, path: '/', maxAge: maxAgeSeconds });

  addRoute(app, routes.login, async (request, reply) => {
    const v = limiter.hit(`login:${request.ip}`, config.rateLimits.loginPerMinute);
    if (!v.allowed) throw new AppError('rate_limited', `Too many sign-in attempts; retry in ${v.resetSeconds} s.`, { headers: rateLimitHeaders(v) });
    const { token, principal } = await auth.login(db, { ...request.body, ttlHours: config.sessionTtlHours, requestId: request.id });
    setCookie(reply, token, config.sessionTtlHours * 3600);
    return auth.sessionInfo(db, principal);
  });

  addRoute(app, routes.logout, async (request, reply) => {
    await auth.logout(db, sessionPrincipal(request), request.id);
    setCookie(reply, '', 0);
    return reply.code(204).send();
  });

  addRoute(app, routes.me, async (request) => auth.sessionInfo(db, sessionPrincipal(request)));

  addRoute(app, routes.introspectKey, async (request) => {
    const p = request.principal;
    if (p?.kind !== 'apiKey') throw new AppError('unauthorized', 'This endpoint needs an API key.');
    return keys.introspect(p); // the principal itself, not only the actor: role and scopes are the answer
  });

  addRoute(app, routes.listApiKeys, async (request) => ({ data: await keys.listKeys(db, sessionPrincipal(request)) }));

  addRoute(app, routes.createApiKey, async (request, reply) => {
    const created = await keys.createKeyForSession(db, sessionPrincipal(request), request.body, request.id);
    return reply.code(201).send(created);
  });

  addRoute(app, routes.revokeApiKey, async (request, reply) => {
    await keys.revokeKeyForSession(db, sessionPrincipal(request), request.params.id, request.id);
    return reply.code(204).send();
  });

  addRoute(app, routes.changePassword, async (request, reply) => {
    await auth.changePassword(db, sessionPrincipal(request), { ...request.body, requestId: request.id });
    return reply.code(204).send();
  });
}
