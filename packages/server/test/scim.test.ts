import type { HTTPMethods } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import * as admin from '../src/admin/admin.service.js';
import { PASSWORD, type SeededOrg, type TestApp, bearer, buildTestApp, login, seedMemberWithKey, seedOrg } from './helpers.js';

// The SCIM 2.0 surface (RFC 7643, RFC 7644; spec 5): discovery, users and groups, filters,
// projection and paging, PATCH, ETags, refusals in the SCIM error shape, the group-to-role
// mapping, and what deactivation and deletion do to a member's sessions and keys.

const SCIM = '/api/scim/v2';
const ENV = { SERVICE_RATE_LIMIT_LOGIN_PER_MINUTE: '1000', SERVICE_RATE_LIMIT_KEY_PER_MINUTE: '100000', SERVICE_RATE_LIMIT_ANON_PER_MINUTE: '100000', SERVICE_RATE_LIMIT_SCIM_PER_MINUTE: '100000' };
const USER = 'urn:ietf:params:scim:schemas:core:2.0:User';
const GROUP = 'urn:ietf:params:scim:schemas:core:2.0:Group';
const PATCH = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
const ERROR = 'urn:ietf:params:scim:api:messages:2.0:Error';

let t: TestApp;
beforeAll(async () => {
  t = await buildTestApp({ env: ENV });
});
afterAll(async () => {
  await t.close();
});

interface Tenant {
  org: SeededOrg;
  token: string;
}

async function tenant(): Promise<Tenant> {
  const org = await seedOrg(t.database);
  const k = await admin.createApiKey(t.database.db, { type: 'cli' }, { org: org.organisationId, userEmail: org.ownerEmail, scopes: ['scim:manage'], kind: 'scim' });
  return { org, token: k.token };
}

function scim(token: string | null, method: HTTPMethods, path: string, body?: unknown, headers: Record<string, string> = {}) {
  return t.app.inject({
    method,
    url: `${SCIM}${path}`,
    headers: { ...(token ? bearer(token) : {}), ...(body !== undefined ? { 'content-type': 'application/scim+json' } : {}), ...headers },
    ...(body !== undefined ? { payload: JSON.stringify(body) } : {}),
  });
}

/** A SCIM error (RFC 7644 3.12) with its status, as a string in the body too, and scimType. */
function expectScimError(res: Awaited<ReturnType<typeof scim>>, status: number, scimType?: string) {
  expect(res.headers['content-type']).toMatch(/^application\/scim\+json/);
  const body = res.json();
  expect({ status: res.statusCode, body: { schemas: body.schemas, status: body.status, scimType: body.scimType } }).toEqual({ status, body: { schemas: [ERROR], status: String(status), scimType } });
  expect(typeof body.detail).toBe('string');
}

const userBody = (userName: string, extra: Record<string, unknown> = {}) => ({
  schemas: [USER],
  userName,
  name: { givenName: 'Ada', familyName: 'Lovelace' },
  emails: [{ value: userName, type: 'work', primary: true }],
  active: true,
  ...extra,
});

async function createUser(tn: Tenant, userName: string, extra: Record<string, unknown> = {}) {
  const res = await scim(tn.token, 'POST', '/Users', userBody(userName, extra));
  expect(res.statusCode, res.body).toBe(201);
  return res.json() as { id: string; meta: { version: string; location: string; lastModified: string } } & Record<string, unknown>;
}

const emailIn = (tn: Tenant, local: string) => `${local}@${tn.org.name}.test`;

describe('SCIM discovery', () => {
  // RFC 7643 section 7: every attribute characteristic is present in a schema's representation.
  const AttributeDoc: z.ZodType = z.lazy(() =>
    z.object({
      name: z.string(),
      type: z.enum(['string', 'boolean', 'decimal', 'integer', 'dateTime', 'reference', 'complex', 'binary']),
      multiValued: z.boolean(),
      description: z.string(),
      required: z.boolean(),
      caseExact: z.boolean().optional(),
      canonicalValues: z.array(z.string()).optional(),
      mutability: z.enum(['readOnly', 'readWrite', 'immutable', 'writeOnly']),
      returned: z.enum(['always', 'never', 'default', 'request']),
      uniqueness: z.enum(['none', 'server', 'global']),
      referenceTypes: z.array(z.string()).optional(),
      subAttributes: z.array(AttributeDoc).optional(),
    }).strict(),
  );
  const SchemaDoc = z.object({ schemas: z.tuple([z.literal('urn:ietf:params:scim:schemas:core:2.0:Schema')]), id: z.string().startsWith('urn:'), name: z.string(), description: z.string(), attributes: z.array(AttributeDoc).min(1), meta: z.object({ resourceType: z.literal('Schema'), location: z.string().url() }) });
  const ResourceTypeDoc = z.object({
    schemas: z.tuple([z.literal('urn:ietf:params:scim:schemas:core:2.0:ResourceType')]),
    id: z.string(), name: z.string(), endpoint: z.string().startsWith('/'), description: z.string(), schema: z.string().startsWith('urn:'),
    schemaExtensions: z.array(z.object({ schema: z.string(), required: z.boolean() })),
    meta: z.object({ resourceType: z.literal('ResourceType'), location: z.string().url() }),
  });
  const Supported = z.object({ supported: z.boolean() });
  const ServiceProviderConfig = z.object({
    schemas: z.tuple([z.literal('urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig')]),
    documentationUri: z.string().url().optional(),
    patch: Supported, bulk: Supported.extend({ maxOperations: z.number().int(), maxPayloadSize: z.number().int() }), filter: Supported.extend({ maxResults: z.number().int().positive() }),
    changePassword: Supported, sort: Supported, etag: Supported,
    authenticationSchemes: z.array(z.object({ type: z.string(), name: z.string(), description: z.string() })).min(1),
  });

  it('publishes ServiceProviderConfig, ResourceTypes and Schemas that validate against RFC 7643', async () => {
    const { token } = await tenant();
    const spc = await scim(token, 'GET', '/ServiceProviderConfig');
    expect(spc.statusCode).toBe(200);
    expect(spc.headers['content-type']).toMatch(/^application\/scim\+json/);
    const config = ServiceProviderConfig.parse(spc.json());
    expect([config.patch.supported, config.filter.supported, config.filter.maxResults, config.etag.supported, config.bulk.supported]).toEqual([true, true, 200, true, false]);

    const types = (await scim(token, 'GET', '/ResourceTypes')).json();
    expect(types.Resources.map((r: unknown) => ResourceTypeDoc.parse(r).id)).toEqual(['User', 'Group']);
    expect((await scim(token, 'GET', '/ResourceTypes/Group')).json().endpoint).toBe('/Groups');

    const schemas = (await scim(token, 'GET', '/Schemas')).json();
    expect(schemas.totalResults).toBe(3);
    const ids = schemas.Resources.map((r: unknown) => SchemaDoc.parse(r).id);
    expect(ids).toEqual([USER, GROUP, 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User']);
    const user = (await scim(token, 'GET', `/Schemas/${USER}`)).json();
    const userName = user.attributes.find((a: { name: string }) => a.name === 'userName');
    expect([userName.required, userName.uniqueness, userName.caseExact]).toEqual([true, 'server', false]);
    expect(user.attributes.find((a: { name: string }) => a.name === 'password').returned).toBe('never');
    expectScimError(await scim(token, 'GET', '/Schemas/urn:nope'), 404);
    expectScimError(await scim(token, 'GET', '/Nothing'), 404);
  });
});

describe('SCIM credentials', () => {
  it('refuses, in the SCIM error shape: no token, an API key, a metrics key, a session, a revoked token, a token whose owner is no longer admin', async () => {
    const tn = await tenant();
    expectScimError(await scim(null, 'GET', '/Users'), 401);
    expectScimError(await scim('svs_not-a-real-token-at-all-000000000', 'GET', '/Users'), 401);
    // An API key, even one holding scim:manage, does not open the SCIM surface (spec 5: a SCIM token).
    const apiKey = await admin.createApiKey(t.database.db, { type: 'cli' }, { org: tn.org.organisationId, userEmail: tn.org.ownerEmail, scopes: ['scim:manage', 'inventory:read'] });
    expectScimError(await scim(apiKey.token, 'GET', '/Users'), 401);
    const metrics = await admin.createApiKey(t.database.db, { type: 'cli' }, { org: tn.org.organisationId, userEmail: tn.org.ownerEmail, scopes: ['metrics:read'], kind: 'metrics' });
    expectScimError(await scim(metrics.token, 'GET', '/Users'), 401);
    const s = await login(t.app, tn.org.ownerEmail);
    expectScimError(await t.app.inject({ method: 'GET', url: `${SCIM}/Users`, headers: { cookie: s.cookie } }), 401);

    // A token minted by an admin who is then made editor: 403, at once (spec 5 rule 5).
    const adm = await seedMemberWithKey(t.database, tn.org, 'admin', ['inventory:read']);
    const token = await admin.createApiKey(t.database.db, { type: 'cli' }, { org: tn.org.organisationId, userEmail: adm.email, scopes: ['scim:manage'], kind: 'scim' });
    expect((await scim(token.token, 'GET', '/Users')).statusCode).toBe(200);
    await admin.setRole(t.database.db, { type: 'cli' }, { org: tn.org.organisationId, userEmail: adm.email, role: 'editor' });
    expectScimError(await scim(token.token, 'GET', '/Users'), 403);

    await admin.revokeKey(t.database.db, { type: 'cli' }, { id: token.id });
    expectScimError(await scim(token.token, 'GET', '/Users'), 401);
  });

  it('keeps each organisation to its own: another organisation\'s user and group ids are 404', async () => {
    const a = await tenant();
    const b = await tenant();
    const user = await createUser(a, emailIn(a, 'alice'));
    const group = (await scim(a.token, 'POST', '/Groups', { schemas: [GROUP], displayName: 'A team', members: [{ value: user.id }] })).json();
    for (const [method, path] of [['GET', `/Users/${user.id}`], ['DELETE', `/Users/${user.id}`], ['GET', `/Groups/${group.id}`], ['DELETE', `/Groups/${group.id}`]] as const) {
      expectScimError(await scim(b.token, method, path), 404);
    }
    expectScimError(await scim(b.token, 'PATCH', `/Users/${user.id}`, { schemas: [PATCH], Operations: [{ op: 'replace', value: { active: false } }] }), 404);
    expectScimError(await scim(b.token, 'PUT', `/Groups/${group.id}`, { schemas: [GROUP], displayName: 'stolen' }), 404);
    // Nor can B put A's user in its own group.
    expectScimError(await scim(b.token, 'POST', '/Groups', { schemas: [GROUP], displayName: 'B team', members: [{ value: user.id }] }), 400, 'invalidValue');
    const listed = (await scim(b.token, 'GET', `/Users?filter=${encodeURIComponent(`userName eq "${emailIn(a, 'alice')}"`)}`)).json();
    expect(listed.totalResults).toBe(0);
    expect((await scim(a.token, 'GET', `/Users/${user.id}`)).json().active).toBe(true);
  });

  it('bounds the body (413) and rate-limits per token (429 with Retry-After), in the SCIM shape', async () => {
    const tn = await tenant();
    const big = userBody(emailIn(tn, 'big'), { title: 'x'.repeat(1_100_000) });
    expectScimError(await scim(tn.token, 'POST', '/Users', big), 413);
    const limited = await buildTestApp({ env: { ...ENV, SERVICE_RATE_LIMIT_SCIM_PER_MINUTE: '2' } });
    try {
      const org = await seedOrg(limited.database);
      const k = await admin.createApiKey(limited.database.db, { type: 'cli' }, { org: org.organisationId, userEmail: org.ownerEmail, scopes: ['scim:manage'], kind: 'scim' });
      const get = () => limited.app.inject({ method: 'GET', url: `${SCIM}/Users`, headers: bearer(k.token) });
      expect((await get()).statusCode).toBe(200);
      expect((await get()).statusCode).toBe(200);
      const res = await get();
      expectScimError(res, 429);
      expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
    } finally {
      await limited.close();
    }
  });
});

describe('SCIM users', () => {
  it('creates a member with meta, Location and ETag; a second userName in another case is 409 uniqueness', async () => {
    const tn = await tenant();
    const res = await scim(tn.token, 'POST', '/Users', userBody(emailIn(tn, 'Bea'), { externalId: 'okta-00u1', title: 'NOC engineer' }));
    expect(res.statusCode).toBe(201);
    const u = res.json();
    expect(u).toMatchObject({ schemas: [USER], userName: emailIn(tn, 'Bea'), externalId: 'okta-00u1', title: 'NOC engineer', active: true, groups: [], name: { givenName: 'Ada', familyName: 'Lovelace' } });
    expect(u.meta).toMatchObject({ resourceType: 'User', location: `http://surveyor.test${SCIM}/Users/${u.id}`, version: 'W/"1"' });
    expect(res.headers.location).toBe(u.meta.location);
    expect(res.headers.etag).toBe('W/"1"');
    expect(u.password).toBeUndefined();
    // Neither the token nor a pushed password reaches the log.
    await createUser(tn, emailIn(tn, 'logged'), { password: 'a pushed secret password' });
    expect(t.logs.join('\n')).not.toContain('a pushed secret password');
    expect(t.logs.join('\n')).not.toContain(tn.token);
    expectScimError(await scim(tn.token, 'POST', '/Users', userBody(emailIn(tn, 'bea').toUpperCase())), 409, 'uniqueness');
    expectScimError(await scim(tn.token, 'POST', '/Users', { schemas: [USER], userName: 'not-an-email' }), 400, 'invalidValue');
    expectScimError(await scim(tn.token, 'POST', '/Users', { schemas: [USER] }), 400, 'invalidValue');
    expectScimError(await scim(tn.token, 'POST', '/Users', { userName: emailIn(tn, 'noschema') }), 400, 'invalidSyntax');
    expectScimError(await t.app.inject({ method: 'POST', url: `${SCIM}/Users`, headers: { ...bearer(tn.token), 'content-type': 'application/scim+json' }, payload: '{"schemas":' }), 400, 'invalidSyntax');
    // The member exists in Settings → Members as provisioned, viewer by default; an audit row and a member.created event.
    const members = await t.database.db.selectFrom('memberships').select(['role', 'deactivated_at']).where('organisation_id', '=', tn.org.organisationId).where('user_id', '=', u.id).executeTakeFirstOrThrow();
    expect(members).toEqual({ role: 'viewer', deactivated_at: null });
    const audit = await t.database.db.selectFrom('audit_log').select(['actor_type', 'actor_key_id']).where('organisation_id', '=', tn.org.organisationId).where('action', '=', 'scim.user.created').where('target_id', '=', u.id).execute();
    expect(audit).toHaveLength(1);
    expect(audit[0]!.actor_type).toBe('key');
    const events = await t.database.db.selectFrom('events').select(['kind', 'data']).where('organisation_id', '=', tn.org.organisationId).where('subject_id', '=', u.id).execute();
    expect(events.map((e) => e.kind)).toEqual(['member.created']);
  });

  it('provisions a person whose pushed password is under 12 characters, without setting it (the audit row says so)', async () => {
    const tn = await tenant();
    const u = await createUser(tn, emailIn(tn, 'shortpw'), { password: '1mz050nq' }); // Okta's documented example
    await expect(login(t.app, emailIn(tn, 'shortpw'), '1mz050nq')).rejects.toThrow(/401/);
    const audit = await t.database.db.selectFrom('audit_log').select('changes').where('action', '=', 'scim.user.created').where('target_id', '=', u.id).executeTakeFirstOrThrow();
    expect(audit.changes).toMatchObject({ password: 'not set: shorter than 12 characters' });
    expect(JSON.stringify(audit.changes)).not.toContain('1mz050nq');
  });

  it('answers two concurrent creations of one userName with one 201 and one 409 uniqueness, never a 500', async () => {
    const tn = await tenant();
    const results = await Promise.all([1, 2, 3].map(() => scim(tn.token, 'POST', '/Users', userBody(emailIn(tn, 'race')))));
    expect(results.map((r) => r.statusCode).sort()).toEqual([201, 409, 409]);
    for (const r of results.filter((x) => x.statusCode === 409)) expectScimError(r, 409, 'uniqueness');
    const groups = await Promise.all([1, 2].map(() => scim(tn.token, 'POST', '/Groups', { schemas: [GROUP], displayName: 'Racers' })));
    expect(groups.map((r) => r.statusCode).sort()).toEqual([201, 409]);
  });

  it('lists only the users it provisioned, and takes over a member added by hand (same email) instead of refusing it', async () => {
    const tn = await tenant();
    const ed = await seedMemberWithKey(t.database, tn.org, 'editor', ['inventory:read']);
    // Members added by hand (the owner too) are not the provider's to see or delete.
    expect((await scim(tn.token, 'GET', '/Users')).json()).toMatchObject({ totalResults: 0, Resources: [] });
    expectScimError(await scim(tn.token, 'GET', `/Users/${ed.userId}`), 404);
    expectScimError(await scim(tn.token, 'DELETE', `/Users/${tn.org.ownerId}`), 404);
    const u = await createUser(tn, ed.email);
    expect(u.id).toBe(ed.userId);
    expect((await scim(tn.token, 'GET', '/Users')).json().totalResults).toBe(1);
    // No mapping set: SCIM leaves the role as it was.
    const m = await t.database.db.selectFrom('memberships').select('role').where('organisation_id', '=', tn.org.organisationId).where('user_id', '=', ed.userId).executeTakeFirstOrThrow();
    expect(m.role).toBe('editor');
  });

  it('filters with eq, ne, co, sw, pr, gt/lt on meta.lastModified, and/or/not, grouping and value paths, names in any case', async () => {
    const tn = await tenant();
    const a = await createUser(tn, emailIn(tn, 'anna'), { externalId: 'ext-a', emails: [{ value: emailIn(tn, 'anna'), type: 'work', primary: true }, { value: 'anna@home.example', type: 'home' }] });
    const b = await createUser(tn, emailIn(tn, 'bob'), { title: 'Network admin' });
    const ids = async (filter: string) => {
      const res = await scim(tn.token, 'GET', `/Users?filter=${encodeURIComponent(filter)}`);
      expect(res.statusCode, `${filter}: ${res.body}`).toBe(200);
      return (res.json().Resources as { id: string }[]).map((r) => r.id).filter((id) => id === a.id || id === b.id).sort();
    };
    const both = [a.id, b.id].sort();
    expect(await ids(`userName eq "${emailIn(tn, 'ANNA')}"`)).toEqual([a.id]);
    expect(await ids(`USERNAME Eq "${emailIn(tn, 'anna')}"`)).toEqual([a.id]);
    expect(await ids(`urn:ietf:params:scim:schemas:core:2.0:User:userName eq "${emailIn(tn, 'bob')}"`)).toEqual([b.id]);
    expect(await ids(`externalId eq "ext-a"`)).toEqual([a.id]);
    expect(await ids(`externalId eq "EXT-A"`)).toEqual([]); // externalId is caseExact
    expect(await ids(`userName ne "${emailIn(tn, 'anna')}"`)).toEqual([b.id]);
    expect(await ids(`userName co "bob@"`)).toEqual([b.id]);
    expect(await ids(`userName sw "ANN"`)).toEqual([a.id]);
    expect(await ids('title pr')).toEqual([b.id]);
    expect(await ids('not (title pr)')).toEqual([a.id]);
    expect(await ids(`title pr or externalId eq "ext-a"`)).toEqual(both);
    expect(await ids(`(title pr and active eq true) or (userName sw "zz")`)).toEqual([b.id]);
    expect(await ids(`emails[type eq "home" and value co "home.example"]`)).toEqual([a.id]);
    expect(await ids(`emails[type eq "work"].value eq "${emailIn(tn, 'bob')}"`)).toEqual([b.id]);
    expect(await ids(`emails.value eq "anna@home.example"`)).toEqual([a.id]);
    expect(await ids(`meta.lastModified gt "2000-01-01T00:00:00Z"`)).toEqual(both);
    expect(await ids(`meta.lastModified lt "2000-01-01T00:00:00Z"`)).toEqual([]);
    expect(await ids(`meta.lastModified ge "${a.meta.lastModified.replace('Z', '+00:00')}"`)).toContain(b.id);
    expect(await ids(`active eq "true"`)).toEqual(both);

    for (const bad of ['userName eq', 'userName zz "x"', 'nosuch eq "x"', 'active gt true', 'emails co "x"', 'meta.created gt "yesterday"', '((userName eq "x"', 'userName eq "x" and', `name.nope eq "x"`, 'password eq "x"', 'x'.repeat(3000)]) {
      expectScimError(await scim(tn.token, 'GET', `/Users?filter=${encodeURIComponent(bad)}`), 400, 'invalidFilter');
    }
  });

  it('pages with startIndex and count (capped at 200), and projects with attributes and excludedAttributes', async () => {
    const tn = await tenant();
    for (const n of ['p1', 'p2', 'p3', 'p4']) await createUser(tn, emailIn(tn, n));
    const page = (await scim(tn.token, 'GET', '/Users?startIndex=2&count=2')).json();
    expect([page.totalResults, page.startIndex, page.itemsPerPage, page.Resources.length]).toEqual([4, 2, 2, 2]);
    expect(page.schemas).toEqual(['urn:ietf:params:scim:api:messages:2.0:ListResponse']);
    const zero = (await scim(tn.token, 'GET', '/Users?count=0')).json();
    expect([zero.totalResults, zero.itemsPerPage, zero.Resources]).toEqual([4, 0, []]);
    expect((await scim(tn.token, 'GET', '/Users?count=100000&startIndex=-3')).json()).toMatchObject({ startIndex: 1, itemsPerPage: 4 });
    expectScimError(await scim(tn.token, 'GET', '/Users?count=ten'), 400, 'invalidValue');

    const only = (await scim(tn.token, 'GET', `/Users?attributes=userName,name.givenName&filter=${encodeURIComponent(`userName eq "${emailIn(tn, 'p1')}"`)}`)).json().Resources[0];
    expect(Object.keys(only).sort()).toEqual(['id', 'name', 'schemas', 'userName']);
    expect(only.name).toEqual({ givenName: 'Ada' });
    const without = (await scim(tn.token, 'GET', `/Users?excludedAttributes=emails,meta,name.familyName&filter=${encodeURIComponent(`userName eq "${emailIn(tn, 'p1')}"`)}`)).json().Resources[0];
    expect(without.emails).toBeUndefined();
    expect(without.meta).toBeUndefined();
    expect(without.name).toEqual({ givenName: 'Ada' });
    expect(without.id).toBeDefined();
  });

  it('honours If-Match: a stale version is 412 and changes nothing; the current one or * passes', async () => {
    const tn = await tenant();
    const u = await createUser(tn, emailIn(tn, 'etag'));
    const put = (version: string, title: string) => scim(tn.token, 'PUT', `/Users/${u.id}`, userBody(emailIn(tn, 'etag'), { title }), { 'if-match': version });
    const ok = await put('W/"1"', 'first');
    expect([ok.statusCode, ok.headers.etag, ok.json().title]).toEqual([200, 'W/"2"', 'first']);
    expectScimError(await put('W/"1"', 'stale'), 412);
    expect((await scim(tn.token, 'GET', `/Users/${u.id}`)).json().title).toBe('first');
    expect((await put('*', 'any')).statusCode).toBe(200);
    // The same content again writes nothing: the version stays.
    const again = await put('W/"3"', 'any');
    expect([again.statusCode, again.headers.etag]).toEqual([200, 'W/"3"']);
  });

  it('deactivates (Okta\'s replace with a value object): sessions end and keys stop at once; reactivation restores them', async () => {
    const tn = await tenant();
    const person = emailIn(tn, 'leaver');
    const u = await createUser(tn, person, { password: PASSWORD });
    const key = await admin.createApiKey(t.database.db, { type: 'cli' }, { org: tn.org.organisationId, userEmail: person, scopes: ['inventory:read'] });
    const s = await login(t.app, person);
    const me = () => t.app.inject({ method: 'GET', url: '/api/v1/auth/me', headers: { cookie: s.cookie } });
    const hosts = () => t.app.inject({ method: 'GET', url: '/api/v1/hosts', headers: bearer(key.token) });
    expect([(await me()).statusCode, (await hosts()).statusCode]).toEqual([200, 200]);

    const off = await scim(tn.token, 'PATCH', `/Users/${u.id}`, { schemas: [PATCH], Operations: [{ op: 'replace', value: { active: false } }] });
    expect([off.statusCode, off.json().active]).toEqual([200, false]);
    expect([(await me()).statusCode, (await hosts()).statusCode]).toEqual([401, 401]);
    await expect(login(t.app, person)).rejects.toThrow(/401/);

    const on = await scim(tn.token, 'PATCH', `/Users/${u.id}`, { schemas: [PATCH], Operations: [{ op: 'replace', value: { active: true } }] });
    expect([on.statusCode, on.json().active]).toEqual([200, true]);
    expect((await hosts()).statusCode).toBe(200);
    expect((await login(t.app, person)).body.role).toBe('viewer');
    const kinds = (await t.database.db.selectFrom('events').select('kind').where('subject_id', '=', u.id).orderBy('occurred_at').execute()).map((e) => e.kind);
    expect(kinds).toEqual(['member.created', 'member.deactivated', 'member.reactivated']);
  });

  it('applies Entra\'s PATCH: capitalised ops, "False" strings, several operations, value paths and the enterprise extension', async () => {
    const tn = await tenant();
    const u = await createUser(tn, emailIn(tn, 'entra'));
    const res = await scim(tn.token, 'PATCH', `/Users/${u.id}`, {
      schemas: [PATCH],
      Operations: [
        { op: 'Replace', path: 'displayName', value: 'Entra Person' },
        { op: 'Add', path: 'externalId', value: 'aad-1' },
        { op: 'Replace', path: 'emails[type eq "work"].value', value: emailIn(tn, 'entra') },
        { op: 'Add', path: 'phoneNumbers[type eq "mobile"].value', value: '+44 20 7946 0000' },
        { op: 'Replace', path: 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:department', value: 'Network' },
        { op: 'Add', path: 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:manager', value: 'mgr-1' },
        { op: 'Replace', path: 'Name.GivenName', value: 'Grace' },
        { op: 'Replace', path: 'active', value: 'False' },
      ],
    });
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(body).toMatchObject({
      displayName: 'Entra Person', externalId: 'aad-1', active: false, name: { givenName: 'Grace', familyName: 'Lovelace' },
      phoneNumbers: [{ type: 'mobile', value: '+44 20 7946 0000' }],
      'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User': { department: 'Network', manager: { value: 'mgr-1' } },
    });
    expect(body.schemas).toEqual([USER, 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User']);
    expect((await scim(tn.token, 'PATCH', `/Users/${u.id}`, { schemas: [PATCH], Operations: [{ op: 'Replace', path: 'active', value: 'True' }] })).json().active).toBe(true);
    const byDepartment = (await scim(tn.token, 'GET', `/Users?filter=${encodeURIComponent('urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:department eq "network" and name.givenName eq "grace"')}`)).json();
    expect(byDepartment.Resources.map((r: { id: string }) => r.id)).toEqual([u.id]);

    expectScimError(await scim(tn.token, 'PATCH', `/Users/${u.id}`, { schemas: [PATCH], Operations: [{ op: 'replace', path: 'id', value: 'x' }] }), 400, 'mutability');
    expectScimError(await scim(tn.token, 'PATCH', `/Users/${u.id}`, { schemas: [PATCH], Operations: [{ op: 'replace', path: 'groups', value: [] }] }), 400, 'mutability');
    expectScimError(await scim(tn.token, 'PATCH', `/Users/${u.id}`, { schemas: [PATCH], Operations: [{ op: 'move', path: 'title', value: 'x' }] }), 400, 'invalidSyntax');
    expectScimError(await scim(tn.token, 'PATCH', `/Users/${u.id}`, { schemas: [PATCH], Operations: [{ op: 'replace', path: 'nosuch', value: 'x' }] }), 400, 'invalidPath');
    expectScimError(await scim(tn.token, 'PATCH', `/Users/${u.id}`, { schemas: [PATCH], Operations: [{ op: 'replace', path: 'active', value: 'maybe' }] }), 400, 'invalidValue');
    expectScimError(await scim(tn.token, 'PATCH', `/Users/${u.id}`, { schemas: [PATCH], Operations: [] }), 400, 'invalidSyntax');
    expectScimError(await scim(tn.token, 'PATCH', `/Users/${u.id}`, { Operations: [{ op: 'replace', path: 'title', value: 'x' }] }), 400, 'invalidSyntax');
    // A refused PATCH changed nothing.
    expect((await scim(tn.token, 'GET', `/Users/${u.id}`)).json()).toMatchObject({ displayName: 'Entra Person', active: true, meta: { version: body.meta.version.replace(/\d+/, (n: string) => String(Number(n) + 1)) } });
  });

  it('deletes a member: the membership, sessions and keys go; the person\'s other organisation keeps them', async () => {
    const tn = await tenant();
    const other = await tenant();
    const person = emailIn(tn, 'twohomes');
    const u = await createUser(tn, person, { password: PASSWORD });
    await admin.createUser(t.database.db, { type: 'cli' }, { org: other.org.organisationId, email: person, role: 'editor' });
    const key = await admin.createApiKey(t.database.db, { type: 'cli' }, { org: tn.org.organisationId, userEmail: person, scopes: ['inventory:read'] });
    const keyElsewhere = await admin.createApiKey(t.database.db, { type: 'cli' }, { org: other.org.organisationId, userEmail: person, scopes: ['inventory:read'] });
    const del = await scim(tn.token, 'DELETE', `/Users/${u.id}`);
    expect(del.statusCode).toBe(204);
    expectScimError(await scim(tn.token, 'GET', `/Users/${u.id}`), 404);
    expectScimError(await scim(tn.token, 'DELETE', `/Users/${u.id}`), 404);
    const gone = await t.app.inject({ method: 'GET', url: '/api/v1/hosts', headers: bearer(key.token) });
    expect(gone.statusCode, gone.body).toBe(401);
    expect((await t.app.inject({ method: 'GET', url: '/api/v1/hosts', headers: bearer(keyElsewhere.token) })).statusCode).toBe(200);
    const ev = await t.database.db.selectFrom('events').select('data').where('organisation_id', '=', tn.org.organisationId).where('kind', '=', 'member.deleted').where('subject_id', '=', u.id).executeTakeFirstOrThrow();
    expect(ev.data).toMatchObject({ email: person, keysRemoved: 1, via: 'scim' });
  });

  it('never leaves the organisation without an active owner', async () => {
    const tn = await tenant();
    const owner = await createUser(tn, tn.org.ownerEmail); // the provider takes the owner over
    expectScimError(await scim(tn.token, 'PATCH', `/Users/${owner.id}`, { schemas: [PATCH], Operations: [{ op: 'replace', value: { active: false } }] }), 409);
    expectScimError(await scim(tn.token, 'DELETE', `/Users/${owner.id}`), 409);
    expect((await scim(tn.token, 'GET', `/Users/${owner.id}`)).json().active).toBe(true);
  });
});

describe('SCIM groups and roles', () => {
  async function owner(tn: Tenant) {
    return login(t.app, tn.org.ownerEmail);
  }
  async function setMappings(tn: Tenant, mappings: { group: string; role: string }[]) {
    const s = await owner(tn);
    return t.app.inject({ method: 'PUT', url: '/api/v1/admin/scim/mappings', headers: { cookie: s.cookie, 'x-csrf-token': s.csrfToken }, payload: { mappings } });
  }
  const roleOf = async (tn: Tenant, userId: string) =>
    (await t.database.db.selectFrom('memberships').select('role').where('organisation_id', '=', tn.org.organisationId).where('user_id', '=', userId).executeTakeFirstOrThrow()).role;

  it('maps groups to roles: the highest wins, none gives viewer, owners are never changed, a rename or delete moves roles', async () => {
    const tn = await tenant();
    const a = await createUser(tn, emailIn(tn, 'ga'));
    const b = await createUser(tn, emailIn(tn, 'gb'));
    const ownerId = (await createUser(tn, tn.org.ownerEmail)).id;
    const ops = await scim(tn.token, 'POST', '/Groups', { schemas: [GROUP], displayName: 'NetOps', externalId: 'okta-g1', members: [{ value: a.id }, { value: b.id }, { value: ownerId }] });
    expect(ops.statusCode, ops.body).toBe(201);
    const admins = (await scim(tn.token, 'POST', '/Groups', { schemas: [GROUP], displayName: 'Net Admins', members: [{ value: a.id }] })).json();
    expect(ops.json()).toMatchObject({ schemas: [GROUP], displayName: 'NetOps', externalId: 'okta-g1', meta: { resourceType: 'Group', version: 'W/"1"' } });
    expect(ops.json().members.map((m: { value: string }) => m.value).sort()).toEqual([a.id, b.id, ownerId].sort());
    // No mapping: roles untouched.
    expect([await roleOf(tn, a.id), await roleOf(tn, b.id), await roleOf(tn, ownerId)]).toEqual(['viewer', 'viewer', 'owner']);

    const put = await setMappings(tn, [{ group: 'netops', role: 'editor' }, { group: admins.id, role: 'admin' }]);
    expect(put.statusCode, put.body).toBe(200);
    expect(put.json().groups.map((g: { displayName: string; role: string; members: number }) => [g.displayName, g.role, g.members])).toEqual([['Net Admins', 'admin', 1], ['NetOps', 'editor', 3]]);
    expect([await roleOf(tn, a.id), await roleOf(tn, b.id), await roleOf(tn, ownerId)]).toEqual(['admin', 'editor', 'owner']);

    // Okta removes a from Net Admins: back to editor (NetOps).
    const rm = await scim(tn.token, 'PATCH', `/Groups/${admins.id}?attributes=members`, { schemas: [PATCH], Operations: [{ op: 'remove', path: `members[value eq "${a.id}"]` }] });
    expect([rm.statusCode, rm.json().members]).toEqual([200, []]);
    expect(await roleOf(tn, a.id)).toBe('editor');
    // Okta renames NetOps with the id in the value: the mapping names the old name, so its members fall to viewer.
    const renamed = await scim(tn.token, 'PATCH', `/Groups/${ops.json().id}?excludedAttributes=members`, { schemas: [PATCH], Operations: [{ op: 'replace', value: { id: ops.json().id, displayName: 'Network Operations' } }] });
    expect([renamed.statusCode, renamed.json().displayName, renamed.json().id]).toEqual([200, 'Network Operations', ops.json().id]);
    expect([await roleOf(tn, a.id), await roleOf(tn, b.id), await roleOf(tn, ownerId)]).toEqual(['viewer', 'viewer', 'owner']);
    // Entra adds a back to Net Admins ("Add" with a value array), then the group is deleted.
    const added = await scim(tn.token, 'PATCH', `/Groups/${admins.id}`, { schemas: [PATCH], Operations: [{ op: 'Add', path: 'members', value: [{ value: a.id }] }] });
    expect([added.statusCode, added.body, added.headers.etag]).toEqual([204, '', 'W/"3"']);
    expect(await roleOf(tn, a.id)).toBe('admin');
    expect((await scim(tn.token, 'DELETE', `/Groups/${admins.id}`)).statusCode).toBe(204);
    expect(await roleOf(tn, a.id)).toBe('viewer');
    // The user's groups attribute follows.
    expect((await scim(tn.token, 'GET', `/Users/${a.id}`)).json().groups).toEqual([{ value: ops.json().id, $ref: `http://surveyor.test${SCIM}/Groups/${ops.json().id}`, display: 'Network Operations', type: 'direct' }]);
    const audit = await t.database.db.selectFrom('audit_log').select('action').where('organisation_id', '=', tn.org.organisationId).where('action', 'like', 'scim.%').execute();
    expect(new Set(audit.map((x) => x.action))).toEqual(new Set(['scim.user.created', 'scim.group.created', 'scim.group.updated', 'scim.group.deleted', 'scim.mappings.updated']));
  });

  it('reactivation restores access with the current groups; a mapped member\'s role is not changed by hand', async () => {
    const tn = await tenant();
    const u = await createUser(tn, emailIn(tn, 'back'), { password: PASSWORD });
    const g = (await scim(tn.token, 'POST', '/Groups', { schemas: [GROUP], displayName: 'Editors', members: [] })).json();
    expect((await setMappings(tn, [{ group: 'Editors', role: 'editor' }])).statusCode).toBe(200);
    await scim(tn.token, 'PATCH', `/Users/${u.id}`, { schemas: [PATCH], Operations: [{ op: 'replace', path: 'active', value: false }] });
    await scim(tn.token, 'PATCH', `/Groups/${g.id}`, { schemas: [PATCH], Operations: [{ op: 'add', path: 'members', value: [{ value: u.id, display: 'back' }] }] });
    await scim(tn.token, 'PATCH', `/Users/${u.id}`, { schemas: [PATCH], Operations: [{ op: 'replace', path: 'active', value: true }] });
    expect((await login(t.app, emailIn(tn, 'back'))).body.role).toBe('editor');

    const s = await owner(tn);
    const res = await t.app.inject({ method: 'PATCH', url: `/api/v1/admin/members/${u.id}`, headers: { cookie: s.cookie, 'x-csrf-token': s.csrfToken }, payload: { role: 'admin' } });
    expect([res.statusCode, res.json().code]).toEqual([409, 'conflict']);
    const members = (await t.app.inject({ method: 'GET', url: '/api/v1/admin/members', headers: { cookie: s.cookie } })).json().data;
    expect(members.find((m: { userId: string }) => m.userId === u.id)).toMatchObject({ role: 'editor', active: true, managedBy: 'scim' });
  });

  it('refuses a group name taken (409 uniqueness), an unknown member (400), and keeps PUT exact', async () => {
    const tn = await tenant();
    const a = await createUser(tn, emailIn(tn, 'pa'));
    const b = await createUser(tn, emailIn(tn, 'pb'));
    const g = (await scim(tn.token, 'POST', '/Groups', { schemas: [GROUP], displayName: 'Exact', members: [{ value: a.id }] })).json();
    expectScimError(await scim(tn.token, 'POST', '/Groups', { schemas: [GROUP], displayName: 'EXACT' }), 409, 'uniqueness');
    expectScimError(await scim(tn.token, 'POST', '/Groups', { schemas: [GROUP], displayName: 'Ghosts', members: [{ value: '00000000-0000-4000-8000-000000000000' }] }), 400, 'invalidValue');
    expectScimError(await scim(tn.token, 'POST', '/Groups', { schemas: [GROUP], displayName: 'Bad', members: [{ value: 'not-an-id' }] }), 400, 'invalidValue');
    expectScimError(await scim(tn.token, 'POST', '/Groups', { schemas: [GROUP] }), 400, 'invalidValue');
    const put = await scim(tn.token, 'PUT', `/Groups/${g.id}`, { schemas: [GROUP], displayName: 'Exact', members: [{ value: b.id }] });
    expect(put.json().members.map((m: { value: string }) => m.value)).toEqual([b.id]);
    const list = (await scim(tn.token, 'GET', `/Groups?excludedAttributes=members&filter=${encodeURIComponent('displayName eq "exact"')}`)).json();
    expect(list.totalResults).toBe(1);
    expect(list.Resources[0].members).toBeUndefined();
    const byMember = (await scim(tn.token, 'GET', `/Groups?filter=${encodeURIComponent(`members[value eq "${b.id}"]`)}`)).json();
    expect(byMember.Resources.map((r: { id: string }) => r.id)).toEqual([g.id]);
  });

  it('Settings → SCIM: an admin mints a token shown once with the base URL; only an owner sets the mapping; a group named twice is 400', async () => {
    const tn = await tenant();
    const adm = await seedMemberWithKey(t.database, tn.org, 'admin', ['inventory:read']);
    const s = await login(t.app, adm.email);
    const headers = { cookie: s.cookie, 'x-csrf-token': s.csrfToken };
    const minted = await t.app.inject({ method: 'POST', url: '/api/v1/admin/scim/tokens', headers, payload: { name: 'Okta' } });
    expect(minted.statusCode).toBe(201);
    const tok = minted.json();
    expect(tok).toMatchObject({ kind: 'scim', scopes: ['scim:manage'], baseUrl: `http://surveyor.test${SCIM}`, name: 'Okta' });
    expect(tok.token).toMatch(/^svs_/);
    expect((await scim(tok.token, 'GET', '/ServiceProviderConfig')).statusCode).toBe(200);
    const settings = (await t.app.inject({ method: 'GET', url: '/api/v1/admin/scim', headers })).json();
    expect(settings.tokens.map((k: { id: string }) => k.id)).toContain(tok.id);
    expect(JSON.stringify(settings)).not.toContain(tok.token);
    const put = await t.app.inject({ method: 'PUT', url: '/api/v1/admin/scim/mappings', headers, payload: { mappings: [] } });
    expect([put.statusCode, put.json().code]).toEqual([403, 'forbidden']);
    const twice = await setMappings(tn, [{ group: 'Ops', role: 'viewer' }, { group: 'ops', role: 'admin' }]);
    expect([twice.statusCode, twice.json().code, twice.json().issues[0].path]).toEqual([400, 'validation_failed', 'body.mappings.1.group']);
    const owner = await setMappings(tn, [{ group: 'Ops', role: 'admin' }, { group: 'x', role: 'owner' }]);
    expect([owner.statusCode, owner.json().code]).toEqual([400, 'validation_failed']);
    const ed = await seedMemberWithKey(t.database, tn.org, 'editor', ['inventory:read']);
    const es = await login(t.app, ed.email);
    expect((await t.app.inject({ method: 'GET', url: '/api/v1/admin/scim', headers: { cookie: es.cookie } })).statusCode).toBe(403);
  });
});
