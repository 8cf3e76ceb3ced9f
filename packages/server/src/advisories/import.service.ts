import { readFile } from 'node:fs/promises';
import { gunzipSync } from 'node:zlib';
import type { Kysely } from 'kysely';
import { type Actor, recordAudit } from '../audit/audit.repo.js';
import type { DB } from '../db/schema.js';
import { AppError } from '../errors.js';
import * as repo from './advisories.repo.js';
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
  if (r.new + r.updated + r.unchanged === 0) {
    const why = r.skipped.slice(0, 3).map((s) => `${s.id ?? '(no id)'}: ${s.reason}`).join('; ');
    throw new AppError('validation_failed', `The document holds no usable advisory record${r.skippedCount ? ` (${r.skippedCount} skipped: ${why}${r.skippedCount > 3 ? '; …' : ''})` : ' (it lists none)'}; nothing was imported and the mirror is not confirmed current.`, {
      issues: r.skipped.slice(0, 10).map((s) => ({ path: s.id ?? '', message: s.reason })),
    });
  }
  return { ...r, feedConfirmedAt: (await repo.confirmFeed(db)).toISOString() };
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

/** Reads an advisory file (JSON, or gzip of JSON); the error names the file. */
export async function readAdvisoryFile(path: string): Promise<unknown> {
  const bytes = await readFile(path);
  try {
    return parseDocument(bytes);
  } catch (err) {
    throw new Error(`${path}: not JSON or gzip of JSON (${(err as Error).message})`);
  }
}
