import { createReadStream } from 'node:fs';
import { open } from 'node:fs/promises';
import { Readable, pipeline } from 'node:stream';
import { createGunzip } from 'node:zlib';
import xzDecompress from 'xz-decompress';
import yauzl from 'yauzl';

// Reading advisory files: one place for the feed's offline mirrors and fetched files and for
// `surveyor advisories import`. A file is told apart by its first bytes (zip, gzip, xz, else
// JSON) and read as a stream: the records of a large array (an NVD mirror release's `cve_items`,
// an NVD API page's `vulnerabilities`, an array of OSV records) are cut out and parsed one by
// one, so a multi-gigabyte `CVE-all.json.xz` is read in bounded memory (V8 cannot even hold it as
// one string).

/** Documents handed to a sink per batch (each batch stored before the next is read). */
export const DOCUMENT_BATCH = 200;
/** The largest single JSON value read whole: one record, or a document without a streamed array. */
export const DOCUMENT_MAX = 64 * 1024 * 1024;

export type FileKind = 'zip' | 'gzip' | 'xz' | 'json';

/** What the first bytes say a file is (by magic number; anything else is taken for JSON). */
export function kindOf(head: Uint8Array): FileKind {
  if (head[0] === 0x50 && head[1] === 0x4b && (head[2] === 0x03 || head[2] === 0x05) && (head[3] === 0x04 || head[3] === 0x06)) return 'zip';
  if (head[0] === 0x1f && head[1] === 0x8b) return 'gzip';
  if (head[0] === 0xfd && head[1] === 0x37 && head[2] === 0x7a && head[3] === 0x58 && head[4] === 0x5a && head[5] === 0x00) return 'xz';
  return 'json';
}

/** A sink that hands documents on `size` at a time; `end` hands on the rest. */
export function batches(flush: (docs: unknown[]) => Promise<void>, size = DOCUMENT_BATCH): { add: (doc: unknown) => Promise<void>; end: () => Promise<void> } {
  let docs: unknown[] = [];
  const take = () => {
    const full = docs;
    docs = [];
    return flush(full);
  };
  return {
    add: async (doc) => {
      docs.push(doc);
      if (docs.length >= size) await take();
    },
    end: async () => {
      if (docs.length > 0) await take();
    },
  };
}

/**
 * Reads the advisory documents of a file (a path, or bytes already fetched) into `add`, awaiting
 * each: JSON, or gzip or xz of JSON (see splitJson), or a zip archive whose every `*.json` entry is
 * read so (an OSV ecosystem's `all.zip`). A file that cannot be decompressed or parsed throws a
 * SyntaxError naming it (`name`, and the entry of an archive); documents read before the fault
 * were handed on. File system errors (ENOENT, EACCES, EISDIR) and errors of `add` pass unchanged.
 */
export async function readDocuments(source: string | Buffer, name: string, add: (doc: unknown) => Promise<void>): Promise<void> {
  const kind = kindOf(typeof source === 'string' ? await head(source) : source);
  if (kind === 'zip') return readZip(source, name, add);
  const raw = typeof source === 'string' ? createReadStream(source) : Readable.from([source]);
  await splitJson(decompressed(raw, kind), kind, name, add);
}

async function head(file: string): Promise<Buffer> {
  const fd = await open(file, 'r');
  try {
    const buf = Buffer.alloc(6);
    const { bytesRead } = await fd.read(buf, 0, 6, 0);
    return buf.subarray(0, bytesRead);
  } finally {
    await fd.close();
  }
}

function decompressed(raw: Readable, kind: Exclude<FileKind, 'zip'>): AsyncIterable<Uint8Array> {
  // pipeline, not pipe: a read error reaches the reader (pipe would leave it waiting).
  if (kind === 'gzip') return pipeline(raw, createGunzip(), () => {});
  // xz-embedded compiled to WebAssembly (xz-decompress): a web stream in, a web stream out.
  if (kind === 'xz') return new xzDecompress.XzReadableStream(Readable.toWeb(raw) as ReadableStream<Uint8Array>);
  return raw;
}

/** xz-embedded's return codes (xz.h), as the decoder reports them ("… error code N"). */
const XZ_ERRORS: Record<string, string> = {
  '3': 'out of memory',
  '4': 'its dictionary is larger than the decoder allows',
  '5': 'not an xz stream',
  '6': 'unsupported options (an integrity check other than CRC32/CRC64, or a filter other than LZMA2)',
  '7': 'corrupt data',
  '8': 'truncated or corrupt',
};

function unreadable(name: string, kind: FileKind, err: unknown): Error {
  const e = err as { code?: unknown; message?: string };
  // A file system error keeps its code (the feed says `file: …`).
  if (typeof e?.code === 'string' && /^E[A-Z]+$/.test(e.code)) return err as Error;
  const message = String(e?.message ?? err);
  const xz = kind === 'xz' ? /error code (\d+)/.exec(message)?.[1] : undefined;
  const why = xz !== undefined ? (XZ_ERRORS[xz] ?? message) : message;
  return new SyntaxError(`${name}: not a readable ${kind} file (${why})`);
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const isSpace = (b: number) => b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09;
/** Keys of a top-level object whose array is read record by record (recordsOf reads nothing else of such a document). */
const STREAMED_KEYS = new Set(['vulnerabilities', 'cve_items']);

/**
 * Parses one JSON document from `chunks` into `add`. A top-level array, or the `vulnerabilities`
 * or `cve_items` array of a top-level object, is handed on one element at a time, each as a
 * one-element array (so recordsOf reads it as it would in the whole document; the object's other
 * keys are not read); any other document is handed on whole. Bytes are scanned for structure
 * only (strings, nesting): each element, or the whole document, is then checked by JSON.parse,
 * and a document cut short or followed by anything but white space is refused.
 */
export async function splitJson(chunks: AsyncIterable<Uint8Array>, kind: FileKind, name: string, add: (doc: unknown) => Promise<void>): Promise<void> {
  const fault = (why: string) => new SyntaxError(`${name}: not JSON (${why})`);
  let depth = 0;
  let inString = false;
  let escaped = false;
  /** Depth of the array read element by element (0: none). */
  let streamAt = 0;
  let streamed = false;
  let done = false;
  /** Bytes of the element (streaming) or of the whole document (otherwise) being read. */
  let pieces: Uint8Array[] = [];
  let size = 0;
  let sawComma = false;
  // The last string closed at depth 1 (a key, when a colon then an array follow), and whether a colon followed it.
  let keyStart = -1;
  let keyPieces: Uint8Array[] = [];
  let lastKey = '';
  let afterColon = false;
  let ready: unknown[] = [];
  const closers: number[] = [];
  let total = 0;

  const parse = (what: string) => {
    const text = Buffer.concat(pieces).toString('utf8');
    pieces = [];
    size = 0;
    try {
      return JSON.parse(text) as unknown;
    } catch (err) {
      throw fault(`${what}: ${(err as Error).message}`);
    }
  };
  const keep = (part: Uint8Array) => {
    if (part.length === 0) return;
    size += part.length;
    if (size > DOCUMENT_MAX) throw fault(`a value larger than ${DOCUMENT_MAX} bytes`);
    pieces.push(part);
  };
  const endElement = (closing: boolean) => {
    const blank = pieces.every((p) => p.every(isSpace));
    if (blank) {
      pieces = [];
      size = 0;
      if (!closing || sawComma) throw fault(`an empty element in an array (after record ${total})`);
      return;
    }
    ready.push([parse(`record ${total + 1}`)]);
    total++;
  };

  const scan = (chunk: Uint8Array) => {
    // `from`: where the bytes kept from this chunk start (-1: none are kept).
    let from = !done && (streamAt === 0 ? !streamed : depth >= streamAt) ? 0 : -1;
    for (let i = 0; i < chunk.length; i++) {
      const b = chunk[i]!;
      if (inString) {
        if (escaped) escaped = false;
        else if (b === BACKSLASH) escaped = true;
        else if (b === QUOTE) {
          inString = false;
          if (keyStart >= 0) {
            keyPieces.push(chunk.subarray(keyStart, i));
            lastKey = Buffer.concat(keyPieces).toString('utf8');
            keyStart = -1;
            keyPieces = [];
          }
        }
      } else if (done) {
        if (!isSpace(b)) throw fault('more after the end of the document');
      } else if (b === QUOTE) {
        inString = true;
        // A string of the top-level object: perhaps the key of the array to stream.
        if (depth === 1 && streamAt === 0 && !streamed) {
          keyStart = i + 1;
          afterColon = false;
        }
      } else if (b === OPEN_OBJECT || b === OPEN_ARRAY) {
        if (depth === 0 && b === OPEN_ARRAY) {
          // A top-level array: its elements, one by one.
          streamAt = 1;
          pieces = [];
          size = 0;
          from = i + 1;
        } else if (depth === 1 && b === OPEN_ARRAY && streamAt === 0 && !streamed && afterColon && STREAMED_KEYS.has(lastKey)) {
          // The array of an NVD page or a mirror release file: what was kept of the object is not needed.
          streamAt = 2;
          pieces = [];
          size = 0;
          from = i + 1;
        }
        closers.push(b === OPEN_OBJECT ? CLOSE_OBJECT : CLOSE_ARRAY);
        depth++;
        afterColon = false;
      } else if (b === CLOSE_OBJECT || b === CLOSE_ARRAY) {
        if (closers.pop() !== b) throw fault(`an unexpected "${String.fromCharCode(b)}" after record ${total}`);
        if (depth === streamAt) {
          keep(chunk.subarray(from, i));
          endElement(true);
          streamAt = 0;
          streamed = true;
          from = -1;
        }
        depth--;
        if (depth === 0) {
          if (!streamed) {
            keep(chunk.subarray(from, i + 1));
            ready.push(parse('the document'));
            total++;
          }
          done = true;
          from = -1;
        }
      } else if (b === COMMA && depth === streamAt && streamAt > 0) {
        keep(chunk.subarray(from, i));
        endElement(false);
        sawComma = true;
        from = i + 1;
      } else if (b === COLON && depth === 1) {
        afterColon = true;
      }
    }
    if (keyStart >= 0) {
      keyPieces.push(chunk.subarray(keyStart));
      keyStart = 0;
    }
    if (from >= 0) keep(chunk.subarray(from));
  };

  let adding = false;
  try {
    for await (const chunk of chunks) {
      scan(chunk);
      adding = true;
      const docs = ready;
      ready = [];
      for (const doc of docs) await add(doc);
      adding = false;
    }
  } catch (err) {
    if (adding || (err instanceof SyntaxError && err.message.startsWith(`${name}: not JSON`))) throw err;
    throw unreadable(name, kind, err);
  }
  if (inString || depth > 0) {
    // A document read whole: JSON.parse says where it breaks.
    if (streamAt === 0 && !streamed) parse('the document');
    throw fault(`cut short after record ${total}`);
  }
  if (!done) {
    // Only white space, or a scalar: parsed whole, so JSON.parse says what it is.
    const doc = parse('the document');
    await add(doc);
  }
}

/** The next entry of a lazily read archive, or null at its end. */
function nextEntry(zip: yauzl.ZipFile): Promise<yauzl.Entry | null> {
  return new Promise((resolve, reject) => {
    const settle = () => {
      zip.off('entry', onEntry);
      zip.off('end', onEnd);
      zip.off('error', onError);
    };
    const onEntry = (e: yauzl.Entry) => (settle(), resolve(e));
    const onEnd = () => (settle(), resolve(null));
    const onError = (err: Error) => (settle(), reject(err));
    zip.on('entry', onEntry).on('end', onEnd).on('error', onError);
    zip.readEntry();
  });
}

/** Every `*.json` entry of a zip archive (an OSV ecosystem's `all.zip`: one record an entry), read as splitJson reads a file. */
async function readZip(source: string | Buffer, name: string, add: (doc: unknown) => Promise<void>): Promise<void> {
  const zip = await new Promise<yauzl.ZipFile>((resolve, reject) => {
    const done = (err: Error | null, z?: yauzl.ZipFile) => (err || !z ? reject(unreadable(name, 'zip', err ?? new Error('unreadable zip'))) : resolve(z));
    if (typeof source === 'string') yauzl.open(source, { lazyEntries: true, autoClose: false }, done);
    else yauzl.fromBuffer(source, { lazyEntries: true }, done);
  });
  try {
    for (;;) {
      const entry = await nextEntry(zip).catch((err: unknown) => Promise.reject(unreadable(name, 'zip', err)));
      if (!entry) return;
      if (!/\.json$/i.test(entry.fileName) || entry.fileName.endsWith('/')) continue;
      const stream = await new Promise<Readable>((resolve, reject) => zip.openReadStream(entry, (err, s) => (err || !s ? reject(unreadable(name, 'zip', err ?? new Error('unreadable entry'))) : resolve(s))));
      await splitJson(stream, 'zip', `${name}: ${entry.fileName}`, add);
    }
  } finally {
    zip.close();
  }
}
