import { type Role, type RouteAuth, type Scope, acceptsSession, isUuid, problemCodes, roleAtLeast, scopeMinimumRole } from '@surveyor/contract';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { authenticateBearer, authenticateSession, keptBearer, keyGrants } from './auth.service.js';
import type { Principal } from './principal.js';
import { CREDENTIALS_CHANNEL, CredentialCache } from './credential-cache.js';
import { safeEqual } from './tokens.js';
import type { Config } from '../config.js';
import type { Database } from '../db/database.js';
import { AppError } from '../errors.js';
import { watchTableWrites } from '../db/write-watch.js';
import { type RateLimiter, rateLimitHeaders } from '../http/rate-limit.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    auth?: RouteAuth;
    operationId?: string;
    internal?: boolean;
    rateLimited?: boolean;
    collection?: boolean;
    /** The query parameters the route accepts, named in unknown_parameter refusals. */
    queryParams?: string[];
  }
  interface FastifyRequest {
    principal: Principal | null;
  }
}

export const SESSION_COOKIE = 'surveyor_session';
/** How long a verified key is kept at most, should the notification of its revocation be lost. */
export const CREDENTIAL_TTL_MS = 5_000;
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);
/** What a session with a one-time password may do before changing it. */
const PASSWORD_CHANGE_ROUTES = new Set(['me', 'logout', 'changePassword']);

function bearer(request: FastifyRequest): string | null {
  const h = request.headers.authorization;
  if (!h) return null;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(h);
  return m ? m[1]! : '';
}

/**
 * Authentication, rate limiting and authorisation, before the body is read: a caller without the
 * right credential learns nothing about the body's validity. Order: credential → rate limit
 * (per key, per daemon key, or per client address for anything without a valid credential) →
 * 401 → scope/role (403) → CSRF for cookie-authenticated state changes (403 csrf_failed).
 */
export function registerAuthHook(app: FastifyInstance, deps: { database: Database; config: Config; limiter: RateLimiter }): void {
  const { database, config, limiter } = deps;
  const db = database.db;
  app.decorateRequest('principal', null);

  // Verified keys are kept briefly for reads (credential-cache.ts): dropped at once by a write of
  // this process, and by the database's notification of anyone else's. Writes always read the
  // key and its owner's role afresh (spec 5 rule 5); so do daemon keys.
  const credentials = new CredentialCache(CREDENTIAL_TTL_MS);
  const unwatch = watchTableWrites(['keys', 'memberships', 'users', 'organisations'], () => credentials.clear(), ['last_used_at', 'last_sign_in_at']);
  let unlisten: (() => Promise<void>) | null = null;
  let listening = false;
  app.addHook('onReady', async () => {
    unlisten = await database.listen(CREDENTIALS_CHANNEL, () => credentials.clear());
    credentials.clear();
    listening = true;
  });
  app.addHook('onClose', async () => {
    listening = false;
    unwatch();
    await unlisten?.();
  });

  const limit = (request: FastifyRequest, bucket: string, max: number) => {
    const v = limiter.hit(bucket, max);
    const headers = rateLimitHeaders(v);
    if (!v.allowed) throw new AppError('rate_limited', `Rate limit of ${max} requests a minute exceeded; retry in ${v.resetSeconds} s.`, { headers });
    request.headersForReply = headers;
  };
  const anon = (request: FastifyRequest) => limit(request, `anon:${request.ip}`, config.rateLimits.anonPerMinute);

  app.decorateRequest('headersForReply', null);
  // Callback hooks, not async ones: every request runs them, and a read with a kept key needs no
  // promise at all (keptBearer).
  app.addHook('onSend', (request, reply, _payload, done) => {
    if (request.headersForReply) reply.headers(request.headersForReply);
    done();
  });

  app.addHook('onRequest', (request, _reply, done) => {
    let pending: Promise<void> | undefined;
    try {
      pending = authenticate(request);
    } catch (e) {
      done(e as Error);
      return;
    }
    if (pending) pending.then(() => done(), (e: Error) => done(e));
    else done();
  });

  /** Authenticates and authorises the request; a promise only when that needs a round trip. Throws AppError. */
  function authenticate(request: FastifyRequest): Promise<void> | undefined {
    const auth = request.routeOptions.config?.auth;
    if (!auth || auth.kind === 'none') {
      if (request.routeOptions.config?.rateLimited === false) return; // /api/health (decisions.md)
      anon(request);
      return;
    }
    if (auth.kind === 'session') return sessionAuth(request, auth.minRole);

    const token = bearer(request);
    // The console calls the inventory API with its session cookie (no Authorization header),
    // as its user: the user's role must allow the route's scope.
    if (token === null && acceptsSession(auth) && request.cookies?.[SESSION_COOKIE]) return sessionAuth(request, undefined, auth.scope);
    const cached = listening && auth.kind !== 'daemon' && SAFE_METHODS.has(request.method);
    if (token === null) return admit(request, auth, null, null);
    const kept = cached ? keptBearer(token, credentials) : undefined;
    if (kept !== undefined) return admit(request, auth, token, kept);
    return authenticateBearer(database, token, cached ? credentials : undefined).then((principal) => admit(request, auth, token, principal));
  }

  /** Admits a request bearing `token` (resolved to `principal`) to a route of `auth`, or throws why not. */
  function admit(request: FastifyRequest, auth: Exclude<RouteAuth, { kind: 'none' | 'session' }>, token: string | null, principal: Principal | null): undefined {
    const wanted = auth.kind === 'daemon' ? 'daemon' : 'apiKey';
    if (!principal || principal.kind !== wanted) {
      anon(request);
      const wantedName = auth.kind === 'daemon' ? 'daemon key' : auth.kind === 'scim' ? 'SCIM token' : 'API key';
      throw new AppError('unauthorized', token === null ? `This endpoint needs Authorization: Bearer <${wantedName}>.` : 'The credential is unknown, revoked or expired, or is not valid for this endpoint.');
    }
    if (principal.kind === 'daemon') {
      limit(request, `daemon:${principal.keyId}`, config.rateLimits.daemonPerMinute);
      const daemonId = request.headers['x-daemon-id'];
      if (auth.kind === 'daemon' && auth.daemonId) {
        if (typeof daemonId !== 'string' || !isUuid(daemonId)) throw new AppError('unauthorized', 'This daemon endpoint needs the X-Daemon-ID header returned by register.');
        principal.daemonId = daemonId.toLowerCase();
      }
    } else if (auth.kind === 'scim') {
      // The SCIM surface answers its own error shape (scim/errors.ts) for these refusals.
      limit(request, `scim:${principal.keyId}`, config.rateLimits.scimPerMinute);
      if (principal.keyKind !== 'scim') throw new AppError('unauthorized', 'This endpoint needs a SCIM token (Settings → SCIM); API keys do not open it.');
      if (!keyGrants(principal, 'scim:manage')) {
        throw new AppError('forbidden', principal.keyScopes.includes('scim:manage')
          ? `The token's owner has role ${principal.role}, which no longer allows scim:manage.`
          : 'The token does not hold the scope scim:manage.', { requiredScope: 'scim:manage' });
      }
    } else {
      limit(request, `key:${principal.keyId}`, config.rateLimits.keyPerMinute);
      if (auth.kind === 'apiKey' && auth.scope && !keyGrants(principal, auth.scope)) {
        if (auth.missingScopeUnauthorized && !principal.keyScopes.includes(auth.scope)) {
          throw new AppError('unauthorized', `This endpoint needs a key holding the scope ${auth.scope}.`, { requiredScope: auth.scope });
        }
        throw new AppError('forbidden', principal.keyScopes.includes(auth.scope)
          ? `The key's owner has role ${principal.role}, which no longer allows ${auth.scope}.`
          : `The key does not hold the scope ${auth.scope}.`, { requiredScope: auth.scope });
      }
    }
    request.principal = principal;
    return undefined;
  }

  async function sessionAuth(request: FastifyRequest, minRole: Role | undefined, scope?: Scope) {
    const token = request.cookies?.[SESSION_COOKIE];
    const principal = token ? await authenticateSession(db, token) : null;
    if (!principal) {
      anon(request);
      throw new AppError('unauthorized', 'Sign in first: this endpoint needs a session.');
    }
    limit(request, `user:${principal.userId}`, config.rateLimits.keyPerMinute);
    if (minRole && !roleAtLeast(principal.role, minRole)) {
      throw new AppError('forbidden', `This needs role ${minRole} or above; you are ${principal.role}.`, { requiredScope: `role:${minRole}` });
    }
    if (scope && !roleAtLeast(principal.role, scopeMinimumRole[scope])) {
      throw new AppError('forbidden', `This needs ${scope}, which role ${principal.role} does not allow.`, { requiredScope: scope });
    }
    if (principal.mustChangePassword && !PASSWORD_CHANGE_ROUTES.has(request.routeOptions.config?.operationId ?? '')) {
      throw new AppError('forbidden', 'Change the one-time password first: POST /api/v1/auth/password.');
    }
    if (!SAFE_METHODS.has(request.method)) {
      const sent = request.headers['x-csrf-token'];
      if (typeof sent !== 'string' || !safeEqual(sent, principal.csrfToken)) {
        throw new AppError('csrf_failed', `${problemCodes.csrf_failed.title}: send the session's csrfToken (from login or GET /api/v1/auth/me) as X-CSRF-Token.`);
      }
    }
    request.principal = principal;
  }
}

declare module 'fastify' {
  interface FastifyRequest {
    headersForReply: Record<string, string> | null;
  }
}
