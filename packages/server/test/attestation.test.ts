import { createPublicKey, generateKeyPairSync, randomBytes, sign } from 'node:crypto';
import { createRequire } from 'node:module';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { PDFDocument, StandardFonts, rgb } from 'pdf-lib';
import { getDocument } from 'pdfjs-dist/legacy/build/pdf.mjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as admin from '../src/admin/admin.service.js';
import { verifyAttestation } from '../src/attestation/attestation.service.js';
import { documentSignatureUpdate } from '../src/attestation/pdf.js';
import { parsePublicKey, signingKey, storedPublicKey } from '../src/attestation/signing-key.js';
import { decryptSecret } from '../src/crypto/secrets.js';
import { createLogger } from '../src/logger.js';
import { buildWebApp } from '../src/main.js';
import { addHost, addService } from './fixtures.js';
import { PASSWORD, type SeededOrg, type TestApp, bearer, buildTestApp, createTestDatabase, login, seedOrg } from './helpers.js';

// Snapshot attestations (issue 15; spec 4.6; decisions.md "Attestation PDF"): the signed PDF, read
// back with Mozilla's pdf.js (the library behind Firefox's PDF viewer), checked by the offline
// verifier; the signing key's life.

const STAT_LABELS = { hosts: 'Hosts', addresses: 'Addresses', services: 'Services', networks: 'Networks', sites: 'Sites', certificates: 'Certificates', vulnerabilities: 'Vulnerabilities', topologies: 'Topologies' };

let t: TestApp;
let org: SeededOrg;
let other: SeededOrg;
let snapshot: { id: string; reason: string; capturedAt: string; stats: Record<string, number>; contentSha256: string; contentBytes: number };
let apiKey: string;
let editorEmail: string;
let viewerEmail: string;
let adminEmail: string;

// One sign-in per person for the whole file: sign-in is rate limited per client address (10 a minute).
const cookies = new Map<string, string>();
const cookieOf = async (email: string) => {
  if (!cookies.has(email)) cookies.set(email, (await login(t.app, email)).cookie);
  return { cookie: cookies.get(email)! };
};
const attestation = (id: string, headers: Record<string, string>) => t.app.inject({ method: 'GET', url: `/api/v1/snapshots/${id}/attestation.pdf`, headers });

function expectProblem(res: Awaited<ReturnType<typeof attestation>>, status: number, code: string) {
  expect(res.statusCode, res.body).toBe(status);
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  expect(res.json()).toMatchObject({ status, code });
}

/** pdf.js's metrics of the 14 standard PDF fonts (the attestation uses Helvetica and Courier). */
const STANDARD_FONTS = `${path.dirname(createRequire(import.meta.url).resolve('pdfjs-dist/package.json'))}/standard_fonts/`;

/**
 * The text of a PDF as a reader sees it: pdf.js's text items put back into lines by their
 * baseline, left to right, with a space where there is a gap, so a label and its value share a line.
 */
async function pdfText(pdf: Buffer): Promise<string> {
  const doc = await getDocument({ data: new Uint8Array(pdf), standardFontDataUrl: STANDARD_FONTS, useSystemFonts: false, isEvalSupported: false }).promise;
  const lines: string[] = [];
  for (let n = 1; n <= doc.numPages; n++) {
    const content = await (await doc.getPage(n)).getTextContent();
    const rows = new Map<number, { x: number; end: number; str: string }[]>();
    for (const item of content.items) {
      if (!('str' in item) || item.str === '') continue;
      const [, , , , x, y] = item.transform as number[];
      const row = rows.get(Math.round(y!)) ?? [];
      row.push({ x: x!, end: x! + item.width, str: item.str });
      rows.set(Math.round(y!), row);
    }
    for (const [, row] of [...rows].sort(([a], [b]) => b - a)) {
      row.sort((a, b) => a.x - b.x);
      lines.push(row.map((r, i) => (i > 0 && r.x > row[i - 1]!.end + 0.5 ? ' ' : '') + r.str).join(''));
    }
  }
  await doc.destroy();
  return lines.join('\n');
}

/** The stored snapshot content, as `snapshots content` writes it (gzip). */
async function storedContent(id: string): Promise<Buffer> {
  const row = await t.database.db.selectFrom('snapshots').select('content').where('id', '=', id).executeTakeFirstOrThrow();
  return row.content!;
}

const trusted = async () => parsePublicKey((await storedPublicKey(t.database.db))!.publicKeyPem);

/** The same bytes with one occurrence of `from` replaced by `to` (equal lengths: the file's offsets stay right). */
function replaceOnce(pdf: Buffer, from: string, to: string): Buffer {
  expect(to.length).toBe(from.length);
  const at = pdf.indexOf(from, 0, 'latin1');
  expect(at, `${from} in the PDF`).toBeGreaterThan(0);
  expect(pdf.indexOf(from, at + 1, 'latin1'), `${from} once in the PDF`).toBe(-1);
  const out = Buffer.from(pdf);
  out.write(to, at, 'latin1');
  return out;
}

beforeAll(async () => {
  t = await buildTestApp();
  // A name with a non-ASCII letter and parentheses: printed as is, escaped in the signed statement.
  const name = `Acme Zürich (Ops) ${randomBytes(3).toString('hex')}`;
  const ownerEmail = `owner-${randomBytes(3).toString('hex')}@acme.test`;
  const created = await admin.createOrganisation(t.database.db, { type: 'cli' }, { name, ownerEmail, ownerPassword: PASSWORD });
  org = { organisationId: created.organisationId, name, ownerEmail, ownerId: created.userId };
  other = await seedOrg(t.database);
  const db = t.database.db;
  const web = await addHost(db, org.organisationId, { hostname: 'web', addresses: ['10.1.0.10', '10.1.0.11'] });
  await addService(db, org.organisationId, web, { port: 443, name: 'https' });
  await addHost(db, org.organisationId, { hostname: 'db', addresses: ['10.1.0.20'] });
  adminEmail = `admin-${randomBytes(3).toString('hex')}@acme.test`;
  await admin.createUser(db, { type: 'cli' }, { org: org.organisationId, email: adminEmail, role: 'admin', password: PASSWORD });
  apiKey = (await admin.createApiKey(db, { type: 'cli' }, { org: org.organisationId, userEmail: adminEmail, scopes: ['inventory:write', 'inventory:read'] })).token;
  editorEmail = `editor-${randomBytes(3).toString('hex')}@acme.test`;
  await admin.createUser(db, { type: 'cli' }, { org: org.organisationId, email: editorEmail, role: 'editor', password: PASSWORD });
  viewerEmail = `viewer-${randomBytes(3).toString('hex')}@acme.test`;
  await admin.createUser(db, { type: 'cli' }, { org: org.organisationId, email: viewerEmail, role: 'viewer', password: PASSWORD });
  const res = await t.app.inject({ method: 'POST', url: '/api/v1/snapshots', headers: bearer(apiKey), payload: { reason: 'audit' } });
  expect(res.statusCode, res.body).toBe(201);
  snapshot = res.json();
});
afterAll(async () => {
  await t.close();
});

describe('GET /api/v1/snapshots/{id}/attestation.pdf', () => {
  it('gives an owner a PDF stating the organisation, snapshot, reason, capture time, stats, content digest, signature and key fingerprint', async () => {
    const res = await attestation(snapshot.id, await cookieOf(org.ownerEmail));
    expect(res.statusCode, res.body).toBe(200);
    expect(res.headers['content-type']).toBe('application/pdf');
    expect(res.headers['content-disposition']).toBe(`attachment; filename="snapshot-${snapshot.id}-attestation.pdf"`);
    const pdf = res.rawPayload;
    expect(pdf.subarray(0, 5).toString('latin1')).toBe('%PDF-');
    const text = await pdfText(pdf);
    const key = (await storedPublicKey(t.database.db))!;
    const verdict = await verifyAttestation(pdf, await trusted());
    expect(verdict.valid).toBe(true);
    const signature = /\/SurveyorSignature \(([A-Za-z0-9+/=]+)\)/.exec(pdf.toString('latin1'))![1]!;
    const line = (label: string, value: string) => expect(text, label).toMatch(new RegExp(`^\\s*${label}\\s+${value.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\s*$`, 'm'));
    line('Organisation', org.name);
    line('Organisation id', org.organisationId);
    line('Snapshot id', snapshot.id);
    line('Site', 'whole organisation');
    line('Reason', 'audit');
    line('Captured at', snapshot.capturedAt);
    expect(snapshot.stats).toMatchObject({ hosts: 2, addresses: 3, services: 1 });
    for (const [k, label] of Object.entries(STAT_LABELS)) line(label, String(snapshot.stats[k]));
    line('SHA-256', snapshot.contentSha256);
    line('Size', `${snapshot.contentBytes} bytes of canonical JSON`);
    line('Key fingerprint', key.fingerprint);
    line('Statement signature', signature);
    expect(key.fingerprint).toMatch(/^sha256:[0-9a-f]{64}$/);
    // The signed statement is printed too, the non-ASCII of the name escaped as in the signed bytes.
    expect(text.replace(/\s+/g, '')).toContain(`"organisationName":"${org.name.replace('ü', '\\u00fc').replace(/ /g, '')}"`);
  });

  it('gives an admin the same attested facts, each request signed anew at its own time', async () => {
    const [a, b] = [await attestation(snapshot.id, await cookieOf(adminEmail)), await attestation(snapshot.id, await cookieOf(org.ownerEmail))];
    expect(a.statusCode, a.body).toBe(200);
    const [va, vb] = [await verifyAttestation(a.rawPayload, await trusted()), await verifyAttestation(b.rawPayload, await trusted())];
    if (!va.valid || !vb.valid) throw new Error('both must verify');
    expect(va.payload).toEqual({ ...vb.payload, issuedAt: va.payload.issuedAt });
    expect(va.payload).toMatchObject({
      format: 'surveyor-snapshot-attestation/1', organisationId: org.organisationId, organisationName: org.name, snapshotId: snapshot.id, siteId: null,
      reason: 'audit', capturedAt: snapshot.capturedAt, stats: snapshot.stats, contentSha256: snapshot.contentSha256, contentBytes: snapshot.contentBytes,
    });
  });

  it('attests a snapshot taken before content was kept: no digest printed or signed, and a content check says so', async () => {
    const old = await t.database.db
      .insertInto('snapshots')
      .values({ organisation_id: org.organisationId, reason: 'manual', stats: JSON.stringify({ hosts: 1 }), created_by_key_id: null })
      .returning('id')
      .executeTakeFirstOrThrow();
    const res = await attestation(old.id, await cookieOf(org.ownerEmail));
    expect(res.statusCode, res.body).toBe(200);
    expect(await pdfText(res.rawPayload)).toMatch(/^\s*SHA-256\s+not recorded \(taken before snapshot content was kept\)\s*$/m);
    expect(await verifyAttestation(res.rawPayload, await trusted())).toMatchObject({ valid: true, contentChecked: false, payload: { contentSha256: null, contentBytes: null, stats: { hosts: 1, services: 0 } } });
    expect(await verifyAttestation(res.rawPayload, await trusted(), await storedContent(snapshot.id))).toMatchObject({ valid: false, reason: expect.stringMatching(/records no content digest/) });
  });

  it('refuses an editor or a viewer session with 403 forbidden', async () => {
    for (const email of [editorEmail, viewerEmail]) expectProblem(await attestation(snapshot.id, await cookieOf(email)), 403, 'forbidden');
  });

  it('refuses an API key or no credential with 401 unauthorized', async () => {
    expectProblem(await attestation(snapshot.id, bearer(apiKey)), 401, 'unauthorized');
    expectProblem(await attestation(snapshot.id, {}), 401, 'unauthorized');
  });

  it('answers 404 not_found for another organisation\'s snapshot, as for one that does not exist, and 400 for an id that is not a uuid', async () => {
    expectProblem(await attestation(snapshot.id, await cookieOf(other.ownerEmail)), 404, 'not_found');
    expectProblem(await attestation('00000000-0000-4000-8000-000000000000', await cookieOf(org.ownerEmail)), 404, 'not_found');
    expectProblem(await attestation('not-a-uuid', await cookieOf(org.ownerEmail)), 400, 'validation_failed');
  });
});

describe('verifying an attestation offline', () => {
  let pdf: Buffer;
  beforeAll(async () => {
    pdf = (await attestation(snapshot.id, await cookieOf(org.ownerEmail))).rawPayload;
  });

  it('accepts the snapshot\'s content, as stored (gzip) or uncompressed', async () => {
    const gz = await storedContent(snapshot.id);
    expect(await verifyAttestation(pdf, await trusted(), gz)).toMatchObject({ valid: true, contentChecked: true });
    expect(await verifyAttestation(pdf, await trusted(), gunzipSync(gz))).toMatchObject({ valid: true, contentChecked: true });
  });

  it('refuses other content: the digest does not match', async () => {
    const plain = gunzipSync(await storedContent(snapshot.id));
    const altered = Buffer.from(plain.toString('utf8').replace('"db"', '"dc"'));
    expect(altered.equals(plain)).toBe(false);
    const r = await verifyAttestation(pdf, await trusted(), altered);
    expect(r).toMatchObject({ valid: false, reason: expect.stringMatching(/^the content's SHA-256 is [0-9a-f]{64}, not the attested [0-9a-f]{64}$/) });
  });

  it('refuses a statement with one byte altered (the reason, or a count of the stats)', async () => {
    const hex = (s: string) => Buffer.from(s).toString('hex');
    for (const [from, to] of [['"reason":"audit"', '"reason":"audiu"'], ['"hosts":2', '"hosts":3']] as const) {
      const r = await verifyAttestation(replaceOnce(pdf, hex(from), hex(to)), await trusted());
      expect(r, from).toMatchObject({ valid: false, reason: expect.stringMatching(/^the signature does not match the signed document/) });
    }
  });

  it('refuses a signature with one character altered', async () => {
    const signature = /\/SurveyorSignature \(([A-Za-z0-9+/=]+)\)/.exec(pdf.toString('latin1'))![1]!;
    const altered = signature.slice(0, 10) + (signature[10] === 'A' ? 'B' : 'A') + signature.slice(11);
    const r = await verifyAttestation(replaceOnce(pdf, signature, altered), await trusted());
    expect(r).toMatchObject({ valid: false, reason: expect.stringMatching(/^the signature does not match/) });
  });

  it('refuses a trusted key other than the signer\'s, naming both fingerprints', async () => {
    const { publicKey } = generateKeyPairSync('ed25519');
    const stranger = parsePublicKey(publicKey.export({ type: 'spki', format: 'pem' }).toString());
    const r = await verifyAttestation(pdf, stranger);
    expect(r).toMatchObject({ valid: false, reason: `signed with the key ${(await storedPublicKey(t.database.db))!.fingerprint}, not the trusted key ${stranger.fingerprint}` });
  });

  it('refuses a PDF that carries no statement, and bytes that are no PDF', async () => {
    const stripped = replaceOnce(pdf, '/SurveyorAttestation', '/SurveyorAttestatioX');
    expect(await verifyAttestation(stripped, await trusted())).toMatchObject({ valid: false, reason: 'not a Surveyor attestation: the PDF carries no signed statement' });
    expect(await verifyAttestation(Buffer.from('hello'), await trusted())).toMatchObject({ valid: false, reason: expect.stringMatching(/^not a readable PDF/) });
  });
});

describe('the signature covers the whole document, not only its statement (issue 29)', () => {
  let pdf: Buffer;
  const signedLength = (b: Buffer) => Number(/\/ByteRange \[ 0 (\d+) \]/.exec(b.toString('latin1'))![1]);
  beforeAll(async () => {
    pdf = (await attestation(snapshot.id, await cookieOf(org.ownerEmail))).rawPayload;
  });

  it('signs every byte before its signature\'s update, which ends the file; the page carries the published public key', async () => {
    const verdict = await verifyAttestation(pdf, await trusted());
    expect(verdict).toMatchObject({ valid: true, signedBytes: signedLength(pdf) });
    expect(pdf.toString('latin1').endsWith('%%EOF\n')).toBe(true);
    const published = await t.app.inject({ method: 'GET', url: '/api/v1/attestation/public-key' });
    expect(published.statusCode).toBe(200);
    const key = (await storedPublicKey(t.database.db))!;
    expect(published.json()).toEqual({ algorithm: 'Ed25519', publicKeyPem: key.publicKeyPem, fingerprint: key.fingerprint });
    const text = await pdfText(pdf);
    const body = key.publicKeyPem.replace(/-----[A-Z ]+-----|\s/g, '');
    expect(text.replace(/\s/g, '')).toContain(body);
  });

  it('refuses a page painted over: the Hosts count drawn anew over the old one (pdf-lib), whether saved whole or appended as an update', async () => {
    const doc = await PDFDocument.load(pdf);
    const page = doc.getPage(0);
    const font = await doc.embedFont(StandardFonts.Helvetica);
    // A white box over the printed statistics and a forged count in their place.
    page.drawRectangle({ x: 170, y: 380, width: 120, height: 140, color: rgb(1, 1, 1) });
    page.drawText('999', { x: 220, y: 500, size: 10, font });
    const rewritten = Buffer.from(await doc.save({ useObjectStreams: false }));
    expect((await pdfText(rewritten)).includes('999')).toBe(true);
    expect(await verifyAttestation(rewritten, await trusted())).toMatchObject({ valid: false, reason: expect.stringMatching(/^the PDF was changed after it was signed|^the PDF carries no document signature/) });
    // The same change kept after the signed bytes, as an incremental update would put it.
    const appended = Buffer.concat([pdf, rewritten.subarray(signedLength(pdf))]);
    expect(await verifyAttestation(appended, await trusted())).toMatchObject({ valid: false, reason: expect.stringMatching(/^the PDF was changed after it was signed/) });
  });

  it('refuses one byte changed anywhere in the document: header, page content, fonts, statement, cross-reference table, signature', async () => {
    const length = signedLength(pdf);
    const positions = [6, Math.floor(length * 0.1), Math.floor(length * 0.25), Math.floor(length * 0.5), Math.floor(length * 0.75), length - 40, length + 120, pdf.length - 20];
    for (const at of positions) {
      const altered = Buffer.from(pdf);
      altered[at] = altered[at] === 0x30 ? 0x31 : 0x30;
      const r = await verifyAttestation(altered, await trusted());
      expect(r.valid, `byte ${at} of ${pdf.length}`).toBe(false);
    }
  });

  it('refuses a page added after signing, and a copy re-signed with another key that claims the real key\'s fingerprint', async () => {
    const doc = await PDFDocument.load(pdf);
    doc.addPage().drawText('Addendum: hosts 999', { x: 50, y: 700 });
    const added = Buffer.from(await doc.save({ useObjectStreams: false }));
    expect((await verifyAttestation(added, await trusted())).valid).toBe(false);
    // A forger's signature over the same signed bytes, in an update built exactly as the service builds it.
    const { privateKey } = generateKeyPairSync('ed25519');
    const signed = pdf.subarray(0, signedLength(pdf));
    const forged = Buffer.concat([signed, documentSignatureUpdate(signed, sign(null, signed, privateKey).toString('base64'))]);
    expect(await verifyAttestation(forged, await trusted())).toMatchObject({ valid: false, reason: expect.stringMatching(/^the signature does not match the signed document/) });
    expect((await verifyAttestation(pdf, await trusted())).valid).toBe(true);
  });
});

describe('the service\'s signing key', () => {
  it('is stored sealed: the column holds neither the PEM nor the raw key, and opens with the secret key to the published public key', async () => {
    const rows = await t.database.db.selectFrom('service_signing_keys').selectAll().execute();
    expect(rows).toHaveLength(1);
    const row = rows[0]!;
    expect(row).toMatchObject({ purpose: 'attestation', algorithm: 'ed25519' });
    expect(row.private_key_sealed).toMatch(/^v1\./);
    expect(row.private_key_sealed).not.toContain('PRIVATE KEY');
    const pem = decryptSecret(t.secretKey, row.private_key_sealed, 'service_signing_keys:attestation');
    const raw = Buffer.from(pem.replace(/-----[A-Z ]+-----|\s/g, ''), 'base64').subarray(-32);
    for (const enc of ['base64', 'base64url', 'hex'] as const) expect(row.private_key_sealed).not.toContain(raw.toString(enc).slice(0, 16));
    expect(createPublicKey(pem).export({ type: 'spki', format: 'pem' })).toBe(row.public_key_pem);
    expect(t.logs.join('\n')).not.toContain(row.private_key_sealed);
    expect(t.logs.join('\n')).not.toContain('PRIVATE KEY');
  });

  it('is the same after a restart: another app on the same database and secret key signs with it', async () => {
    const before = (await storedPublicKey(t.database.db))!;
    const again = await buildWebApp({ config: t.config, database: t.database, logger: createLogger('silent'), secretKey: t.secretKey });
    try {
      const { cookie } = await login(again, org.ownerEmail);
      const res = await again.inject({ method: 'GET', url: `/api/v1/snapshots/${snapshot.id}/attestation.pdf`, headers: { cookie } });
      expect(res.statusCode, res.body).toBe(200);
      expect(await verifyAttestation(res.rawPayload, parsePublicKey(before.publicKeyPem))).toMatchObject({ valid: true });
    } finally {
      await again.close();
    }
    expect(await storedPublicKey(t.database.db)).toEqual(before);
  });

  it('refuses to sign with another secret key, rather than making a second key', async () => {
    await expect(signingKey(t.database.db, randomBytes(32))).rejects.toThrow(/does not open with this secret key/);
    expect(await t.database.db.selectFrom('service_signing_keys').select('fingerprint').execute()).toHaveLength(1);
  });

  it('is made once when several callers ask for it at the same time on a fresh database', async () => {
    const fresh = await createTestDatabase();
    try {
      const secret = randomBytes(32);
      const keys = await Promise.all(Array.from({ length: 6 }, () => signingKey(fresh.database.db, secret)));
      expect(new Set(keys.map((k) => k.fingerprint)).size).toBe(1);
      expect(await fresh.database.db.selectFrom('service_signing_keys').select('fingerprint').execute()).toEqual([{ fingerprint: keys[0]!.fingerprint }]);
    } finally {
      await fresh.drop();
    }
  });
});
