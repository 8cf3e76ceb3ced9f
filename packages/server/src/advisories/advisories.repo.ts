import { type Kysely, sql } from 'kysely';
import type { DB } from '../db/schema.js';
import { logChanges } from '../events/changes.js';
import type { DistroVerdict } from './matching/index.js';
import type { AdvisoryRecord } from './records.js';

type Db = Kysely<DB>;

// ---------------------------------------------------------------------------------------------
// The mirror

/**
 * Upserts advisories: new ones inserted, a stored one replaced only by a newer modification (or,
 * at the same modification, different content); its product keys follow. One statement per call
 * (the caller chunks). Returns the ids inserted and the ids replaced.
 */
export async function upsertAdvisories(db: Db, records: AdvisoryRecord[]): Promise<{ inserted: string[]; updated: string[] }> {
  if (records.length === 0) return { inserted: [], updated: [] };
  const doc = JSON.stringify(
    records.map((r) => ({
      id: r.id, source: r.source, cve_id: r.cveId, aliases: r.aliases, summary: r.summary, published_at: r.publishedAt, modified_at: r.modifiedAt,
      cvss31_vector: r.cvss31?.vector ?? null, cvss31_score: r.cvss31?.score ?? null,
      cvss40_vector: r.cvss40?.vector ?? null, cvss40_score: r.cvss40?.score ?? null,
      cvss30_vector: r.cvss30?.vector ?? null, cvss30_score: r.cvss30?.score ?? null,
      score: r.score, vector: r.vector, severity: r.severity, refs: r.refs, affected: r.affected, withdrawn: r.withdrawn, content_sha256: r.sha256,
    })),
  );
  const cols = sql.raw(
    'id, source, cve_id, aliases, summary, published_at, modified_at, cvss31_vector, cvss31_score, cvss40_vector, cvss40_score, cvss30_vector, cvss30_score, score, vector, severity, refs, affected, withdrawn, content_sha256',
  );
  const rows = await sql<{ id: string; inserted: boolean }>`
    insert into advisories (${cols})
    select ${cols} from jsonb_to_recordset(${doc}::jsonb) as r(
      id text, source text, cve_id text, aliases text[], summary text, published_at timestamptz, modified_at timestamptz,
      cvss31_vector text, cvss31_score numeric, cvss40_vector text, cvss40_score numeric, cvss30_vector text, cvss30_score numeric,
      score numeric, vector text, severity text, refs jsonb, affected jsonb, withdrawn boolean, content_sha256 text)
    on conflict (id) do update set
      source = excluded.source, cve_id = excluded.cve_id, aliases = excluded.aliases, summary = excluded.summary,
      published_at = excluded.published_at, modified_at = excluded.modified_at,
      cvss31_vector = excluded.cvss31_vector, cvss31_score = excluded.cvss31_score, cvss40_vector = excluded.cvss40_vector,
      cvss40_score = excluded.cvss40_score, cvss30_vector = excluded.cvss30_vector, cvss30_score = excluded.cvss30_score,
      score = excluded.score, vector = excluded.vector, severity = excluded.severity, refs = excluded.refs, affected = excluded.affected,
      withdrawn = excluded.withdrawn, content_sha256 = excluded.content_sha256, imported_at = now(), changed_at = now()
    where excluded.modified_at > advisories.modified_at
       or (excluded.modified_at = advisories.modified_at and excluded.content_sha256 <> advisories.content_sha256)
    returning id, (xmax = 0) as inserted`.execute(db);
  const written = new Set(rows.rows.map((r) => r.id));
  const keys = records.filter((r) => written.has(r.id)).flatMap((r) => r.productKeys.map((k) => [r.id, k] as const));
  const ids = [...written];
  if (ids.length > 0) {
    await sql`delete from advisory_products where advisory_id = any(${ids}::text[])`.execute(db);
    if (keys.length > 0) {
      await sql`insert into advisory_products (advisory_id, product_key)
        select a, k from unnest(${keys.map((x) => x[0])}::text[], ${keys.map((x) => x[1])}::text[]) as v(a, k) on conflict do nothing`.execute(db);
    }
  }
  return { inserted: rows.rows.filter((r) => r.inserted).map((r) => r.id), updated: rows.rows.filter((r) => !r.inserted).map((r) => r.id) };
}

export interface FeedState {
  url: string | null;
  etag: string | null;
  lastModified: string | null;
  nvdThrough: Date | null;
  confirmedAt: Date | null;
  /** An NVD pass left unfinished by a failure: where the next pull resumes. */
  nvdPass: { url: string; end: Date; from: Date | null; index: number } | null;
}

export async function feedState(db: Db): Promise<FeedState | null> {
  const r = await db.selectFrom('advisory_feed').select(['url', 'etag', 'last_modified', 'nvd_through', 'confirmed_at', 'nvd_pass_url', 'nvd_pass_end', 'nvd_pass_from', 'nvd_pass_index']).executeTakeFirst();
  return r
    ? {
        url: r.url,
        etag: r.etag,
        lastModified: r.last_modified,
        nvdThrough: r.nvd_through,
        confirmedAt: r.confirmed_at,
        nvdPass: r.nvd_pass_url && r.nvd_pass_end && r.nvd_pass_index !== null ? { url: r.nvd_pass_url, end: r.nvd_pass_end, from: r.nvd_pass_from, index: r.nvd_pass_index } : null,
      }
    : null;
}

/** Records an NVD pass's progress after each stored page (null: no pass in progress). */
export async function recordNvdPass(db: Db, pass: { url: string; end: Date; from: Date | null; index: number } | null): Promise<void> {
  const set = { nvd_pass_url: pass?.url ?? null, nvd_pass_end: pass?.end ?? null, nvd_pass_from: pass?.from ?? null, nvd_pass_index: pass?.index ?? null };
  await db.insertInto('advisory_feed').values({ id: true, ...set }).onConflict((oc) => oc.column('id').doUpdateSet(set)).execute();
}

/** Records a successful import or fetch: the mirror is current now (and, for a fetch, its validators). */
export async function confirmFeed(db: Db, s: { url?: string | null; etag?: string | null; lastModified?: string | null; nvdThrough?: Date | null } = {}): Promise<Date> {
  const set = {
    confirmed_at: sql<Date>`now()`,
    last_error: null,
    ...(s.url !== undefined ? { url: s.url, etag: s.etag ?? null, last_modified: s.lastModified ?? null, last_attempt_at: sql<Date>`now()` } : {}),
    ...(s.nvdThrough !== undefined ? { nvd_through: s.nvdThrough } : {}),
  };
  const r = await db
    .insertInto('advisory_feed')
    .values({ id: true, ...set })
    .onConflict((oc) => oc.column('id').doUpdateSet(set))
    .returning('confirmed_at')
    .executeTakeFirstOrThrow();
  return r.confirmed_at!;
}

/** A failed fetch: kept for the job status and the README's troubleshooting; the age keeps growing. */
export async function recordFeedError(db: Db, url: string, error: string): Promise<void> {
  const set = { last_attempt_at: sql<Date>`now()`, last_error: error.slice(0, 2000) };
  await db.insertInto('advisory_feed').values({ id: true, url, ...set }).onConflict((oc) => oc.column('id').doUpdateSet(set)).execute();
}

/** When the mirror last changed or was confirmed current, and how long ago; null while it holds no advisory. */
export async function feedConfirmation(db: Db, now: Date = new Date()): Promise<{ confirmedAt: Date; ageSeconds: number } | null> {
  const r = await sql<{ confirmed_at: Date; age: number }>`
    select f.confirmed_at, extract(epoch from ${now}::timestamptz - f.confirmed_at)::float8 as age
    from advisory_feed f where f.confirmed_at is not null and exists (select 1 from advisories)`.execute(db);
  const row = r.rows[0];
  return row ? { confirmedAt: new Date(row.confirmed_at), ageSeconds: row.age } : null;
}

/** Seconds since the mirror last changed or was confirmed current (service_cve_feed_age_seconds); null while it holds no advisory. */
export async function feedAgeSeconds(db: Db, now: Date = new Date()): Promise<number | null> {
  return (await feedConfirmation(db, now))?.ageSeconds ?? null;
}

// ---------------------------------------------------------------------------------------------
// What changed since a run

/**
 * The time from which every change is visible: now, or the start of the oldest transaction still
 * open elsewhere (a change stamped before it may commit after this read). The next run reads
 * changes from here on, so none is skipped however long a writer's transaction takes.
 */
export async function watermark(db: Db): Promise<Date> {
  const r = await sql<{ at: Date }>`
    select least(now(), coalesce((select min(xact_start) from pg_stat_activity where datname = current_database() and xact_start is not null and pid <> pg_backend_pid()), now())) as at`
    .execute(db)
    .catch(() => sql<{ at: Date }>`select now() as at`.execute(db));
  return new Date(r.rows[0]!.at);
}

export async function matchState(db: Db, organisationId: string): Promise<Date | null> {
  const r = await db.selectFrom('advisory_match_state').select('matched_at').where('organisation_id', '=', organisationId).executeTakeFirst();
  return r ? new Date(r.matched_at) : null;
}

export async function setMatchState(db: Db, organisationId: string, at: Date): Promise<void> {
  await db
    .insertInto('advisory_match_state')
    .values({ organisation_id: organisationId, matched_at: at })
    .onConflict((oc) => oc.column('organisation_id').doUpdateSet({ matched_at: at }))
    .execute();
}

/** Services created or changed (facts, gone) since `since`, from the change log. */
export async function changedServices(db: Db, organisationId: string, since: Date): Promise<string[]> {
  const r = await sql<{ id: string }>`
    select distinct entity_id::text as id from change_log
    where organisation_id = ${organisationId} and at >= ${since} and entity_type = 'service'`.execute(db);
  return r.rows.map((x) => x.id);
}

/** Advisories changed in the mirror since `since`: their product keys and CVE ids. */
export async function changedAdvisories(db: Db, since: Date): Promise<{ count: number; keys: string[]; cves: string[] }> {
  const r = await sql<{ count: number; keys: string[] | null; cves: string[] | null }>`
    with changed as (select id, cve_id from advisories where changed_at >= ${since})
    select (select count(*)::int from changed) as count,
           (select array_agg(distinct p.product_key) from advisory_products p join changed c on c.id = p.advisory_id) as keys,
           (select array_agg(distinct cve_id) from changed) as cves`.execute(db);
  const row = r.rows[0]!;
  return { count: row.count, keys: row.keys ?? [], cves: row.cves ?? [] };
}

/** Services of the organisation with one of `keys`, or with a finding of one of `cves`. */
export async function servicesOfAdvisories(db: Db, organisationId: string, keys: string[], cves: string[]): Promise<string[]> {
  if (keys.length === 0 && cves.length === 0) return [];
  const r = await sql<{ id: string }>`
    select service_id::text as id from service_match_keys where organisation_id = ${organisationId} and product_key = any(${keys}::text[])
    union
    select service_id::text from vulnerabilities where organisation_id = ${organisationId} and cve_id = any(${cves}::text[])`.execute(db);
  return r.rows.map((x) => x.id);
}

/**
 * A page of the organisation's services that have a CPE, in CPE order (a first, full run): one
 * product's services come together, so the advisories read for a page serve the next ones too.
 */
export async function servicePageByCpe(db: Db, organisationId: string, after: { cpe: string; id: string } | null, limit: number): Promise<{ id: string; cpe: string }[]> {
  const r = await sql<{ id: string; cpe: string }>`
    select id, cpe from services where organisation_id = ${organisationId} and cpe is not null
    ${after ? sql`and (cpe, id) > (${after.cpe}, ${after.id}::uuid)` : sql``}
    order by cpe, id limit ${limit}`.execute(db);
  return r.rows;
}

/** A page of the organisation's services without a CPE, in id order (a first, full run). */
export async function servicePageWithoutCpe(db: Db, organisationId: string, after: string | null, limit: number): Promise<string[]> {
  let q = db.selectFrom('services').select('id').where('organisation_id', '=', organisationId).where('cpe', 'is', null);
  if (after) q = q.where('id', '>', after);
  return (await q.orderBy('id').limit(limit).execute()).map((r) => r.id);
}

// ---------------------------------------------------------------------------------------------
// Matching a chunk of services

export interface ServiceFacts {
  id: string;
  hostId: string;
  cpe: string | null;
  vendor: string | null;
  product: string | null;
  version: string | null;
  /** The banner line or nmap's extra information: where a distribution build is named. */
  evidence: string | null;
  /** Gone (a completed scan no longer saw it) or its port closed. */
  absent: boolean;
}

export async function servicesById(db: Db, organisationId: string, ids: string[]): Promise<ServiceFacts[]> {
  if (ids.length === 0) return [];
  const r = await sql<{ id: string; host_id: string; cpe: string | null; vendor: string | null; product: string | null; version: string | null; evidence: string | null; absent: boolean }>`
    select id, host_id, cpe, vendor, product, version, left(evidence, 1000) as evidence, (gone_at is not null or state = 'closed') as absent
    from services where organisation_id = ${organisationId} and id = any(${ids}::uuid[])`.execute(db);
  return r.rows.map((x) => ({ id: x.id, hostId: x.host_id, cpe: x.cpe, vendor: x.vendor, product: x.product, version: x.version, evidence: x.evidence, absent: x.absent }));
}

/** The CPEs seen on each host (its present services'): the platforms an `AND` configuration asks for. */
export async function hostCpes(db: Db, organisationId: string, hostIds: string[]): Promise<Map<string, string[]>> {
  const out = new Map<string, string[]>();
  if (hostIds.length === 0) return out;
  // Its services' CPEs and its own (operating system, hardware: host_platform_cpes).
  const r = await sql<{ host_id: string; cpes: string[] }>`
    select host_id, array_agg(distinct cpe) as cpes from (
      select host_id, cpe from services
      where organisation_id = ${organisationId} and host_id = any(${hostIds}::uuid[]) and cpe is not null and gone_at is null
      union all
      select host_id, cpe from host_platform_cpes where organisation_id = ${organisationId} and host_id = any(${hostIds}::uuid[])
    ) c group by host_id`.execute(db);
  for (const x of r.rows) out.set(x.host_id, x.cpes);
  return out;
}

/**
 * Makes the product keys of `serviceIds` exactly `pairs` ([serviceId, key]), writing only the
 * difference: a new version of the same product changes no key.
 */
export async function setServiceKeys(db: Db, organisationId: string, serviceIds: string[], pairs: (readonly [string, string])[]): Promise<void> {
  if (serviceIds.length === 0) return;
  const s = pairs.map((p) => p[0]);
  const k = pairs.map((p) => p[1]);
  await sql`delete from service_match_keys m
    where m.organisation_id = ${organisationId} and m.service_id = any(${serviceIds}::uuid[])
      and not exists (select 1 from unnest(${s}::uuid[], ${k}::text[]) as w(s, k) where w.s = m.service_id and w.k = m.product_key)`.execute(db);
  if (pairs.length === 0) return;
  await sql`insert into service_match_keys (organisation_id, service_id, product_key)
    select ${organisationId}, s, k from unnest(${s}::uuid[], ${k}::text[]) as v(s, k)
    on conflict do nothing`.execute(db);
}

export interface CandidateAdvisory {
  id: string;
  source: 'nvd' | 'osv';
  cveId: string;
  aliases: string[];
  summary: string | null;
  score: number | null;
  vector: string | null;
  severity: string;
  affected: unknown;
}

/** The advisories indexed under any of `keys` (withdrawn ones left out), each with the keys it has among them. */
export async function advisoriesForKeys(db: Db, keys: string[]): Promise<{ advisory: CandidateAdvisory; keys: string[] }[]> {
  if (keys.length === 0) return [];
  const r = await sql<{ id: string; source: 'nvd' | 'osv'; cve_id: string; aliases: string[]; summary: string | null; score: string | null; vector: string | null; severity: string; affected: unknown; keys: string[] }>`
    select a.id, a.source, a.cve_id, a.aliases, a.summary, a.score, a.vector, a.severity, a.affected, p.keys
    from (select advisory_id, array_agg(product_key) as keys from advisory_products where product_key = any(${keys}::text[]) group by advisory_id) p
    join advisories a on a.id = p.advisory_id
    where not a.withdrawn`.execute(db);
  return r.rows.map((x) => ({
    advisory: { id: x.id, source: x.source, cveId: x.cve_id, aliases: x.aliases ?? [], summary: x.summary, score: x.score === null ? null : Number(x.score), vector: x.vector, severity: x.severity, affected: typeof x.affected === 'string' ? JSON.parse(x.affected) : x.affected },
    keys: x.keys,
  }));
}

export interface StoredFinding {
  id: string;
  serviceId: string;
  cveId: string;
  state: string;
}

export async function findingsOf(db: Db, organisationId: string, serviceIds: string[]): Promise<StoredFinding[]> {
  if (serviceIds.length === 0) return [];
  const r = await sql<{ id: string; service_id: string; cve_id: string; state: string }>`
    select id, service_id, cve_id, state from vulnerabilities where organisation_id = ${organisationId} and service_id = any(${serviceIds}::uuid[])`.execute(db);
  return r.rows.map((x) => ({ id: x.id, serviceId: x.service_id, cveId: x.cve_id, state: x.state }));
}

export interface FindingFacts {
  serviceId: string;
  hostId: string;
  cveId: string;
  advisoryId: string;
  severity: string;
  score: number | null;
  vector: string | null;
  matchedCpe: string;
  /** What the distribution's records say of the service's build (backports), when its banner names one. */
  distribution: DistroVerdict | null;
}

const findingColumns = (f: FindingFacts[]) => sql`unnest(
  ${f.map((x) => x.serviceId)}::uuid[], ${f.map((x) => x.hostId)}::uuid[], ${f.map((x) => x.cveId)}::text[], ${f.map((x) => x.advisoryId)}::text[],
  ${f.map((x) => x.severity)}::text[], ${f.map((x) => x.score)}::numeric[], ${f.map((x) => x.vector)}::text[],
  ${f.map((x) => x.matchedCpe)}::text[], ${f.map((x) => (x.distribution ? JSON.stringify(x.distribution) : null))}::jsonb[],
  ${f.map((x) => x.distribution?.verdict === 'fixed')}::boolean[])
  as v(service_id, host_id, cve_id, advisory_id, severity, score, vector, matched_cpe, distribution, backported)`;

/**
 * Writes one chunk's outcome in the caller's transaction: new findings `open`; matching ones seen
 * (their advisory facts refreshed) and, when `resolved`, reopened; `resolve` ids resolved (only
 * from open or acknowledged: a state PATCHed meanwhile is left alone). Every state change gets an
 * audit row by the job, and a change-log row. Returns the ids opened (new or reopened) and resolved.
 */
export async function applyFindings(db: Db, organisationId: string, w: { create: FindingFacts[]; seen: FindingFacts[]; resolve: string[] }): Promise<{ opened: string[]; reopened: string[]; resolved: string[] }> {
  const o = organisationId;
  const created = w.create.length
    ? (await sql<{ id: string; state: string }>`
        insert into vulnerabilities (organisation_id, service_id, host_id, cve_id, advisory_id, severity, score, vector, matched_cpe, distribution, state, resolved_at)
        select ${o}, service_id, host_id, cve_id, advisory_id, severity, score, vector, matched_cpe, distribution,
               case when backported then 'resolved' else 'open' end, case when backported then now() end
        from ${findingColumns(w.create)}
        on conflict (organisation_id, service_id, cve_id) do nothing
        returning id, state`.execute(db)).rows
    : [];
  const seen = w.seen.length
    ? (await sql<{ id: string; reopened: boolean }>`
        with v as (select * from ${findingColumns(w.seen)}),
        old as (
          select f.id, f.state from vulnerabilities f join v on f.service_id = v.service_id and f.cve_id = v.cve_id
          where f.organisation_id = ${o} for update of f
        )
        update vulnerabilities f set
          advisory_id = v.advisory_id, summary = null, severity = v.severity, score = v.score, vector = v.vector, matched_cpe = v.matched_cpe,
          distribution = v.distribution, last_seen_at = now(),
          state = case when f.state = 'resolved' and not v.backported then 'open' else f.state end,
          state_changed_at = case when f.state = 'resolved' and not v.backported then now() else f.state_changed_at end,
          resolved_at = case when f.state = 'resolved' and not v.backported then null else f.resolved_at end,
          updated_at = now()
        from v, old
        where f.organisation_id = ${o} and f.service_id = v.service_id and f.cve_id = v.cve_id and old.id = f.id
        returning f.id, (old.state = 'resolved' and f.state = 'open') as reopened`.execute(db)).rows
    : [];
  const reopened = seen.filter((r) => r.reopened).map((r) => r.id);
  const resolved = w.resolve.length
    ? (await sql<{ id: string; from_state: string }>`
        with old as (
          select id, state from vulnerabilities
          where organisation_id = ${o} and id = any(${w.resolve}::uuid[]) and state in ('open', 'acknowledged') for update
        )
        update vulnerabilities f set state = 'resolved', state_changed_at = now(), resolved_at = now(), updated_at = now()
        from old where f.organisation_id = ${o} and f.id = old.id
        returning f.id, old.state as from_state`.execute(db)).rows
    : [];
  const audit = [
    ...created.map((c) => ({ id: c.id, from: null as string | null, to: c.state })),
    ...reopened.map((id) => ({ id, from: 'resolved', to: 'open' })),
    ...resolved.map((r) => ({ id: r.id, from: r.from_state, to: 'resolved' })),
  ];
  if (audit.length > 0) {
    await sql`insert into audit_log (organisation_id, actor_type, action, target_type, target_id, changes)
      select ${o}, 'system', 'vulnerability.updated', 'vulnerability', id,
             jsonb_build_object('state', jsonb_build_object('from', f, 'to', t), 'job', 'cve.match')
      from unnest(${audit.map((a) => a.id)}::text[], ${audit.map((a) => a.from)}::text[], ${audit.map((a) => a.to)}::text[]) as v(id, f, t)`.execute(db);
  }
  await logChanges(db, o, 'vulnerability', created.map((c) => c.id), 'created');
  await logChanges(db, o, 'vulnerability', [...reopened, ...resolved.map((r) => r.id)], 'updated');
  return { opened: created.filter((c) => c.state === 'open').map((c) => c.id), reopened, resolved: resolved.map((r) => r.id) };
}

// ---------------------------------------------------------------------------------------------
// Operator views

export async function mirrorStatus(db: Db) {
  const r = await sql<{ advisories: number; nvd: number; osv: number; withdrawn: number; url: string | null; confirmed_at: Date | null; last_attempt_at: Date | null; last_error: string | null }>`
    select (select count(*)::int from advisories) as advisories,
           (select count(*)::int from advisories where source = 'nvd') as nvd,
           (select count(*)::int from advisories where source = 'osv') as osv,
           (select count(*)::int from advisories where withdrawn) as withdrawn,
           f.url, f.confirmed_at, f.last_attempt_at, f.last_error
    from (select 1) one left join advisory_feed f on true`.execute(db);
  const x = r.rows[0]!;
  const iso = (d: Date | null) => (d ? new Date(d).toISOString() : null);
  return { advisories: x.advisories, nvd: x.nvd, osv: x.osv, withdrawn: x.withdrawn, url: x.url, confirmedAt: iso(x.confirmed_at), lastAttemptAt: iso(x.last_attempt_at), lastError: x.last_error };
}

/** Forgets every organisation's last match: their next run matches every service. */
export async function clearMatchState(db: Db): Promise<number> {
  const r = await db.deleteFrom('advisory_match_state').executeTakeFirst();
  return Number(r.numDeletedRows);
}
