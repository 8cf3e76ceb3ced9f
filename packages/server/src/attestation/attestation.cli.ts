import { readFileSync, writeFileSync } from 'node:fs';
import { UsageError, parseFlags } from '../cli/args.js';
import { resolveSecretKey } from '../crypto/secrets.js';
import { withMigratedDatabase } from '../db/open.js';
import { AppError } from '../errors.js';
import type { CliIO, CliVerb } from '../module.js';
import * as repo from './attestation.repo.js';
import { verifyAttestation } from './attestation.service.js';
import { parsePublicKey, signingKey, storedPublicKey } from './signing-key.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function readInput(file: string, what: string): Buffer {
  try {
    return readFileSync(file);
  } catch (e) {
    throw new UsageError(`cannot read the ${what} ${JSON.stringify(file)} (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
  }
}

/** `surveyor keys public`: the service's attestation public key, made now if the service has none yet. */
export const keysVerb: CliVerb = {
  usage: ['keys public [--json]'],
  help: `public: prints the service's Ed25519 attestation public key (PEM, SubjectPublicKeyInfo) and its
fingerprint: "sha256:" and the hex SHA-256 of the DER SubjectPublicKeyInfo, as
\`openssl pkey -pubin -in KEY.pem -outform DER | sha256sum\` computes it. Makes the key on first use
(its private half is stored sealed with SERVICE_SECRET_KEY, or the data folder's secret.key).
Give the PEM to whoever verifies attestations: surveyor snapshots verify FILE.pdf --public-key KEY.pem.
--json: {"algorithm":"Ed25519","publicKeyPem":"…","fingerprint":"sha256:…"}.`,
  async run([sub, ...args], io, config) {
    if (sub !== 'public') throw new UsageError(`unknown keys command ${JSON.stringify(sub ?? '')} (public)`);
    const f = parseFlags(args, { json: 'boolean' });
    return withMigratedDatabase(config, async (database) => {
      // The secret key only when the signing key must be made (on the embedded database, under its lock).
      const key = (await storedPublicKey(database.db)) ?? (await signingKey(database.db, resolveSecretKey(config)));
      if (f.json) io.out(JSON.stringify({ algorithm: 'Ed25519', publicKeyPem: key.publicKeyPem, fingerprint: key.fingerprint }));
      else io.out(`${key.publicKeyPem.trimEnd()}\nFingerprint: ${key.fingerprint}`);
      return 0;
    });
  },
};

/** The trusted key: the PEM block of --public-key, else the one stored in this configuration's database. */
async function trustedKey(file: string | undefined, config: Parameters<CliVerb['run']>[2]) {
  if (file) {
    const text = readInput(file, 'public key').toString('utf8');
    const pem = /-----BEGIN PUBLIC KEY-----[\s\S]*?-----END PUBLIC KEY-----/.exec(text)?.[0];
    if (!pem) throw new UsageError(`${file} holds no PEM public key (-----BEGIN PUBLIC KEY-----)`);
    try {
      return parsePublicKey(pem);
    } catch (e) {
      throw new UsageError(`${file}: ${(e as Error).message}`);
    }
  }
  const stored = await withMigratedDatabase(config, (database) => storedPublicKey(database.db));
  if (!stored) throw new AppError('not_found', 'this database holds no signing key (the service has signed nothing); pass --public-key FILE');
  return parsePublicKey(stored.publicKeyPem);
}

async function verify(args: string[], io: CliIO, config: Parameters<CliVerb['run']>[2]): Promise<number> {
  const file = args[0] && !args[0].startsWith('--') ? args.shift()! : undefined;
  if (!file) throw new UsageError('snapshots verify needs the attestation PDF: surveyor snapshots verify FILE.pdf');
  const f = parseFlags(args, { 'public-key': 'string', content: 'string', json: 'boolean' });
  const pdf = readInput(file, 'attestation');
  const content = typeof f.content === 'string' ? readInput(f.content, 'content file') : undefined;
  const key = await trustedKey(typeof f['public-key'] === 'string' ? f['public-key'] : undefined, config);
  const r = await verifyAttestation(pdf, key, content);
  const code = r.valid ? 0 : r.unknownKey ? 3 : 1;
  if (f.json) {
    io.out(JSON.stringify(r.valid ? { valid: true, contentChecked: r.contentChecked, signedBytes: r.signedBytes, attestation: r.payload } : { valid: false, reason: r.reason, ...(r.unknownKey ? { unknownKey: true } : {}), ...(r.payload && !r.unknownKey ? { attestation: r.payload } : {}) }));
    return code;
  }
  if (!r.valid) {
    io.err(`surveyor: attestation NOT valid: ${r.reason}`);
    return code;
  }
  const p = r.payload;
  // Every signed field, so what the page claims can be read against what was signed.
  io.out(
    [
      `Valid: the whole document (${r.signedBytes} bytes) and its statement are signed by the trusted key.`,
      `Organisation:     ${p.organisationName} (${p.organisationId})`,
      `Snapshot:         ${p.snapshotId}`,
      `Site:             ${p.siteId ?? 'whole organisation'}`,
      `Reason:           ${p.reason}`,
      `Captured at:      ${p.capturedAt}`,
      `Attested at:      ${p.issuedAt}`,
      `Stats:            ${Object.entries(p.stats).map(([k, v]) => `${k} ${v}`).join(', ')}`,
      `Content SHA-256:  ${p.contentSha256 ?? 'not recorded'}`,
      `Content size:     ${p.contentBytes === null ? 'not recorded' : `${p.contentBytes} bytes`}`,
      `Key fingerprint:  ${p.keyFingerprint}`,
      r.contentChecked ? 'Content matches the attested SHA-256.' : 'Content not checked (give --content FILE).',
    ].join('\n'),
  );
  return 0;
}

async function content(args: string[], io: CliIO, config: Parameters<CliVerb['run']>[2]): Promise<number> {
  const id = args[0] && !args[0].startsWith('--') ? args.shift()! : undefined;
  if (!id || !UUID.test(id)) throw new UsageError('snapshots content needs a snapshot id: surveyor snapshots content ID --out FILE');
  const f = parseFlags(args, { out: 'string', json: 'boolean' }, ['out']);
  return withMigratedDatabase(config, async (database) => {
    const row = await repo.findSnapshotContent(database.db, id);
    if (!row) throw new AppError('not_found', `No snapshot ${id}.`);
    if (!row.content) throw new AppError('not_found', `Snapshot ${id} has no stored content (taken before content was kept).`);
    writeFileSync(String(f.out), row.content);
    const result = { snapshotId: id, organisationId: row.organisation_id, file: String(f.out), gzipBytes: row.content.length, contentSha256: row.content_sha256 };
    io.out(f.json ? JSON.stringify(result) : `Wrote the content of snapshot ${id} (gzip, ${row.content.length} bytes) to ${result.file}; SHA-256 of the uncompressed JSON: ${row.content_sha256}.`);
    return 0;
  });
}

/** `surveyor snapshots verify|content`: check an attestation offline; export a snapshot's content. */
export const snapshotsVerb: CliVerb = {
  usage: ['snapshots verify FILE.pdf [--public-key KEY.pem] [--content FILE] [--json]', 'snapshots content ID --out FILE [--json]'],
  help: `verify: checks an attestation PDF (GET /api/v1/snapshots/{id}/attestation.pdf) offline: that its signed
statement carries the trusted key's fingerprint and that the Ed25519 signatures match it. The trusted
key is --public-key (PEM, as \`surveyor keys public\` prints it; no database needed), else the key
stored in this configuration's database. With --content it also checks the SHA-256 of a snapshot's
content: the gzip file \`snapshots content\` writes, or the same JSON uncompressed. The signature covers
every byte of the document (any change to any page fails) and the statement; valid, it prints every
signed field. Exit 0 valid; 1 not valid: altered, not an attestation, or other content (the reason on
stderr; with --json {"valid":false,"reason":…} on stdout); 3 signed by another key than the trusted
one; 2 bad arguments or an unreadable file.
content: writes a snapshot's stored content (canonical JSON, gzip-compressed, as kept) to FILE.`,
  async run([sub, ...args], io, config) {
    if (sub === 'verify') return verify(args, io, config);
    if (sub === 'content') return content(args, io, config);
    throw new UsageError(`unknown snapshots command ${JSON.stringify(sub ?? '')} (verify or content)`);
  },
};
