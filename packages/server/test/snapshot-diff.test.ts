import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { contentItems, diffContents, gunzipped } from '../src/snapshots/diff.js';
import { findSnapshot, readContent } from '../src/snapshots/snapshots.repo.js';
import { type SeededOrg, type TestApp, bearer, buildTestApp, login, seedMemberWithKey, seedOrg } from './helpers.js';
import { addCertificate, addHost, addHosts, addService, addSite, addVulnerability } from './fixtures.js';

// Issue 15: GET /api/v1/snapshots/{id}/diff?against= — the diff of two snapshots' stored contents,
// on real snapshots (POST /api/v1/snapshots) taken before and after real changes to the inventory.

const ENV = { SERVICE_RATE_LIMIT_LOGIN_PER_MINUTE: '1000', SERVICE_RATE_LIMIT_KEY_PER_MINUTE: '100000', SERVICE_RATE_LIMIT_ANON_PER_MINUTE: '100000' };
const ZERO = { added: 0, removed: 0, changed: 0 };
const ONE_EACH = { added: 1, removed: 1, changed: 1 };

type Session = Awaited<ReturnType<typeof login>>;
type Member = Awaited<ReturnType<typeof seedMemberWithKey>>;
type Change = { section: string; kind: string; id: string; before: any; after: any; fields: { field: string; from: unknown; to: unknown }[] };

let t: TestApp;
let org: SeededOrg;
let editor: Member;
let viewer: Session;
let other: SeededOrg;
let otherEditor: Member;
let siteA: string;
/** Snapshots: before and after the changes, a second one after (nothing changed), another organisation's. */
let before: string;
let after: string;
let afterAgain: string;
let theirs: string;
/** The entities changed between `before` and `after`, by role. */
type Role = `${'added' | 'removed'}${'Host' | 'Service' | 'Cert' | 'Vuln'}` | 'renamedHost' | 'changedService' | 'changedCert' | 'changedVuln';
const ids = {} as Record<Role, string>;

async function snapshot(token: string, body: object = {}) {
  const res = await t.app.inject({ method: 'POST', url: '/api/v1/snapshots', headers: bearer(token), payload: body });
  expect(res.statusCode, res.body).toBe(201);
  return res.json().id as string;
}

function diff(id: string, query: string, s: Session = viewer) {
  return t.app.inject({ method: 'GET', url: `/api/v1/snapshots/${id}/diff${query}`, headers: { cookie: s.cookie } });
}

async function diffOk(id: string, query: string) {
  const res = await diff(id, query);
  expect(res.statusCode, res.body).toBe(200);
  return res.json() as { snapshot: { id: string }; against: { id: string }; note: string | null; counts: Record<string, typeof ZERO>; changes: Change[]; nextCursor: string | null };
}

/** Every change, walking the pages with `limit`. */
async function allChanges(id: string, against: string, limit: number, filters = '') {
  const out: Change[] = [];
  let cursor: string | null = null;
  for (let page = 0; page < 100; page++) {
    const body = await diffOk(id, `?against=${against}&limit=${limit}${filters}${cursor ? `&cursor=${cursor}` : ''}`);
    expect(body.changes.length).toBeLessThanOrEqual(limit);
    out.push(...body.changes);
    cursor = body.nextCursor;
    if (!cursor) return out;
  }
  throw new Error('too many pages');
}

beforeAll(async () => {
  t = await buildTestApp({ env: ENV });
  org = await seedOrg(t.database);
  editor = await seedMemberWithKey(t.database, org, 'editor', ['inventory:read', 'inventory:write']);
  viewer = await login(t.app, (await seedMemberWithKey(t.database, org, 'viewer', ['inventory:read'])).email);
  other = await seedOrg(t.database);
  otherEditor = await seedMemberWithKey(t.database, other, 'editor', ['inventory:read', 'inventory:write']);
  const db = t.database.db;
  const o = org.organisationId;
  siteA = (await addSite(db, o, 'site-a')).id;

  // Before: web (site A) with https, ssh and http; a database host; a host that goes; a host whose
  // name has every JSON delimiter in it.
  const web = await addHost(db, o, { hostname: 'web', siteId: siteA, addresses: ['10.1.0.10'] });
  ids.renamedHost = await addHost(db, o, { hostname: 'db', siteId: siteA, addresses: ['10.1.0.20'] });
  ids.removedHost = await addHost(db, o, { hostname: 'old-printer', addresses: ['10.9.0.9'] });
  await addHost(db, o, { hostname: 'we"ird}{][\\name', addresses: ['10.1.0.99'] });
  const https = await addService(db, o, web, { port: 443, product: 'nginx', version: '1.24.0' });
  ids.removedService = await addService(db, o, web, { port: 22, product: 'OpenSSH' });
  ids.changedService = await addService(db, o, web, { port: 80, product: 'nginx', version: '1.24.0' });
  ids.changedCert = await addCertificate(db, o, web, { trustStatus: 'trusted', port: 443 });
  ids.removedCert = await addCertificate(db, o, web, { trustStatus: 'self_signed', port: 8443 });
  ids.changedVuln = await addVulnerability(db, o, https, web, { cveId: 'CVE-2024-6387' });
  ids.removedVuln = await addVulnerability(db, o, https, web, { cveId: 'CVE-2023-44487' });
  before = await snapshot(editor.token);

  // The changes: one of each kind per section.
  ids.addedHost = await addHost(db, o, { hostname: 'new-laptop', addresses: ['10.1.0.50'] });
  await db.updateTable('hosts').set({ hostname: 'db-primary' }).where('id', '=', ids.renamedHost).execute();
  await sql`insert into host_addresses (organisation_id, host_id, address) values (${o}, ${ids.renamedHost}, '10.1.0.21'::inet)`.execute(db);
  await db.deleteFrom('hosts').where('id', '=', ids.removedHost).execute();
  ids.addedService = await addService(db, o, web, { port: 8080, product: 'jetty' });
  await db.deleteFrom('services').where('id', '=', ids.removedService).execute();
  await db.updateTable('services').set({ version: '1.26.2' }).where('id', '=', ids.changedService).execute();
  ids.addedCert = await addCertificate(db, o, web, { trustStatus: 'trusted', port: 8080 });
  await db.deleteFrom('certificates').where('id', '=', ids.removedCert).execute();
  await db.updateTable('certificates').set({ trust_status: 'expired' }).where('id', '=', ids.changedCert).execute();
  ids.addedVuln = await addVulnerability(db, o, ids.changedService, web, { cveId: 'CVE-2025-0001', severity: 'critical' });
  await db.deleteFrom('vulnerabilities').where('id', '=', ids.removedVuln).execute();
  const patched = await t.app.inject({ method: 'PATCH', url: `/api/v1/vulnerabilities/${ids.changedVuln}`, headers: bearer(editor.token), payload: { state: 'acknowledged' } });
  expect(patched.statusCode, patched.body).toBe(200);
  after = await snapshot(editor.token);
  afterAgain = await snapshot(editor.token, { reason: 'audit' });

  await addHost(db, other.organisationId, { hostname: 'their-host', addresses: ['10.1.0.10'] });
  theirs = await snapshot(otherEditor.token);
});
afterAll(() => t.close());

describe('GET /api/v1/snapshots/{id}/diff', () => {
  it('counts one change of each kind per section, and lists them in section and id order with what changed', async () => {
    const body = await diffOk(after, `?against=${before}`);
    expect(body.snapshot.id).toBe(after);
    expect(body.against.id).toBe(before);
    expect(body.note).toBeNull();
    expect(body.counts).toEqual({ hosts: ONE_EACH, services: ONE_EACH, certificates: ONE_EACH, vulnerabilities: ONE_EACH });
    expect(body.nextCursor).toBeNull();
    expect(body.changes.map((c) => c.section)).toEqual(['hosts', 'hosts', 'hosts', 'services', 'services', 'services', 'certificates', 'certificates', 'certificates', 'vulnerabilities', 'vulnerabilities', 'vulnerabilities']);
    for (const section of ['hosts', 'services', 'certificates', 'vulnerabilities']) {
      const inSection = body.changes.filter((c) => c.section === section).map((c) => c.id);
      expect(inSection).toEqual([...inSection].sort());
    }
    const byId = new Map(body.changes.map((c) => [c.id, c]));

    expect(byId.get(ids.addedHost)).toMatchObject({ kind: 'added', before: null, after: { id: ids.addedHost, hostname: 'new-laptop', addresses: ['10.1.0.50'] }, fields: [] });
    expect(byId.get(ids.removedHost)).toMatchObject({ kind: 'removed', before: { hostname: 'old-printer' }, after: null, fields: [] });
    expect(byId.get(ids.renamedHost)).toMatchObject({
      kind: 'changed',
      before: { hostname: 'db' },
      after: { hostname: 'db-primary' },
      fields: [
        { field: 'hostname', from: 'db', to: 'db-primary' },
        { field: 'addresses', from: ['10.1.0.20'], to: ['10.1.0.20', '10.1.0.21'] },
      ],
    });
    expect(byId.get(ids.addedService)).toMatchObject({ section: 'services', kind: 'added', after: { port: 8080, product: 'jetty', gone: false } });
    expect(byId.get(ids.removedService)).toMatchObject({ section: 'services', kind: 'removed', before: { port: 22, product: 'OpenSSH' } });
    expect(byId.get(ids.changedService)).toMatchObject({ section: 'services', kind: 'changed', fields: [{ field: 'version', from: '1.24.0', to: '1.26.2' }] });
    expect(byId.get(ids.addedCert)).toMatchObject({ section: 'certificates', kind: 'added', after: { port: 8080, trustStatus: 'trusted' } });
    expect(byId.get(ids.removedCert)).toMatchObject({ section: 'certificates', kind: 'removed', before: { port: 8443, trustStatus: 'self_signed' } });
    expect(byId.get(ids.changedCert)).toMatchObject({ section: 'certificates', kind: 'changed', fields: [{ field: 'trustStatus', from: 'trusted', to: 'expired' }] });
    expect(byId.get(ids.addedVuln)).toMatchObject({ section: 'vulnerabilities', kind: 'added', after: { cve: 'CVE-2025-0001', severity: 'critical', serviceId: ids.changedService } });
    expect(byId.get(ids.removedVuln)).toMatchObject({ section: 'vulnerabilities', kind: 'removed', before: { cve: 'CVE-2023-44487' } });
    expect(byId.get(ids.changedVuln)).toMatchObject({ section: 'vulnerabilities', kind: 'changed', fields: [{ field: 'state', from: 'open', to: 'acknowledged' }] });
  });

  it('the other direction mirrors it: added and removed swap, each changed field goes new → old', async () => {
    const forward = await diffOk(after, `?against=${before}`);
    const back = await diffOk(before, `?against=${after}`);
    expect(back.counts).toEqual(forward.counts);
    const swap = { added: 'removed', removed: 'added', changed: 'changed' } as Record<string, string>;
    expect(back.changes).toEqual(
      forward.changes.map((c) => ({ ...c, kind: swap[c.kind], before: c.after, after: c.before, fields: c.fields.map((f) => ({ field: f.field, from: f.to, to: f.from })) })),
    );
  });

  it('answers zero counts and no change for identical snapshots, and for a snapshot against itself', async () => {
    for (const [id, against] of [[afterAgain, after], [after, afterAgain], [before, before]]) {
      const body = await diffOk(id!, `?against=${against}`);
      expect(body.counts).toEqual({ hosts: ZERO, services: ZERO, certificates: ZERO, vulnerabilities: ZERO });
      expect(body.changes).toEqual([]);
      expect(body.nextCursor).toBeNull();
    }
  });

  it('pages with limit and cursor, and lists one section or one kind on request with the counts of all', async () => {
    const whole = (await diffOk(after, `?against=${before}`)).changes;
    expect(await allChanges(after, before, 1)).toEqual(whole);
    expect(await allChanges(after, before, 5)).toEqual(whole);
    const services = await diffOk(after, `?against=${before}&section=services`);
    expect(services.counts.hosts).toEqual(ONE_EACH);
    expect(services.changes).toEqual(whole.filter((c) => c.section === 'services'));
    expect(await allChanges(after, before, 2, '&kind=changed')).toEqual(whole.filter((c) => c.kind === 'changed'));
    expect(await allChanges(after, before, 1, '&section=vulnerabilities&kind=added')).toEqual(whole.filter((c) => c.section === 'vulnerabilities' && c.kind === 'added'));
  });

  it('compares snapshots of different scopes with a note: what lies outside the site shows as removed', async () => {
    const site = await snapshot(editor.token, { siteId: siteA });
    const body = await diffOk(site, `?against=${after}`);
    expect(body.note).toMatch(/different scopes/);
    expect(body.note).toContain(siteA);
    // Outside site A: the new laptop and the oddly named host, with nothing hanging off them.
    expect(body.counts).toEqual({ hosts: { added: 0, removed: 2, changed: 0 }, services: ZERO, certificates: ZERO, vulnerabilities: ZERO });
    expect(body.changes.every((c) => c.kind === 'removed' && c.before.siteId === null)).toBe(true);
    expect((await diffOk(site, `?against=${site}`)).note).toBeNull();
  });

  it('refuses a missing or malformed against, a bad limit or section, and an unknown parameter with 400 validation_failed', async () => {
    for (const query of ['', '?against=', '?against=nope', `?against=${before}x`, `?against=${before}&limit=0`, `?against=${before}&limit=1001`, `?against=${before}&section=networks`, `?against=${before}&kind=moved`, `?against=${before}&colour=red`]) {
      const res = await diff(after, query);
      expect([res.statusCode, res.json().code], query).toEqual([400, 'validation_failed']);
    }
    const badId = await diff('not-a-uuid', `?against=${before}`);
    expect([badId.statusCode, badId.json().code]).toEqual([400, 'validation_failed']);
  });

  it('refuses a cursor that is not one of its own with 400 invalid_cursor', async () => {
    for (const cursor of ['x', Buffer.from('networks:00000000-0000-0000-0000-000000000000').toString('base64url'), Buffer.from(`hosts:${before}:1`).toString('base64url'), 'a%2Bb']) {
      const res = await diff(after, `?against=${before}&cursor=${cursor}`);
      expect([res.statusCode, res.json().code], cursor).toEqual([400, 'invalid_cursor']);
    }
  });

  it('answers 404 for another organisation\'s snapshot in either place, and for one that does not exist', async () => {
    for (const [id, against] of [[theirs, before], [after, theirs], [randomUUID(), before], [after, randomUUID()]]) {
      const res = await diff(id!, `?against=${against}`);
      expect([res.statusCode, res.json().code], `${id} against ${against}`).toEqual([404, 'not_found']);
    }
    // Their own member compares theirs; ours stay unknown to them.
    const them = await login(t.app, otherEditor.email);
    expect((await diff(theirs, `?against=${theirs}`, them)).statusCode).toBe(200);
    expect((await diff(theirs, `?against=${after}`, them)).statusCode).toBe(404);
  });

  it('answers 409 conflict for a snapshot taken before contents were stored', async () => {
    const old = await t.database.db
      .insertInto('snapshots')
      .values({ organisation_id: org.organisationId, reason: 'manual', stats: JSON.stringify({ hosts: 0 }) })
      .returning('id')
      .executeTakeFirstOrThrow();
    for (const [id, against] of [[old.id, after], [after, old.id]]) {
      const res = await diff(id!, `?against=${against}`);
      expect([res.statusCode, res.json().code]).toEqual([409, 'conflict']);
    }
  });

  it('needs a session: none is 401, and an API key is not one', async () => {
    const anon = await t.app.inject({ method: 'GET', url: `/api/v1/snapshots/${after}/diff?against=${before}` });
    expect([anon.statusCode, anon.json().code]).toEqual([401, 'unauthorized']);
    const key = await t.app.inject({ method: 'GET', url: `/api/v1/snapshots/${after}/diff?against=${before}`, headers: bearer(editor.token) });
    expect([key.statusCode, key.json().code]).toEqual([401, 'unauthorized']);
  });

  it('diffs thousands of hosts read in 4 KiB slices the same as in 1 MiB ones, items split across slice and gunzip chunk boundaries', async () => {
    const o = await seedOrg(t.database);
    const ed = await seedMemberWithKey(t.database, o, 'editor', ['inventory:read', 'inventory:write']);
    const db = t.database.db;
    const hosts = await addHosts(db, o.organisationId, 3000, 'fleet');
    const first = await snapshot(ed.token);
    await db.updateTable('hosts').set({ os: 'Debian 13' }).where('id', 'in', hosts.slice(0, 7)).execute();
    await db.deleteFrom('hosts').where('id', 'in', hosts.slice(100, 103)).execute();
    await addHosts(db, o.organisationId, 4, 'late');
    const second = await snapshot(ed.token);

    const s = await login(t.app, o.ownerEmail);
    const res = await diff(second, `?against=${first}&limit=1000`, s);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().counts.hosts).toEqual({ added: 4, removed: 3, changed: 7 });
    expect(res.json().changes.filter((c: Change) => c.kind === 'changed').every((c: Change) => c.fields.length === 1 && c.fields[0]!.field === 'os')).toBe(true);

    // The same through slices of 4093 bytes of the stored gzip.
    const rows = await Promise.all([first, second].map((id) => findSnapshot(db, o.organisationId, id)));
    expect(Number(rows[0]!.stored_bytes)).toBeGreaterThan(64 * 1024);
    // Stored out of line and uncompressed by TOAST (migration 0016), so a slice reads its own chunks only.
    const storage = await sql<{ attstorage: string }>`select attstorage from pg_attribute where attrelid = 'snapshots'::regclass and attname = 'content'`.execute(db);
    expect(storage.rows[0]!.attstorage).toBe('e');
    const items = (row: (typeof rows)[number]) => contentItems(gunzipped(readContent(db, o.organisationId, row!.id, Number(row!.stored_bytes), 4093)));
    const sliced = await diffContents(items(rows[0]), items(rows[1]), { limit: 1000 });
    expect(sliced.counts).toEqual(res.json().counts);
    expect(sliced.changes).toEqual(res.json().changes);
  });
});

describe('contentItems', () => {
  it('splits a content fed one byte at a time into its items, strings with delimiters and escapes included', async () => {
    const items = [
      { id: '00000000-0000-0000-0000-000000000001', hostname: 'a"}]{[\\', addresses: ['10.0.0.1'] },
      { id: '00000000-0000-0000-0000-000000000002', hostname: 'ünïcödé ✓', addresses: [] },
    ];
    const text = Buffer.from(`{"hosts":${JSON.stringify(items)},"services":[],"certificates":[{"id" : "00000000-0000-0000-0000-000000000003", "port" : 443}],"vulnerabilities":[]}`);
    async function* bytes() {
      for (let i = 0; i < text.length; i++) yield text.subarray(i, i + 1);
    }
    const out = [];
    for await (const batch of contentItems(bytes())) out.push(...batch.map((b) => ({ sec: b.sec, id: b.id, item: JSON.parse(b.raw.toString('utf8')) })));
    expect(out).toEqual([
      { sec: 0, id: items[0]!.id, item: items[0] },
      { sec: 0, id: items[1]!.id, item: items[1] },
      { sec: 2, id: '00000000-0000-0000-0000-000000000003', item: { id: '00000000-0000-0000-0000-000000000003', port: 443 } },
    ]);
  });

  it('refuses a truncated content', async () => {
    async function* cut() {
      yield Buffer.from('{"hosts":[{"id":"00000000-0000-0000-0000-000000000001","hostname":"x');
    }
    await expect(async () => {
      for await (const _ of contentItems(cut())) void _;
    }).rejects.toThrow(/ends early/);
  });
});
