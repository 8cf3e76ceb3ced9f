import type { FastifyRequest } from 'fastify';
import type { Actor } from '../audit/audit.repo.js';
import type { Principal } from '../auth/principal.js';
import { AppError } from '../errors.js';

// The auth hook has already checked the credential the route declares; these narrow the
// principal for the handler, and throw only if a route is wired to the wrong auth kind.

/**
 * Who acts on an API-key route, for reads and audit rows: the key (and through it its user), or
 * the console's session (its user) where the route accepts one (`acceptsSession`).
 */
export function keyActor(request: FastifyRequest): Actor & { organisationId: string } {
  const p = request.principal;
  if (p?.kind === 'session') return { type: 'session', userId: p.userId, requestId: request.id, organisationId: p.organisationId };
  if (p?.kind !== 'apiKey') throw new AppError('unauthorized', 'This endpoint needs an API key.');
  return { type: 'key', keyId: p.keyId, userId: p.userId, requestId: request.id, organisationId: p.organisationId };
}

export function sessionPrincipal(request: FastifyRequest): Extract<Principal, { kind: 'session' }> {
  const p = request.principal;
  if (p?.kind !== 'session') throw new AppError('unauthorized', 'Sign in first.');
  return p;
}

export function daemonPrincipal(request: FastifyRequest): Extract<Principal, { kind: 'daemon' }> {
  const p = request.principal;
  if (p?.kind !== 'daemon') throw new AppError('unauthorized', 'This endpoint needs a daemon key.');
  return p;
}
