import type { Member, Role } from '@surveyor/contract';
import type { Kysely } from 'kysely';
import { z } from 'zod';
import * as adminRepo from '../admin/admin.repo.js';
import { ensureUser, newCredential } from '../admin/admin.service.js';
import { type Actor, recordAudit } from '../audit/audit.repo.js';
import type { Principal } from '../auth/principal.js';
import type { DB } from '../db/schema.js';
import { AppError } from '../errors.js';
import * as repo from './members.repo.js';
import { hasMappings } from '../scim/scim.repo.js';

// Settings → Members. The rules (also in the contract's route descriptions and the README):
// only an owner grants or takes `owner`, and only an owner changes or removes an owner; the last
// owner can be neither demoted nor removed; nobody removes themself. A role change takes effect
// on the member's next request: sessions and keys read the current membership every time.

type Session = Extract<Principal, { kind: 'session' }>;

const Email = z.email().max(320).transform((e) => e.toLowerCase());

const actorOf = (p: Session, requestId: string): Actor => ({ type: 'session', userId: p.userId, requestId });

function toMember(r: repo.MemberRow): Member {
  return {
    userId: r.user_id,
    email: r.email,
    role: r.role as Role,
    mustChangePassword: r.must_change_password,
    createdAt: new Date(r.created_at).toISOString(),
    lastSignInAt: r.last_sign_in_at ? new Date(r.last_sign_in_at).toISOString() : null,
    active: r.deactivated_at === null,
    managedBy: r.scim_managed ? 'scim' : null,
  };
}

export async function listMembers(db: Kysely<DB>, p: Session): Promise<Member[]> {
  return (await repo.listMembers(db, p.organisationId)).map(toMember);
}

function requireOwnerFor(p: Session, what: string): void {
  if (p.role !== 'owner') throw new AppError('forbidden', `Only an owner may ${what}; you are ${p.role}.`, { requiredScope: 'role:owner' });
}

async function memberOrThrow(db: Kysely<DB>, p: Session, userId: string): Promise<repo.MemberRow> {
  const m = await repo.findMember(db, p.organisationId, userId);
  if (!m) throw new AppError('not_found', `No member ${userId} in this organisation.`);
  return m;
}

/**
 * Adds a member: a new user gets a generated one-time password (returned once, to be changed at
 * first sign-in); an existing user (of another organisation) is added with no password shown.
 */
export async function addMember(db: Kysely<DB>, p: Session, input: { email: string; role: Role }, requestId: string): Promise<{ member: Member; oneTimePassword?: string }> {
  const parsed = Email.safeParse(input.email);
  if (!parsed.success) throw new AppError('validation_failed', 'email: not an email address', { issues: [{ path: 'body.email', message: 'not an email address' }] });
  const email = parsed.data;
  if (input.role === 'owner') requireOwnerFor(p, 'add an owner');
  const credential = await newCredential(undefined); // before the transaction (scrypt; PGlite's one connection)
  return db.transaction().execute(async (trx) => {
    const { userId, generatedPassword: oneTimePassword } = await ensureUser(trx, email, false, credential, true);
    const user = { id: userId };
    if (await adminRepo.findMembership(trx, p.organisationId, user.id)) throw new AppError('duplicate', `${email} is already a member; change the role instead.`);
    await adminRepo.insertMembership(trx, p.organisationId, user.id, input.role);
    await recordAudit(trx, actorOf(p, requestId), {
      organisationId: p.organisationId, action: 'membership.created', targetType: 'user', targetId: user.id, changes: { email, role: input.role, newUser: oneTimePassword !== undefined },
    });
    const member = toMember((await repo.findMember(trx, p.organisationId, user.id))!);
    return { member, ...(oneTimePassword ? { oneTimePassword } : {}) };
  });
}

/** Changes a member's role (the rules above). The same role again changes nothing and records nothing. */
export async function updateMemberRole(db: Kysely<DB>, p: Session, userId: string, role: Role, requestId: string): Promise<Member> {
  return db.transaction().execute(async (trx) => {
    const m = await memberOrThrow(trx, p, userId);
    const from = m.role as Role;
    if (from === role) return toMember(m);
    if (m.scim_managed && from !== 'owner' && role !== 'owner' && (await hasMappings(trx, p.organisationId))) {
      throw new AppError('conflict', `${m.email}'s role comes from their groups in your identity provider (Settings → SCIM maps groups to roles); change the group or the mapping.`);
    }
    if (from === 'owner') requireOwnerFor(p, 'change an owner\'s role');
    if (role === 'owner') requireOwnerFor(p, 'grant the role owner');
    if (from === 'owner') {
      const owners = await repo.lockOwners(trx, p.organisationId);
      if (owners.filter((id) => id !== userId).length === 0) {
        throw new AppError('conflict', `${m.email} is the organisation's last owner; make another member owner first.`);
      }
    }
    await adminRepo.updateRole(trx, p.organisationId, userId, role);
    await recordAudit(trx, actorOf(p, requestId), {
      organisationId: p.organisationId, action: 'membership.role_changed', targetType: 'user', targetId: userId, changes: { email: m.email, role: { from, to: role } },
    });
    return toMember({ ...m, role });
  });
}

/** Removes a member: the membership, the member's sessions in this organisation, and their keys in it (revoked). */
export async function removeMember(db: Kysely<DB>, p: Session, userId: string, requestId: string): Promise<void> {
  await db.transaction().execute(async (trx) => {
    const m = await memberOrThrow(trx, p, userId);
    if (userId === p.userId) throw new AppError('conflict', 'You cannot remove yourself; another admin or owner can.');
    if (m.role === 'owner') {
      requireOwnerFor(p, 'remove an owner');
      const owners = await repo.lockOwners(trx, p.organisationId);
      if (owners.filter((id) => id !== userId).length === 0) throw new AppError('conflict', `${m.email} is the organisation's last owner.`);
    }
    const sessions = await repo.deleteSessions(trx, p.organisationId, userId);
    const keys = await repo.revokeUserKeys(trx, p.organisationId, userId);
    await repo.deleteMembership(trx, p.organisationId, userId);
    await recordAudit(trx, actorOf(p, requestId), {
      organisationId: p.organisationId, action: 'membership.removed', targetType: 'user', targetId: userId, changes: { email: m.email, role: m.role, sessionsEnded: sessions, keysRevoked: keys },
    });
  });
}

