import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pullFeed } from '../src/advisories/feed.js';
import { importAdvisories } from '../src/advisories/import.service.js';
import { createLogger } from '../src/logger.js';
import { haveTools } from '../../../test/system-tools.js';
import { type SeededOrg, type TestApp, type TestDatabase, bearer, buildTestApp, createTestDatabase, login, seedMemberWithKey, seedOrg } from './helpers.js';

// The advisory mirror's state for the console (issue 23): counts, the feed's last pull and error,
// whether uploads are allowed; any member's session may read it, nothing else.

const fixture = (name: string) => JSON.parse(readFileSync(new URL(`./fixtures/advisories/${name}`, import.meta.url), 'utf8'));

describe('GET /api/v1/advisories', () => {
  let testDb: TestDatabase;
  let t: TestApp;
  let org: SeededOrg;
  let viewer: { cookie: string };
  let token: string;
  beforeAll(async () => {
    testDb = await createTestDatabase();
    t = await buildTestApp({ testDb });
    org = await seedOrg(t.database);
    const member = await seedMemberWithKey(t.database, org, 'viewer', ['inventory:read']);
    viewer = await login(t.app, member.email);
    token = member.token;
  });
  afterAll(async () => {
    await t.close();
    await testDb.drop();
  });
  const mirror = async (headers: Record<string, string> = { cookie: viewer.cookie }) => t.app.inject({ method: 'GET', url: '/api/v1/advisories', headers });

  it('gives any member the counts of the mirror and says uploads are allowed by default', async () => {
    const empty = await mirror();
    expect(empty.statusCode, empty.body).toBe(200);
    expect(empty.json()).toEqual({ advisories: 0, nvd: 0, osv: 0, withdrawn: 0, feed: { url: null, confirmedAt: null, lastAttemptAt: null, lastError: null }, uploadsAllowed: true });
    await importAdvisories(t.database.db, [fixture('nvd-CVE-2024-6387.json'), fixture('osv-GHSA-c2qf-rxjj-qqgw.json')]);
    expect((await mirror()).json()).toMatchObject({ advisories: 2, nvd: 1, osv: 1, withdrawn: 0, feed: { confirmedAt: expect.any(String) } });
  });

  it('shows the feed last pulled without its credentials, and its last error', async () => {
    await t.database.db
      .insertInto('advisory_feed')
      .values({ id: true, url: 'https://user:secret@feed.example/nvd.json.gz?apiKey=k-123', last_attempt_at: new Date(), last_error: 'HTTP 503 from the feed' })
      .onConflict((oc) => oc.column('id').doUpdateSet({ url: 'https://user:secret@feed.example/nvd.json.gz?apiKey=k-123', last_attempt_at: new Date(), last_error: 'HTTP 503 from the feed' }))
      .execute();
    const body = (await mirror()).json();
    expect(body.feed).toMatchObject({ url: 'https://feed.example/nvd.json.gz', lastAttemptAt: expect.any(String), lastError: 'HTTP 503 from the feed' });
    expect(JSON.stringify(body)).not.toMatch(/secret|k-123/);
  });

  it('refuses an API key and no credential with 401 unauthorized', async () => {
    for (const headers of [bearer(token), {}]) {
      const res = await mirror(headers);
      expect(res.statusCode).toBe(401);
      expect(res.json().code).toBe('unauthorized');
    }
  });

  it('says uploads are off where SERVICE_ADVISORY_UPLOAD=deny', async () => {
    const denied = await buildTestApp({ testDb, env: { SERVICE_ADVISORY_UPLOAD: 'deny' } });
    try {
      const owner = await login(denied.app, org.ownerEmail);
      const res = await denied.app.inject({ method: 'GET', url: '/api/v1/advisories', headers: { cookie: owner.cookie } });
      expect(res.json().uploadsAllowed).toBe(false);
    } finally {
      await denied.close();
    }
  });
});

// Offline mirror files compressed with xz (issue 29): the NVD JSON mirror releases
// (fkie-cad/nvd-json-data-feeds) ship `CVE-<year>.json.xz` and `CVE-all.json.xz`, `{ cve_items: [cve…] }`.
// The files are made here with xz(1) (xz-utils, installed by .ci/run); the server reads them with xz-decompress.

/** `bytes` compressed by xz(1) with its defaults (CRC64, LZMA2 preset 6), as the mirror releases are. */
function xz(bytes: Buffer | string): Buffer {
  const r = spawnSync('xz', ['-z', '-c', '-T1'], { input: bytes, maxBuffer: 64 * 1024 * 1024 });
  if (r.status !== 0) throw new Error(`xz failed (${r.status}): ${String(r.stderr)}`);
  return r.stdout;
}

describe.skipIf(!haveTools('the offline mirror tests of .xz files', ['xz']))('offline mirror files compressed with xz (file://)', () => {
  let testDb: TestDatabase;
  let dir: string;
  /** The real NVD fixtures (API pages) as `cve` objects, and the real OSV ones. */
  const cves = (name: string) => (fixture(name) as { vulnerabilities: { cve: unknown }[] }).vulnerabilities.map((v) => v.cve);
  const release = (items: unknown[]) => JSON.stringify({ timestamp: '2024-07-10T00:00:00', cve_count: items.length, cve_items: items });
  const nvd2021 = [...cves('nvd-CVE-2021-44228.json'), ...cves('nvd-CVE-2022-26488.json')];
  const nvd2024 = [...cves('nvd-CVE-2024-6387.json'), ...cves('nvd-CVE-2016-20012.json')];
  const osv = [fixture('osv-GHSA-c2qf-rxjj-qqgw.json')];

  const pull = (file: string) => pullFeed(testDb.database.db, { url: pathToFileURL(file).href, timeoutMs: 5000, pageDelayMs: 0 }, createLogger('silent'));
  const feedRow = () => testDb.database.db.selectFrom('advisory_feed').selectAll().executeTakeFirstOrThrow();
  /** What the mirror holds, to compare imports by: each advisory's id, source, modification and content hash. */
  const held = () => testDb.database.db.selectFrom('advisories').select(['id', 'source', 'cve_id', 'modified_at', 'content_sha256', 'withdrawn']).orderBy('id').execute();
  const emptied = async () => {
    await testDb.database.db.deleteFrom('advisory_products').execute();
    await testDb.database.db.deleteFrom('advisories').execute();
  };

  beforeAll(async () => {
    testDb = await createTestDatabase();
    dir = mkdtempSync(path.join(tmpdir(), 'surveyor-xz-'));
  });
  afterAll(async () => {
    rmSync(dir, { recursive: true, force: true });
    await testDb.drop();
  });

  it('imports a release file CVE-<year>.json.xz as the same advisories as the plain JSON', async () => {
    writeFileSync(path.join(dir, 'CVE-2024.json'), release(nvd2024));
    writeFileSync(path.join(dir, 'CVE-2024.json.xz'), xz(release(nvd2024)));
    expect(await pull(path.join(dir, 'CVE-2024.json'))).toMatchObject({ mode: 'file', changed: true, new: 2 });
    const plain = await held();
    expect(plain.map((a) => a.id)).toEqual(['CVE-2016-20012', 'CVE-2024-6387']);
    await emptied();
    expect(await pull(path.join(dir, 'CVE-2024.json.xz'))).toMatchObject({ mode: 'file', changed: true, new: 2, updated: 0 });
    expect(await held()).toEqual(plain);
    expect((await feedRow()).last_error).toBeNull();
  });

  it('imports a directory holding .xz files (release files by year, OSV records) as the same advisories as the plain JSON', async () => {
    const plainDir = path.join(dir, 'plain');
    const xzDir = path.join(dir, 'xz');
    for (const [root, write] of [
      [plainDir, (f: string, text: string) => writeFileSync(`${f}`, text)],
      [xzDir, (f: string, text: string) => writeFileSync(`${f}.xz`, xz(text))],
    ] as const) {
      mkdirSync(path.join(root, 'osv'), { recursive: true });
      write(path.join(root, 'CVE-2021.json'), release(nvd2021));
      write(path.join(root, 'CVE-2024.json'), release(nvd2024));
      for (const o of osv) write(path.join(root, 'osv', `${(o as { id: string }).id}.json`), JSON.stringify(o));
    }
    await emptied();
    expect(await pull(plainDir)).toMatchObject({ changed: true, new: 5 });
    const plain = await held();
    expect(plain.map((a) => a.id)).toEqual(['CVE-2016-20012', 'CVE-2021-44228', 'CVE-2022-26488', 'CVE-2024-6387', 'GHSA-c2qf-rxjj-qqgw']);
    await emptied();
    expect(await pull(xzDir)).toMatchObject({ changed: true, new: 5, updated: 0 });
    expect(await held()).toEqual(plain);
    // Unchanged files are not read again.
    expect(await pull(xzDir)).toMatchObject({ changed: false, pages: 0 });
  });

  it('reads a release file larger than its batches in bounded pieces: every record of cve_items, 200 at a time', async () => {
    const base = nvd2024[0] as { id: string };
    const items = Array.from({ length: 450 }, (_, i) => ({ ...base, id: `CVE-2031-${String(50000 + i)}` }));
    writeFileSync(path.join(dir, 'CVE-all.json.xz'), xz(release(items)));
    expect(await pull(path.join(dir, 'CVE-all.json.xz'))).toMatchObject({ changed: true, new: 450, pages: 3 });
  });

  it('reports a corrupt .xz file as a parse error naming the file, and leaves the mirror\'s age alone', async () => {
    const good = xz(release(nvd2024));
    const corrupt = Buffer.from(good);
    // A byte in the middle of the compressed data: the decoder's checks refuse it.
    corrupt[Math.floor(corrupt.length / 2)]! ^= 0xff;
    const file = path.join(dir, 'corrupt', 'CVE-2024.json.xz');
    mkdirSync(path.dirname(file));
    writeFileSync(file, corrupt);
    const before = (await feedRow()).confirmed_at;
    await expect(pull(file)).rejects.toThrow(/CVE-2024\.json\.xz: not a readable xz file/);
    const row = await feedRow();
    expect(row.last_error).toMatch(/^parse error: \/.*\/corrupt\/CVE-2024\.json\.xz: not a readable xz file \((corrupt data|truncated or corrupt)\) \(source file:\/\/.*CVE-2024\.json\.xz\)$/);
    expect(row.confirmed_at).toEqual(before);
    // Cut short, and inside a mirror directory: the same, naming the file.
    writeFileSync(file, good.subarray(0, good.length - 40));
    await expect(pull(path.dirname(file))).rejects.toThrow(/CVE-2024\.json\.xz: not a readable xz file \(truncated or corrupt\)/);
    expect((await feedRow()).last_error).toMatch(/^parse error: .*CVE-2024\.json\.xz: not a readable xz file/);
    expect((await feedRow()).confirmed_at).toEqual(before);
  });
});
