import { type IncomingMessage, type Server, type ServerResponse, createServer, request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { AiToolEvent } from '@surveyor/contract';
import type { HTTPMethods } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as admin from '../src/admin/admin.service.js';
import { type ChatRequest, type FakeOpenAI, type Turn, startFakeOpenAI } from './fakes/openai.js';
import { PASSWORD, type SeededOrg, type TestApp, TEST_DATABASE_URL, bearer, buildTestApp, login, seedMemberWithKey, seedOrg } from './helpers.js';

// Hardening of the SCIM surface and the inventory assistant (found by review): each test states a rule of the README
// ("SCIM provisioning", "The inventory assistant", "Members and roles") or spec 5 and fails where
// the code breaks it.

const SCIM = '/api/scim/v2';
const ENV = { SERVICE_RATE_LIMIT_LOGIN_PER_MINUTE: '1000', SERVICE_RATE_LIMIT_KEY_PER_MINUTE: '100000', SERVICE_RATE_LIMIT_ANON_PER_MINUTE: '100000', SERVICE_RATE_LIMIT_SCIM_PER_MINUTE: '100000' };
const USER = 'urn:ietf:params:scim:schemas:core:2.0:User';
const GROUP = 'urn:ietf:params:scim:schemas:core:2.0:Group';
const PATCH = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('review: SCIM', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await buildTestApp({ env: ENV });
  });
  afterAll(async () => {
    await t?.close();
  });

  async function scimToken(org: SeededOrg, userEmail = org.ownerEmail) {
    return (await admin.createScimToken(t.database.db, { type: 'cli' }, { org: org.organisationId, userEmail })).token;
  }
  function scim(token: string, method: HTTPMethods, path: string, body?: unknown, headers: Record<string, string> = {}) {
    return t.app.inject({
      method,
      url: `${SCIM}${path}`,
      headers: { ...bearer(token), ...(body !== undefined ? { 'content-type': 'application/scim+json' } : {}), ...headers },
      ...(body !== undefined ? { payload: JSON.stringify(body) } : {}),
    });
  }
  const userBody = (userName: string, extra: Record<string, unknown> = {}) => ({ schemas: [USER], userName, emails: [{ value: userName, type: 'work', primary: true }], active: true, ...extra });
  const tryLogin = (email: string, password: string) => t.app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email, password } });

  it('a SCIM token of organisation A cannot set the sign-in password of a person of organisation B (cross-tenant account takeover)', async () => {
    const a = await seedOrg(t.database);
    const b = await seedOrg(t.database);
    const tokenA = await scimToken(a);
    const chosen = 'attacker-chosen-password-1';
    // A's identity provider "provisions" B's owner, with a password (Okta's password sync field).
    const res = await scim(tokenA, 'POST', '/Users', userBody(b.ownerEmail, { password: chosen }));
    expect(res.statusCode, res.body).toBe(201);
    // README: a pushed password sets the password of a person NEW to Surveyor only; B's owner is not new.
    const intoB = await tryLogin(b.ownerEmail, chosen);
    expect(intoB.statusCode, `A's token set B's owner's password: signed in to ${intoB.json().organisation?.name}`).toBe(401);
    expect((await tryLogin(b.ownerEmail, PASSWORD)).statusCode).toBe(200);
  });

  it('an admin\'s SCIM token cannot set the owner\'s password (admin → owner escalation), neither by POST nor by a later PUT', async () => {
    const org = await seedOrg(t.database);
    const adm = await seedMemberWithKey(t.database, org, 'admin', ['inventory:read']);
    const token = await scimToken(org, adm.email);
    // Take the owner over (allowed by the README), no password.
    const taken = await scim(token, 'POST', '/Users', userBody(org.ownerEmail));
    expect(taken.statusCode, taken.body).toBe(201);
    const id = taken.json().id as string;
    // A PUT with a password: the owner is not a person new to Surveyor.
    const chosen = 'admin-knows-this-password';
    const put = await scim(token, 'PUT', `/Users/${id}`, userBody(org.ownerEmail, { password: chosen }));
    expect(put.statusCode, put.body).toBe(200);
    const asOwner = await tryLogin(org.ownerEmail, chosen);
    expect(asOwner.statusCode, `the admin's token reset the owner's password: signed in as role ${asOwner.json().role}`).toBe(401);
  });

  it('an admin\'s SCIM token cannot move the owner\'s sign-in email; an owner\'s token moves a member\'s', async () => {
    const org = await seedOrg(t.database);
    const adm = await seedMemberWithKey(t.database, org, 'admin', ['inventory:read']);
    const token = await scimToken(org, adm.email);
    const id = (await scim(token, 'POST', '/Users', userBody(org.ownerEmail))).json().id as string;
    const moved = `elsewhere@${org.name}.test`;
    expect((await scim(token, 'PUT', `/Users/${id}`, userBody(moved))).statusCode).toBe(200);
    expect((await tryLogin(org.ownerEmail, PASSWORD)).statusCode).toBe(200);
    expect((await tryLogin(moved, PASSWORD)).statusCode).toBe(401);
    const ownerToken = await scimToken(org);
    const member = (await scim(ownerToken, 'POST', '/Users', userBody(`old@${org.name}.test`))).json().id as string;
    expect((await scim(ownerToken, 'PUT', `/Users/${member}`, userBody(`new@${org.name}.test`))).statusCode).toBe(200);
    const email = await t.database.db.selectFrom('users').select('email').where('id', '=', member).executeTakeFirstOrThrow();
    expect(email.email).toBe(`new@${org.name}.test`);
  });

  it('Members: an owner cannot demote themself when the only other owner is deactivated by SCIM (no active owner left)', async () => {
    const org = await seedOrg(t.database);
    const second = `owner2@${org.name}.test`;
    await admin.createUser(t.database.db, { type: 'cli' }, { org: org.organisationId, email: second, role: 'owner', password: PASSWORD });
    const token = await scimToken(org);
    const u = await scim(token, 'POST', '/Users', userBody(second));
    expect(u.statusCode, u.body).toBe(201);
    const off = await scim(token, 'PATCH', `/Users/${u.json().id}`, { schemas: [PATCH], Operations: [{ op: 'replace', value: { active: false } }] });
    expect([off.statusCode, off.json().active]).toEqual([200, false]);
    // The first owner now demotes themself: the README says the last (active) owner cannot be demoted.
    const s = await login(t.app, org.ownerEmail);
    const res = await t.app.inject({ method: 'PATCH', url: `/api/v1/admin/members/${org.ownerId}`, headers: { cookie: s.cookie, 'x-csrf-token': s.csrfToken }, payload: { role: 'admin' } });
    const activeOwners = await t.database.db.selectFrom('memberships').select('user_id').where('organisation_id', '=', org.organisationId).where('role', '=', 'owner').where('deactivated_at', 'is', null).execute();
    expect({ status: res.statusCode, activeOwners: activeOwners.length }, res.body).toEqual({ status: 409, activeOwners: 1 });
  });

  it('PUT /Users where neither userName nor any email is an address is 400 invalidValue (README: one of them must be an address)', async () => {
    const org = await seedOrg(t.database);
    const token = await scimToken(org);
    const created = await scim(token, 'POST', '/Users', userBody(`someone@${org.name}.test`));
    expect(created.statusCode).toBe(201);
    const put = await scim(token, 'PUT', `/Users/${created.json().id}`, { schemas: [USER], userName: 'jdoe', emails: [{ value: 'not-an-address', type: 'work' }] });
    expect([put.statusCode, put.json().scimType], put.body).toEqual([400, 'invalidValue']);
  });

  it('PUT /Groups reads "Members" in any case, as it reads every other attribute name (RFC 7643 2.1): a capitalised key does not empty the group', async () => {
    const org = await seedOrg(t.database);
    const token = await scimToken(org);
    const u = (await scim(token, 'POST', '/Users', userBody(`cap@${org.name}.test`))).json().id as string;
    const g = await scim(token, 'POST', '/Groups', { schemas: [GROUP], displayName: 'Ops', members: [{ value: u }] });
    const put = await scim(token, 'PUT', `/Groups/${g.json().id}`, { schemas: [GROUP], DisplayName: 'Ops', Members: [{ Value: u }] });
    expect(put.statusCode, put.body).toBe(200);
    expect((put.json().members ?? []).map((m: { value: string }) => m.value)).toEqual([u]);
  });

  // PGlite has one connection, so transactions never overlap there; on PostgreSQL they do.
  it.runIf(TEST_DATABASE_URL)('concurrent group PATCHes (adds and removes at once, as providers push them) lose no change: a removed member stays removed', async () => {
    const org = await seedOrg(t.database);
    const token = await scimToken(org);
    const ids: string[] = [];
    for (let i = 0; i < 12; i++) ids.push((await scim(token, 'POST', '/Users', userBody(`m${i}@${org.name}.test`))).json().id as string);
    const g = await scim(token, 'POST', '/Groups', { schemas: [GROUP], displayName: 'Engineers', members: [] });
    expect(g.statusCode).toBe(201);
    const gid = g.json().id as string;
    // Half are added first; then the other half are added while the first half are removed, all at once.
    const op = (o: string, id: string) => scim(token, 'PATCH', `/Groups/${gid}`, { schemas: [PATCH], Operations: [o === 'add' ? { op: 'add', path: 'members', value: [{ value: id }] } : { op: 'remove', path: `members[value eq "${id}"]` }] });
    const [stay, join] = [ids.slice(0, 6), ids.slice(6)];
    for (const id of stay) expect((await op('add', id)).statusCode).toBe(204);
    const results = await Promise.all([...join.map((id) => op('add', id)), ...stay.slice(0, 3).map((id) => op('remove', id))]);
    expect(results.map((r) => r.statusCode).filter((s) => s !== 204), results.map((r) => r.body).join('\n')).toEqual([]);
    const members = ((await scim(token, 'GET', `/Groups/${gid}`)).json().members as { value: string }[] | undefined ?? []).map((m) => m.value).sort();
    const expected = [...stay.slice(3), ...join].sort();
    expect({ count: members.length, missing: expected.filter((x) => !members.includes(x)).length, extra: members.filter((x) => !expected.includes(x)).length }, 'every PATCH answered 204').toEqual({ count: expected.length, missing: 0, extra: 0 });
  });

  it.runIf(TEST_DATABASE_URL)('If-Match holds under concurrency: two PUTs naming the same version cannot both succeed', async () => {
    const org = await seedOrg(t.database);
    const token = await scimToken(org);
    const u = await scim(token, 'POST', '/Users', userBody(`race@${org.name}.test`));
    const { id, meta } = u.json() as { id: string; meta: { version: string } };
    const results = await Promise.all(['Alice', 'Bob', 'Carol', 'Dave'].map((title) => scim(token, 'PUT', `/Users/${id}`, userBody(`race@${org.name}.test`, { title }), { 'if-match': meta.version })));
    const codes = results.map((r) => r.statusCode).sort();
    expect(codes, `all answered ${JSON.stringify(codes)}; the stored version is now ${(await scim(token, 'GET', `/Users/${id}`)).json().meta.version}`).toEqual([200, 412, 412, 412]);
  });
});

// ————— The assistant —————

function parseSse(body: string) {
  return body
    .split('\n\n')
    .filter((b) => b.trim() !== '')
    .map((b) => ({ event: /^event: (.*)$/m.exec(b)?.[1] ?? 'message', data: JSON.parse(b.split('\n').filter((l) => l.startsWith('data: ')).map((l) => l.slice(6)).join('\n')) as Record<string, unknown> }));
}

describe('review: the assistant', () => {
  let fake: FakeOpenAI;
  let script: (r: ChatRequest, n: number) => Turn = () => ({ text: 'nothing' });
  let t: TestApp;
  let org: SeededOrg;
  beforeAll(async () => {
    fake = await startFakeOpenAI((r, n) => script(r, n));
    t = await buildTestApp({ env: { ...ENV, SERVICE_AI_BASE_URL: fake.baseUrl, SERVICE_AI_API_KEY: fake.apiKey, SERVICE_AI_MODEL: 'fake-model', SERVICE_AI_TIMEOUT_SECONDS: '2', SERVICE_AI_MAX_TOOL_ROUNDS: '3' } });
    org = await seedOrg(t.database);
  });
  afterAll(async () => {
    await t?.close();
    await fake?.close();
  });

  it('a viewer\'s tools read only what a viewer may read: daemons_and_jobs hands over the admin-only job status (GET /api/v1/admin/jobs is 403 for them)', async () => {
    const viewer = await seedMemberWithKey(t.database, org, 'viewer', ['inventory:read']);
    const vs = await login(t.app, viewer.email);
    const direct = await t.app.inject({ method: 'GET', url: '/api/v1/admin/jobs', headers: { cookie: vs.cookie } });
    expect(direct.statusCode).toBe(403);
    const before = fake.requests.length;
    script = (r) => (r.messages.some((m) => m.role === 'tool') ? { text: 'Here are the jobs.' } : { tools: [{ name: 'daemons_and_jobs', arguments: {} }] });
    const res = await t.app.inject({ method: 'POST', url: '/api/v1/ai/chat', headers: { cookie: vs.cookie, 'x-csrf-token': vs.csrfToken }, payload: { messages: [{ role: 'user', content: 'Which jobs failed, and with what error?' }] } });
    expect(res.statusCode).toBe(200);
    const toolResult = JSON.parse(fake.requests[before + 1]!.messages.find((m) => m.role === 'tool')!.content!) as { jobs?: unknown[] };
    expect(toolResult.jobs ?? [], `the viewer's assistant received ${toolResult.jobs?.length} job status rows`).toEqual([]);
  });

  it('a tool call whose arguments are JSON but not an object gives a tool event that still matches AiToolEvent (arguments is an object)', async () => {
    const s = await login(t.app, org.ownerEmail);
    script = (r) => (r.messages.some((m) => m.role === 'tool') ? { text: 'ok' } : { tools: [{ name: 'search_hosts', arguments: null as never }] });
    const res = await t.app.inject({ method: 'POST', url: '/api/v1/ai/chat', headers: { cookie: s.cookie, 'x-csrf-token': s.csrfToken }, payload: { messages: [{ role: 'user', content: 'hosts?' }] } });
    const tool = parseSse(res.body).find((e) => e.event === 'tool')!;
    expect(AiToolEvent.safeParse(tool.data).success, JSON.stringify(tool.data)).toBe(true);
  });

  it('a provider that stalls after the stream began ends the turn within SERVICE_AI_TIMEOUT_SECONDS: an error event, the turn recorded', async () => {
    // A provider that answers 200, sends one chunk, and then says nothing more.
    const open = new Set<ServerResponse>();
    const stalling: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
      req.resume();
      req.on('end', () => {
        open.add(res);
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(`data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta: { role: 'assistant', content: 'Hel' }, finish_reason: null }] })}\n\n`);
      });
    });
    await new Promise<void>((r) => stalling.listen(0, '127.0.0.1', r));
    const app = await buildTestApp({ env: { ...ENV, SERVICE_AI_BASE_URL: `http://127.0.0.1:${(stalling.address() as AddressInfo).port}/v1`, SERVICE_AI_MODEL: 'm', SERVICE_AI_TIMEOUT_SECONDS: '1' } });
    try {
      const o = await seedOrg(app.database);
      const s = await login(app.app, o.ownerEmail);
      const pending = app.app.inject({ method: 'POST', url: '/api/v1/ai/chat', headers: { cookie: s.cookie, 'x-csrf-token': s.csrfToken }, payload: { messages: [{ role: 'user', content: 'hi' }] } });
      const outcome = await Promise.race([pending.then((r) => ({ ended: true as const, r })), sleep(6_000).then(() => ({ ended: false as const }))]);
      const turns = await app.database.db.selectFrom('assistant_turns').select('outcome').where('organisation_id', '=', o.organisationId).execute();
      expect({ endedWithin6s: outcome.ended, turns: turns.map((x) => x.outcome) }).toEqual({ endedWithin6s: true, turns: ['upstream_timeout'] });
      if (outcome.ended) expect(parseSse(outcome.r.body).at(-1)).toMatchObject({ event: 'error', data: { code: 'upstream_timeout' } });
    } finally {
      for (const res of open) res.destroy(); // lets the hung request end, so the app can close
      stalling.closeAllConnections();
      await new Promise<void>((r) => stalling.close(() => r()));
      await sleep(200);
      await app.close();
    }
  }, 20_000);

  it('a browser that leaves mid-stream: no unhandled error, the provider call is cancelled, the turn is recorded as aborted', async () => {
    const errors: unknown[] = [];
    const onError = (e: unknown) => errors.push(e);
    process.on('uncaughtException', onError);
    process.on('unhandledRejection', onError);
    let providerClosedEarly = false;
    const slow: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        let i = 0;
        const timer = setInterval(() => {
          if (i++ >= 40) {
            clearInterval(timer);
            res.end('data: [DONE]\n\n');
            return;
          }
          res.write(`data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta: { content: `word${i} ` }, finish_reason: null }] })}\n\n`);
        }, 50);
        res.on('close', () => {
          if (i < 40) providerClosedEarly = true;
          clearInterval(timer);
        });
      });
    });
    await new Promise<void>((r) => slow.listen(0, '127.0.0.1', r));
    const app = await buildTestApp({ env: { ...ENV, SERVICE_AI_BASE_URL: `http://127.0.0.1:${(slow.address() as AddressInfo).port}/v1`, SERVICE_AI_MODEL: 'm', SERVICE_AI_TIMEOUT_SECONDS: '5' } });
    try {
      const o = await seedOrg(app.database);
      const s = await login(app.app, o.ownerEmail);
      const address = await app.app.listen({ port: 0, host: '127.0.0.1' });
      const body = JSON.stringify({ messages: [{ role: 'user', content: 'hi' }] });
      await new Promise<void>((resolve, reject) => {
        const req = httpRequest(`${address}/api/v1/ai/chat`, { method: 'POST', headers: { cookie: s.cookie, 'x-csrf-token': s.csrfToken, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, (res) => {
          res.once('data', () => {
            req.destroy(); // the browser tab closes after the first delta
            resolve();
          });
        });
        req.on('error', () => undefined);
        req.setTimeout(5_000, () => reject(new Error('no delta')));
        req.end(body);
      });
      await sleep(1_000);
      const turns = await app.database.db.selectFrom('assistant_turns').select('outcome').where('organisation_id', '=', o.organisationId).execute();
      expect({ errors: errors.map(String), providerClosedEarly, turns: turns.map((x) => x.outcome) }).toEqual({ errors: [], providerClosedEarly: true, turns: ['aborted'] });
    } finally {
      process.off('uncaughtException', onError);
      process.off('unhandledRejection', onError);
      slow.closeAllConnections();
      await new Promise<void>((r) => slow.close(() => r()));
      await app.close();
    }
  }, 20_000);
});
