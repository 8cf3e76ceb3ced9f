import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { contentItems, diffContents, gunzipped } from '../src/snapshots/diff.js';
import { findSnapshot, readContent } from '../src/snapshots/snapshots.repo.js';
import { pruneSnapshotDiffs } from '../src/snapshots/snapshots.service.js';
import { type SeededOrg, type TestApp, bearer, buildTestApp, login, seedMemberWithKey, seedOrg } from './helpers.js';
import { addHosts, addService } from './fixtures.js';

// Issue 29: the diff of a pair of snapshots is walked once and stored; every page reads the stored
// changes after its cursor instead of walking both contents from the start again. These tests hold
// the pages to the walk: whatever page is asked first, in whatever order, the pages put together
// are the whole diff the walk finds, with the walk's counts on every page; and a stored diff is
// one organisation's only.

const ENV = { SERVICE_RATE_LIMIT_LOGIN_PER_MINUTE: '1000', SERVICE_RATE_LIMIT_KEY_PER_MINUTE: '100000', SERVICE_RATE_LIMIT_ANON_PER_MINUTE: '100000' };

type Session = Awaited<ReturnType<typeof login>>;
type Change = { section: string; kind: string; id: string; before: unknown; after: unknown; fields: unknown[] };
type Diff = { counts: Record<string, { added: number; removed: number; changed: number }>; changes: Change[]; nextCursor: string | null };

let t: TestApp;
let org: SeededOrg;
let session: Session;
let before: string;
let after: string;
/** What walking both contents from the start finds (the diff before issue 29): every change, and the counts. */
let walked: Diff;

async function snapshot(token: string) {
  const res = await t.app.inject({ method: 'POST', url: '/api/v1/snapshots', headers: bearer(token), payload: {} });
  expect(res.statusCode, res.body).toBe(201);
  return res.json().id as string;
}

async function diff(id: string, query: string, s: Session = session) {
  return t.app.inject({ method: 'GET', url: `/api/v1/snapshots/${id}/diff${query}`, headers: { cookie: s.cookie } });
}

async function diffOk(id: string, query: string, s: Session = session): Promise<Diff> {
  const res = await diff(id, query, s);
  expect(res.statusCode, res.body).toBe(200);
  return res.json() as Diff;
}

/** Every page of `limit`, from the first, each page's counts checked against the walk's. */
async function pages(limit: number, filters = '') {
  const out: Diff[] = [];
  let cursor: string | null = null;
  do {
    const page = await diffOk(after, `?against=${before}&limit=${limit}${filters}${cursor ? `&cursor=${cursor}` : ''}`);
    expect(page.counts).toEqual(walked.counts);
    expect(page.changes.length).toBeLessThanOrEqual(limit);
    out.push(page);
    cursor = page.nextCursor;
  } while (cursor && out.length < 1000);
  return out;
}

async function forgetDiffs(organisationId = org.organisationId) {
  await sql`delete from snapshot_diffs where organisation_id = ${organisationId}`.execute(t.database.db);
}

async function storedRows(organisationId = org.organisationId) {
  const r = await sql<{ diffs: number; changes: number }>`
    select (select count(*)::int from snapshot_diffs where organisation_id = ${organisationId}) as diffs,
           (select count(*)::int from snapshot_diff_changes where organisation_id = ${organisationId}) as changes`.execute(t.database.db);
  return r.rows[0]!;
}

beforeAll(async () => {
  t = await buildTestApp({ env: ENV });
  org = await seedOrg(t.database);
  const editor = await seedMemberWithKey(t.database, org, 'editor', ['inventory:read', 'inventory:write']);
  session = await login(t.app, org.ownerEmail);
  const db = t.database.db;
  const o = org.organisationId;
  // 400 hosts, a service on every fourth; then 40 hosts renamed, 12 removed, 30 added, 10 services
  // upgraded and 5 added: changes in two sections, of every kind, spread over the id order.
  const hosts = await addHosts(db, o, 400, 'fleet');
  const services: string[] = [];
  for (const h of hosts.filter((_, i) => i % 4 === 0)) services.push(await addService(db, o, h, { port: 443, product: 'nginx', version: '1.24.0' }));
  before = await snapshot(editor.token);
  await db.updateTable('hosts').set({ os: 'Debian 13' }).where('id', 'in', hosts.filter((_, i) => i % 10 === 3)).execute();
  await db.deleteFrom('hosts').where('id', 'in', hosts.filter((_, i) => i % 33 === 5)).execute();
  const added = await addHosts(db, o, 30, 'late');
  await db.updateTable('services').set({ version: '1.26.2' }).where('id', 'in', services.slice(0, 10)).execute();
  for (const h of added.slice(0, 5)) await addService(db, o, h, { port: 22, product: 'OpenSSH' });
  after = await snapshot(editor.token);

  const rows = await Promise.all([before, after].map((id) => findSnapshot(db, o, id)));
  const items = (row: (typeof rows)[number]) => contentItems(gunzipped(readContent(db, o, row!.id, Number(row!.stored_bytes))));
  const whole = await diffContents(items(rows[0]), items(rows[1]), { limit: 100_000 });
  walked = { counts: whole.counts, changes: JSON.parse(JSON.stringify(whole.changes)) as Change[], nextCursor: null };
});
afterAll(() => t.close());

describe('stored snapshot diffs (issue 29)', () => {
  it('the walk the pages are held to has changes of every kind in two sections', () => {
    expect(walked.counts.hosts).toEqual({ added: 30, removed: 12, changed: expect.any(Number) });
    expect(walked.counts.hosts!.changed).toBeGreaterThan(30);
    // Removed hosts take their services with them (cascade): some services removed too.
    expect(walked.counts.services).toMatchObject({ added: 5, changed: expect.any(Number) });
    expect(walked.changes.length).toBeGreaterThan(90);
  });

  it('the pages put together are the whole diff the walk finds, with its counts on every page', async () => {
    await forgetDiffs();
    for (const limit of [1, 7, 50, 1000]) {
      const all = await pages(limit);
      expect(all.flatMap((p) => p.changes)).toEqual(walked.changes);
      expect(all.at(-1)!.nextCursor).toBeNull();
      if (limit < walked.changes.length) expect(all.slice(0, -1).every((p) => p.changes.length === limit)).toBe(true);
    }
  });

  it('a later page asked first, before any page 1 stored the diff, lists what walking to it lists', async () => {
    // The cursors of pages of 10, from a walk through the pages; then, with nothing stored, page 6 first.
    const all = await pages(10);
    const cursor = all[4]!.nextCursor!;
    await forgetDiffs();
    expect(await storedRows()).toEqual({ diffs: 0, changes: 0 });
    const page6 = await diffOk(after, `?against=${before}&limit=10&cursor=${cursor}`);
    expect(page6.changes).toEqual(walked.changes.slice(50, 60));
    expect(page6.counts).toEqual(walked.counts);
    expect(page6.nextCursor).toBe(all[5]!.nextCursor);
    // The same cursor with a larger page: the rest of the diff from there.
    const rest = await diffOk(after, `?against=${before}&limit=1000&cursor=${cursor}`);
    expect(rest.changes).toEqual(walked.changes.slice(50));
    expect(rest.nextCursor).toBeNull();
  });

  it('lists one section or one kind through the pages the same as the walk filtered, with the counts of all', async () => {
    for (const filters of ['&section=services', '&kind=changed', '&kind=added', '&section=hosts&kind=removed', '&section=certificates']) {
      const all = await pages(4, filters);
      const [, section] = /section=(\w+)/.exec(filters) ?? [];
      const [, kind] = /kind=(\w+)/.exec(filters) ?? [];
      expect(all.flatMap((p) => p.changes), filters).toEqual(walked.changes.filter((c) => (!section || c.section === section) && (!kind || c.kind === kind)));
    }
  });

  it('stores the diff once per pair, in the organisation, however many pages and requests read it', async () => {
    await forgetDiffs();
    // Three first requests at once: one computes, the others wait for it (or find it) and read it.
    const first = await Promise.all([1, 2, 3].map(() => diffOk(after, `?against=${before}&limit=20`)));
    for (const page of first) expect(page).toEqual(first[0]);
    expect(first[0]!.changes).toEqual(walked.changes.slice(0, 20));
    const total = walked.changes.length;
    expect(await storedRows()).toEqual({ diffs: 1, changes: total });
    await pages(25);
    expect(await storedRows()).toEqual({ diffs: 1, changes: total });
    // The other direction is a pair of its own: added and removed swap.
    const back = await diffOk(before, `?against=${after}&limit=1000`);
    expect(back.counts.hosts).toEqual({ added: walked.counts.hosts!.removed, removed: walked.counts.hosts!.added, changed: walked.counts.hosts!.changed });
    expect(await storedRows()).toEqual({ diffs: 2, changes: 2 * total });
  });

  it('prunes stored diffs a day old (and the job inventory.snapshot does), and a page of a pruned diff computes it again the same', async () => {
    const cursor = (await diffOk(after, `?against=${before}&limit=30`)).nextCursor!;
    await sql`update snapshot_diffs set created_at = now() - interval '25 hours' where organisation_id = ${org.organisationId}`.execute(t.database.db);
    expect(await pruneSnapshotDiffs(t.database.db, org.organisationId, new Date())).toBe(2);
    expect(await storedRows()).toEqual({ diffs: 0, changes: 0 });
    const page2 = await diffOk(after, `?against=${before}&limit=30&cursor=${cursor}`);
    expect(page2.changes).toEqual(walked.changes.slice(30, 60));
    expect(page2.counts).toEqual(walked.counts);

    await sql`update snapshot_diffs set created_at = now() - interval '25 hours' where organisation_id = ${org.organisationId}`.execute(t.database.db);
    const run = await t.app.inject({ method: 'POST', url: '/api/v1/admin/snapshot', headers: { cookie: session.cookie, 'x-csrf-token': session.csrfToken } });
    expect(run.statusCode, run.body).toBe(200);
    expect(await storedRows()).toEqual({ diffs: 0, changes: 0 });
  });

  it('answers a cursor past the last change with an empty page, and refuses a forged one with 400 invalid_cursor', async () => {
    const end = Buffer.from('vulnerabilities:ffffffff-ffff-ffff-ffff-ffffffffffff').toString('base64url');
    const past = await diffOk(after, `?against=${before}&cursor=${end}`);
    expect(past.changes).toEqual([]);
    expect(past.nextCursor).toBeNull();
    expect(past.counts).toEqual(walked.counts);
    for (const cursor of [Buffer.from(`hosts:${before}'; delete from snapshot_diffs; --`).toString('base64url'), Buffer.from('hosts:FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF').toString('base64url'), Buffer.from('4:00000000-0000-0000-0000-000000000000').toString('base64url')]) {
      const res = await diff(after, `?against=${before}&cursor=${cursor}`);
      expect([res.statusCode, res.json().code], cursor).toEqual([400, 'invalid_cursor']);
    }
  });

  it('another organisation reads neither our snapshots nor our stored diff, even under the same snapshot ids', async () => {
    await diffOk(after, `?against=${before}`);
    const other = await seedOrg(t.database);
    const otherEditor = await seedMemberWithKey(t.database, other, 'editor', ['inventory:read', 'inventory:write']);
    const them = await login(t.app, other.ownerEmail);
    const mine = await storedRows();

    // Our ids, in either place or both: 404, and nothing is stored for them.
    for (const [id, against] of [[after, before], [before, after]]) {
      const res = await diff(id!, `?against=${against}`, them);
      expect([res.statusCode, res.json().code]).toEqual([404, 'not_found']);
    }
    const theirs = await snapshot(otherEditor.token);
    for (const [id, against] of [[theirs, before], [after, theirs]]) {
      const res = await diff(id!, `?against=${against}`, them);
      expect([res.statusCode, res.json().code]).toEqual([404, 'not_found']);
      const ours = await diff(id!, `?against=${against}`);
      expect([ours.statusCode, ours.json().code]).toEqual([404, 'not_found']);
    }
    expect(await storedRows(other.organisationId)).toEqual({ diffs: 0, changes: 0 });

    // Their own snapshots stored under our two ids (ids are unique per organisation only): their diff
    // is computed from their contents and stored apart; ours is untouched.
    const db = t.database.db;
    await addHosts(db, other.organisationId, 3, 'theirs');
    const theirsLater = await snapshot(otherEditor.token);
    for (const [id, as] of [[theirs, before], [theirsLater, after]]) {
      await sql`insert into snapshots (organisation_id, id, reason, stats, content, content_sha256, content_bytes)
        select organisation_id, ${as}, reason, stats, content, content_sha256, content_bytes from snapshots where organisation_id = ${other.organisationId} and id = ${id}`.execute(db);
    }
    const theirDiff = await diffOk(after, `?against=${before}&limit=1000`, them);
    expect(theirDiff.counts.hosts).toEqual({ added: 3, removed: 0, changed: 0 });
    expect(theirDiff.changes.map((c) => c.id).every((id) => !walked.changes.some((c) => c.id === id))).toBe(true);
    expect(await storedRows(other.organisationId)).toEqual({ diffs: 1, changes: 3 });
    expect(await storedRows()).toEqual(mine);
    expect((await diffOk(after, `?against=${before}&limit=1000`)).changes).toEqual(walked.changes);
  });
});
