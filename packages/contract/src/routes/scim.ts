import { CreateScimTokenRequest, PutScimMappingsRequest, ScimSettings, ScimTokenCreated } from '../scim.js';
import { type RouteDef, route } from '../route-def.js';

/** Settings → SCIM (internal, admin session; the mapping owner only). The SCIM surface itself is /api/scim/v2 (README "SCIM provisioning"). */
export const scimRoutes = {
  getScimSettings: route({
    method: 'GET',
    url: '/api/v1/admin/scim',
    operationId: 'getScimSettings',
    summary: 'SCIM provisioning: the base URL, the tokens, the group-to-role mapping and the groups the provider pushed',
    tags: ['scim'],
    internal: true,
    auth: { kind: 'session', minRole: 'admin' },
    response: { 200: ScimSettings },
  }),
  createScimToken: route({
    method: 'POST',
    url: '/api/v1/admin/scim/tokens',
    operationId: 'createScimToken',
    summary: 'Mint a SCIM token (scope scim:manage) owned by the session user; shown once',
    description: 'The token works while its owner is an admin or owner of the organisation (the role is read on every request). Revoke it with DELETE /api/v1/auth/keys/{id}.',
    tags: ['scim'],
    internal: true,
    auth: { kind: 'session', minRole: 'admin' },
    body: CreateScimTokenRequest,
    response: { 201: ScimTokenCreated },
  }),
  putScimMappings: route({
    method: 'PUT',
    url: '/api/v1/admin/scim/mappings',
    operationId: 'putScimMappings',
    summary: 'Replace the group-to-role mapping (owner only); the roles of provisioned members follow at once',
    description:
      'Each mapping names a group (display name, case-insensitive, or id) and a role (viewer, editor or admin). A member in several mapped groups gets the highest; ' +
      'a provisioned member in none gets viewer. With no mapping at all, SCIM never changes roles. Owners are never changed. ' +
      'The same group twice: 400 `validation_failed`. Not an owner: 403 `forbidden`.',
    tags: ['scim'],
    internal: true,
    auth: { kind: 'session', minRole: 'owner' },
    body: PutScimMappingsRequest,
    response: { 200: ScimSettings },
  }),
} as const satisfies Record<string, RouteDef>;

