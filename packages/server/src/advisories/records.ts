import { createHash } from 'node:crypto';
import cvss from 'ae-cvss-calculator';
import { z } from 'zod';
import { type Configuration, type OsvAffected, distroKeysOf, indexKeys, isDistroEcosystem, osvPackageKey, parseCpe23 } from './matching/index.js';

// NVD CVE API 2.0 and OSV records, read into one shape: the advisory as the mirror keeps it.
// The external formats are validated loosely (they grow fields); what the matcher needs is checked.

export type Severity = 'critical' | 'high' | 'medium' | 'low' | 'none';

export interface CvssScore {
  vector: string;
  score: number;
}

export interface AdvisoryRecord {
  id: string;
  source: 'nvd' | 'osv';
  cveId: string;
  aliases: string[];
  summary: string | null;
  publishedAt: string | null;
  modifiedAt: string;
  cvss31: CvssScore | null;
  cvss40: CvssScore | null;
  cvss30: CvssScore | null;
  score: number | null;
  vector: string | null;
  severity: Severity;
  refs: { url: string; tags?: string[] }[];
  /** NVD `configurations`, or OSV `affected`. */
  affected: Configuration[] | OsvAffected[];
  withdrawn: boolean;
  /** The matcher's index keys (advisory_products). */
  productKeys: string[];
  /** SHA-256 of the record as kept: a re-import of the same content changes nothing. */
  sha256: string;
}

export interface Skip {
  id: string | null;
  reason: string;
}

const ADVISORY_ID = /^[A-Za-z0-9._:-]{1,100}$/;
/** A distribution tracker's record of one CVE (`DEBIAN-CVE-2024-6387`, `UBUNTU-CVE-…`, `ALPINE-CVE-…`). */
const TRACKER_CVE = /^(?:DEBIAN|UBUNTU|ALPINE)-(CVE-\d{4}-\d{4,})$/;
const CVE_ID = /^CVE-\d{4}-\d{4,}$/;

/** decisions.md: CVSS v3 qualitative bands. */
export function severityOf(score: number): Severity {
  if (score >= 9) return 'critical';
  if (score >= 7) return 'high';
  if (score >= 4) return 'medium';
  if (score > 0) return 'low';
  return 'none';
}

/** NVD writes UTC times without an offset (`2024-07-01T13:15:01.683`). */
function utc(t: string): string | null {
  const s = /[zZ]|[+-]\d\d:?\d\d$/.test(t) ? t : `${t}Z`;
  const d = new Date(s);
  return Number.isNaN(d.getTime()) || d.getUTCFullYear() < 1970 || d.getUTCFullYear() > 9999 ? null : d.toISOString();
}

/** The base score of a vector, computed (OSV carries vectors only), or null when it does not parse. */
function scoreOf(vector: string): CvssScore | null {
  try {
    const v = vector.startsWith('CVSS:4.0/') ? new cvss.Cvss4P0(vector) : vector.startsWith('CVSS:3.0/') ? new cvss.Cvss3P0(vector) : vector.startsWith('CVSS:3.1/') ? new cvss.Cvss3P1(vector) : null;
    const base = v?.calculateScores().base;
    return typeof base === 'number' && Number.isFinite(base) ? { vector, score: base } : null;
  } catch {
    return null;
  }
}

const NvdMetric = z.looseObject({
  type: z.string().optional(),
  cvssData: z.looseObject({ vectorString: z.string(), baseScore: z.number().min(0).max(10) }),
});
const NvdCpeMatch = z.looseObject({
  vulnerable: z.boolean(),
  criteria: z.string(),
  versionStartIncluding: z.string().optional(),
  versionStartExcluding: z.string().optional(),
  versionEndIncluding: z.string().optional(),
  versionEndExcluding: z.string().optional(),
});
const NvdNode = z.looseObject({ operator: z.enum(['AND', 'OR']).default('OR'), negate: z.boolean().optional(), cpeMatch: z.array(NvdCpeMatch).default([]) });
const NvdCve = z.looseObject({
  id: z.string(),
  published: z.string().optional(),
  lastModified: z.string(),
  vulnStatus: z.string().optional(),
  descriptions: z.array(z.looseObject({ lang: z.string(), value: z.string() })).default([]),
  metrics: z
    .looseObject({ cvssMetricV31: z.array(NvdMetric).optional(), cvssMetricV40: z.array(NvdMetric).optional(), cvssMetricV30: z.array(NvdMetric).optional() })
    .default({}),
  configurations: z.array(z.looseObject({ operator: z.enum(['AND', 'OR']).optional(), negate: z.boolean().optional(), nodes: z.array(NvdNode) })).default([]),
  references: z.array(z.looseObject({ url: z.string(), tags: z.array(z.string()).optional() })).default([]),
});

const OsvRecord = z.looseObject({
  id: z.string(),
  modified: z.string(),
  published: z.string().optional(),
  withdrawn: z.string().optional(),
  aliases: z.array(z.string()).default([]),
  upstream: z.array(z.string()).default([]),
  related: z.array(z.string()).default([]),
  summary: z.string().optional(),
  details: z.string().optional(),
  severity: z.array(z.looseObject({ type: z.string(), score: z.string() })).default([]),
  affected: z
    .array(
      z.looseObject({
        package: z.looseObject({ ecosystem: z.string(), name: z.string(), purl: z.string().optional() }),
        ranges: z.array(z.looseObject({ type: z.string(), events: z.array(z.record(z.string(), z.string())) })).optional(),
        versions: z.array(z.string()).optional(),
      }),
    )
    .default([]),
  references: z.array(z.looseObject({ type: z.string().optional(), url: z.string() })).default([]),
  database_specific: z.looseObject({ severity: z.string().optional() }).optional(),
});

/** The primary metric of a version (NVD's own analysis first), as a score. */
function nvdMetric(ms: z.infer<typeof NvdMetric>[] | undefined): CvssScore | null {
  if (!ms?.length) return null;
  const m = ms.find((x) => x.type === 'Primary') ?? ms[0]!;
  return { vector: m.cvssData.vectorString, score: m.cvssData.baseScore };
}

/**
 * What a record keeps of its text (issue 29): a summary of at most SUMMARY_MAX characters (cut at
 * a word, with `…`), at most REFS_MAX references, each URL at most URL_MAX characters (longer
 * ones dropped: a cut URL leads nowhere) with at most 8 tags. NVD descriptions run to tens of
 * kilobytes and some records list hundreds of references; findings show the summary, the
 * advisory keeps the rest at its source.
 */
export const SUMMARY_MAX = 2000;
export const REFS_MAX = 50;
const URL_MAX = 2000;

function boundedSummary(text: string | null): string | null {
  if (text === null) return null;
  const t = text.trim();
  if (t.length <= SUMMARY_MAX) return t;
  const cut = t.slice(0, SUMMARY_MAX - 1);
  const at = cut.lastIndexOf(' ');
  return `${(at > SUMMARY_MAX * 0.8 ? cut.slice(0, at) : cut).trimEnd()}…`;
}

function boundedRefs(refs: { url: string; tags?: string[] }[]): { url: string; tags?: string[] }[] {
  return refs
    .filter((r) => r.url.length <= URL_MAX)
    .slice(0, REFS_MAX)
    .map((r) => ({ url: r.url, ...(r.tags?.length ? { tags: r.tags.slice(0, 8).map((x) => x.slice(0, 100)) } : {}) }));
}

/** v3.1 preferred, then v4.0, then v3.0 (issue 13); `fallback` (an advisory's own rating) when none. */
function finish(r: Omit<AdvisoryRecord, 'score' | 'vector' | 'severity' | 'sha256'>, fallback: Severity | null): AdvisoryRecord {
  const chosen = r.cvss31 ?? r.cvss40 ?? r.cvss30;
  const kept = { ...r, summary: boundedSummary(r.summary), refs: boundedRefs(r.refs), score: chosen?.score ?? null, vector: chosen?.vector ?? null, severity: chosen ? severityOf(chosen.score) : (fallback ?? 'none') };
  return { ...kept, sha256: createHash('sha256').update(JSON.stringify(kept)).digest('hex') };
}

/**
 * An NVD record, and (into `skipped`) each criteria string of it that is not a CPE 2.3 formatted
 * string: such a criterion can never match, so the record is kept with it (an AND configuration
 * stays unmatchable rather than widen) and the import says which criterion and why.
 */
function nvdRecord(raw: unknown, skipped: Skip[]): AdvisoryRecord | Skip {
  const parsed = NvdCve.safeParse(raw);
  const id = typeof (raw as { id?: unknown })?.id === 'string' ? (raw as { id: string }).id : null;
  if (!parsed.success) return { id, reason: `not an NVD CVE record: ${parsed.error.issues[0]?.path.join('.') || 'record'}: ${parsed.error.issues[0]?.message}` };
  const c = parsed.data;
  if (!CVE_ID.test(c.id)) return { id: c.id, reason: 'id is not a CVE id' };
  const modifiedAt = utc(c.lastModified);
  if (!modifiedAt) return { id: c.id, reason: 'lastModified is not a timestamp' };
  const configurations: Configuration[] = c.configurations.map((g) => ({
    ...(g.operator ? { operator: g.operator } : {}),
    ...(g.negate ? { negate: true } : {}),
    nodes: g.nodes.map((n) => ({
      operator: n.operator,
      ...(n.negate ? { negate: true } : {}),
      cpeMatch: n.cpeMatch.map((m) => ({
        criteria: m.criteria,
        vulnerable: m.vulnerable,
        ...(m.versionStartIncluding !== undefined ? { versionStartIncluding: m.versionStartIncluding } : {}),
        ...(m.versionStartExcluding !== undefined ? { versionStartExcluding: m.versionStartExcluding } : {}),
        ...(m.versionEndIncluding !== undefined ? { versionEndIncluding: m.versionEndIncluding } : {}),
        ...(m.versionEndExcluding !== undefined ? { versionEndExcluding: m.versionEndExcluding } : {}),
      })),
    })),
  }));
  for (const g of configurations)
    for (const n of g.nodes)
      for (const m of n.cpeMatch)
        if (!parseCpe23(m.criteria)) skipped.push({ id: c.id, reason: `criteria ${JSON.stringify(m.criteria.slice(0, 200))} is not a CPE 2.3 formatted string (cpe:2.3: and 11 attributes); kept, it can never match` });
  const withdrawn = c.vulnStatus === 'Rejected';
  return finish(
    {
      id: c.id,
      source: 'nvd',
      cveId: c.id,
      aliases: [],
      summary: (c.descriptions.find((d) => d.lang === 'en') ?? c.descriptions[0])?.value ?? null,
      publishedAt: c.published ? utc(c.published) : null,
      modifiedAt,
      cvss31: nvdMetric(c.metrics.cvssMetricV31),
      cvss40: nvdMetric(c.metrics.cvssMetricV40),
      cvss30: nvdMetric(c.metrics.cvssMetricV30),
      refs: c.references.map((x) => ({ url: x.url, ...(x.tags?.length ? { tags: x.tags } : {}) })),
      affected: configurations,
      withdrawn,
      productKeys: withdrawn ? [] : indexKeys(configurations),
    },
    null,
  );
}

/** GitHub's own rating in OSV records without a vector (`database_specific.severity`). */
const GHSA_SEVERITY: Record<string, Severity> = { CRITICAL: 'critical', HIGH: 'high', MODERATE: 'medium', MEDIUM: 'medium', LOW: 'low' };

function osvRecord(raw: unknown): AdvisoryRecord | Skip {
  const parsed = OsvRecord.safeParse(raw);
  const id = typeof (raw as { id?: unknown })?.id === 'string' ? (raw as { id: string }).id : null;
  if (!parsed.success) return { id, reason: `not an OSV record: ${parsed.error.issues[0]?.path.join('.') || 'record'}: ${parsed.error.issues[0]?.message}` };
  const o = parsed.data;
  if (!ADVISORY_ID.test(o.id)) return { id: o.id.slice(0, 100), reason: 'id has characters an advisory id cannot have' };
  const modifiedAt = utc(o.modified);
  if (!modifiedAt) return { id: o.id, reason: 'modified is not a timestamp' };
  const vectors = o.severity.map((s) => s.score);
  const byPrefix = (p: string) => {
    const v = vectors.find((x) => x.startsWith(p));
    return v ? scoreOf(v) : null;
  };
  const affected: OsvAffected[] = o.affected.map((a) => ({
    package: { ecosystem: a.package.ecosystem, name: a.package.name, ...(a.package.purl ? { purl: a.package.purl } : {}) },
    ...(a.ranges ? { ranges: a.ranges.map((r) => ({ type: r.type, events: r.events })) } : {}),
    ...(a.versions ? { versions: a.versions } : {}),
  }));
  const withdrawn = o.withdrawn !== undefined;
  // A distribution's record names the CVEs it fixes: Debian's (DSA-, DLA-, DEBIAN-CVE-) and
  // Ubuntu's (USN-) in `upstream`, Ubuntu's per-CVE records (UBUNTU-CVE-) and
  // AlmaLinux's (ALSA-…) in `related`; other records' `related` are other vulnerabilities. The
  // trackers' per-CVE ids (UBUNTU-CVE-2024-6387: what USN records list) stand for their CVE.
  const distro = affected.some((a) => isDistroEcosystem(a.package.ecosystem));
  const names = [o.id, ...o.aliases, ...o.upstream, ...(distro ? o.related : [])]
    .flatMap((a) => {
      const tracked = TRACKER_CVE.exec(a)?.[1];
      return tracked ? [a, tracked] : [a];
    })
    .filter((a) => a !== o.id && ADVISORY_ID.test(a));
  const cve = CVE_ID.test(o.id) ? o.id : (TRACKER_CVE.exec(o.id)?.[1] ?? names.find((a) => CVE_ID.test(a)));
  return finish(
    {
      id: o.id,
      source: 'osv',
      cveId: cve ?? o.id,
      aliases: [...new Set(names)],
      summary: o.summary ?? o.details?.split('\n').find((l) => l.trim())?.trim() ?? null,
      publishedAt: o.published ? utc(o.published) : null,
      modifiedAt,
      cvss31: byPrefix('CVSS:3.1/'),
      cvss40: byPrefix('CVSS:4.0/'),
      cvss30: byPrefix('CVSS:3.0/'),
      refs: o.references.map((x) => ({ url: x.url, ...(x.type ? { tags: [x.type] } : {}) })),
      affected,
      withdrawn,
      // A distribution's packages under `distro:<family>:<package>`: they never open a finding of
      // their own, they confirm or override an upstream match (match.service.ts).
      productKeys: withdrawn ? [] : [...new Set([...distroKeysOf(affected), ...affected.filter((a) => !isDistroEcosystem(a.package.ecosystem)).map((a) => osvPackageKey(a.package.ecosystem, a.package.name))])],
    },
    GHSA_SEVERITY[o.database_specific?.severity?.toUpperCase() ?? ''] ?? null,
  );
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * The advisories of one JSON document: an NVD API 2.0 response page (`vulnerabilities[].cve`),
 * one NVD record (`{ cve }` or the `cve` object), a feed file of the NVD JSON mirror releases
 * (`cve_items[]`), one OSV record, or an array of OSV (or NVD) records. Anything else is one skip saying what the document is not.
 */
export function recordsOf(doc: unknown): { records: AdvisoryRecord[]; skipped: Skip[] } {
  const records: AdvisoryRecord[] = [];
  const skipped: Skip[] = [];
  const take = (r: AdvisoryRecord | Skip) => ('sha256' in r ? records.push(r) : skipped.push(r));
  const one = (x: unknown) => {
    if (isObject(x) && isObject(x.cve)) take(nvdRecord(x.cve, skipped));
    else if (isObject(x) && typeof x.id === 'string' && ('descriptions' in x || 'sourceIdentifier' in x || 'lastModified' in x)) take(nvdRecord(x, skipped));
    else if (isObject(x) && typeof x.id === 'string' && 'modified' in x) take(osvRecord(x));
    else skipped.push({ id: isObject(x) && typeof x.id === 'string' ? x.id : null, reason: 'neither an NVD CVE record nor an OSV record' });
  };
  if (Array.isArray(doc)) doc.forEach(one);
  else if (isObject(doc) && Array.isArray(doc.vulnerabilities)) doc.vulnerabilities.forEach(one);
  // The community mirror of NVD's JSON feeds (fkie-cad/nvd-json-data-feeds releases): NVD 2.0 `cve` objects under `cve_items`.
  else if (isObject(doc) && Array.isArray(doc.cve_items)) doc.cve_items.forEach(one);
  else one(doc);
  return { records, skipped };
}
