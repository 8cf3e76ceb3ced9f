import { randomUUID } from 'node:crypto';
import type { HTTPMethods } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as admin from '../src/admin/admin.service.js';
import { PASSWORD, type SeededOrg, type TestApp, bearer, buildTestApp, login, seedMemberWithKey, seedOrg } from './helpers.js';

// Settings → Members (internal, admin session): list, add, change role, remove, with the owner
// rules, organisation isolation, audit rows, and a removed member's credentials refused.

const MEMBERS = '/api/v1/admin/members';
const ENV = { SERVICE_RATE_LIMIT_LOGIN_PER_MINUTE: '1000', SERVICE_RATE_LIMIT_KEY_PER_MINUTE: '100000', SERVICE_RATE_LIMIT_ANON_PER_MINUTE: '100000' };

let t: TestApp;
beforeAll(async () => {
  t = await buildTestApp({ env: ENV });
});
afterAll(async () => {
  await t.close();
});

type Session = Awaited<ReturnType<typeof login>>;

function call(s: Session, method: HTTPMethods, url: string, payload?: unknown) {
  return t.app.inject({ method, url, headers: { cookie: s.cookie, 'x-csrf-token': s.csrfToken }, ...(payload === undefined ? {} : { payload: payload as object }) });
}

async function audit(org: SeededOrg, action: string, targetId: string) {
  return t.database.db.selectFrom('audit_log').select(['actor_type', 'actor_user_id', 'changes']).where('organisation_id', '=', org.organisationId).where('action', '=', action).where('target_id', '=', targetId).execute();
}

describe('members', () => {
  it('lists the organisation\'s members, with the last sign-in', async () => {
    const org = await seedOrg(t.database);
    const ed = await seedMemberWithKey(t.database, org, 'editor', ['inventory:read']);
    const owner = await login(t.app, org.ownerEmail);
    const res = await call(owner, 'GET', MEMBERS);
    expect(res.statusCode).toBe(200);
    const data = res.json().data as { userId: string; email: string; role: string; mustChangePassword: boolean; lastSignInAt: string | null }[];
    expect(data.map((m) => [m.email, m.role])).toEqual([[ed.email, 'editor'], [org.ownerEmail, 'owner']].sort((a, b) => a[0]!.localeCompare(b[0]!)));
    expect(data.find((m) => m.email === org.ownerEmail)!.lastSignInAt).not.toBeNull();
    expect(data.find((m) => m.email === ed.email)!.lastSignInAt).toBeNull();
  });

  it('refuses members below admin (403) and without a session (401)', async () => {
    const org = await seedOrg(t.database);
    const ed = await seedMemberWithKey(t.database, org, 'editor', ['inventory:read']);
    const s = await login(t.app, ed.email);
    const res = await call(s, 'GET', MEMBERS);
    expect([res.statusCode, res.json().code]).toEqual([403, 'forbidden']);
    expect((await t.app.inject({ method: 'GET', url: MEMBERS })).statusCode).toBe(401);
  });

  it('adds a new user with a one-time password that must be changed at first sign-in', async () => {
    const org = await seedOrg(t.database);
    const owner = await login(t.app, org.ownerEmail);
    const res = await call(owner, 'POST', MEMBERS, { email: `New.Person@${org.name}.test`, role: 'editor' });
    expect(res.statusCode).toBe(201);
    const body = res.json();
    expect(body.member).toMatchObject({ email: `new.person@${org.name}.test`, role: 'editor', mustChangePassword: true, lastSignInAt: null });
    expect(typeof body.oneTimePassword).toBe('string');
    const s = await login(t.app, `new.person@${org.name}.test`, body.oneTimePassword);
    expect(s.body.user.mustChangePassword).toBe(true);
    expect(await audit(org, 'membership.created', body.member.userId)).toMatchObject([{ actor_type: 'session', actor_user_id: org.ownerId, changes: { role: 'editor', newUser: true } }]);
    // Already a member: 409 duplicate.
    const again = await call(owner, 'POST', MEMBERS, { email: `new.person@${org.name}.test`, role: 'viewer' });
    expect([again.statusCode, again.json().code]).toEqual([409, 'duplicate']);
  });

  it('adds a user of another organisation with the role and no password', async () => {
    const a = await seedOrg(t.database);
    const b = await seedOrg(t.database);
    const owner = await login(t.app, a.ownerEmail);
    const res = await call(owner, 'POST', MEMBERS, { email: b.ownerEmail, role: 'viewer' });
    expect(res.statusCode).toBe(201);
    expect(res.json().oneTimePassword).toBeUndefined();
    expect(res.json().member).toMatchObject({ userId: b.ownerId, role: 'viewer', mustChangePassword: false });
    // Their own password still works, in either organisation.
    const s = await login(t.app, b.ownerEmail, PASSWORD);
    expect(s.body.memberships).toHaveLength(2);
  });

  it('refuses a bad email (400) and an admin adding an owner (403)', async () => {
    const org = await seedOrg(t.database);
    const ad = await seedMemberWithKey(t.database, org, 'admin', ['inventory:read']);
    const s = await login(t.app, ad.email);
    const bad = await call(s, 'POST', MEMBERS, { email: 'not an email', role: 'viewer' });
    expect([bad.statusCode, bad.json().code]).toEqual([400, 'validation_failed']);
    const own = await call(s, 'POST', MEMBERS, { email: `x@${org.name}.test`, role: 'owner' });
    expect([own.statusCode, own.json().code]).toEqual([403, 'forbidden']);
    const ok = await call(s, 'POST', MEMBERS, { email: `x@${org.name}.test`, role: 'admin' });
    expect(ok.statusCode).toBe(201);
  });

  it('changes roles by the owner rules', async () => {
    const org = await seedOrg(t.database);
    const ad = await seedMemberWithKey(t.database, org, 'admin', ['inventory:read']);
    const ed = await seedMemberWithKey(t.database, org, 'editor', ['inventory:read']);
    const owner = await login(t.app, org.ownerEmail);
    const adminS = await login(t.app, ad.email);

    const up = await call(adminS, 'PATCH', `${MEMBERS}/${ed.userId}`, { role: 'admin' });
    expect(up.statusCode).toBe(200);
    expect(up.json()).toMatchObject({ userId: ed.userId, role: 'admin' });
    expect(await audit(org, 'membership.role_changed', ed.userId)).toMatchObject([{ actor_user_id: ad.userId, changes: { role: { from: 'editor', to: 'admin' } } }]);

    // An admin may not grant owner, nor change an owner.
    const grant = await call(adminS, 'PATCH', `${MEMBERS}/${ed.userId}`, { role: 'owner' });
    expect([grant.statusCode, grant.json().code]).toEqual([403, 'forbidden']);
    const changeOwner = await call(adminS, 'PATCH', `${MEMBERS}/${org.ownerId}`, { role: 'viewer' });
    expect([changeOwner.statusCode, changeOwner.json().code]).toEqual([403, 'forbidden']);

    // Nobody demotes the last owner, the owner themself included.
    const last = await call(owner, 'PATCH', `${MEMBERS}/${org.ownerId}`, { role: 'admin' });
    expect([last.statusCode, last.json().code]).toEqual([409, 'conflict']);
    expect(last.json().detail).toMatch(/last owner/);

    // With a second owner, the first may step down.
    expect((await call(owner, 'PATCH', `${MEMBERS}/${ed.userId}`, { role: 'owner' })).statusCode).toBe(200);
    const down = await call(owner, 'PATCH', `${MEMBERS}/${org.ownerId}`, { role: 'admin' });
    expect([down.statusCode, down.json().role]).toEqual([200, 'admin']);
    // Takes effect on the next request: now an admin, the former owner may not grant owner.
    const after = await call(owner, 'PATCH', `${MEMBERS}/${ad.userId}`, { role: 'owner' });
    expect([after.statusCode, after.json().code]).toEqual([403, 'forbidden']);
  });

  it('caps a demoted member\'s key from the next request', async () => {
    const org = await seedOrg(t.database);
    const ed = await seedMemberWithKey(t.database, org, 'editor', ['inventory:read', 'inventory:write']);
    const owner = await login(t.app, org.ownerEmail);
    const before = await t.app.inject({ method: 'GET', url: '/api/v1/auth/key', headers: bearer(ed.token) });
    expect(before.json().effectiveScopes).toContain('inventory:write');
    expect((await call(owner, 'PATCH', `${MEMBERS}/${ed.userId}`, { role: 'viewer' })).statusCode).toBe(200);
    const afterRes = await t.app.inject({ method: 'GET', url: '/api/v1/auth/key', headers: bearer(ed.token) });
    expect(afterRes.json()).toMatchObject({ role: 'viewer', effectiveScopes: ['inventory:read'] });
  });

  it('keeps organisations apart: another organisation\'s user is 404', async () => {
    const a = await seedOrg(t.database);
    const b = await seedOrg(t.database);
    const other = await seedMemberWithKey(t.database, b, 'editor', ['inventory:read']);
    const owner = await login(t.app, a.ownerEmail);
    for (const [method, payload] of [['PATCH', { role: 'viewer' }], ['DELETE', undefined]] as const) {
      const res = await call(owner, method, `${MEMBERS}/${other.userId}`, payload);
      expect([res.statusCode, res.json().code]).toEqual([404, 'not_found']);
    }
    const unknown = await call(owner, 'DELETE', `${MEMBERS}/${randomUUID()}`);
    expect(unknown.statusCode).toBe(404);
    expect((await call(owner, 'GET', MEMBERS)).json().data.map((m: { userId: string }) => m.userId)).not.toContain(other.userId);
  });

  it('removes a member: their session and key are refused afterwards; other organisations keep them', async () => {
    const a = await seedOrg(t.database);
    const b = await seedOrg(t.database);
    const ed = await seedMemberWithKey(t.database, a, 'editor', ['inventory:read']);
    await admin.createUser(t.database.db, { type: 'cli' }, { org: b.organisationId, email: ed.email, role: 'viewer' });
    const owner = await login(t.app, a.ownerEmail);
    const edS = await login(t.app, ed.email);
    expect((await call(edS, 'GET', '/api/v1/auth/me')).statusCode).toBe(200);
    expect((await t.app.inject({ method: 'GET', url: '/api/v1/hosts', headers: bearer(ed.token) })).statusCode).toBe(200);

    const res = await call(owner, 'DELETE', `${MEMBERS}/${ed.userId}`);
    expect(res.statusCode).toBe(204);
    expect((await call(edS, 'GET', '/api/v1/auth/me')).statusCode).toBe(401);
    expect((await t.app.inject({ method: 'GET', url: '/api/v1/hosts', headers: bearer(ed.token) })).statusCode).toBe(401);
    const rows = await audit(a, 'membership.removed', ed.userId);
    expect(rows).toMatchObject([{ actor_user_id: a.ownerId, changes: { role: 'editor', sessionsEnded: 1, keysRevoked: [ed.keyId] } }]);
    // Still a member of b: signs in there.
    const again = await login(t.app, ed.email);
    expect(again.body.organisation.id).toBe(b.organisationId);
    // Removed twice: 404.
    expect((await call(owner, 'DELETE', `${MEMBERS}/${ed.userId}`)).statusCode).toBe(404);
  });

  it('refuses removing yourself (409), the last owner (409) and, for an admin, an owner (403)', async () => {
    const org = await seedOrg(t.database);
    const ad = await seedMemberWithKey(t.database, org, 'admin', ['inventory:read']);
    const owner = await login(t.app, org.ownerEmail);
    const adminS = await login(t.app, ad.email);
    const self = await call(adminS, 'DELETE', `${MEMBERS}/${ad.userId}`);
    expect([self.statusCode, self.json().code]).toEqual([409, 'conflict']);
    const ownerByAdmin = await call(adminS, 'DELETE', `${MEMBERS}/${org.ownerId}`);
    expect([ownerByAdmin.statusCode, ownerByAdmin.json().code]).toEqual([403, 'forbidden']);
    const selfOwner = await call(owner, 'DELETE', `${MEMBERS}/${org.ownerId}`);
    expect([selfOwner.statusCode, selfOwner.json().code]).toEqual([409, 'conflict']);
    // A second owner removes the first; then the second is the last and stays.
    expect((await call(owner, 'PATCH', `${MEMBERS}/${ad.userId}`, { role: 'owner' })).statusCode).toBe(200);
    const adminNowOwner = await login(t.app, ad.email);
    expect((await call(adminNowOwner, 'DELETE', `${MEMBERS}/${org.ownerId}`)).statusCode).toBe(204);
    expect((await call(owner, 'GET', MEMBERS)).statusCode).toBe(401);
  });
});
