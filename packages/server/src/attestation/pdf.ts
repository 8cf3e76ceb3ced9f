import type { PDFDocument, PDFFont, PDFPage } from 'pdf-lib';
import type { AttestationPayload } from './payload.js';

/**
 * pdf-lib, loaded with the first attestation made or read: 3.4 MB of heap that a web process would
 * otherwise carry from start-up, and mark again at every full collection (issue 30).
 */
const pdfLib = () => import('pdf-lib');

/** Where the signed statement and its signature live in the PDF: entries of the document information dictionary. */
export const INFO_PAYLOAD = 'SurveyorAttestation';
export const INFO_SIGNATURE = 'SurveyorSignature';
export const INFO_PUBLIC_KEY = 'SurveyorPublicKey';
/** The trailer entry of the last incremental update: the signature over every byte before that update. */
export const TRAILER_DOCUMENT_SIGNATURE = 'SurveyorDocumentSignature';

const STAT_LABELS: Record<string, string> = {
  hosts: 'Hosts', addresses: 'Addresses', services: 'Services', networks: 'Networks', sites: 'Sites',
  certificates: 'Certificates', vulnerabilities: 'Vulnerabilities', topologies: 'Topologies',
};

/** The standard fonts print WinAnsi only; anything else shows as '?' (the embedded statement keeps it exactly). */
const printable = (s: string) => s.replace(/[^\x20-\x7e\xa0-\xff]/g, '?');

/** Splits text into lines no wider than `width` (at word breaks when it can, else mid-word). */
function wrap(text: string, font: PDFFont, size: number, width: number): string[] {
  const lines: string[] = [];
  let line = '';
  const fits = (s: string) => font.widthOfTextAtSize(s, size) <= width;
  for (const word of text.split(/(?<= )/)) {
    if (fits(line + word)) {
      line += word;
      continue;
    }
    if (line) lines.push(line.trimEnd());
    line = '';
    for (const ch of word) {
      if (!fits(line + ch)) {
        lines.push(line);
        line = '';
      }
      line += ch;
    }
  }
  if (line) lines.push(line.trimEnd());
  return lines.length ? lines : [''];
}

/**
 * Draws the attestation: the facts for a person to read, the signed statement printed as is, and
 * the same statement and its signature in the document information dictionary for the verifier
 * (`surveyor snapshots verify`). Written without object streams, so those entries stay plain in the file.
 */
export async function renderAttestationPdf(p: AttestationPayload, text: string, signature: string, publicKeyPem: string): Promise<Uint8Array> {
  const { PDFDict, PDFDocument, PDFHexString, PDFName, PDFString, StandardFonts, rgb } = await pdfLib();
  const doc = await PDFDocument.create();
  const [regular, bold, mono] = await Promise.all([doc.embedFont(StandardFonts.Helvetica), doc.embedFont(StandardFonts.HelveticaBold), doc.embedFont(StandardFonts.Courier)]);
  const issued = new Date(p.issuedAt);
  doc.setTitle(`Snapshot attestation ${p.snapshotId}`);
  doc.setAuthor('Surveyor');
  doc.setSubject(`Signed attestation of snapshot ${p.snapshotId} of ${printable(p.organisationName)}`);
  doc.setKeywords(['surveyor', 'snapshot-attestation', p.snapshotId, p.keyFingerprint]);
  doc.setCreator('Surveyor');
  doc.setProducer('Surveyor (pdf-lib)');
  doc.setCreationDate(issued);
  doc.setModificationDate(issued);
  const info = doc.context.lookup(doc.context.trailerInfo.Info, PDFDict);
  info.set(PDFName.of(INFO_PAYLOAD), PDFHexString.of(Buffer.from(text, 'latin1').toString('hex')));
  info.set(PDFName.of(INFO_SIGNATURE), PDFString.of(signature));
  info.set(PDFName.of(INFO_PUBLIC_KEY), PDFString.of(publicKeyPem.trim().replace(/\n/g, ' ')));

  const margin = 50;
  const valueX = 175;
  let page: PDFPage = doc.addPage([595.28, 841.89]);
  const { width, height } = page.getSize();
  let y = height - margin;
  const grey = rgb(0.35, 0.35, 0.35);
  const need = (h: number) => {
    if (y - h < margin) {
      page = doc.addPage([width, height]);
      y = height - margin;
    }
  };
  const textAt = (s: string, x: number, font: PDFFont, size: number, color = rgb(0, 0, 0)) => page.drawText(s, { x, y, size, font, color });
  const heading = (s: string) => {
    y -= 10;
    need(22);
    textAt(s, margin, bold, 12);
    y -= 18;
  };
  const field = (label: string, value: string, font = regular, size = 10) => {
    const lines = wrap(printable(value), font, size, width - margin - valueX);
    need(lines.length * 13);
    textAt(label, margin, bold, 10);
    for (const l of lines) {
      textAt(l, valueX, font, size);
      y -= 13;
    }
  };

  textAt('Snapshot attestation', margin, bold, 18);
  y -= 16;
  textAt('Surveyor network inventory: a signed statement of what one snapshot held.', margin, regular, 9, grey);
  y -= 14;

  heading('Snapshot');
  field('Organisation', p.organisationName);
  field('Organisation id', p.organisationId);
  field('Snapshot id', p.snapshotId);
  field('Site', p.siteId ?? 'whole organisation');
  field('Reason', p.reason);
  field('Captured at', p.capturedAt);
  field('Attested at', p.issuedAt);

  heading('Inventory at capture');
  for (const [k, v] of Object.entries(p.stats)) {
    need(13);
    textAt(STAT_LABELS[k] ?? k, margin, regular, 10);
    const n = String(v);
    textAt(n, valueX + 60 - regular.widthOfTextAtSize(n, 10), regular, 10);
    y -= 13;
  }

  heading('Content');
  field('SHA-256', p.contentSha256 ?? 'not recorded (taken before snapshot content was kept)', mono, 8);
  field('Size', p.contentBytes === null ? 'not recorded' : `${p.contentBytes} bytes of canonical JSON`);

  heading('Signature');
  field('Algorithm', 'Ed25519, over every byte of this document (the signature follows them, in the last incremental update), and over the bytes of the signed statement below');
  field('Key fingerprint', p.keyFingerprint, mono, 8);
  field('Public key', publicKeyPem.replace(/-----[A-Z ]+-----|\s/g, ''), mono, 7);
  field('Statement signature', signature, mono, 7);

  heading('Signed statement');
  // Cut at a fixed count of characters, never at spaces: the printed lines joined are the signed text.
  const perLine = Math.floor((width - 2 * margin) / mono.widthOfTextAtSize('0', 7));
  for (const l of text.match(new RegExp(`.{1,${perLine}}`, 'g')) ?? []) {
    need(10);
    textAt(l, margin, mono, 7);
    y -= 10;
  }
  y -= 8;
  for (const l of wrap('To verify: surveyor snapshots verify THIS.pdf --public-key KEY.pem [--content SNAPSHOT.json.gz]. Trust the public key the service publishes (GET /api/v1/attestation/public-key, or `surveyor keys public`), not the one printed here: its fingerprint must be the one above. Any change to any page fails verification.', regular, 8, width - 2 * margin)) {
    need(11);
    textAt(l, margin, regular, 8, grey);
    y -= 11;
  }
  return doc.save({ useObjectStreams: false });
}

/**
 * The incremental update that carries the document signature, appended to the signed bytes. It is
 * fixed by those bytes and the signature alone (the object number and offsets follow from the
 * signed file's last trailer), so a verifier rebuilds it and finds any other byte after the signed
 * range, such as a further update painting over a page or adding one.
 */
export function documentSignatureUpdate(signed: Uint8Array, signature: string): Buffer {
  const text = Buffer.from(signed).toString('latin1');
  const trailer = text.slice(text.lastIndexOf('trailer'));
  const size = Number(/\/Size (\d+)/.exec(trailer)?.[1]);
  const root = /\/Root (\d+ \d+ R)/.exec(trailer)?.[1];
  const info = /\/Info (\d+ \d+ R)/.exec(trailer)?.[1];
  const prev = /startxref\s+(\d+)\s+%%EOF\s*$/.exec(text)?.[1];
  if (!Number.isInteger(size) || !root || !info || !prev) throw new Error('not a PDF this version signs: its trailer names no size, catalog or information dictionary');
  const object = `\n${size} 0 obj\n<<\n/Type /SurveyorSignature\n/Filter /Surveyor.Ed25519\n/ByteRange [ 0 ${signed.length} ]\n/Contents (${signature})\n>>\nendobj\n`;
  const xrefAt = signed.length + object.length;
  const xref = `xref\n${size} 1\n${String(signed.length + 1).padStart(10, '0')} 00000 n \ntrailer\n<<\n/Size ${size + 1}\n/Root ${root}\n/Info ${info}\n/Prev ${prev}\n/${TRAILER_DOCUMENT_SIGNATURE} ${size} 0 R\n>>\nstartxref\n${xrefAt}\n%%EOF\n`;
  return Buffer.from(object + xref, 'latin1');
}

/**
 * The signed bytes of an attestation and the document signature over them; throws with a reason
 * when the PDF carries none, or carries anything after the signed range but its own update.
 */
export function splitSignedPdf(bytes: Uint8Array): { signed: Buffer; signature: string } {
  const all = Buffer.from(bytes);
  const text = all.toString('latin1');
  const at = text.lastIndexOf('/Type /SurveyorSignature\n');
  const m = at < 0 ? null : /^\/Type \/SurveyorSignature\n\/Filter \/Surveyor\.Ed25519\n\/ByteRange \[ 0 (\d+) \]\n\/Contents \(([A-Za-z0-9+/=]*)\)/.exec(text.slice(at));
  if (!m) throw new Error('the PDF carries no document signature: it was rewritten after it was signed, or made by a release that signed only its statement');
  const length = Number(m[1]);
  if (length <= 0 || length >= all.length) throw new Error('the document signature names a signed range that is not in the file');
  const signed = all.subarray(0, length);
  let expected: Buffer;
  try {
    expected = documentSignatureUpdate(signed, m[2]!);
  } catch {
    throw new Error('the PDF was changed after it was signed: the bytes its signature names no longer end in a trailer (the file was rewritten)');
  }
  if (!all.subarray(length).equals(expected)) throw new Error('the PDF was changed after it was signed: it holds bytes after the signed range other than its signature (an added page, a painted-over page, an update)');
  return { signed, signature: m[2]! };
}

/** The signed statement and signature embedded in an attestation PDF; throws with a reason when absent. */
export async function readAttestationPdf(bytes: Uint8Array): Promise<{ text: string; signature: string }> {
  const { PDFDict, PDFDocument, PDFHexString, PDFName, PDFString } = await pdfLib();
  let doc: PDFDocument;
  try {
    doc = await PDFDocument.load(bytes, { updateMetadata: false });
  } catch (e) {
    throw new Error(`not a readable PDF (${(e as Error).message})`);
  }
  const ref = doc.context.trailerInfo.Info;
  const info = ref ? doc.context.lookupMaybe(ref, PDFDict) : undefined;
  const payload = info?.lookupMaybe(PDFName.of(INFO_PAYLOAD), PDFString, PDFHexString);
  const signature = info?.lookupMaybe(PDFName.of(INFO_SIGNATURE), PDFString, PDFHexString);
  if (!payload || !signature) throw new Error('not a Surveyor attestation: the PDF carries no signed statement');
  return { text: Buffer.from(payload.asBytes()).toString('latin1'), signature: Buffer.from(signature.asBytes()).toString('latin1') };
}
