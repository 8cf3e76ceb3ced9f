import { createHash } from 'node:crypto';
import { readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { DB } from '../db/schema.js';
import { ProviderError } from '../jobs/runner.js';
import { redactText } from '../logger.js';
import * as repo from './advisories.repo.js';
import { batches, readDocuments } from './documents.js';
import { parseDocument, storeAdvisories } from './import.service.js';

export interface FeedConfig {
  url: string;
  apiKey?: string | undefined;
  timeoutMs: number;
  /** Pause between NVD API pages (its rate limit). */
  pageDelayMs: number;
}

export interface FeedPull {
  mode: 'nvd' | 'file';
  /** False when the feed answered 304 (or the NVD API had nothing new). */
  changed: boolean;
  new: number;
  updated: number;
  pages: number;
  /** The startIndex a pass left unfinished by a failure was resumed at. */
  resumedAt?: number;
}

/** Largest page the NVD API serves, and the longest lastModified range it accepts (120 days). */
const NVD_PAGE = 2000;
const NVD_MAX_RANGE_MS = 120 * 86_400_000;

/** The NVD CVE API 2.0 (`…/rest/json/cves/2.0`): paged, with lastModified increments. Anything else is a file. */
export function isNvdApi(url: string): boolean {
  return /\/rest\/json\/cves\/2\.0\/?$/.test(new URL(url).pathname);
}

/** NVD wants an explicit offset: `2024-07-01T13:00:00.000+00:00`. */
const nvdDate = (d: Date) => d.toISOString().replace('Z', '+00:00');

async function get(url: string, cfg: FeedConfig, signal: AbortSignal | undefined, headers: Record<string, string> = {}): Promise<Response> {
  const timeout = AbortSignal.timeout(cfg.timeoutMs);
  const res = await fetch(url, {
    headers: { accept: 'application/json, application/gzip;q=0.9, */*;q=0.5', 'user-agent': 'surveyor-advisory-mirror', ...(cfg.apiKey ? { apiKey: cfg.apiKey } : {}), ...headers },
    signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
  });
  if (res.status !== 200 && res.status !== 304) {
    await res.body?.cancel();
    // The URL may carry a key in its query: only its origin and path are said.
    const u = new URL(url);
    throw new ProviderError(`advisory feed ${u.origin}${u.pathname} answered ${res.status}`, res.status);
  }
  return res;
}

/**
 * Pulls SERVICE_ADVISORY_FEED_URL into the mirror (job cve.match, before matching). The NVD API is
 * read page by page, from the last complete pull's end (`lastModStartDate`/`lastModEndDate`) or
 * whole the first time; a file URL (JSON, gzip, xz or zip) is fetched with `If-None-Match` /
 * `If-Modified-Since` from its last answer. A failure is recorded and thrown (5xx, 408, 429 and
 * timeouts are transient: the job retries); the mirror keeps what it had.
 */
export async function pullFeed(db: Kysely<DB>, cfg: FeedConfig, logger: Logger, signal?: AbortSignal): Promise<FeedPull> {
  try {
    if (cfg.url.startsWith('file:')) return await pullLocal(db, cfg, signal);
    return isNvdApi(cfg.url) ? await pullNvd(db, cfg, logger, signal) : await pullFile(db, cfg, signal);
  } catch (err) {
    const failure = feedFailure(err, cfg);
    failure.text = withoutUrlSecrets(failure.text);
    await repo.recordFeedError(db, cfg.url, failure.text);
    // A network failure (fetch's "fetch failed" hides its cause) becomes a provider failure without a status: transient, retried.
    // Anything else as its kind's text: the original message may quote the URL's secrets (fetch's refusals do).
    if (failure.network) throw new ProviderError(failure.text);
    throw err instanceof ProviderError || (err as Error)?.name === 'AbortError' ? err : new Error(failure.text);
  }
}

/**
 * A failure's text as it may be stored and shown: every URL in it without userinfo or query (fetch
 * quotes the whole URL, `user:password@` and `?apiKey=` included, when it refuses one), then the
 * logger's redaction of anything token-like.
 */
export function withoutUrlSecrets(text: string): string {
  return redactText(text.replace(/\b([a-z][a-z0-9+.-]*:\/\/)[^\s/@]*@/gi, '$1').replace(/\b([a-z][a-z0-9+.-]*:\/\/[^\s?#)]*)[?#][^\s)]*/gi, '$1'));
}

const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EHOSTUNREACH', 'ENETUNREACH', 'EPIPE', 'ETIMEDOUT', 'UND_ERR_SOCKET', 'UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT']);

/**
 * What went wrong with a pull, for `advisories status` and the console: its kind first (`DNS:`,
 * `connection:`, `TLS:`, `timeout:`, `HTTP <status>:`, `parse error:`), then the detail, never the
 * URL's query or userinfo (an API key may ride there). `network`: the feed could not be reached.
 */
export function feedFailure(err: unknown, cfg: Pick<FeedConfig, 'url' | 'timeoutMs'>): { text: string; network: boolean } {
  let host = 'the feed';
  let where = 'the feed';
  try {
    const u = new URL(cfg.url);
    host = u.hostname;
    // A file: URL's origin is "null": said as file://<path>.
    where = u.protocol === 'file:' ? `file://${u.pathname}` : `${u.origin}${u.pathname}`;
  } catch {
    // not a URL: said as "the feed"
  }
  const e = err as { name?: string; message?: string; code?: string; cause?: { code?: string; message?: string } } | null;
  const code = e?.cause?.code ?? e?.code ?? '';
  const network = (text: string) => ({ text: `${text} (source ${where})`, network: true });
  if (err instanceof ProviderError && err.status !== undefined) return { text: `HTTP ${err.status}: ${err.message}`, network: false };
  if (e?.name === 'TimeoutError') return network(`timeout: no answer within ${Math.round(cfg.timeoutMs / 1000)} s`);
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return network(`DNS: ${host} does not resolve (${code})`);
  if (/^(ERR_TLS|CERT_|UNABLE_TO_|DEPTH_ZERO|SELF_SIGNED|ERR_SSL)/.test(code)) return network(`TLS: ${code} (${e?.cause?.message ?? e?.message})`);
  if (NETWORK_CODES.has(code)) return network(`connection: ${code}`);
  if (code === 'ENOENT' || code === 'EACCES' || code === 'ENOTDIR' || code === 'EISDIR') return { text: `file: ${e?.message}`, network: false };
  if (e?.message === 'fetch failed') return network(`connection: ${e.cause?.message ?? 'fetch failed'}`);
  if (err instanceof SyntaxError || code.startsWith('Z_') || (err instanceof ProviderError && err.status === undefined)) return { text: `parse error: ${e?.message} (source ${where})`, network: false };
  return { text: `${String(e?.message ?? err)} (source ${where})`, network: false };
}

/** Stores one page (a batch of documents) of a pull, counted into `out`; the records it held. */
async function storePage(db: Kysely<DB>, docs: unknown[], out: FeedPull): Promise<number> {
  const r = await storeAdvisories(db, docs);
  out.pages++;
  out.new += r.new;
  out.updated += r.updated;
  return r.new + r.updated + r.unchanged;
}

/**
 * Stores the records of the files `sources` (paths, or the bytes of a fetched file, each with its
 * name; see readDocuments: JSON, gzip, xz or zip) into `out`, in batches across files, each stored
 * before the next is read. A source without one record is an error (the age keeps running, so the
 * stale-feed alert fires), and so is a file that cannot be read, once the others are in.
 */
async function pullDocuments(db: Kysely<DB>, sources: { source: string | Buffer; name: string }[], what: string, out: FeedPull, signal: AbortSignal | undefined): Promise<void> {
  let records = 0;
  const sink = batches(async (docs) => {
    signal?.throwIfAborted();
    records += await storePage(db, docs, out);
  });
  // One file of a mirror that cannot be read (truncated, corrupt) does not keep the others out:
  // each is read, and the pull then fails naming the unreadable ones (the mirror is not confirmed
  // current, so the stale-feed alert fires). A failure to store, or an abort, stops at once.
  let storing: unknown = null;
  const add = (doc: unknown) => sink.add(doc).catch((err: unknown) => Promise.reject((storing = err)));
  const unreadable: string[] = [];
  for (const { source, name } of sources) {
    try {
      await readDocuments(source, name, add);
    } catch (err) {
      if (storing !== null || signal?.aborted || sources.length === 1) throw err;
      unreadable.push(`${name}: ${(err as Error).message ?? String(err)}`);
    }
  }
  await sink.end();
  out.changed = out.new + out.updated > 0;
  if (unreadable.length > 0) {
    const named = unreadable.slice(0, 3).join('; ') + (unreadable.length > 3 ? `; and ${unreadable.length - 3} more` : '');
    throw new SyntaxError(`${unreadable.length} of ${sources.length} files of ${what} could not be read (the others were imported): ${named}`);
  }
  if (records === 0) throw new SyntaxError(`${what} holds no advisory record`);
}

/** Every `*.json`, `*.json.gz` and `*.json.xz` file under `dir` (recursively), sorted, with its size and modification time. */
async function localFiles(dir: string): Promise<{ path: string; size: number; mtimeMs: number }[]> {
  const out: { path: string; size: number; mtimeMs: number }[] = [];
  for (const e of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (!e.isFile() || !/\.json(\.gz|\.xz)?$/i.test(e.name)) continue;
    const file = path.join(e.parentPath, e.name);
    const st = await stat(file);
    out.push({ path: file, size: st.size, mtimeMs: st.mtimeMs });
  }
  return out.sort((a, b) => a.path.localeCompare(b.path));
}

/**
 * An offline mirror (`file://` URL): one JSON, gzip, xz or zip file (an OSV ecosystem's `all.zip`,
 * a release file of the NVD JSON mirror such as `CVE-2024.json.xz`), or a directory of JSON, gzip
 * and xz files read recursively: NVD API 2.0 pages, NVD records one per file (the layout of the NVD
 * JSON mirror repositories), the mirror's release files (`cve_items`), OSV records one per file.
 * Unchanged since the last pull (the same files, sizes and modification times): nothing is read
 * and the mirror is confirmed current, as a 304 would.
 */
async function pullLocal(db: Kysely<DB>, cfg: FeedConfig, signal: AbortSignal | undefined): Promise<FeedPull> {
  const root = fileURLToPath(cfg.url);
  const info = await stat(root);
  const files = info.isDirectory() ? await localFiles(root) : [{ path: root, size: info.size, mtimeMs: info.mtimeMs }];
  const version = createHash('sha256').update(files.map((f) => `${f.path}\0${f.size}\0${f.mtimeMs}`).join('\n')).digest('hex').slice(0, 32);
  const state = await repo.feedState(db);
  const validators = { url: cfg.url, etag: `"local-${version}"`, lastModified: null };
  if (state?.url === cfg.url && state.etag === validators.etag) {
    await repo.confirmFeed(db, validators);
    return { mode: 'file', changed: false, new: 0, updated: 0, pages: 0 };
  }
  const out: FeedPull = { mode: 'file', changed: false, new: 0, updated: 0, pages: 0 };
  const what = info.isDirectory() ? `${root} (${files.length} JSON file(s) read)` : root;
  await pullDocuments(db, files.map((f) => ({ source: f.path, name: f.path })), what, out, signal);
  await repo.confirmFeed(db, validators);
  return out;
}

/** Any other URL: one file (JSON, gzip, xz or zip, told by its bytes), fetched with its validators. */
async function pullFile(db: Kysely<DB>, cfg: FeedConfig, signal: AbortSignal | undefined): Promise<FeedPull> {
  const state = await repo.feedState(db);
  const same = state?.url === cfg.url;
  const res = await get(cfg.url, cfg, signal, {
    ...(same && state?.etag ? { 'if-none-match': state.etag } : {}),
    ...(same && state?.lastModified ? { 'if-modified-since': state.lastModified } : {}),
  });
  const validators = { url: cfg.url, etag: res.headers.get('etag') ?? (same ? state?.etag : null) ?? null, lastModified: res.headers.get('last-modified') ?? (same ? state?.lastModified : null) ?? null };
  if (res.status === 304) {
    await repo.confirmFeed(db, validators);
    return { mode: 'file', changed: false, new: 0, updated: 0, pages: 0 };
  }
  // Held whole, as fetched (a zip's directory is at its end); decompressed and parsed as a stream.
  const body = Buffer.from(await res.arrayBuffer());
  const out: FeedPull = { mode: 'file', changed: false, new: 0, updated: 0, pages: 0 };
  const name = new URL(cfg.url).pathname;
  await pullDocuments(db, [{ source: body, name }], name, out, signal);
  await repo.confirmFeed(db, validators);
  return out;
}

async function pullNvd(db: Kysely<DB>, cfg: FeedConfig, logger: Logger, signal: AbortSignal | undefined): Promise<FeedPull> {
  const state = await repo.feedState(db);
  // A pass a failure left unfinished resumes at its next page, with the window it started with;
  // else a new pass: from the end of the last complete one, or whole.
  // Only a whole pass resumes by index: NVD serves the whole feed in a stable order that only grows
  // at its end, while a lastModified window loses records modified since (the rest shift left
  // past the index, and the next increment starts after the window): a window starts over.
  const resumed = state?.nvdPass?.url === cfg.url && state.nvdPass.from === null ? state.nvdPass : null;
  const end = resumed?.end ?? new Date();
  const from = resumed ? resumed.from : incrementFrom(state, cfg);
  const out: FeedPull = { mode: 'nvd', changed: false, new: 0, updated: 0, pages: 0, ...(resumed ? { resumedAt: resumed.index } : {}) };
  for (let start = resumed?.index ?? 0; ; ) {
    const u = new URL(cfg.url);
    u.searchParams.set('startIndex', String(start));
    u.searchParams.set('resultsPerPage', String(NVD_PAGE));
    if (from) {
      u.searchParams.set('lastModStartDate', nvdDate(from));
      u.searchParams.set('lastModEndDate', nvdDate(end));
    }
    const page = parseDocument(Buffer.from(await (await get(u.toString(), cfg, signal)).arrayBuffer())) as { totalResults?: unknown; resultsPerPage?: unknown; vulnerabilities?: unknown };
    if (!Array.isArray(page.vulnerabilities) || typeof page.totalResults !== 'number') throw new ProviderError('advisory feed answered a page without totalResults and vulnerabilities[]');
    await storePage(db, [page], out);
    const served = typeof page.resultsPerPage === 'number' && page.resultsPerPage > 0 ? page.resultsPerPage : page.vulnerabilities.length;
    start += served;
    if (served === 0 || start >= page.totalResults) break;
    // The page is in: a failure from here resumes at the next one.
    await repo.recordNvdPass(db, { url: cfg.url, end, from, index: start });
    logger.debug({ start, total: page.totalResults }, 'advisory feed: next page');
    if (cfg.pageDelayMs > 0) await delay(cfg.pageDelayMs, undefined, signal ? { signal } : {});
  }
  out.changed = out.new + out.updated > 0;
  await repo.recordNvdPass(db, null);
  await repo.confirmFeed(db, { url: cfg.url, nvdThrough: end });
  return out;
}

/** The lastModStartDate of an increment from the last complete pass, or null when the next pass must read the whole feed. */
function incrementFrom(state: repo.FeedState | null, cfg: FeedConfig): Date | null {
  return state?.url === cfg.url && state.nvdThrough && Date.now() - state.nvdThrough.getTime() <= NVD_MAX_RANGE_MS ? state.nvdThrough : null;
}

/**
 * Whether the next pull of `cfg` is a long one: a whole NVD feed (first pass, more than 120 days
 * since the last, or a pass to resume), or a file never fetched from this URL. Such a pull is left
 * to the scheduled tick, never run inside an HTTP request (POST /api/v1/admin/cve-match).
 */
export async function pullIsLong(db: Kysely<DB>, cfg: FeedConfig): Promise<boolean> {
  const state = await repo.feedState(db);
  if (isNvdApi(cfg.url)) return (state?.nvdPass?.url === cfg.url && state.nvdPass.from === null) || incrementFrom(state, cfg) === null;
  return state?.url !== cfg.url || state.confirmedAt === null;
}
