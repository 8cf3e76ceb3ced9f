import { Readable, pipeline } from 'node:stream';
import { createGunzip } from 'node:zlib';
import { type SnapshotDiffKind, type SnapshotDiffSection, snapshotDiffSections } from '@surveyor/contract';

// The diff of two snapshots' contents (issue 15). Both contents are the canonical JSON that
// captureContent writes: `{"hosts":[...],"services":[...],"certificates":[...],"vulnerabilities":[...]}`,
// every list in id order. Each side is read as a stream of gzip chunks, gunzipped, and split into
// its items without parsing the whole document; a merge-join on (section, id) then walks both in
// step. Memory is a chunk per side plus a batch of changes, whatever the snapshots' size. The walk
// runs once per pair of snapshots: its changes are stored and pages read them (issue 29).

export const SECTIONS = snapshotDiffSections;

/** One entity of a content: its section (index into SECTIONS), id, and its JSON text as stored. */
interface Item {
  sec: number;
  id: string;
  raw: Buffer;
}

export type SectionCounts = Record<SnapshotDiffKind, number>;

export interface DiffChange {
  section: SnapshotDiffSection;
  kind: SnapshotDiffKind;
  id: string;
  before: Record<string, unknown> | null;
  after: Record<string, unknown> | null;
  fields: { field: string; from: unknown; to: unknown }[];
}

export interface DiffPosition {
  sec: number;
  id: string;
}

export interface DiffOptions {
  section?: SnapshotDiffSection | undefined;
  kind?: SnapshotDiffKind | undefined;
  /** Changes strictly after this position (the previous page's last). */
  after?: DiffPosition | undefined;
  limit: number;
}

export interface DiffResult {
  counts: Record<SnapshotDiffSection, SectionCounts>;
  changes: DiffChange[];
  /** The last change listed, when more matching changes follow it. */
  next: DiffPosition | null;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;

/**
 * Splits a canonical content, given as chunks of its (uncompressed) bytes, into its items: each
 * object at depth 2 (inside a section's array) with the section named by the key before it. Works
 * on bytes (UTF-8 continuation bytes never equal an ASCII delimiter) and yields one batch per chunk.
 */
export async function* contentItems(text: AsyncIterable<Buffer>): AsyncGenerator<Item[]> {
  let depth = 0;
  let inString = false;
  // Whether the byte after a chunk's end is escaped (the chunk ended on an odd run of backslashes).
  let escaped = false;
  let key = '';
  let sec = -1;
  let pending: Buffer[] = [];
  for await (const buf of text) {
    const batch: Item[] = [];
    let start = depth >= 3 ? 0 : -1;
    let i = 0;
    while (i < buf.length) {
      if (inString) {
        // To the closing quote in one indexOf: a quote preceded by an odd run of backslashes is escaped.
        const from = i;
        if (escaped) {
          escaped = false;
          i++;
        }
        let end = -1;
        for (let j = buf.indexOf(QUOTE, i); j >= 0; j = buf.indexOf(QUOTE, j + 1)) {
          let k = j - 1;
          while (k >= i && buf[k] === BACKSLASH) k--;
          if ((j - 1 - k) % 2 === 0) {
            end = j;
            break;
          }
        }
        if (end < 0) {
          let k = buf.length - 1;
          while (k >= i && buf[k] === BACKSLASH) k--;
          escaped = (buf.length - 1 - k) % 2 === 1;
          if (depth === 1) key += buf.toString('latin1', from, buf.length);
          i = buf.length;
          break;
        }
        if (depth === 1) key += buf.toString('latin1', from, end);
        inString = false;
        i = end + 1;
        continue;
      }
      const c = buf[i]!;
      if (c === QUOTE) {
        inString = true;
        if (depth === 1) key = '';
      } else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
        depth++;
        if (depth === 2 && c === OPEN_ARRAY) sec = SECTIONS.indexOf(key as SnapshotDiffSection);
        else if (depth === 3 && c === OPEN_OBJECT) start = i;
      } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
        depth--;
        if (depth === 2 && c === CLOSE_OBJECT) {
          let raw = buf.subarray(start, i + 1);
          if (pending.length) {
            raw = Buffer.concat([...pending, raw]);
            pending = [];
          }
          start = -1;
          if (sec >= 0) batch.push({ sec, id: itemId(raw), raw });
        }
      }
      i++;
    }
    // An item that goes on in the next chunk: keep its part (a copy, so the chunk can go).
    if (depth >= 3 && start >= 0) pending.push(Buffer.from(buf.subarray(start)));
    if (batch.length) yield batch;
  }
  if (depth !== 0 || inString) throw new Error('The snapshot content ends early (truncated or not canonical).');
}

const ID_PREFIX = Buffer.from('{"id" : "', 'latin1');
const ID_AT_START = /^\{\s*"id"\s*:\s*"([0-9a-f-]{36})"/;

/** The id, first key of every item (fixed key order), read without parsing the item. */
function itemId(raw: Buffer): string {
  // json_build_object's own spacing first (every stored content), then any spacing, then a parse.
  if (raw.length > ID_PREFIX.length + 37 && raw[ID_PREFIX.length + 36] === QUOTE && ID_PREFIX.compare(raw, 0, ID_PREFIX.length) === 0) {
    return raw.toString('latin1', ID_PREFIX.length, ID_PREFIX.length + 36);
  }
  const m = ID_AT_START.exec(raw.toString('latin1', 0, Math.min(raw.length, 80)));
  if (m) return m[1]!;
  const id = (JSON.parse(raw.toString('utf8')) as { id?: unknown }).id;
  if (typeof id !== 'string') throw new Error('An item of the snapshot content has no id.');
  return id;
}

/** Gunzips a stream of compressed chunks into chunks of text. */
export function gunzipped(compressed: AsyncIterable<Buffer>): AsyncIterable<Buffer> {
  const gunzip = createGunzip({ chunkSize: 256 * 1024 });
  // One slice read ahead per side, no more: memory stays a few slices whatever the content's size.
  pipeline(Readable.from(compressed, { highWaterMark: 1 }), gunzip, () => undefined);
  return gunzip;
}

/** One side of the merge: its current item, read ahead one batch at a time. */
class Side {
  private batch: Item[] = [];
  private i = 0;
  private done = false;
  constructor(private readonly it: AsyncIterator<Item[]>) {}

  /** The current item, without waiting when the batch still has one. */
  peek(): Item | undefined {
    return this.batch[this.i];
  }

  async fill(): Promise<Item | undefined> {
    while (this.i >= this.batch.length && !this.done) {
      const r = await this.it.next();
      if (r.done) this.done = true;
      else {
        this.batch = r.value;
        this.i = 0;
      }
    }
    return this.batch[this.i];
  }

  shift(): void {
    this.i++;
  }

  async close(): Promise<void> {
    await this.it.return?.(undefined);
  }
}

const parse = (raw: Buffer) => JSON.parse(raw.toString('utf8')) as Record<string, unknown>;

/** The fields of two versions of an entity that differ, old → new, in the entity's key order. */
export function changedFields(before: Record<string, unknown>, after: Record<string, unknown>) {
  const fields: DiffChange['fields'] = [];
  for (const field of new Set([...Object.keys(before), ...Object.keys(after)])) {
    if (field === 'id') continue;
    const from = before[field] ?? null;
    const to = after[field] ?? null;
    if (JSON.stringify(from) !== JSON.stringify(to)) fields.push({ field, from, to });
  }
  return fields;
}

/** -1, 0, 1: the order of two positions (section, then id; ids are lowercase UUID text, whose order is the uuid order). */
function compare(a: DiffPosition, b: DiffPosition): number {
  if (a.sec !== b.sec) return a.sec < b.sec ? -1 : 1;
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

export const zeroCounts = (): Record<SnapshotDiffSection, SectionCounts> =>
  Object.fromEntries(SECTIONS.map((s) => [s, { added: 0, removed: 0, changed: 0 }])) as Record<SnapshotDiffSection, SectionCounts>;

/** One change as the walk finds it: the entities' text as the contents hold it, parsed when they had to be. */
export interface WalkedChange {
  sec: number;
  id: string;
  kind: SnapshotDiffKind;
  before: Buffer | null;
  after: Buffer | null;
  /** For a changed entity, both sides parsed (to find its fields), so a reader need not parse them again. */
  parsed: { before: Record<string, unknown>; after: Record<string, unknown> } | null;
  fields: DiffChange['fields'];
}

/** Changes handed on at a time by walkChanges. */
const WALK_BATCH = 1000;

/**
 * Merge-joins the items of `base` (the older, `against`) and `target`: every change in (section,
 * id) order, in batches. An entity is parsed only when its text differs between the two.
 */
export async function* walkChanges(base: AsyncIterable<Item[]>, target: AsyncIterable<Item[]>): AsyncGenerator<WalkedChange[]> {
  let out: WalkedChange[] = [];
  // An item's text is a view of the gunzipped chunk it came in (256 KiB): a change keeps a copy of
  // its own bytes, so a batch of sparse changes does not hold a chunk each.
  const own = (raw: Buffer) => Buffer.from(raw);
  const a = new Side(base[Symbol.asyncIterator]());
  const b = new Side(target[Symbol.asyncIterator]());
  try {
    for (;;) {
      if (out.length >= WALK_BATCH) {
        yield out;
        out = [];
      }
      const x = a.peek() ?? (await a.fill());
      const y = b.peek() ?? (await b.fill());
      if (!x && !y) break;
      const order = !x ? 1 : !y ? -1 : compare(x, y);
      if (order < 0) {
        out.push({ sec: x!.sec, id: x!.id, kind: 'removed', before: own(x!.raw), after: null, parsed: null, fields: [] });
        a.shift();
      } else if (order > 0) {
        out.push({ sec: y!.sec, id: y!.id, kind: 'added', before: null, after: own(y!.raw), parsed: null, fields: [] });
        b.shift();
      } else {
        // Same text: unchanged, without parsing (most entities of two daily snapshots).
        if (!x!.raw.equals(y!.raw)) {
          const before = parse(x!.raw);
          const after = parse(y!.raw);
          const fields = changedFields(before, after);
          if (fields.length) out.push({ sec: x!.sec, id: x!.id, kind: 'changed', before: own(x!.raw), after: own(y!.raw), parsed: { before, after }, fields });
        }
        a.shift();
        b.shift();
      }
    }
    if (out.length) yield out;
  } finally {
    await Promise.all([a.close(), b.close()]);
  }
}

/** A walked change as the API lists it. */
export function listedChange(c: WalkedChange): DiffChange {
  return {
    section: SECTIONS[c.sec]!,
    kind: c.kind,
    id: c.id,
    before: c.parsed?.before ?? (c.before ? parse(c.before) : null),
    after: c.parsed?.after ?? (c.after ? parse(c.after) : null),
    fields: c.fields,
  };
}

/**
 * Merge-joins the items of `base` (the older, `against`) and `target`: every change is counted,
 * and the first `limit` changes matching the options after `after` are kept with their entities.
 * The walk from the start that the stored diff (snapshots.service.ts) does once per pair.
 */
export async function diffContents(base: AsyncIterable<Item[]>, target: AsyncIterable<Item[]>, opts: DiffOptions): Promise<DiffResult> {
  const counts = zeroCounts();
  const changes: DiffChange[] = [];
  let next: DiffPosition | null = null;
  const wantSec = opts.section === undefined ? -1 : SECTIONS.indexOf(opts.section);
  const keep = (c: WalkedChange) =>
    (wantSec < 0 || c.sec === wantSec) && (opts.kind === undefined || opts.kind === c.kind) && (opts.after === undefined || compare(c, opts.after) > 0);
  for await (const batch of walkChanges(base, target)) {
    for (const c of batch) {
      counts[SECTIONS[c.sec]!][c.kind]++;
      if (next || !keep(c)) continue;
      if (changes.length === opts.limit) {
        const last = changes.at(-1)!;
        next = { sec: SECTIONS.indexOf(last.section), id: last.id };
        continue;
      }
      changes.push(listedChange(c));
    }
  }
  return { counts, changes, next };
}

/** The opaque cursor of a position: base64url of `section:id`. */
export function encodeDiffCursor(p: DiffPosition): string {
  return Buffer.from(`${SECTIONS[p.sec]}:${p.id}`, 'utf8').toString('base64url');
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** The position a cursor names, or null when it is not one of ours. */
export function decodeDiffCursor(cursor: string): DiffPosition | null {
  if (!/^[A-Za-z0-9_-]+$/.test(cursor)) return null;
  const [section, id, ...rest] = Buffer.from(cursor, 'base64url').toString('utf8').split(':');
  const sec = SECTIONS.indexOf(section as SnapshotDiffSection);
  if (sec < 0 || rest.length || !id || !UUID.test(id)) return null;
  return { sec, id };
}
