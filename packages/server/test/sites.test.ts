import { randomUUID } from 'node:crypto';
import type { HTTPMethods, LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { heartbeat, register } from './daemon-client.js';
import { type SeededOrg, type TestApp, bearer, buildTestApp, login, seedMemberWithKey, seedOrg } from './helpers.js';

// Sites and daemon enrolment from the console (internal routes): create, rename, assign a daemon
// (which wins over its later `siteCode`), enrol (a daemon key and the command line).

let t: TestApp;
type Session = { cookie: string; csrfToken: string };
let org: SeededOrg;
let admin: Session;
let editor: Session;
let other: { org: SeededOrg; s: Session };

beforeAll(async () => {
  t = await buildTestApp();
  const member = async (o: SeededOrg, role: string) => login(t.app, (await seedMemberWithKey(t.database, o, role, ['inventory:read'])).email);
  org = await seedOrg(t.database);
  const otherOrg = await seedOrg(t.database);
  [admin, editor, other] = await Promise.all([member(org, 'admin'), member(org, 'editor'), member(otherOrg, 'admin').then((s) => ({ org: otherOrg, s }))]);
});
afterAll(async () => t?.close());

function call(s: Session, method: HTTPMethods, url: string, payload?: unknown): Promise<LightMyRequestResponse> {
  return t.app.inject({ method, url, headers: { cookie: s.cookie, 'x-csrf-token': s.csrfToken }, ...(payload !== undefined ? { payload: payload as Record<string, unknown> } : {}) });
}

function expectProblem(res: LightMyRequestResponse, status: number, code: string) {
  expect(res.statusCode, res.body).toBe(status);
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  expect(res.json().code).toBe(code);
  return res.json();
}

const code = () => `s-${randomUUID().slice(0, 8)}`;

async function createSite(s: Session, body: { code: string; name: string }) {
  const res = await call(s, 'POST', '/api/v1/sites', body);
  expect(res.statusCode, res.body).toBe(201);
  return res.json() as { id: string; code: string; name: string };
}

async function enrol(s: Session, body: Record<string, unknown> = {}) {
  const res = await call(s, 'POST', '/api/v1/daemons/enrol', body);
  expect(res.statusCode, res.body).toBe(201);
  return res.json() as { keyId: string; token: string; command: string };
}

const audit = (organisationId: string, action: string, targetId: string) =>
  t.database.db.selectFrom('audit_log').select(['actor_type', 'actor_user_id', 'changes']).where('organisation_id', '=', organisationId).where('action', '=', action).where('target_id', '=', targetId).execute();

describe('POST /api/v1/sites', () => {
  it('creates a site (201, the collection item), listed by GET /api/v1/sites, with an audit row', async () => {
    const c = code();
    const site = await createSite(admin, { code: c, name: 'Head office' });
    expect(site).toMatchObject({ code: c, name: 'Head office', description: null });
    const list = await call(admin, 'GET', '/api/v1/sites?limit=500');
    expect(list.json().data.map((s: { id: string }) => s.id)).toContain(site.id);
    const rows = await audit(org.organisationId, 'site.created', site.id);
    expect(rows).toHaveLength(1);
    expect(rows[0]!.actor_type).toBe('session');
    expect(rows[0]!.changes).toEqual({ code: c, name: 'Head office' });
  });

  it('refuses a code the organisation has (409 duplicate, case-insensitive); another organisation may use it', async () => {
    const c = code();
    await createSite(admin, { code: c, name: 'A' });
    expectProblem(await call(admin, 'POST', '/api/v1/sites', { code: c.toUpperCase(), name: 'B' }), 409, 'duplicate');
    await createSite(other.s, { code: c, name: 'Theirs' });
  });

  it('validates code and name (400 validation_failed)', async () => {
    for (const body of [{ code: '', name: 'x' }, { code: 'has space', name: 'x' }, { code: 'x'.repeat(65), name: 'x' }, { code: code(), name: '' }, { code: code(), name: 'x'.repeat(201) }, { code: code() }, { code: code(), name: 'x', extra: 1 }]) {
      expectProblem(await call(admin, 'POST', '/api/v1/sites', body), 400, 'validation_failed');
    }
  });

  it('is for admins: an editor gets 403 forbidden', async () => {
    expectProblem(await call(editor, 'POST', '/api/v1/sites', { code: code(), name: 'x' }), 403, 'forbidden');
  });
});

describe('PATCH /api/v1/sites/{id}', () => {
  it('renames a site (200) with an audit row of the change; the code stays', async () => {
    const site = await createSite(admin, { code: code(), name: 'Old' });
    const res = await call(admin, 'PATCH', `/api/v1/sites/${site.id}`, { name: 'New' });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ id: site.id, code: site.code, name: 'New' });
    expect((await audit(org.organisationId, 'site.renamed', site.id))[0]!.changes).toEqual({ name: { from: 'Old', to: 'New' } });
  });

  it('answers 404 for another organisation\'s site or an unknown id, 403 to an editor, 400 for an empty name', async () => {
    const theirs = await createSite(other.s, { code: code(), name: 'Theirs' });
    expectProblem(await call(admin, 'PATCH', `/api/v1/sites/${theirs.id}`, { name: 'Mine now' }), 404, 'not_found');
    expectProblem(await call(admin, 'PATCH', `/api/v1/sites/${randomUUID()}`, { name: 'x' }), 404, 'not_found');
    const mine = await createSite(admin, { code: code(), name: 'Mine' });
    expectProblem(await call(editor, 'PATCH', `/api/v1/sites/${mine.id}`, { name: 'x' }), 403, 'forbidden');
    expectProblem(await call(admin, 'PATCH', `/api/v1/sites/${mine.id}`, { name: '  ' }), 400, 'validation_failed');
    expectProblem(await call(admin, 'PATCH', '/api/v1/sites/not-a-uuid', { name: 'x' }), 400, 'validation_failed');
  });
});

describe('POST /api/v1/daemons/enrol', () => {
  it('mints a daemon key shown once (stored hashed) and the command line; the key registers a daemon', async () => {
    const e = await enrol(admin, { name: 'edge-1 key' });
    expect(e.token).toMatch(/^svd_/);
    expect(e.command).toBe(`surveyor-daemon --server ${t.config.baseUrl} --key ${e.token}`);
    const key = await t.database.db.selectFrom('keys').selectAll().where('id', '=', e.keyId).executeTakeFirstOrThrow();
    expect(key).toMatchObject({ organisation_id: org.organisationId, kind: 'daemon', name: 'edge-1 key' });
    expect(JSON.stringify(key)).not.toContain(e.token);
    expect(await audit(org.organisationId, 'key.created', e.keyId)).toHaveLength(1);
    const id = await register(t.app, e.token);
    await heartbeat(t.app, e.token, id);
  });

  it('names the chosen site with --site; a site of another organisation is 404; an editor gets 403', async () => {
    const site = await createSite(admin, { code: code(), name: 'Branch' });
    expect((await enrol(admin, { siteId: site.id })).command).toMatch(new RegExp(` --site ${site.code}$`));
    const theirs = await createSite(other.s, { code: code(), name: 'Theirs' });
    expectProblem(await call(admin, 'POST', '/api/v1/daemons/enrol', { siteId: theirs.id }), 404, 'not_found');
    expectProblem(await call(editor, 'POST', '/api/v1/daemons/enrol', {}), 403, 'forbidden');
    expectProblem(await call(admin, 'POST', '/api/v1/daemons/enrol', { siteId: 'nope' }), 400, 'validation_failed');
  });
});

describe('PUT /api/v1/daemons/{id}/site', () => {
  it('assigns a site that wins over a later registration with another siteCode; null clears it', async () => {
    const { token } = await enrol(admin);
    const name = `d-${randomUUID().slice(0, 8)}`;
    const first = code();
    const id = await register(t.app, token, { name, siteCode: first });
    const daemons = async () => (await call(admin, 'GET', '/api/v1/daemons')).json().data as { id: string; siteId: string | null }[];
    const bound = (await daemons()).find((d) => d.id === id)!.siteId;
    expect(bound).not.toBeNull(); // created from the siteCode on first registration

    const chosen = await createSite(admin, { code: code(), name: 'Chosen' });
    const changesBefore = await t.database.db.selectFrom('change_log').select('entity_id').where('entity_type', '=', 'daemon').where('entity_id', '=', id).execute();
    const res = await call(admin, 'PUT', `/api/v1/daemons/${id}/site`, { siteId: chosen.id });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ id, name, siteId: chosen.id });
    const row = await t.database.db.selectFrom('daemons').select(['site_id', 'site_set_in_ui']).where('id', '=', id).executeTakeFirstOrThrow();
    expect(row).toEqual({ site_id: chosen.id, site_set_in_ui: true });
    const changesAfter = await t.database.db.selectFrom('change_log').select('entity_id').where('entity_type', '=', 'daemon').where('entity_id', '=', id).execute();
    expect(changesAfter.length).toBe(changesBefore.length + 1);
    expect((await audit(org.organisationId, 'daemon.site_set', id))[0]!.changes).toEqual({ siteId: { from: bound, to: chosen.id } });

    // The daemon restarts with another --site: it stays where the UI put it, and no site is created for the code.
    const again = code();
    expect(await register(t.app, token, { name, siteCode: again })).toBe(id);
    expect((await daemons()).find((d) => d.id === id)!.siteId).toBe(chosen.id);
    const sites = (await call(admin, 'GET', '/api/v1/sites?limit=500')).json().data as { code: string }[];
    expect(sites.map((s) => s.code)).not.toContain(again);

    const cleared = await call(admin, 'PUT', `/api/v1/daemons/${id}/site`, { siteId: null });
    expect(cleared.statusCode, cleared.body).toBe(200);
    expect(cleared.json().siteId).toBeNull();
    expect(await t.database.db.selectFrom('daemons').select(['site_id', 'site_set_in_ui']).where('id', '=', id).executeTakeFirstOrThrow()).toEqual({ site_id: null, site_set_in_ui: false });
  });

  it('answers 404 for another organisation\'s daemon or site, 403 to an editor, 400 for a bad body', async () => {
    const { token } = await enrol(admin);
    const id = await register(t.app, token);
    const theirSite = await createSite(other.s, { code: code(), name: 'Theirs' });
    expectProblem(await call(admin, 'PUT', `/api/v1/daemons/${id}/site`, { siteId: theirSite.id }), 404, 'not_found');
    expectProblem(await call(other.s, 'PUT', `/api/v1/daemons/${id}/site`, { siteId: theirSite.id }), 404, 'not_found');
    expectProblem(await call(admin, 'PUT', `/api/v1/daemons/${randomUUID()}/site`, { siteId: null }), 404, 'not_found');
    expectProblem(await call(editor, 'PUT', `/api/v1/daemons/${id}/site`, { siteId: null }), 403, 'forbidden');
    expectProblem(await call(admin, 'PUT', `/api/v1/daemons/${id}/site`, {}), 400, 'validation_failed');
    // The other organisation's admin sees none of this organisation's daemons.
    expect(((await call(other.s, 'GET', '/api/v1/daemons')).json().data as { id: string }[]).map((d) => d.id)).not.toContain(id);
    expect((await t.database.db.selectFrom('daemons').select('site_id').where('id', '=', id).executeTakeFirstOrThrow()).site_id).toBeNull();
  });

  it('logs site changes for the live stream: created (console or a daemon\'s siteCode), renamed, and a daemon joining or leaving it', async () => {
    const siteChanges = async () =>
      (await t.database.db.selectFrom('change_log').select(['entity_id', 'action']).where('organisation_id', '=', org.organisationId).where('entity_type', '=', 'site').orderBy('id').execute());
    const before = (await siteChanges()).length;
    const a = await createSite(admin, { code: code(), name: 'A' });
    expect((await call(admin, 'PATCH', `/api/v1/sites/${a.id}`, { name: 'A renamed' })).statusCode).toBe(200);
    const { token } = await enrol(admin);
    const fromDaemon = code();
    const daemonId = await register(t.app, token, { name: `d-${randomUUID().slice(0, 8)}`, siteCode: fromDaemon });
    const b = ((await call(admin, 'GET', '/api/v1/sites?limit=500')).json().data as { id: string; code: string }[]).find((s) => s.code === fromDaemon)!;
    expect((await call(admin, 'PUT', `/api/v1/daemons/${daemonId}/site`, { siteId: a.id })).statusCode).toBe(200); // leaves b, joins a
    expect((await call(admin, 'PUT', `/api/v1/daemons/${daemonId}/site`, { siteId: a.id })).statusCode).toBe(200); // no move: no site change
    expect((await siteChanges()).slice(before)).toEqual([
      { entity_id: a.id, action: 'created' },
      { entity_id: a.id, action: 'updated' },
      { entity_id: b.id, action: 'created' },
      expect.objectContaining({ action: 'updated' }),
      expect.objectContaining({ action: 'updated' }),
    ]);
    expect((await siteChanges()).slice(before + 3).map((c) => c.entity_id).sort()).toEqual([a.id, b.id].sort());
    // A refused change logs nothing, and the other organisation's stream sees none of these.
    expectProblem(await call(admin, 'PATCH', `/api/v1/sites/${randomUUID()}`, { name: 'x' }), 404, 'not_found');
    expect((await siteChanges()).length).toBe(before + 5);
    expect(await t.database.db.selectFrom('change_log').select('entity_id').where('organisation_id', '=', other.org.organisationId).where('entity_id', 'in', [a.id, b.id]).execute()).toEqual([]);
  });

  it('needs a session: a bearer API key is refused', async () => {
    const m = await seedMemberWithKey(t.database, org, 'admin', ['inventory:write']);
    const res = await t.app.inject({ method: 'POST', url: '/api/v1/sites', headers: bearer(m.token), payload: { code: code(), name: 'x' } });
    expect(res.statusCode).toBe(401);
  });
});
