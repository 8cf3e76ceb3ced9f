import { z } from 'zod';
import { AddMemberRequest, Member, MemberAdded, UpdateMemberRequest } from '../auth.js';
import { Uuid } from '../common.js';
import { type RouteDef, route } from '../route-def.js';

const ROLE_RULES =
  'Only an owner may grant or take the role `owner`, and an admin may not change an owner (403 `forbidden`). ' +
  'The organisation\'s last owner may not be demoted (409 `conflict`). ' +
  'A change takes effect on the member\'s next request: sessions and keys are capped by the current role.';

/** Settings → Members: the organisation's members and their roles (internal, admin session). */
export const memberRoutes = {
  listMembers: route({
    method: 'GET',
    url: '/api/v1/admin/members',
    operationId: 'listMembers',
    summary: 'Members of the session\'s organisation, by email',
    tags: ['members'],
    internal: true,
    auth: { kind: 'session', minRole: 'admin' },
    response: { 200: z.object({ data: z.array(Member) }) },
  }),
  addMember: route({
    method: 'POST',
    url: '/api/v1/admin/members',
    operationId: 'addMember',
    summary: 'Add a member with a role; a new user gets a one-time password, shown once',
    description:
      'A new email creates the user with a generated one-time password (in `oneTimePassword`, shown once; it must be changed at first sign-in). ' +
      'A user of another organisation is added with the role, and no password is shown. Already a member: 409 `duplicate`. ' +
      'Only an owner may add an owner (403 `forbidden`).',
    tags: ['members'],
    internal: true,
    auth: { kind: 'session', minRole: 'admin' },
    body: AddMemberRequest,
    errors: ['duplicate', 'conflict'],
    response: { 201: MemberAdded },
  }),
  updateMember: route({
    method: 'PATCH',
    url: '/api/v1/admin/members/:userId',
    operationId: 'updateMember',
    summary: 'Change a member\'s role',
    description: `${ROLE_RULES} Another organisation's user is 404.`,
    tags: ['members'],
    internal: true,
    auth: { kind: 'session', minRole: 'admin' },
    params: z.object({ userId: Uuid }),
    body: UpdateMemberRequest,
    errors: ['not_found', 'conflict'],
    response: { 200: Member },
  }),
  removeMember: route({
    method: 'DELETE',
    url: '/api/v1/admin/members/:userId',
    operationId: 'removeMember',
    summary: 'Remove a member from the organisation: their sessions in it end and their keys in it are revoked',
    description:
      'The user account stays (it may belong to other organisations). Refused: yourself (409 `conflict`), the last owner (409 `conflict`), ' +
      'an owner when you are an admin (403 `forbidden`). Another organisation\'s user is 404.',
    tags: ['members'],
    internal: true,
    auth: { kind: 'session', minRole: 'admin' },
    params: z.object({ userId: Uuid }),
    errors: ['not_found', 'conflict'],
    response: { 204: null },
  }),
} as const satisfies Record<string, RouteDef>;
