import { execFileSync } from 'node:child_process';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PDFDocument } from 'pdf-lib';
import * as admin from '../src/admin/admin.service.js';
import { attestSnapshot } from '../src/attestation/attestation.service.js';
import { runCli } from '../src/cli/main.js';
import { loadConfig } from '../src/config.js';
import { resolveSecretKey } from '../src/crypto/secrets.js';
import { type Database, openDatabase } from '../src/db/database.js';
import { createSnapshot } from '../src/snapshots/snapshots.service.js';
import { addHost } from './fixtures.js';
import { TEST_DATABASE_URL, type TestDatabase, createTestDatabase } from './helpers.js';

// `surveyor keys public` and `surveyor snapshots verify|content`, in process as an operator runs
// them, on PostgreSQL (TEST_DATABASE_URL) or the embedded database of a data folder.

interface Run {
  code: number;
  out: string[];
  err: string[];
}

let work: string;
let env: Record<string, string>;
let testDb: TestDatabase | undefined;

async function cli(...argv: string[]): Promise<Run> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(argv, { out: (l) => out.push(l), err: (l) => err.push(l), env });
  return { code, out, err };
}

function json(r: Run): Record<string, any> {
  expect(r.err).toEqual([]);
  expect(r.code).toBe(0);
  expect(r.out).toHaveLength(1);
  return JSON.parse(r.out[0]!) as Record<string, any>;
}

/** A failure: exit `code`, nothing on stdout, one line on stderr. */
function failed(r: Run, code: number): string {
  expect(r.code, r.err.join('\n')).toBe(code);
  expect(r.out).toEqual([]);
  expect(r.err).toHaveLength(1);
  expect(r.err[0]).toMatch(/^surveyor: /);
  return r.err[0]!;
}

/** The database the CLI works on, opened by the test between invocations (the data folder admits one process at a time). */
async function withDatabase<T>(fn: (database: Database) => Promise<T>): Promise<T> {
  const database = TEST_DATABASE_URL ? testDb!.database : await openDatabase({ dataDir: env.SERVICE_DATA_DIR!, poolMax: 1 });
  try {
    return await fn(database);
  } finally {
    if (!TEST_DATABASE_URL) await database.close();
  }
}

const file = (name: string) => path.join(work, name);

let key: { publicKeyPem: string; fingerprint: string };
let snapshot: { id: string; contentSha256: string };
let organisationId: string;

beforeAll(async () => {
  work = mkdtempSync(path.join(tmpdir(), 'surveyor-attest-cli-'));
  if (TEST_DATABASE_URL) {
    testDb = await createTestDatabase({ migrate: false });
    const sep = TEST_DATABASE_URL.includes('?') ? '&' : '?';
    env = { DATABASE_URL: `${TEST_DATABASE_URL}${sep}options=-c%20search_path%3D${testDb.schema}`, SERVICE_SECRET_KEY: randomBytes(32).toString('hex') };
  } else {
    env = { SERVICE_DATA_DIR: file('data') };
  }
});
afterAll(async () => {
  await testDb?.drop();
  rmSync(work, { recursive: true, force: true });
});

describe('surveyor keys public', () => {
  it('--json makes the key on first use and prints its PEM and fingerprint, the SHA-256 of the DER SubjectPublicKeyInfo as openssl computes it', async () => {
    const r = json(await cli('keys', 'public', '--json'));
    expect(r).toEqual({ algorithm: 'Ed25519', publicKeyPem: expect.stringMatching(/^-----BEGIN PUBLIC KEY-----\n[\s\S]+\n-----END PUBLIC KEY-----\n$/), fingerprint: expect.stringMatching(/^sha256:[0-9a-f]{64}$/) });
    writeFileSync(file('key.pem'), r.publicKeyPem);
    const der = execFileSync('openssl', ['pkey', '-pubin', '-in', file('key.pem'), '-outform', 'DER']);
    const digest = execFileSync('openssl', ['dgst', '-sha256', '-r'], { input: der, encoding: 'utf8' }).split(' ')[0];
    expect(r.fingerprint).toBe(`sha256:${digest}`);
    key = { publicKeyPem: r.publicKeyPem, fingerprint: r.fingerprint };
  });

  it('prints the same key on every later run (it is stored), as PEM then a fingerprint line', async () => {
    const r = await cli('keys', 'public');
    expect(r.err).toEqual([]);
    expect(r.code).toBe(0);
    expect(r.out.join('\n')).toBe(`${key.publicKeyPem.trimEnd()}\nFingerprint: ${key.fingerprint}`);
    writeFileSync(file('printed.pem'), `${r.out.join('\n')}\n`);
  });

  it('refuses an unknown sub-command with exit 2', async () => {
    expect(failed(await cli('keys', 'private'), 2)).toContain('unknown keys command "private"');
  });
});

describe('surveyor snapshots verify and content', () => {
  beforeAll(async () => {
    // A snapshot and its attestation, made by the service's own code on the CLI's database.
    const secretKey = TEST_DATABASE_URL ? Buffer.from(env.SERVICE_SECRET_KEY!, 'hex') : resolveSecretKey(loadConfig(env));
    await withDatabase(async (database) => {
      const org = await admin.createOrganisation(database.db, { type: 'cli' }, { name: `Initech ${randomBytes(3).toString('hex')}`, ownerEmail: `owner-${randomBytes(3).toString('hex')}@initech.test`, ownerPassword: 'correct horse battery staple' });
      organisationId = org.organisationId;
      await addHost(database.db, org.organisationId, { hostname: 'printer', addresses: ['10.9.0.5'] });
      const s = await createSnapshot(database.db, { type: 'cli', organisationId: org.organisationId }, { reason: 'pre_change' });
      snapshot = { id: s.id, contentSha256: s.contentSha256! };
      writeFileSync(file('a.pdf'), (await attestSnapshot(database.db, secretKey, org.organisationId, s.id)).pdf);
    });
  });

  it('content ID --out FILE writes the stored content (gzip) whose uncompressed SHA-256 is the snapshot\'s', async () => {
    const r = json(await cli('snapshots', 'content', snapshot.id, '--out', file('content.json.gz'), '--json'));
    expect(r).toEqual({ snapshotId: snapshot.id, organisationId, file: file('content.json.gz'), gzipBytes: readFileSync(file('content.json.gz')).length, contentSha256: snapshot.contentSha256 });
    const plain = gunzipSync(readFileSync(file('content.json.gz')));
    expect(JSON.parse(plain.toString('utf8'))).toMatchObject({ hosts: [expect.objectContaining({ hostname: 'printer' })] });
    writeFileSync(file('content.json'), plain);
    writeFileSync(file('other.json'), plain.toString('utf8').replace('"printer"', '"scanner"'));
  });

  it('verify with --public-key says valid (exit 0) and that the content was not checked', async () => {
    const r = await cli('snapshots', 'verify', file('a.pdf'), '--public-key', file('key.pem'));
    expect(r.err).toEqual([]);
    expect(r.code).toBe(0);
    // Every signed field, the stats and the content's size included, and the key's fingerprint.
    const size = statSync(file('a.pdf')).size;
    const out = r.out.join('\n');
    expect(out.split('\n')[0]).toMatch(/^Valid: the whole document \((\d+) bytes\) and its statement are signed by the trusted key\.$/);
    expect(Number(/\((\d+) bytes\)/.exec(out)![1])).toBeLessThan(size);
    const field = (label: string) => new RegExp(`^${label}:\\s+(.*)$`, 'm').exec(out)?.[1];
    expect(field('Organisation')).toMatch(new RegExp(`^Initech [0-9a-f]{6} \\(${organisationId}\\)$`));
    expect(field('Snapshot')).toBe(snapshot.id);
    expect(field('Site')).toBe('whole organisation');
    expect(field('Reason')).toBe('pre_change');
    expect(field('Captured at')).toMatch(/Z$/);
    expect(field('Attested at')).toMatch(/Z$/);
    expect(field('Stats')).toMatch(/^hosts 1, addresses 1, services 0, /);
    expect(field('Content SHA-256')).toBe(snapshot.contentSha256);
    expect(field('Content size')).toMatch(/^\d+ bytes$/);
    expect(field('Key fingerprint')).toBe(key.fingerprint);
    expect(out).toMatch(/\nContent not checked \(give --content FILE\)\.$/);
  });

  it('verify with --public-key needs no database: it checks with the configured one unreachable', async () => {
    const out: string[] = [];
    const err: string[] = [];
    const unreachable = { DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none', SERVICE_SECRET_KEY: randomBytes(32).toString('hex') };
    const code = await runCli(['snapshots', 'verify', file('a.pdf'), '--public-key', file('key.pem'), '--content', file('content.json.gz')], { out: (l) => out.push(l), err: (l) => err.push(l), env: unreachable });
    expect(err).toEqual([]);
    expect(code).toBe(0);
    expect(out.join('\n')).toContain('Content matches the attested SHA-256.');
  });

  it('verify --content accepts the content as written (gzip) or uncompressed, with the key `keys public` printed', async () => {
    for (const content of ['content.json.gz', 'content.json']) {
      const r = await cli('snapshots', 'verify', file('a.pdf'), '--public-key', file('printed.pem'), '--content', file(content));
      expect(r.code, r.err.join()).toBe(0);
      expect(r.out.join('\n')).toContain('Content matches the attested SHA-256.');
    }
  });

  it('verify without --public-key checks against the key stored in the database', async () => {
    const r = json(await cli('snapshots', 'verify', file('a.pdf'), '--content', file('content.json.gz'), '--json'));
    expect(r).toMatchObject({ valid: true, contentChecked: true, signedBytes: expect.any(Number), attestation: { snapshotId: snapshot.id, organisationId, reason: 'pre_change', keyFingerprint: key.fingerprint, contentSha256: snapshot.contentSha256 } });
  });

  it('verify refuses other content with exit 1 and the two digests', async () => {
    const reason = failed(await cli('snapshots', 'verify', file('a.pdf'), '--public-key', file('key.pem'), '--content', file('other.json')), 1);
    expect(reason).toMatch(new RegExp(`^surveyor: attestation NOT valid: the content's SHA-256 is [0-9a-f]{64}, not the attested ${snapshot.contentSha256}$`));
  });

  it('verify refuses a PDF whose statement or signature lost one byte to tampering: exit 1, and with --json {valid: false, reason}', async () => {
    const pdf = readFileSync(file('a.pdf'));
    const hex = Buffer.from('"reason":"pre_change"').toString('hex');
    const at = pdf.indexOf(hex, 0, 'latin1');
    expect(at).toBeGreaterThan(0);
    const statement = Buffer.from(pdf);
    statement.write(Buffer.from('"reason":"pre_chango"').toString('hex'), at, 'latin1');
    writeFileSync(file('statement.pdf'), statement);
    const sigAt = pdf.indexOf('/SurveyorSignature (', 0, 'latin1') + '/SurveyorSignature ('.length + 5;
    const signature = Buffer.from(pdf);
    signature[sigAt] = signature[sigAt] === 0x41 ? 0x42 : 0x41;
    writeFileSync(file('signature.pdf'), signature);
    for (const name of ['statement.pdf', 'signature.pdf']) {
      expect(failed(await cli('snapshots', 'verify', file(name), '--public-key', file('key.pem')), 1), name).toMatch(/^surveyor: attestation NOT valid: the signature does not match the signed document/);
      const r = await cli('snapshots', 'verify', file(name), '--json');
      expect(r.code).toBe(1);
      expect(JSON.parse(r.out[0]!)).toMatchObject({ valid: false, reason: expect.stringMatching(/^the signature does not match/) });
    }
  });

  it('verify refuses a page added or bytes appended after signing with exit 1, and a PDF signed by another key with exit 3', async () => {
    const pdf = readFileSync(file('a.pdf'));
    writeFileSync(file('appended.pdf'), Buffer.concat([pdf, Buffer.from('\n% a later update\n', 'latin1')]));
    expect(failed(await cli('snapshots', 'verify', file('appended.pdf'), '--public-key', file('key.pem')), 1)).toMatch(/the PDF was changed after it was signed/);
    const doc = await PDFDocument.load(pdf);
    doc.addPage();
    writeFileSync(file('page.pdf'), await doc.save());
    expect(failed(await cli('snapshots', 'verify', file('page.pdf'), '--public-key', file('key.pem')), 1)).toMatch(/^surveyor: attestation NOT valid: /);
    const { publicKey } = generateKeyPairSync('ed25519');
    writeFileSync(file('stranger.pem'), publicKey.export({ type: 'spki', format: 'pem' }).toString());
    const r = await cli('snapshots', 'verify', file('a.pdf'), '--public-key', file('stranger.pem'));
    expect(failed(r, 3)).toMatch(/^surveyor: attestation NOT valid: signed with the key sha256:[0-9a-f]{64}, not the trusted key sha256:[0-9a-f]{64}$/);
    expect(JSON.parse((await cli('snapshots', 'verify', file('a.pdf'), '--public-key', file('stranger.pem'), '--json')).out[0]!)).toMatchObject({ valid: false, unknownKey: true });
  });

  it('refuses bad arguments and unreadable files with exit 2', async () => {
    expect(failed(await cli('snapshots', 'verify'), 2)).toContain('needs the attestation PDF');
    expect(failed(await cli('snapshots', 'verify', file('missing.pdf'), '--public-key', file('key.pem')), 2)).toContain('cannot read the attestation');
    expect(failed(await cli('snapshots', 'verify', file('a.pdf'), '--public-key', file('content.json')), 2)).toContain('holds no PEM public key');
    expect(failed(await cli('snapshots', 'verify', file('a.pdf'), '--colour'), 2)).toContain('unknown option --colour');
    expect(failed(await cli('snapshots', 'content', 'nope', '--out', file('x')), 2)).toContain('needs a snapshot id');
    expect(failed(await cli('snapshots', 'content', snapshot.id), 2)).toContain('--out is required');
    expect(failed(await cli('snapshots', 'content', '00000000-0000-4000-8000-000000000000', '--out', file('x')), 2)).toBe('surveyor: not_found: No snapshot 00000000-0000-4000-8000-000000000000.');
    expect(failed(await cli('snapshots', 'diff'), 2)).toContain('unknown snapshots command "diff"');
  });
});
