import { routes } from '@surveyor/contract';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Kysely } from 'kysely';
import type { Config } from '../config.js';
import type { DB } from '../db/schema.js';
import { noteNulEscape } from '../http/nul.js';
import { sessionPrincipal } from '../http/principals.js';
import { addRoute } from '../http/route.js';
import { project } from './filter.js';
import { SCIM_MEDIA_TYPE, ScimError, scimErrorHandler, sendScimError } from './errors.js';
import { MAX_BODY_BYTES, resourceTypeDocuments, schemaDocuments, serviceProviderConfig } from './schema.js';
import * as scim from './scim.service.js';
import * as settings from './settings.service.js';

type Params = { id: string };
type Query = scim.ListQuery;

/**
 * The SCIM 2.0 surface (/api/scim/v2, RFC 7644) in its own encapsulated context: its media type,
 * its error shape for every refusal (the auth hook's included), its 404. Authenticated by the
 * shared auth hook (auth kind scim: a SCIM token holding scim:manage under an admin).
 */
async function scimSurface(app: FastifyInstance, deps: { db: Kysely<DB>; config: Config }): Promise<void> {
  const base = settings.scimBase(deps.config.baseUrl);
  const json = app.getDefaultJsonParser('error', 'error');
  app.addContentTypeParser(SCIM_MEDIA_TYPE, { parseAs: 'string' }, (request, body, done) => {
    noteNulEscape(request, body as string);
    json(request, body as string, done);
  });
  app.setErrorHandler(scimErrorHandler);
  // Any other path under the prefix: a SCIM 404 (a route, so the app's problem-shaped not-found handler never answers here).
  app.route({ method: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'], url: '/*', handler: async (request, reply) => sendScimError(reply, 404, `No SCIM endpoint ${request.method} ${request.url.split('?')[0]}.`) });

  const ctx = (request: FastifyRequest): scim.ScimContext => {
    const p = request.principal;
    if (p?.kind !== 'apiKey') throw new ScimError(401, 'This endpoint needs a SCIM token.');
    return { db: deps.db, organisationId: p.organisationId, actor: { type: 'key', keyId: p.keyId, userId: p.userId, requestId: request.id }, base, actorRole: p.role };
  };
  const send = (reply: FastifyReply, status: number, body: unknown, headers: Record<string, string> = {}) =>
    reply.code(status).headers(headers).type(SCIM_MEDIA_TYPE).serializer(JSON.stringify).send(body);
  const written = (reply: FastifyReply, status: number, w: scim.Written) =>
    send(reply, status, w.resource, { ETag: w.etag, ...(status === 201 ? { Location: (w.resource.meta as { location: string }).location } : {}) });
  const route = (method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE', url: string, operationId: string, handler: (request: FastifyRequest<{ Params: Params; Querystring: Query }>, reply: FastifyReply) => Promise<unknown>) =>
    app.route<{ Params: Params; Querystring: Query }>({ method, url, handler, bodyLimit: MAX_BODY_BYTES, config: { auth: { kind: 'scim' }, operationId, internal: true } });

  route('GET', '/ServiceProviderConfig', 'scimServiceProviderConfig', async (_r, reply) => send(reply, 200, serviceProviderConfig(base, `${deps.config.baseUrl}/docs#scim`)));
  route('GET', '/ResourceTypes', 'scimResourceTypes', async (_r, reply) => {
    const docs = resourceTypeDocuments(base);
    return send(reply, 200, { schemas: ['urn:ietf:params:scim:api:messages:2.0:ListResponse'], totalResults: docs.length, startIndex: 1, itemsPerPage: docs.length, Resources: docs });
  });
  route('GET', '/ResourceTypes/:id', 'scimResourceType', async (request, reply) => {
    const doc = resourceTypeDocuments(base).find((d) => d.id === request.params.id);
    if (!doc) throw new ScimError(404, `No resource type ${request.params.id}.`);
    return send(reply, 200, doc);
  });
  route('GET', '/Schemas', 'scimSchemas', async (_r, reply) => {
    const docs = schemaDocuments(base);
    return send(reply, 200, { schemas: ['urn:ietf:params:scim:api:messages:2.0:ListResponse'], totalResults: docs.length, startIndex: 1, itemsPerPage: docs.length, Resources: docs });
  });
  route('GET', '/Schemas/:id', 'scimSchema', async (request, reply) => {
    const doc = schemaDocuments(base).find((d) => d.id.toLowerCase() === request.params.id.toLowerCase());
    if (!doc) throw new ScimError(404, `No schema ${request.params.id}.`);
    return send(reply, 200, doc);
  });

  route('GET', '/Users', 'scimListUsers', async (request, reply) => send(reply, 200, await scim.listUsers(ctx(request), request.query)));
  route('POST', '/Users', 'scimCreateUser', async (request, reply) => written(reply, 201, await scim.createUser(ctx(request), request.body)));
  route('GET', '/Users/:id', 'scimGetUser', async (request, reply) => written(reply, 200, await scim.getUser(ctx(request), request.params.id, request.query)));
  route('PUT', '/Users/:id', 'scimReplaceUser', async (request, reply) => written(reply, 200, await scim.replaceUser(ctx(request), request.params.id, request.body, request.headers['if-match'])));
  route('PATCH', '/Users/:id', 'scimPatchUser', async (request, reply) => written(reply, 200, await scim.patchUser(ctx(request), request.params.id, request.body, request.headers['if-match'])));
  route('DELETE', '/Users/:id', 'scimDeleteUser', async (request, reply) => {
    await scim.deleteUser(ctx(request), request.params.id, request.headers['if-match']);
    return reply.code(204).send();
  });

  route('GET', '/Groups', 'scimListGroups', async (request, reply) => send(reply, 200, await scim.listGroups(ctx(request), request.query)));
  route('POST', '/Groups', 'scimCreateGroup', async (request, reply) => written(reply, 201, await scim.createGroup(ctx(request), request.body)));
  route('GET', '/Groups/:id', 'scimGetGroup', async (request, reply) => written(reply, 200, await scim.getGroup(ctx(request), request.params.id, request.query)));
  route('PUT', '/Groups/:id', 'scimReplaceGroup', async (request, reply) => written(reply, 200, await scim.replaceGroup(ctx(request), request.params.id, request.body, request.headers['if-match'])));
  // 204 with the new ETag, as Entra advises for groups (a big group's members are not sent back);
  // 200 with the group when the request names attributes or excludedAttributes (RFC 7644 3.5.2).
  route('PATCH', '/Groups/:id', 'scimPatchGroup', async (request, reply) => {
    const w = await scim.patchGroup(ctx(request), request.params.id, request.body, request.headers['if-match']);
    if (!request.query.attributes && !request.query.excludedAttributes) return reply.code(204).header('ETag', w.etag).send();
    return written(reply, 200, { ...w, resource: project(w.resource, 'Group', request.query.attributes?.split(','), request.query.excludedAttributes?.split(',')) });
  });
  route('DELETE', '/Groups/:id', 'scimDeleteGroup', async (request, reply) => {
    await scim.deleteGroup(ctx(request), request.params.id, request.headers['if-match']);
    return reply.code(204).send();
  });
}

/** The SCIM surface and Settings → SCIM. */
export function registerScimRoutes(app: FastifyInstance, deps: { db: Kysely<DB>; config: Config }): void {
  const { db, config } = deps;
  // Not awaited: awaiting would load the plugin at once, building the routes registered so far
  // before the app's error handler is set (app.ts sets it after every module).
  void app.register(async (child) => scimSurface(child, deps), { prefix: '/api/scim/v2' });

  addRoute(app, routes.getScimSettings, async (request) => settings.getSettings(db, sessionPrincipal(request).organisationId, config.baseUrl));
  addRoute(app, routes.createScimToken, async (request, reply) => reply.code(201).send(await settings.createToken(db, sessionPrincipal(request), request.body, config.baseUrl, request.id)));
  addRoute(app, routes.putScimMappings, async (request) => settings.putMappings(db, sessionPrincipal(request), request.body.mappings, config.baseUrl, request.id));
}
