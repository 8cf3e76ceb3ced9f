import { z } from 'zod';
import { Text, Timestamp, Uuid } from './common.js';

/** Roles, weakest first (decisions.md). */
export const roles = ['viewer', 'editor', 'admin', 'owner'] as const;
export const Role = z.enum(roles);
export type Role = z.infer<typeof Role>;

/** Scopes and the minimum role that may hold each (spec 5, rule 4). */
export const scopeMinimumRole = {
  'inventory:read': 'viewer',
  'metrics:read': 'viewer',
  'inventory:write': 'editor',
  'scan:run': 'editor',
  'scim:manage': 'admin',
} as const satisfies Record<string, Role>;
export type Scope = keyof typeof scopeMinimumRole;
export const scopes = Object.keys(scopeMinimumRole) as Scope[];
export const ScopeSchema = z.enum(scopes as [Scope, ...Scope[]]);

/** True when `role` is at least `minimum`. */
export function roleAtLeast(role: Role, minimum: Role): boolean {
  return roles.indexOf(role) >= roles.indexOf(minimum);
}

/** The scopes a role may hold. */
export function scopesForRole(role: Role): Scope[] {
  return scopes.filter((s) => roleAtLeast(role, scopeMinimumRole[s]));
}

export const LoginRequest = z.strictObject({
  email: Text.trim().min(3).max(320),
  password: Text.min(1).max(1024),
  organisationId: Uuid.optional().describe('Which of the user\'s organisations to open; defaults to the oldest membership. Only an organisation the user belongs to is accepted.'),
});

export const Membership = z.object({
  organisationId: Uuid,
  organisationName: z.string(),
  role: Role,
});

export const SessionInfo = z.object({
  user: z.object({ id: Uuid, email: z.string(), mustChangePassword: z.boolean() }),
  organisation: z.object({ id: Uuid, name: z.string() }),
  role: Role,
  memberships: z.array(Membership),
  csrfToken: z.string().describe('Send as `X-CSRF-Token` on every state-changing request made with the session cookie.'),
  expiresAt: Timestamp,
});

export const ChangePasswordRequest = z.strictObject({
  currentPassword: Text.min(1).max(1024),
  newPassword: Text.min(12, 'at least 12 characters').max(1024),
});

export const KeyIntrospection = z.object({
  id: Uuid,
  organisationId: Uuid,
  userId: Uuid,
  role: Role,
  scopes: z.array(ScopeSchema).describe('Scopes granted to the key when minted.'),
  effectiveScopes: z.array(ScopeSchema).describe('Scopes the key holds now: `scopes` capped by the owner\'s current role.'),
});

export const ApiKeyInfo = z.object({
  id: Uuid,
  name: z.string(),
  kind: z.enum(['api', 'metrics', 'scim']),
  tokenPrefix: z.string().describe('The first characters of the token, to recognise it.'),
  scopes: z.array(ScopeSchema),
  userId: Uuid,
  userEmail: z.string(),
  createdAt: Timestamp,
  lastUsedAt: Timestamp.nullable(),
  expiresAt: Timestamp.nullable(),
  revokedAt: Timestamp.nullable(),
});

export const CreateApiKeyRequest = z.strictObject({
  name: Text.trim().min(1).max(200),
  scopes: z.array(ScopeSchema).min(1).max(10),
  expiresInDays: z.number().int().min(1).max(3650).optional().describe('Absent: the key does not expire.'),
});

export const ApiKeyCreated = ApiKeyInfo.extend({ token: z.string().describe('Shown once; only its SHA-256 is stored.') });

/** A member of the organisation (Settings → Members). */
export const Member = z.object({
  userId: Uuid,
  email: z.string(),
  role: Role,
  mustChangePassword: z.boolean().describe('True until the member replaces the one-time password at sign-in.'),
  createdAt: Timestamp.describe('When the user became a member of this organisation.'),
  lastSignInAt: Timestamp.nullable().describe('When the member last signed in to this organisation (recorded at sign-in; signing out or a session expiring does not erase it); null when never.'),
  active: z.boolean().describe('False while the identity provider has the member deactivated (SCIM active: false): no session, no working key.'),
  managedBy: z.enum(['scim']).nullable().describe('`scim` when the identity provider manages the member: with a group-to-role mapping, the role comes from its groups.'),
});
export type Member = z.infer<typeof Member>;

export const AddMemberRequest = z.strictObject({
  email: Text.trim().min(3).max(320),
  role: Role,
});

export const MemberAdded = z.object({
  member: Member,
  oneTimePassword: z.string().optional().describe('Present only when a new user was created: shown once, must be changed at first sign-in.'),
});

export const UpdateMemberRequest = z.strictObject({ role: Role });
