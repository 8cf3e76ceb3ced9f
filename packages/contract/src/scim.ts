import { z } from 'zod';
import { ApiKeyInfo, roles } from './auth.js';
import { Text, Timestamp, Uuid } from './common.js';

// SCIM 2.0 provisioning (spec 5; RFC 7643, RFC 7644). The SCIM surface itself (/api/scim/v2/*)
// speaks the RFC's own media type and error shape and is described by its discovery documents
// (ServiceProviderConfig, ResourceTypes, Schemas), not by /openapi.json. What is here is the
// console's side: tokens, the base URL to paste into the identity provider, and the mapping from
// the provider's groups to roles.

/** Roles a group may grant: never `owner` (owners are made by hand, and never demoted by SCIM). */
export const scimMappableRoles = roles.filter((r) => r !== 'owner') as ['viewer', 'editor', 'admin'];
export const ScimMappableRole = z.enum(scimMappableRoles);

export const ScimRoleMapping = z.object({
  group: Text.trim().min(1).max(256).describe('A SCIM group\'s displayName (case-insensitive) or id.'),
  role: ScimMappableRole,
});
export type ScimRoleMapping = z.infer<typeof ScimRoleMapping>;

export const ScimGroupSummary = z.object({
  id: Uuid,
  displayName: z.string(),
  externalId: z.string().nullable(),
  members: z.number().int().describe('How many of the organisation\'s members the group holds.'),
  role: ScimMappableRole.nullable().describe('The role a mapping gives the group\'s members; null when no mapping names it.'),
  updatedAt: Timestamp,
});

export const ScimSettings = z.object({
  baseUrl: z.string().describe('The SCIM base URL to give the identity provider (…/api/scim/v2).'),
  tokens: z.array(ApiKeyInfo).describe('SCIM tokens of the organisation, newest first, revoked ones included.'),
  mappings: z.array(ScimRoleMapping),
  groups: z.array(ScimGroupSummary).describe('Groups the identity provider pushed, by display name.'),
  users: z.object({
    managed: z.number().int().describe('Members the identity provider manages.'),
    deactivated: z.number().int().describe('Of those, deactivated (active: false).'),
  }),
  lastChangeAt: Timestamp.nullable().describe('The last change the provider made; null when none yet.'),
});
export type ScimSettings = z.infer<typeof ScimSettings>;

export const CreateScimTokenRequest = z.strictObject({
  name: Text.trim().min(1).max(200),
  expiresInDays: z.number().int().min(1).max(3650).optional().describe('Absent: the token does not expire.'),
});

export const ScimTokenCreated = ApiKeyInfo.extend({
  token: z.string().describe('Shown once; only its SHA-256 is stored.'),
  baseUrl: z.string(),
});

export const PutScimMappingsRequest = z.strictObject({
  mappings: z.array(ScimRoleMapping).max(200),
});
