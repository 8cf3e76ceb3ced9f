import { type Hash, createHash } from 'node:crypto';
import { CANONICAL_IPV4, FlowRecord, type FlowsRequest, parseIp } from '@surveyor/contract';
import type { z } from 'zod';
import { BufferPool } from './buffer-pool.js';
import { giveBody } from './flow-body.js';

type FlowsBody = z.output<typeof FlowsRequest>;
type Check = { safeParse(v: unknown): { success: true; data: unknown } | { success: false } };

const MAX_FLOWS = 200_000;
// srcIp and dstIp are the same schema (an address): one memo serves both.
const { bucketStart, srcIp, protocol, source } = FlowRecord.shape as unknown as Record<'bucketStart' | 'srcIp' | 'protocol' | 'source', Check>;

/** A string checked by its field's own schema once per distinct value; the schema's output (a canonical address), or null when refused. */
function memo(schema: Check) {
  const seen = new Map<string, string | null>();
  return (v: unknown): string | null => {
    if (typeof v !== 'string') return null;
    let out = seen.get(v);
    if (out === undefined) {
      const r = schema.safeParse(v);
      out = r.success ? (r.data as string) : null;
      seen.set(v, out);
    }
    return out;
  };
}

const count = (o: object) => {
  let n = 0;
  for (const _ in o) n++;
  return n;
};
const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isCount = (v: unknown, max = Number.MAX_SAFE_INTEGER) => Number.isSafeInteger(v) && (v as number) >= 0 && (v as number) <= max;

/**
 * A flow delivery validated as FlowsRequest validates it, at a fraction of the cost (issue 30: the
 * schema cost ~4.6 µs a record, more than the rest of the ingest): a batch repeats its minutes,
 * addresses, protocols and sources, so each distinct string is checked once by its field's own
 * schema (the same rules, the same canonical address out) and numbers inline. Anything it does
 * not accept as is (a missing, extra or mistyped key, a refused value) answers null, and the caller
 * runs the schema itself, which names the problem: this path only ever accepts what the schema
 * accepts, with the same output (a differential test holds it to that). Records are checked in place.
 */
export function checkFlowsFast(body: unknown): FlowsBody | null {
  // Read and checked from its bytes already (scanFlows).
  if (body instanceof ScannedFlows) return body;
  if (!isRecord(body)) return null;
  const { flows, dropped = 0 } = body;
  if (count(body) !== ('dropped' in body ? 2 : 1) || !Array.isArray(flows) || flows.length > MAX_FLOWS || !isCount(dropped)) return null;
  const [at, other, proto, src] = [memo(bucketStart), memo(srcIp), memo(protocol), memo(source)];
  // A canonical IPv4 address (most of what daemons send, and rarely repeated) is its own output,
  // as in the address schema's own first step; any other form goes to the schema, once per value.
  const ip = (v: unknown) => (typeof v === 'string' && CANONICAL_IPV4.test(v) ? v : other(v));
  for (const r of flows as unknown[]) {
    if (!isRecord(r) || count(r) !== 8) return null;
    const b = at(r.bucketStart);
    const s = ip(r.srcIp);
    const d = ip(r.dstIp);
    if (b === null || s === null || d === null || proto(r.protocol) === null || src(r.source) === null) return null;
    if (!isCount(r.dstPort, 65_535) || !isCount(r.packets) || !isCount(r.bytes)) return null;
    r.srcIp = s;
    r.dstIp = d;
  }
  return { flows: flows as FlowsBody['flows'], dropped: dropped as number };
}

const DAY_MS = 86_400_000;
// The record's keys, in the order of the COPY row (flows.ts RECORD_COLUMNS).
const KEYS = ['bucketStart', 'srcIp', 'dstIp', 'dstPort', 'protocol', 'packets', 'bytes', 'source'].map((k) => Buffer.from(k));
const [B_START, S_IP, D_IP, D_PORT, PROTO, PACKETS, BYTES, SOURCE] = [0, 1, 2, 3, 4, 5, 6, 7] as const;
const [QUOTE, BACKSLASH, COMMA, COLON, ZERO, NINE, DOT, TAB, NL, LBRACE, RBRACE, LBRACKET, RBRACKET] = [34, 92, 44, 58, 48, 57, 46, 9, 10, 123, 125, 91, 93];
const TOP_KEYS = [Buffer.from('flows'), Buffer.from('dropped')];
/** COPY's binary format (PostgreSQL "COPY", binary format): signature, flags, header extension. */
export const COPY_BINARY_HEADER = Buffer.concat([Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1'), Buffer.alloc(8)]);
/** Where a binary tuple's two owner values (uuid length and bytes, twice) start, and their size. */
export const OWNER_AT = 2;
export const OWNER_BYTES = 40;
const FIELDS = 10;
/** Binary tuple buffers of deliveries stored, kept for the next ones (buffer-pool.ts). */
const binaries = new BufferPool();
/** The text rows are hashed through this as they are written (scanFlows runs to its end without yielding). */
const SCRATCH = Buffer.allocUnsafe(65_536);
/** timestamptz in binary: microseconds since 2000-01-01 UTC. */
const PG_EPOCH_MS = 946_684_800_000;
// inet in binary: family (PostgreSQL's own numbers), bits, is_cidr, address length, address.
const PGSQL_AF_INET = 2;
const PGSQL_AF_INET6 = 3;

/**
 * A flow delivery read straight from its JSON bytes (issue 30) into COPY's binary format, and the
 * digest of the text COPY rows flows.ts `copyRowsOf` makes of the parsed records (the same bytes): the
 * records are never made objects unless something needs them (`flows`, a late delivery's rollups,
 * a record outside the window), which is what the object path cost in JSON.parse and GC.
 */
export class ScannedFlows {
  #flows: FlowsBody['flows'] | undefined;
  constructor(
    /** The body as received. */
    readonly raw: Buffer,
    readonly count: number,
    readonly dropped: number,
    /** The delivery's digest (flows.ts digestOf): of its text COPY rows of RECORD_COLUMNS and of `dropped`. */
    readonly digest: string,
    /** Earliest and latest bucket (ms). */
    readonly firstAt: number,
    readonly lastAt: number,
    /** The UTC days (ms) of the buckets. */
    readonly days: number[],
    /**
     * The same records as COPY's binary format (header, tuples, trailer) of (organisation_id,
     * daemon_id, ...RECORD_COLUMNS), each tuple's two owner values left blank (OWNER_BYTES at
     * OWNER_AT) for the store to fill in; `tuples` holds where each tuple starts.
     */
    readonly binary: Buffer,
    readonly tuples: Int32Array,
    /** The whole buffer `binary` is the start of. */
    private readonly pooled: Buffer,
    /** The pooled buffer `raw` is the start of (flow-body.ts), when the body was read into one. */
    private readonly body?: Buffer,
  ) {}

  #released = false;
  /**
   * Gives the binary tuples' buffer, and the body's, back for another delivery: only once nothing
   * can read them again (its COPY done, its records parsed if they were needed).
   */
  release(): void {
    if (this.#released) return;
    this.#released = true;
    binaries.give(this.pooled);
    if (this.body) giveBody(this.body);
  }

  /** The records as the object path has them (parsed on first use). */
  get flows(): FlowsBody['flows'] {
    if (!this.#flows) {
      if (this.#released) throw new Error('a released flow delivery read again');
      const checked = checkFlowsFast(JSON.parse(this.raw.toString('utf8')));
      if (!checked) throw new Error('a scanned flow delivery fails the body check');
      this.#flows = checked.flows;
    }
    return this.#flows;
  }
}

/** The index in `keys` of the key whose bytes b[s, e) are, -1 for none. */
function keyAt(b: Buffer, s: number, e: number, keys: Buffer[]): number {
  const n = e - s;
  outer: for (let k = 0; k < keys.length; k++) {
    const key = keys[k]!;
    if (key.length !== n) continue;
    for (let i = 0; i < n; i++) if (b[s + i] !== key[i]) continue outer;
    return k;
  }
  return -1;
}

function same(b: Buffer, s1: number, e1: number, s2: number, e2: number): boolean {
  if (e1 - s1 !== e2 - s2) return false;
  for (let i = 0; i < e1 - s1; i++) if (b[s1 + i] !== b[s2 + i]) return false;
  return true;
}

/** Whether b[s, e) is an IPv4 address in canonical form (CANONICAL_IPV4), without making a string; its bytes in `octets`. */
function canonicalIpv4(b: Buffer, s: number, e: number, octets: Uint8Array): boolean {
  let dots = 0;
  let digits = 0;
  let value = 0;
  let lead = 0;
  for (let i = s; i < e; i++) {
    const c = b[i]!;
    if (c === DOT) {
      if (digits === 0 || dots > 2) return false;
      octets[dots++] = value;
      digits = 0;
      value = 0;
    } else if (c >= ZERO && c <= NINE) {
      if (digits === 0) lead = c;
      else if (lead === ZERO) return false;
      if (++digits > 3 || (value = value * 10 + (c - ZERO)) > 255) return false;
    } else return false;
  }
  octets[3] = value;
  return dots === 3 && digits > 0;
}

function valueOf(b: Buffer, s: number, e: number): number {
  let v = 0;
  for (let k = s; k < e; k++) v = v * 10 + (b[k]! - ZERO);
  return v;
}

type Bucket = { at: number; micros: Buffer };
/**
 * Buckets already checked, across deliveries (daemons send the same recent minutes: the schema's
 * check of a timestamp costs as much as reading ~10 records). Forgotten wholesale when it grows past
 * BUCKETS_KEPT; refused texts are not kept.
 */
const knownBuckets = new Map<string, Bucket>();
const BUCKETS_KEPT = 50_000;

/** A bucket's text, checked: its instant (ms) and its timestamptz in binary; null when refused or beyond the binary path. */
function bucketOf(text: string): Bucket | null {
  const known = knownBuckets.get(text);
  if (known) return known;
  const checked = checkBucket(text);
  if (checked) {
    if (knownBuckets.size >= BUCKETS_KEPT) knownBuckets.clear();
    knownBuckets.set(text, checked);
  }
  return checked;
}

function checkBucket(text: string): Bucket | null {
  if (!bucketStart.safeParse(text).success) return null;
  const at = Date.parse(text);
  // Date.parse keeps milliseconds; PostgreSQL keeps microseconds (and rounds past them: left to the text path).
  const fraction = /\.(\d+)/.exec(text)?.[1] ?? '';
  if (fraction.length > 6 || !Number.isFinite(at)) return null;
  const micros = Buffer.allocUnsafe(8);
  micros.writeBigInt64BE(BigInt(at - PG_EPOCH_MS) * 1000n + BigInt(fraction.length > 3 ? Number(fraction.slice(3).padEnd(3, '0')) : 0));
  return { at, micros };
}

/**
 * The reading position in a body, the COPY rows (text, for the digest) and binary tuples written so
 * far, and what was learnt of the values seen. Kept in fields, with a method a record, so that V8
 * optimises the record loop as a small function.
 */
class Scanner {
  i = 0;
  readonly n: number;
  /** Text rows, written to SCRATCH and hashed from it as it fills, and the write position in it. */
  readonly out = SCRATCH;
  o = 0;
  readonly hash: Hash = createHash('sha256');
  /** Binary tuples, and the write position in them. */
  bin: Buffer;
  p = 0;
  tuples = new Int32Array(1024);
  count = 0;
  // Each field's schema, memoised per distinct value.
  readonly other = memo(srcIp);
  readonly proto = memo(protocol);
  readonly src = memo(source);
  // Distinct buckets by a hash of their bytes: the first span with those bytes, and what it gave.
  readonly bucketIndex = new Map<number, number>();
  readonly bucketSpans: number[] = [];
  readonly buckets: Bucket[] = [];
  readonly days = new Set<number>();
  firstAt = Number.POSITIVE_INFINITY;
  lastAt = Number.NEGATIVE_INFINITY;
  // The last distinct protocol and source (their span in b), and the protocol as stored.
  ps = 0;
  pe = -1;
  pOut = '';
  ss = 0;
  se = -1;
  // A record's value spans by KEYS index, the previous record's key order, an IPv4 address's bytes.
  readonly from = new Int32Array(8);
  readonly to = new Int32Array(8);
  readonly order = new Uint8Array([0, 1, 2, 3, 4, 5, 6, 7]);
  readonly octets = new Uint8Array(4);

  constructor(readonly b: Buffer) {
    this.n = b.length;
    const want = Math.max(1024, b.length);
    this.bin = binaries.take(want);
    this.p = COPY_BINARY_HEADER.copy(this.bin, 0);
  }

  /** Skips JSON whitespace; answers the byte after it (-1 at the end). */
  ws(): number {
    const b = this.b;
    let i = this.i;
    while (i < this.n) {
      const c = b[i]!;
      if (c !== 32 && c !== TAB && c !== NL && c !== 13) {
        this.i = i;
        return c;
      }
      i++;
    }
    this.i = i;
    return -1;
  }

  /** A plain string (printable ASCII, no escape) at i: answers the end of its content (its closing quote) and moves past it; -1 otherwise. */
  str(): number {
    const b = this.b;
    let i = this.i;
    if (b[i] !== QUOTE) return -1;
    for (i++; i < this.n; i++) {
      const c = b[i]!;
      if (c === QUOTE) {
        this.i = i + 1;
        return i;
      }
      if (c === BACKSLASH || c < 32 || c > 126) return -1;
    }
    return -1;
  }

  /**
   * Whether the string at i is exactly `key` (a plain string, as str() would read it): then moves
   * past it; otherwise stays.
   */
  keyHere(key: Buffer): boolean {
    const b = this.b;
    const i = this.i + 1;
    const n = key.length;
    if (b[i - 1] !== QUOTE || i + n >= this.n || b[i + n] !== QUOTE) return false;
    for (let k = 0; k < n; k++) if (b[i + k] !== key[k]) return false;
    this.i = i + n + 1;
    return true;
  }

  /** A plain integer of at most 15 digits at i (a safe integer): answers its end and moves past it; -1 otherwise. */
  num(): number {
    const b = this.b;
    const s = this.i;
    let i = s;
    if (b[i] === ZERO) i++;
    else
      while (i < this.n) {
        const c = b[i]!;
        if (c < ZERO || c > NINE) break;
        i++;
      }
    this.i = i;
    return i > s && i - s <= 15 ? i : -1;
  }

  /** Room for `text` more bytes of rows and `binary` more of tuples. */
  room(text: number, binary: number): void {
    if (this.o + text > this.out.length) {
      this.hash.update(this.out.subarray(0, this.o));
      this.o = 0;
    }
    if (this.p + binary > this.bin.length) {
      const grown = Buffer.allocUnsafe(this.bin.length * 2 + binary);
      this.bin.copy(grown, 0, 0, this.p);
      this.bin = grown;
    }
  }

  /** b[s, e) and a tab into the text row. */
  put(s: number, e: number): void {
    const b = this.b;
    const out = this.out;
    let o = this.o;
    for (let k = s; k < e; k++) out[o++] = b[k]!;
    out[o++] = TAB;
    this.o = o;
  }

  putText(t: string): void {
    const out = this.out;
    let o = this.o;
    for (let k = 0; k < t.length; k++) out[o++] = t.charCodeAt(k);
    out[o++] = TAB;
    this.o = o;
  }

  int16(v: number): void {
    const bin = this.bin;
    bin[this.p++] = v >>> 8;
    bin[this.p++] = v & 255;
  }

  int32(v: number): void {
    const bin = this.bin;
    let p = this.p;
    bin[p++] = v >>> 24;
    bin[p++] = (v >>> 16) & 255;
    bin[p++] = (v >>> 8) & 255;
    bin[p++] = v & 255;
    this.p = p;
  }

  /** A non-negative integer below 2^53 as int8. */
  int64(v: number): void {
    this.int32(Math.floor(v / 4_294_967_296));
    this.int32(v >>> 0);
  }

  /** A text field of b[s, e). */
  field(s: number, e: number): void {
    this.int32(e - s);
    const b = this.b;
    const bin = this.bin;
    let p = this.p;
    for (let k = s; k < e; k++) bin[p++] = b[k]!;
    this.p = p;
  }

  /** An inet host address of 4 or 16 bytes. */
  inet(bytes: ArrayLike<number>): void {
    this.int32(4 + bytes.length);
    const bin = this.bin;
    let p = this.p;
    const v4 = bytes.length === 4;
    bin[p++] = v4 ? PGSQL_AF_INET : PGSQL_AF_INET6;
    bin[p++] = v4 ? 32 : 128;
    bin[p++] = 0;
    bin[p++] = bytes.length;
    for (let k = 0; k < bytes.length; k++) bin[p++] = bytes[k]!;
    this.p = p;
  }

  /** An address into both: as sent when it is canonical IPv4, else as the schema's output. */
  ip(s: number, e: number): boolean {
    if (canonicalIpv4(this.b, s, e, this.octets)) {
      this.put(s, e);
      this.inet(this.octets);
      return true;
    }
    const canonical = this.other(this.b.toString('latin1', s, e));
    const bytes = canonical === null ? null : parseIp(canonical);
    if (canonical === null || !bytes || !/^[\x20-\x7e]*$/.test(canonical)) return false;
    this.putText(canonical);
    this.inet(bytes);
    return true;
  }

  /** The bucket at b[s, e): its index in `buckets`, -1 when refused. */
  bucket(s: number, e: number): number {
    const b = this.b;
    let h = e - s;
    for (let k = s; k < e; k++) h = (Math.imul(h, 31) + b[k]!) | 0;
    const known = this.bucketIndex.get(h);
    if (known !== undefined && same(b, s, e, this.bucketSpans[2 * known]!, this.bucketSpans[2 * known + 1]!)) return known;
    const v = bucketOf(b.toString('latin1', s, e));
    if (!v) return -1;
    const index = this.buckets.length;
    this.buckets.push(v);
    this.bucketSpans.push(s, e);
    // A hash already taken by other bytes keeps its first: these are then looked up as text each time.
    if (known === undefined) this.bucketIndex.set(h, index);
    this.days.add(Math.floor(v.at / DAY_MS) * DAY_MS);
    return index;
  }

  /** A record at i (its opening brace) into a text row and a binary tuple; false when not in the plain form. */
  record(): boolean {
    const b = this.b;
    const from = this.from;
    const to = this.to;
    if (b[this.i] !== LBRACE) return false;
    this.i++;
    let seen = 0;
    for (let f = 0; f < 8; f++) {
      this.ws();
      // Records mostly repeat the previous one's key order: the key expected is matched in one read.
      let k = this.order[f]!;
      if (!this.keyHere(KEYS[k]!)) {
        const s = this.i + 1;
        const e = this.str();
        if (e < 0) return false;
        k = keyAt(b, s, e, KEYS);
        if (k < 0) return false;
        this.order[f] = k;
      }
      if (seen & (1 << k)) return false;
      seen |= 1 << k;
      if (this.ws() !== COLON) return false;
      this.i++;
      this.ws();
      if (k === D_PORT || k === PACKETS || k === BYTES) {
        from[k] = this.i;
        const end = this.num();
        if (end < 0) return false;
        to[k] = end;
      } else {
        from[k] = this.i + 1;
        const end = this.str();
        if (end < 0) return false;
        to[k] = end;
      }
      if (this.ws() !== (f < 7 ? COMMA : RBRACE)) return false;
      this.i++;
    }
    if (++this.count > MAX_FLOWS) return false;
    // Room first: a row and a tuple are at most ~250 and ~220 bytes (values are bounded by their schemas).
    this.room(512, 256);
    const bucket = this.bucket(from[B_START]!, to[B_START]!);
    if (bucket < 0) return false;
    const { at, micros } = this.buckets[bucket]!;
    if (at < this.firstAt) this.firstAt = at;
    if (at > this.lastAt) this.lastAt = at;
    if (this.count > this.tuples.length) {
      const grown = new Int32Array(this.tuples.length * 2);
      grown.set(this.tuples);
      this.tuples = grown;
    }
    // The binary tuple: its field count, the owner's two values left blank, then the record's.
    this.tuples[this.count - 1] = this.p;
    this.int16(FIELDS);
    this.p += OWNER_BYTES;
    this.int32(8);
    for (let k = 0; k < 8; k++) this.bin[this.p++] = micros[k]!;
    this.put(from[B_START]!, to[B_START]!);
    if (!this.ip(from[S_IP]!, to[S_IP]!) || !this.ip(from[D_IP]!, to[D_IP]!)) return false;
    const port = valueOf(b, from[D_PORT]!, to[D_PORT]!);
    if (to[D_PORT]! - from[D_PORT]! > 5 || port > 65_535) return false;
    this.put(from[D_PORT]!, to[D_PORT]!);
    this.int32(4);
    this.int32(port);
    if (!same(b, from[PROTO]!, to[PROTO]!, this.ps, this.pe)) {
      const text = b.toString('latin1', from[PROTO]!, to[PROTO]!);
      if (this.proto(text) === null) return false;
      this.ps = from[PROTO]!;
      this.pe = to[PROTO]!;
      this.pOut = text.toLowerCase();
    }
    const pOut = this.pOut;
    this.putText(pOut);
    this.int32(pOut.length);
    for (let k = 0; k < pOut.length; k++) this.bin[this.p++] = pOut.charCodeAt(k);
    this.put(from[PACKETS]!, to[PACKETS]!);
    this.int32(8);
    this.int64(valueOf(b, from[PACKETS]!, to[PACKETS]!));
    this.put(from[BYTES]!, to[BYTES]!);
    this.int32(8);
    this.int64(valueOf(b, from[BYTES]!, to[BYTES]!));
    if (!same(b, from[SOURCE]!, to[SOURCE]!, this.ss, this.se)) {
      if (this.src(b.toString('latin1', from[SOURCE]!, to[SOURCE]!)) === null) return false;
      this.ss = from[SOURCE]!;
      this.se = to[SOURCE]!;
    }
    this.put(from[SOURCE]!, to[SOURCE]!);
    this.field(from[SOURCE]!, to[SOURCE]!);
    // The last value's tab is the row's end.
    this.out[this.o - 1] = NL;
    return true;
  }
}

/**
 * Reads a flow delivery's JSON bytes into a ScannedFlows when the body is in the plain form
 * daemons send: the two keys of FlowsRequest and records of exactly the eight keys of FlowRecord
 * (any order, any JSON whitespace), strings without escapes and printable ASCII only, counts as
 * plain integers of at most 15 digits, buckets to the microsecond at most, every value accepted by
 * its field's schema (checked once per distinct value, as checkFlowsFast does). Anything else
 * answers null, and the caller parses the body as JSON and checks it as before: this path only
 * accepts what JSON.parse and the schema accept, and stores the same bytes (a differential test
 * holds it to that).
 */
export function scanFlows(b: Buffer, body?: Buffer): ScannedFlows | null {
  const r = new Scanner(b);
  const scanned = scan(r, body);
  if (!scanned) binaries.give(r.bin);
  return scanned;
}

function scan(r: Scanner, body: Buffer | undefined): ScannedFlows | null {
  const b = r.b;
  let dropped = 0;
  let top = 0;
  if (r.ws() !== LBRACE) return null;
  r.i++;
  for (;;) {
    r.ws();
    const ks = r.i + 1;
    const ke = r.str();
    if (ke < 0) return null;
    const key = keyAt(b, ks, ke, TOP_KEYS);
    if (key < 0 || top & (1 << key)) return null;
    top |= 1 << key;
    if (r.ws() !== COLON) return null;
    r.i++;
    r.ws();
    if (key === 1) {
      const s = r.i;
      const e = r.num();
      if (e < 0) return null;
      dropped = valueOf(b, s, e);
    } else {
      if (b[r.i] !== LBRACKET) return null;
      r.i++;
      if (r.ws() === RBRACKET) r.i++;
      else
        for (;;) {
          if (!r.record()) return null;
          const c = r.ws();
          r.i++;
          if (c === RBRACKET) break;
          if (c !== COMMA) return null;
          r.ws();
        }
    }
    const c = r.ws();
    r.i++;
    if (c === RBRACE) break;
    if (c !== COMMA) return null;
  }
  r.ws();
  if (r.i !== r.n || !(top & 1)) return null;
  r.room(0, 2);
  r.int16(0xffff);
  const digest = r.hash.update(r.out.subarray(0, r.o)).update(`|${dropped}`).digest('hex');
  return new ScannedFlows(b, r.count, dropped, digest, r.firstAt, r.lastAt, [...r.days], r.bin.subarray(0, r.p), r.tuples.subarray(0, r.count), r.bin, body);
}
