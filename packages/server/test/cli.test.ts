import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import yazl from 'yazl';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../src/cli/main.js';
import { ConfigSchema } from '../src/config.js';
import { openDatabase } from '../src/db/database.js';
import { loadMigrations } from '../src/db/migrate.js';
import { cliVerbs } from '../src/main.js';
import { haveTools } from '../../../test/system-tools.js';
import { PASSWORD, bearer, buildTestApp } from './helpers.js';

const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));
const bin = path.join(repoRoot, 'packages/server/bin/surveyor.js');
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const latest = loadMigrations().at(-1)!.version;

let dataDir: string;

const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** `bytes` compressed by xz(1) with its defaults (CRC64, LZMA2 preset 6), as the NVD mirror releases are. */
function xz(bytes: Buffer | string): Buffer {
  const r = spawnSync('xz', ['-z', '-c', '-T1'], { input: bytes, maxBuffer: 64 * 1024 * 1024 });
  if (r.status !== 0) throw new Error(`xz failed (${r.status}): ${String(r.stderr)}`);
  return r.stdout;
}

/** A zip archive of `entries` (name, content), as yazl writes it. */
function zipOf(entries: [string, Buffer | string][]): Promise<Buffer> {
  return new Promise<Buffer>((resolve, reject) => {
    const z = new yazl.ZipFile();
    for (const [name, content] of entries) z.addBuffer(Buffer.from(content), name);
    z.end();
    const chunks: Buffer[] = [];
    z.outputStream.on('data', (c: Buffer) => chunks.push(c)).on('end', () => resolve(Buffer.concat(chunks))).on('error', reject);
  });
}
beforeAll(() => {
  dataDir = mkdtempSync(path.join(tmpdir(), 'surveyor-cli-'));
});
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

interface Run {
  code: number;
  out: string[];
  err: string[];
}

/** One in-process CLI invocation on the embedded database of this file's data folder. */
async function cli(...argv: string[]): Promise<Run> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(argv, { out: (l) => out.push(l), err: (l) => err.push(l), env: { SERVICE_DATA_DIR: dataDir } });
  return { code, out, err };
}

/** The single JSON document a successful `--json` invocation printed. */
function json(r: Run): Record<string, unknown> {
  expect(r.err).toEqual([]);
  expect(r.code).toBe(0);
  expect(r.out).toHaveLength(1);
  return JSON.parse(r.out[0]!) as Record<string, unknown>;
}

/** A refusal: exit 2, nothing on stdout, exactly one line on stderr. */
function refused(r: Run): string {
  expect(r.code).toBe(2);
  expect(r.out).toEqual([]);
  expect(r.err).toHaveLength(1);
  expect(r.err[0]).not.toContain('\n');
  expect(r.err[0]).toMatch(/^surveyor: /);
  return r.err[0]!;
}

// State shared by the sequence below (one embedded database per file).
const scimKeyIds: string[] = [];
const orgA = { name: 'Acme Networks', id: '', ownerEmail: 'owner@acme.test', ownerId: '' };
const orgB = { name: 'Globex', id: '', ownerEmail: 'owner@globex.test', ownerId: '' };
const editorEmail = 'editor@acme.test';
const viewerEmail = 'viewer@acme.test';
let viewerId = '';
let viewerKey = { id: '', token: '' };
let raisedKey = { id: '', token: '' };
let daemonKey = { id: '', token: '' };
let processOrg = { organisationId: '', userId: '' };

describe('surveyor migrate', () => {
  it('--json on a fresh data folder prints the applied versions and the schema version', async () => {
    expect(json(await cli('migrate', '--json'))).toEqual({ applied: loadMigrations().map((m) => m.version), version: latest });
  });

  it('--json a second time applies nothing', async () => {
    expect(json(await cli('migrate', '--json'))).toEqual({ applied: [], version: latest });
  });
});

describe('surveyor admin, in process', () => {
  it('create-org with an owner password prints exactly {organisationId, userId}', async () => {
    const r = json(await cli('admin', 'create-org', '--name', orgA.name, '--owner-email', orgA.ownerEmail, '--owner-password', PASSWORD, '--json'));
    expect(Object.keys(r).sort()).toEqual(['organisationId', 'userId']);
    expect(r.organisationId).toMatch(UUID);
    expect(r.userId).toMatch(UUID);
    orgA.id = r.organisationId as string;
    orgA.ownerId = r.userId as string;
  });

  it('create-org without --owner-password returns a generated one-time password', async () => {
    const r = json(await cli('admin', 'create-org', '--name', orgB.name, '--owner-email', orgB.ownerEmail, '--json'));
    expect(Object.keys(r).sort()).toEqual(['generatedPassword', 'organisationId', 'userId']);
    expect(r.organisationId).toMatch(UUID);
    expect(r.userId).toMatch(UUID);
    expect(r.organisationId).not.toBe(orgA.id);
    expect(typeof r.generatedPassword).toBe('string');
    expect((r.generatedPassword as string).length).toBeGreaterThanOrEqual(12);
    orgB.id = r.organisationId as string;
    orgB.ownerId = r.userId as string;
  });

  it('create-org refuses a second organisation with the same name', async () => {
    const line = refused(await cli('admin', 'create-org', '--name', orgA.name.toUpperCase(), '--owner-email', 'other@acme.test', '--json'));
    expect(line).toContain('duplicate');
  });

  it('create-user with --org given by name prints exactly {userId}', async () => {
    const r = json(await cli('admin', 'create-user', '--org', orgA.name, '--email', editorEmail, '--role', 'editor', '--password', PASSWORD, '--json'));
    expect(Object.keys(r)).toEqual(['userId']);
    expect(r.userId).toMatch(UUID);
    expect(r.userId).not.toBe(orgA.ownerId);
  });

  it('create-user for a user of another organisation returns the same userId and adds the membership', async () => {
    const r = json(await cli('admin', 'create-user', '--org', orgB.id, '--email', orgA.ownerEmail, '--role', 'viewer', '--json'));
    expect(r).toEqual({ userId: orgA.ownerId });
    // The membership itself is checked in the database at the end of the file.
  });

  it('create-api-key prints {id, token, scopes} with an svk_ token', async () => {
    const u = json(await cli('admin', 'create-user', '--org', orgA.id, '--email', viewerEmail, '--role', 'viewer', '--json'));
    expect(u.userId).toMatch(UUID);
    expect(typeof u.generatedPassword).toBe('string');
    viewerId = u.userId as string;

    const r = json(await cli('admin', 'create-api-key', '--org', orgA.name, '--user', viewerEmail, '--scopes', 'inventory:read,metrics:read', '--json'));
    expect(Object.keys(r).sort()).toEqual(['id', 'scopes', 'token']);
    expect(r.id).toMatch(UUID);
    expect(r.token).toMatch(/^svk_[A-Za-z0-9_-]{40,}$/);
    expect(r.scopes).toEqual(['inventory:read', 'metrics:read']);
    viewerKey = { id: r.id as string, token: r.token as string };
  });

  it('create-scim-token mints an svs_ token owned by the oldest owner, with the SCIM base URL; a viewer cannot own one', async () => {
    const r = json(await cli('admin', 'create-scim-token', '--org', orgA.name, '--name', 'Okta', '--expires-days', '90', '--json'));
    scimKeyIds.push(r.id as string);
    expect(Object.keys(r).sort()).toEqual(['baseUrl', 'expiresAt', 'id', 'token', 'userEmail']);
    expect(r.token).toMatch(/^svs_[A-Za-z0-9_-]{40,}$/);
    expect(r.userEmail).toBe(orgA.ownerEmail);
    expect(r.baseUrl).toMatch(/\/api\/scim\/v2$/);
    expect(Date.parse(r.expiresAt as string) - Date.now()).toBeGreaterThan(89 * 86_400_000);
    const human = await cli('admin', 'create-scim-token', '--org', orgA.name);
    scimKeyIds.push(/SCIM token (\S+)/.exec(human.out.join('\n'))![1]!);
    expect(human.out.join("\n")).toMatch(/SCIM token [0-9a-f-]{36} \(owned by .*\):\nsvs_\S+\nSCIM base URL: \S+\/api\/scim\/v2\n/);
    const line = refused(await cli('admin', 'create-scim-token', '--org', orgA.name, '--user', viewerEmail));
    expect(line).toContain('viewer');
    expect(refused(await cli('admin', 'create-scim-token', '--org', orgA.name, '--expires-days', 'soon'))).toContain('expires-days');
  });

  it('create-api-key refuses a scope above the member\'s role with exit 2 and a one-line error naming the role', async () => {
    const line = refused(await cli('admin', 'create-api-key', '--org', orgA.name, '--user', viewerEmail, '--scopes', 'inventory:write', '--json'));
    expect(line).toContain('viewer');
    expect(line).toContain('inventory:write');
  });

  it('create-daemon-key prints {id, token} with an svd_ token', async () => {
    const r = json(await cli('admin', 'create-daemon-key', '--org', orgA.id, '--json'));
    expect(Object.keys(r).sort()).toEqual(['id', 'token']);
    expect(r.id).toMatch(UUID);
    expect(r.token).toMatch(/^svd_[A-Za-z0-9_-]{40,}$/);
    daemonKey = { id: r.id as string, token: r.token as string };
  });

  it('set-role raises a viewer to editor, who may then hold inventory:write', async () => {
    const r = await cli('admin', 'set-role', '--org', orgA.name, '--user', viewerEmail, '--role', 'editor');
    expect(r.code).toBe(0);
    expect(r.err).toEqual([]);
    expect(r.out).toEqual([`Role of ${viewerId}: viewer -> editor`]);

    const k = json(await cli('admin', 'create-api-key', '--org', orgA.name, '--user', viewerEmail, '--scopes', 'inventory:write', '--name', 'raised', '--json'));
    expect(k.scopes).toEqual(['inventory:write']);
    expect(k.token).toMatch(/^svk_/);
    raisedKey = { id: k.id as string, token: k.token as string };
  });

  it('revoke-key marks the key revoked, and revoking it again still answers', async () => {
    expect(json(await cli('admin', 'revoke-key', '--id', viewerKey.id, '--json'))).toEqual({ id: viewerKey.id, revoked: true });
    expect(json(await cli('admin', 'revoke-key', '--id', viewerKey.id, '--json'))).toEqual({ id: viewerKey.id, revoked: true });
    // revoked_at, the audit row and the refused token are checked against the database below.
  });
});

describe('surveyor with bad arguments exits 2 with one line on stderr', () => {
  it('for an unknown command', async () => {
    expect(refused(await cli('frobnicate'))).toContain('unknown command "frobnicate"');
  });

  it('for an unknown admin command', async () => {
    expect(refused(await cli('admin', 'drop-everything'))).toContain('unknown admin command');
  });

  it('for an unknown flag', async () => {
    expect(refused(await cli('admin', 'create-org', '--name', 'X', '--owner-email', 'x@x.test', '--colour', 'red'))).toContain('--colour');
  });

  it('for a missing required flag', async () => {
    expect(refused(await cli('admin', 'create-org', '--name', 'X'))).toContain('--owner-email is required');
  });

  it('for a flag without its value', async () => {
    expect(refused(await cli('admin', 'create-daemon-key', '--org', '--json'))).toContain('--org needs a value');
  });

  it('for --role superuser', async () => {
    const line = refused(await cli('admin', 'create-user', '--org', orgA.name, '--email', 'nobody@acme.test', '--role', 'superuser'));
    expect(line).toContain('role');
  });

  it('for --scopes nonsense', async () => {
    const line = refused(await cli('admin', 'create-api-key', '--org', orgA.name, '--user', editorEmail, '--scopes', 'nonsense'));
    expect(line).toContain('scopes');
  });

  it('for a non-UUID --id', async () => {
    const line = refused(await cli('admin', 'revoke-key', '--id', 'not-a-uuid'));
    expect(line).toContain('id');
  });

  it('for an organisation that does not exist', async () => {
    expect(refused(await cli('admin', 'create-daemon-key', '--org', 'No Such Org'))).toContain('not_found');
  });
});

describe('surveyor advisories', () => {
  const fixtures = path.join(repoRoot, 'packages/server/test/fixtures/advisories');

  it('import reads NVD and OSV files, plain and gzip, printing per file what was new, updated, unchanged and skipped; a re-import changes nothing', async () => {
    const gz = path.join(dataDir, 'osv.json.gz');
    writeFileSync(gz, gzipSync(readFileSync(path.join(fixtures, 'osv-GHSA-c2qf-rxjj-qqgw.json'))));
    const nvd = path.join(fixtures, 'nvd-CVE-2024-6387.json');
    const first = await cli('advisories', 'import', nvd, gz);
    expect(first).toEqual({ code: 0, err: [], out: [`${nvd}: 1 new, 0 updated, 0 unchanged, 0 skipped`, `${gz}: 1 new, 0 updated, 0 unchanged, 0 skipped`] });
    const again = json(await cli('advisories', 'import', nvd, gz, '--json'));
    expect(again[nvd]).toMatchObject({ new: 0, updated: 0, unchanged: 1, skippedCount: 0 });
    expect(again[gz]).toMatchObject({ new: 0, updated: 0, unchanged: 1 });
    const status = json(await cli('advisories', 'status', '--json'));
    expect(status).toMatchObject({ advisories: 2, nvd: 1, osv: 1, withdrawn: 0, url: null, lastError: null, confirmedAt: expect.any(String) });
  });

  it('import refuses a file without one usable record (exit 1, the reasons, the mirror not confirmed current), and a file that is not JSON exits 1 naming it; a path that is not a file exits 1 importing nothing', async () => {
    const confirmed = async () => JSON.parse((await cli('advisories', 'status', '--json')).out[0]!).confirmedAt as string | null;
    const before = await confirmed();
    const mixed = path.join(dataDir, 'mixed.json');
    writeFileSync(mixed, JSON.stringify([{ id: 'GHSA-xxxx', modified: 'not a time' }, { hello: 'world' }]));
    const r = await cli('advisories', 'import', mixed);
    expect(r.code).toBe(1);
    expect(r.out).toEqual([]);
    expect(r.err).toEqual([`surveyor: ${mixed}: The document holds no usable advisory record (2 skipped: GHSA-xxxx: modified is not a timestamp; (no id): neither an NVD CVE record nor an OSV record); nothing was imported and the mirror is not confirmed current.`]);
    const empty = path.join(dataDir, 'empty.json');
    writeFileSync(empty, JSON.stringify({ resultsPerPage: 0, startIndex: 0, totalResults: 0, vulnerabilities: [] }));
    expect((await cli('advisories', 'import', empty)).err).toEqual([expect.stringMatching(/holds no usable advisory record \(it lists none\)/)]);
    expect(await confirmed()).toBe(before);
    // Each file is read as it is imported: one that is not JSON is said, naming it; the others are still imported.
    const bad = path.join(dataDir, 'bad.json');
    writeFileSync(bad, '{ not json');
    const failed = await cli('advisories', 'import', mixed, bad);
    expect(failed.code).toBe(1);
    expect(failed.out).toEqual([]);
    expect(failed.err).toEqual([expect.stringMatching(/^surveyor: .*mixed\.json: The document holds no usable advisory record/), expect.stringMatching(new RegExp(`^surveyor: ${escapeRegExp(bad)}: not JSON \\(the document: `))]);
    expect(await confirmed()).toBe(before);
    // A path that is not a readable file: refused before anything is imported.
    const gone = path.join(dataDir, 'gone.json');
    const missing = await cli('advisories', 'import', path.join(fixtures, 'nvd-CVE-2021-44228.json'), gone);
    expect(missing).toMatchObject({ code: 1, out: [], err: [expect.stringMatching(/^surveyor: ENOENT: .*gone\.json/)] });
    expect((await cli('advisories', 'import', dataDir)).err).toEqual([`surveyor: ${dataDir}: not a file`]);
    expect(JSON.parse((await cli('advisories', 'status', '--json')).out[0]!)).toMatchObject({ advisories: 2, confirmedAt: before });
    expect(refused(await cli('advisories', 'import'))).toMatch(/needs at least one FILE/);
  });

  it('import reads a zip archive, every *.json entry one record (an OSV ecosystem\'s all.zip), reporting as for JSON; a zip without one usable record exits 1', async () => {
    const confirmed = async () => JSON.parse((await cli('advisories', 'status', '--json')).out[0]!).confirmedAt as string | null;
    // Two real OSV records (GO-2023-2102's `modified` is 0001-01-01 in the Go database's files: given a real time here).
    const go = { ...JSON.parse(readFileSync(path.join(fixtures, 'osv-GO-2023-2102.json'), 'utf8')), modified: '2023-10-11T18:16:00Z' };
    const zip = path.join(dataDir, 'all.zip');
    writeFileSync(zip, await zipOf([
      ['GHSA-c2qf-rxjj-qqgw.json', readFileSync(path.join(fixtures, 'osv-GHSA-c2qf-rxjj-qqgw.json'))],
      ['GO-2023-2102.json', JSON.stringify(go)],
      ['README.txt', 'not read'],
    ]));
    // The GHSA record is held already (imported as gzip above): unchanged; the Go one new.
    expect(await cli('advisories', 'import', zip)).toEqual({ code: 0, err: [], out: [`${zip}: 1 new, 0 updated, 1 unchanged, 0 skipped`] });
    expect(json(await cli('advisories', 'status', '--json'))).toMatchObject({ advisories: 3, nvd: 1, osv: 2 });
    const before = await confirmed();
    const nothing = path.join(dataDir, 'nothing.zip');
    writeFileSync(nothing, await zipOf([['hello.json', JSON.stringify({ hello: 'world' })], ['README.txt', 'not read']]));
    expect(await cli('advisories', 'import', nothing)).toEqual({ code: 1, out: [], err: [`surveyor: ${nothing}: The document holds no usable advisory record (1 skipped: (no id): neither an NVD CVE record nor an OSV record); nothing was imported and the mirror is not confirmed current.`] });
    const empty = path.join(dataDir, 'empty.zip');
    writeFileSync(empty, await zipOf([['README.txt', 'no JSON here']]));
    expect(await cli('advisories', 'import', empty)).toMatchObject({ code: 1, err: [expect.stringMatching(/holds no usable advisory record \(it lists none\)/)] });
    expect(await confirmed()).toBe(before);
  });

  // The .xz files are made with xz(1) (xz-utils, installed by .ci/run); the server reads them with xz-decompress.
  it.skipIf(!haveTools('the CLI import of .xz files', ['xz']))('import reads xz files (an NVD mirror release CVE-<year>.json.xz) as it reads JSON; a corrupt one exits 1 naming it, leaving the mirror\'s age alone', async () => {
    const confirmed = async () => JSON.parse((await cli('advisories', 'status', '--json')).out[0]!).confirmedAt as string | null;
    // A release file of the NVD JSON mirror (fkie-cad/nvd-json-data-feeds): NVD 2.0 cve objects under cve_items.
    const cves = ['nvd-CVE-2021-44228.json', 'nvd-CVE-2022-26488.json'].map((f) => JSON.parse(readFileSync(path.join(fixtures, f), 'utf8')).vulnerabilities[0].cve);
    const release = path.join(dataDir, 'CVE-2022.json.xz');
    writeFileSync(release, xz(JSON.stringify({ timestamp: '2024-07-10T00:00:00', cve_count: 2, cve_items: cves })));
    expect(await cli('advisories', 'import', release)).toEqual({ code: 0, err: [], out: [`${release}: 2 new, 0 updated, 0 unchanged, 0 skipped`] });
    // One OSV record, held already: unchanged.
    const osv = path.join(dataDir, 'osv.json.xz');
    writeFileSync(osv, xz(readFileSync(path.join(fixtures, 'osv-GHSA-c2qf-rxjj-qqgw.json'))));
    expect(json(await cli('advisories', 'import', osv, '--json'))[osv]).toMatchObject({ new: 0, updated: 0, unchanged: 1, skippedCount: 0 });
    const before = await confirmed();
    const corrupt = Buffer.from(xz(readFileSync(path.join(fixtures, 'nvd-CVE-2016-20012.json'))));
    corrupt[Math.floor(corrupt.length / 2)]! ^= 0xff;
    const bad = path.join(dataDir, 'corrupt.json.xz');
    writeFileSync(bad, corrupt);
    expect(await cli('advisories', 'import', bad)).toEqual({ code: 1, out: [], err: [expect.stringMatching(new RegExp(`^surveyor: ${escapeRegExp(bad)}: not a readable xz file \\((corrupt data|truncated or corrupt)\\)$`))] });
    expect(await confirmed()).toBe(before);
  });
});

describe('surveyor help and config', () => {
  it('--help prints the usage and exits 0; no command at all exits 2', async () => {
    const help = await cli('--help');
    expect(help.code).toBe(0);
    expect(help.out.join('\n')).toMatch(/^Usage: surveyor/);
    const none = await cli();
    expect(none.code).toBe(2);
    expect(none.out.join('\n')).toMatch(/^Usage: surveyor/);
  });

  it('--version prints SERVICE_VERSION, else the package version, and exits 0', async () => {
    const pkg = JSON.parse(readFileSync(path.join(repoRoot, 'packages/server/package.json'), 'utf8')) as { version: string };
    for (const flag of ['--version', '-V']) {
      const r = await cli(flag);
      expect(r).toEqual({ code: 0, out: [`surveyor ${pkg.version}`], err: [] });
    }
    const out: string[] = [];
    expect(await runCli(['--version'], { out: (l) => out.push(l), err: () => {}, env: { SERVICE_VERSION: '2.3.4' } })).toBe(0);
    expect(out).toEqual(['surveyor 2.3.4']);
  });

  it('COMMAND --help prints the usage of every command and sub-command, module verbs included, and exits 0 without running it', async () => {
    const verbs = cliVerbs();
    const commands = [
      ['serve'], ['worker'], ['jobs'], ['jobs', 'list'], ['jobs', 'run'], ['migrate'], ['config'],
      ...Object.entries(verbs).flatMap(([name, v]) => [[name], ...v.usage.map((l) => l.split(' ').slice(0, 2))]),
    ];
    expect(commands.length).toBeGreaterThan(13);
    for (const command of commands) {
      for (const argv of [[...command, '--help'], [...command, '-h'], ['help', ...command]]) {
        const r = await cli(...argv);
        expect(r.err, argv.join(' ')).toEqual([]);
        expect(r.code, argv.join(' ')).toBe(0);
        const text = r.out.join('\n');
        expect(text).toMatch(new RegExp(`^Usage:\n  surveyor ${command.join(' ')}\\b`));
        // Then what the command does, in words.
        expect(text.split('\n\n')[1]?.length ?? 0, argv.join(' ')).toBeGreaterThan(40);
      }
    }
    // A sub-command's help names that sub-command only.
    expect((await cli('admin', 'create-org', '--help')).out.join('\n')).not.toContain('revoke-key');
    expect(refused(await cli('nope', '--help'))).toContain('unknown command "nope"');
  });

  it('config --json lists every variable with its default and description', async () => {
    const r = await cli('config', '--json');
    expect(r.code).toBe(0);
    expect(r.out).toHaveLength(1);
    const vars = JSON.parse(r.out[0]!) as { name: string; default: unknown; description: string }[];
    expect(vars.map((v) => v.name).sort()).toEqual(Object.keys(ConfigSchema.in.shape).sort());
    expect(vars.find((v) => v.name === 'SERVICE_PORT')).toMatchObject({ default: 8080 });
    expect(vars.find((v) => v.name === 'SERVICE_HOST')).toMatchObject({ default: '127.0.0.1' });
    expect(vars.find((v) => v.name === 'DATABASE_URL')?.description).toMatch(/PostgreSQL/);
    const human = await cli('config');
    for (const name of Object.keys(ConfigSchema.in.shape)) expect(human.out.join('\n')).toContain(`${name}=`);
  });
});

describe('surveyor as a real process', () => {
  const run = (...argv: string[]) =>
    spawnSync(process.execPath, [bin, ...argv], {
      cwd: repoRoot,
      env: { PATH: process.env.PATH ?? '', SERVICE_DATA_DIR: dataDir },
      encoding: 'utf8',
      timeout: 30_000,
    });

  it('admin create-org --json prints the JSON document and exits 0', () => {
    const r = run('admin', 'create-org', '--name', 'Initech', '--owner-email', 'owner@initech.test', '--owner-password', PASSWORD, '--json');
    expect(r.error).toBeUndefined();
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const lines = r.stdout.trimEnd().split('\n');
    expect(lines).toHaveLength(1);
    const doc = JSON.parse(lines[0]!) as typeof processOrg;
    expect(Object.keys(doc).sort()).toEqual(['organisationId', 'userId']);
    expect(doc.organisationId).toMatch(UUID);
    expect(doc.userId).toMatch(UUID);
    processOrg = doc;
  });

  it('serve --help prints its usage and exits 0 instead of serving; --version prints the version', () => {
    const r = run('serve', '--help');
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/^Usage:\n {2}surveyor serve\n/);
    expect(run('--version').stdout).toMatch(/^surveyor \S+\n$/);
  });

  it('exits 2 on bad arguments', () => {
    const r = run('admin', 'create-org', '--name', 'X');
    expect(r.status).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(r.stderr).toContain('--owner-email is required');
  });
});

describe('the data folder after the CLI calls', () => {
  it('holds what the commands did, with an audit row by actor cli for each change', async () => {
    const database = await openDatabase({ dataDir, poolMax: 1 });
    const t = await buildTestApp({ testDb: { database, drop: () => database.close() } });
    try {
      const db = database.db;
      // Organisations, including the one created by the real process.
      const orgs = await db.selectFrom('organisations').select(['id', 'name']).orderBy('name').execute();
      expect(orgs).toEqual(
        expect.arrayContaining([
          { id: orgA.id, name: orgA.name },
          { id: orgB.id, name: orgB.name },
          { id: processOrg.organisationId, name: 'Initech' },
        ]),
      );
      expect(orgs).toHaveLength(3);

      // The existing user was added to the second organisation, as viewer; the raised viewer is an editor.
      const memberships = await db.selectFrom('memberships').select(['organisation_id', 'user_id', 'role']).execute();
      expect(memberships).toContainEqual({ organisation_id: orgB.id, user_id: orgA.ownerId, role: 'viewer' });
      expect(memberships).toContainEqual({ organisation_id: orgA.id, user_id: viewerId, role: 'editor' });
      expect(await db.selectFrom('users').select('id').where('email', '=', 'nobody@acme.test').executeTakeFirst()).toBeUndefined();

      // A generated password must be changed; a given one need not.
      const users = await db.selectFrom('users').select(['email', 'must_change_password']).execute();
      expect(users).toContainEqual({ email: orgB.ownerEmail, must_change_password: true });
      expect(users).toContainEqual({ email: orgA.ownerEmail, must_change_password: false });

      // Keys: the revoked one has revoked_at, the others do not.
      const keys = await db.selectFrom('keys').select(['id', 'kind', 'revoked_at']).where('organisation_id', '=', orgA.id).execute();
      expect(keys).toHaveLength(5); // the refused inventory:write key was never stored
      expect(keys.filter((k) => k.kind === 'scim').map((k) => k.id).sort()).toEqual([...scimKeyIds].sort());
      expect(keys.find((k) => k.id === viewerKey.id)?.revoked_at).toBeInstanceOf(Date);
      expect(keys.find((k) => k.id === raisedKey.id)?.revoked_at).toBeNull();
      expect(keys.find((k) => k.id === daemonKey.id)).toMatchObject({ kind: 'daemon', revoked_at: null });

      // Audit: every change by the CLI, nothing else, and nothing for refusals or the repeated revoke.
      const audit = await db.selectFrom('audit_log').select(['organisation_id', 'actor_type', 'action', 'target_id']).execute();
      expect(new Set(audit.map((a) => a.actor_type))).toEqual(new Set(['cli']));
      const actions = audit.map((a) => `${a.organisation_id === orgA.id ? 'A' : a.organisation_id === orgB.id ? 'B' : 'P'} ${a.action} ${a.target_id}`).sort();
      expect(actions).toEqual(
        [
          `A organisation.created ${orgA.id}`,
          `B organisation.created ${orgB.id}`,
          `P organisation.created ${processOrg.organisationId}`,
          `A membership.created ${(await db.selectFrom('users').select('id').where('email', '=', editorEmail).executeTakeFirstOrThrow()).id}`,
          `B membership.created ${orgA.ownerId}`,
          `A membership.created ${viewerId}`,
          `A key.created ${viewerKey.id}`,
          `A key.created ${daemonKey.id}`,
          `A membership.role_changed ${viewerId}`,
          `A key.created ${raisedKey.id}`,
          `A key.revoked ${viewerKey.id}`,
          ...scimKeyIds.map((id) => `A key.created ${id}`),
        ].sort(),
      );

      // The revoked key no longer authenticates; the key minted after set-role holds inventory:write.
      const revoked = await t.app.inject({ method: 'GET', url: '/api/v1/auth/key', headers: bearer(viewerKey.token) });
      expect(revoked.statusCode).toBe(401);
      const raised = await t.app.inject({ method: 'GET', url: '/api/v1/auth/key', headers: bearer(raisedKey.token) });
      expect(raised.statusCode).toBe(200);
      expect(raised.json()).toMatchObject({ id: raisedKey.id, organisationId: orgA.id, userId: viewerId, role: 'editor', effectiveScopes: ['inventory:write'] });
    } finally {
      await t.app.close();
      await database.close();
    }
  });
});
