import { gunzipSync } from 'node:zlib';
import type { Kysely } from 'kysely';
import { type Actor, recordAudit } from '../audit/audit.repo.js';
import type { DB } from '../db/schema.js';
import { AppError } from '../errors.js';
import * as repo from './advisories.repo.js';
import { batches, readDocuments } from './documents.js';
import { type AdvisoryRecord, type Skip, recordsOf } from './records.js';

/** Advisories written per statement (and transaction). */
const CHUNK = 500;
/** Skips listed in a result (all are counted). */
const SKIPS_LISTED = 100;

export interface ImportResult {
  new: number;
  updated: number;
  unchanged: number;
  skipped: Skip[];
  skippedCount: number;
  feedConfirmedAt: string;
}

/**
 * Stores the advisories of `docs` (NVD API 2.0 or OSV JSON documents, see recordsOf) in the
 * mirror. Idempotent: a record held at a newer modification changes nothing, nor one held at the
 * same modification with the same content (hash); a newer one, or other content at the same
 * modification, replaces it. Within one call the newest record of an id wins. Does not confirm the mirror
 * current: a feed pull does that once, when every page is in.
 */
export async function storeAdvisories(db: Kysely<DB>, docs: Iterable<unknown>): Promise<Omit<ImportResult, 'feedConfirmedAt'>> {
  const newest = new Map<string, AdvisoryRecord>();
  const skipped: Skip[] = [];
  let duplicates = 0;
  for (const doc of docs) {
    const r = recordsOf(doc);
    skipped.push(...r.skipped);
    for (const rec of r.records) {
      const held = newest.get(rec.id);
      if (held) duplicates++;
      if (!held || rec.modifiedAt > held.modifiedAt) newest.set(rec.id, rec);
    }
  }
  const records = [...newest.values()];
  let inserted = 0;
  let updated = 0;
  for (let i = 0; i < records.length; i += CHUNK) {
    const r = await db.transaction().execute((trx) => repo.upsertAdvisories(trx, records.slice(i, i + CHUNK)));
    inserted += r.inserted.length;
    updated += r.updated.length;
  }
  return {
    new: inserted,
    updated,
    unchanged: records.length - inserted - updated + duplicates,
    skipped: skipped.slice(0, SKIPS_LISTED),
    skippedCount: skipped.length,
  };
}

/**
 * Stores the advisories of `docs` (see storeAdvisories), then confirms the mirror current (an
 * import). A document without one usable record is refused (400 `validation_failed`, naming the
 * first reasons) and confirms nothing: an empty or unreadable file must not make a stale mirror
 * look current, so the stale-feed alert still fires.
 */
export async function importAdvisories(db: Kysely<DB>, docs: Iterable<unknown>): Promise<ImportResult> {
  const r = await storeAdvisories(db, docs);
  refuseUnusable(r);
  return { ...r, feedConfirmedAt: (await repo.confirmFeed(db)).toISOString() };
}

/** Refuses (400 `validation_failed`, naming the first reasons) what held no usable record. */
function refuseUnusable(r: Omit<ImportResult, 'feedConfirmedAt'>): void {
  if (r.new + r.updated + r.unchanged > 0) return;
  const why = r.skipped.slice(0, 3).map((s) => `${s.id ?? '(no id)'}: ${s.reason}`).join('; ');
  throw new AppError('validation_failed', `The document holds no usable advisory record${r.skippedCount ? ` (${r.skippedCount} skipped: ${why}${r.skippedCount > 3 ? '; …' : ''})` : ' (it lists none)'}; nothing was imported and the mirror is not confirmed current.`, {
    issues: r.skipped.slice(0, 10).map((s) => ({ path: s.id ?? '', message: s.reason })),
  });
}

/**
 * Imports one advisory file as importAdvisories imports a document: JSON, or gzip, xz or zip of
 * JSON (see readDocuments: read as a stream, stored batch by batch, so a whole NVD mirror release
 * fits in bounded memory). A file without one usable record is refused as a document is. A file
 * that cannot be read throws a SyntaxError naming it (saying how many records before the fault
 * were stored) and confirms nothing.
 */
export async function importAdvisoryFile(db: Kysely<DB>, file: string): Promise<ImportResult> {
  const total: Omit<ImportResult, 'feedConfirmedAt'> = { new: 0, updated: 0, unchanged: 0, skipped: [], skippedCount: 0 };
  const sink = batches(async (docs) => {
    const r = await storeAdvisories(db, docs);
    total.new += r.new;
    total.updated += r.updated;
    total.unchanged += r.unchanged;
    total.skipped.push(...r.skipped.slice(0, SKIPS_LISTED - total.skipped.length));
    total.skippedCount += r.skippedCount;
  });
  try {
    await readDocuments(file, file, sink.add);
    await sink.end();
  } catch (err) {
    const stored = total.new + total.updated + total.unchanged;
    if (err instanceof SyntaxError && stored > 0) throw new SyntaxError(`${err.message}; the ${stored} record(s) before it were stored, the mirror is not confirmed current`);
    throw err;
  }
  refuseUnusable(total);
  return { ...total, feedConfirmedAt: (await repo.confirmFeed(db)).toISOString() };
}

/** An import on someone's behalf (the console): the import, and an audit row in their organisation saying what it did. */
export async function importAdvisoriesAs(db: Kysely<DB>, actor: Actor, organisationId: string, docs: Iterable<unknown>): Promise<ImportResult> {
  const r = await importAdvisories(db, docs);
  await recordAudit(db, actor, {
    organisationId,
    action: 'advisories.imported',
    targetType: 'advisory_mirror',
    changes: { new: r.new, updated: r.updated, unchanged: r.unchanged, skipped: r.skippedCount },
  });
  return r;
}

/** One JSON document from bytes, gunzipped first when they are gzip (by their magic number). */
export function parseDocument(bytes: Buffer): unknown {
  const text = (bytes[0] === 0x1f && bytes[1] === 0x8b ? gunzipSync(bytes) : bytes).toString('utf8');
  return JSON.parse(text);
}
