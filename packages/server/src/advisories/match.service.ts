import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.js';
import type { OrganisationWork } from '../jobs/per-organisation.js';
import * as repo from './advisories.repo.js';
import {
  ANY,
  NA,
  type Configuration,
  type Cpe,
  type DistroAdvisory,
  type OsvAffected,
  deriveCpe,
  distroBuildOf,
  distroKeysOfBuild,
  distroVerdict,
  matchesConfigurations,
  osvAffects,
  osvKeysForCpe,
  osvPackageKey,
  parseCpe22,
  parseCpe23,
  productKey,
  toCpe23,
} from './matching/index.js';

/** Services matched per transaction. */
const CHUNK = 1000;
/** Advisories kept in memory across the chunks of one run (the products of an inventory repeat). */
const CACHE_ADVISORIES = 20_000;

export interface MatchCounts {
  full: boolean;
  servicesMatched: number;
  opened: number;
  resolved: number;
  seen: number;
}

/** A service's CPE: its own (CPE 2.3, or the 2.2 URI nmap reports), else one derived from vendor, product and version. */
export function serviceCpe(s: Pick<repo.ServiceFacts, 'cpe' | 'vendor' | 'product' | 'version'>): Cpe | null {
  if (s.cpe) {
    const own = parseCpe23(s.cpe) ?? parseCpe22(s.cpe);
    if (own) return own;
  }
  const derived = s.vendor && s.product && s.version ? deriveCpe(s.vendor, s.product, s.version) : null;
  return derived ? parseCpe23(derived) : null;
}

/** The index keys a service is found under: its CPE's product, and the OSV packages that product is. */
function keysOf(cpe: Cpe): string[] {
  const k = productKey(cpe);
  return [...(k ? [k] : []), ...osvKeysForCpe(cpe)];
}

/** Candidate advisories per index key, bounded (least recently used key dropped first). */
class Candidates {
  private byKey = new Map<string, repo.CandidateAdvisory[]>();
  private held = 0;

  /** The candidates of `keys`, reading those not held yet through `db` (the caller's transaction). */
  async for(db: Kysely<DB>, keys: string[]): Promise<Map<string, repo.CandidateAdvisory[]>> {
    const missing = keys.filter((k) => !this.byKey.has(k));
    if (missing.length > 0) {
      const found = new Map<string, repo.CandidateAdvisory[]>(missing.map((k) => [k, []]));
      for (const { advisory, keys: ks } of await repo.advisoriesForKeys(db, missing)) for (const k of ks) found.get(k)?.push(advisory);
      for (const [k, list] of found) {
        this.byKey.set(k, list);
        this.held += list.length;
      }
    }
    const out = new Map<string, repo.CandidateAdvisory[]>();
    for (const k of keys) {
      const list = this.byKey.get(k)!;
      // Most recently used last: re-insert.
      this.byKey.delete(k);
      this.byKey.set(k, list);
      out.set(k, list);
    }
    for (const [k, list] of this.byKey) {
      if (this.held <= CACHE_ADVISORIES || out.has(k)) break;
      this.byKey.delete(k);
      this.held -= list.length;
    }
    return out;
  }
}

/**
 * A CPE seen on a host, as the platform an `AND` configuration asks for: what the scan did not
 * tell (ANY: nmap's `cpe:/o:microsoft:windows`) counts as "no such detail" (NA), so it meets a
 * platform criterion without a version (`windows:-`) or with any (`*`), never one that names a
 * version the scan did not see.
 */
function asPlatform(c: Cpe): Cpe {
  const out = { ...c };
  for (const k of ['version', 'update', 'edition', 'language', 'swEdition', 'targetSw', 'targetHw', 'other'] as const) if (out[k] === ANY) out[k] = NA;
  return out;
}

const platformNeed = new WeakMap<repo.CandidateAdvisory, boolean>();

/**
 * Whether an advisory can depend on what else runs on the host: an NVD configuration or node
 * combined by AND, or negated. In an OR node a platform criterion can never make it match alone.
 */
function needsPlatforms(a: repo.CandidateAdvisory): boolean {
  let v = platformNeed.get(a);
  if (v === undefined) {
    v = a.source === 'nvd' && (a.affected as Configuration[]).some((c) => c.operator === 'AND' || c.negate || c.nodes.some((n) => n.operator === 'AND' || n.negate));
    platformNeed.set(a, v);
  }
  return v;
}

/** Whether `a` applies to a service of CPE `cpe` on a host whose other CPEs are `platforms`. */
export function advisoryApplies(a: Pick<repo.CandidateAdvisory, 'source' | 'affected'>, cpe: Cpe, platforms: Cpe[]): boolean {
  if (a.source === 'nvd') return matchesConfigurations(a.affected as Configuration[], { service: cpe, platforms });
  const osvKeys = new Set(osvKeysForCpe(cpe));
  return (a.affected as OsvAffected[]).some((x) => osvKeys.has(osvPackageKey(x.package.ecosystem, x.package.name)) && osvAffects(x, cpe.version));
}

/** Matches one chunk of services in one transaction; returns what changed. */
async function matchChunk(db: Kysely<DB>, organisationId: string, ids: string[], candidates: Candidates): Promise<Omit<MatchCounts, 'full'>> {
  return db.transaction().execute(async (trx) => {
    const services = await repo.servicesById(trx, organisationId, ids);
    const keyed = services
      .filter((s) => !s.absent)
      .flatMap((s) => {
        const cpe = serviceCpe(s);
        if (!cpe) return [];
        // The distribution build its banner names (backports): its packages' keys find the distribution's records.
        const build = distroBuildOf(s);
        return [{ s, cpe, keys: keysOf(cpe), build, distroKeys: build ? distroKeysOfBuild(build) : [] }];
      });
    await repo.setServiceKeys(trx, organisationId, services.map((s) => s.id), keyed.flatMap((x) => [...x.keys, ...x.distroKeys].map((k) => [x.s.id, k] as const)));
    const byKey = await candidates.for(trx, [...new Set(keyed.flatMap((x) => [...x.keys, ...x.distroKeys]))]);
    // The other CPEs of a host matter only to an AND configuration (an application on a platform).
    const platformHosts = keyed.filter((x) => x.keys.some((k) => byKey.get(k)?.some(needsPlatforms))).map((x) => x.s.hostId);
    const hostCpes = await repo.hostCpes(trx, organisationId, [...new Set(platformHosts)]);

    // What matches now: per service and CVE, one advisory (NVD's record before an OSV one).
    const matched = new Map<string, repo.FindingFacts>();
    const source = new Map<string, 'nvd' | 'osv'>();
    for (const { s, cpe, keys, build, distroKeys } of keyed) {
      const distroAdvisories = distroKeys.flatMap((k) => byKey.get(k) ?? []).map((a): DistroAdvisory => ({ id: a.id, cveId: a.cveId, aliases: a.aliases, affected: a.affected as OsvAffected[] }));
      const platformCpes = (hostCpes.get(s.hostId) ?? []).flatMap((c) => {
        const p = parseCpe23(c) ?? parseCpe22(c);
        return p ? [asPlatform(p)] : [];
      });
      const seen = new Set<string>();
      for (const a of keys.flatMap((k) => byKey.get(k) ?? [])) {
        if (seen.has(a.id)) continue;
        seen.add(a.id);
        const key = `${s.id}|${a.cveId}`;
        const held = source.get(key);
        if (held && (held === 'nvd' || a.source !== 'nvd')) continue;
        if (!advisoryApplies(a, cpe, platformCpes)) continue;
        source.set(key, a.source);
        matched.set(key, {
          serviceId: s.id, hostId: s.hostId, cveId: a.cveId, advisoryId: a.id, severity: a.severity,
          score: a.score, vector: a.vector, matchedCpe: toCpe23(cpe),
          distribution: build ? distroVerdict(build, a.cveId, distroAdvisories) : null,
        });
      }
    }

    const stored = await repo.findingsOf(trx, organisationId, ids);
    const storedKeys = new Set(stored.map((f) => `${f.serviceId}|${f.cveId}`));
    const create = [...matched].filter(([k]) => !storedKeys.has(k)).map(([, f]) => f);
    const seen = [...matched].filter(([k]) => storedKeys.has(k)).map(([, f]) => f);
    // decisions.md: open and acknowledged findings resolve when their service no longer matches;
    // false_positive is never changed automatically; a resolved one stays resolved. A match the
    // distribution says is fixed in the build (a backport) is kept resolved, with that evidence.
    const backported = new Set([...matched].filter(([, f]) => f.distribution?.verdict === 'fixed').map(([k]) => k));
    const resolve = stored
      .filter((f) => (!matched.has(`${f.serviceId}|${f.cveId}`) || backported.has(`${f.serviceId}|${f.cveId}`)) && (f.state === 'open' || f.state === 'acknowledged'))
      .map((f) => f.id);
    const r = await repo.applyFindings(trx, organisationId, { create, seen, resolve });
    return { servicesMatched: services.length, opened: r.opened.length + r.reopened.length, resolved: r.resolved.length, seen: seen.length - r.reopened.length };
  });
}

/**
 * One organisation's matching (job cve.match): on its first run every service; afterwards the
 * services created or changed since the last run (the change log), and the services of the
 * advisories that changed since then (their products, and the findings they already have). The
 * cost follows what changed, not the size of the inventory.
 */
export async function matchOrganisation(db: Kysely<DB>, organisationId: string): Promise<OrganisationWork & { value: MatchCounts }> {
  const mark = await repo.watermark(db);
  const since = await repo.matchState(db, organisationId);
  const candidates = new Candidates();
  const counts: MatchCounts = { full: since === null, servicesMatched: 0, opened: 0, resolved: 0, seen: 0 };
  const add = (c: Omit<MatchCounts, 'full'>) => {
    counts.servicesMatched += c.servicesMatched;
    counts.opened += c.opened;
    counts.resolved += c.resolved;
    counts.seen += c.seen;
  };
  if (since === null) {
    for (let after: { cpe: string; id: string } | null = null; ; ) {
      const page = await repo.servicePageByCpe(db, organisationId, after, CHUNK);
      if (page.length === 0) break;
      add(await matchChunk(db, organisationId, page.map((p) => p.id), candidates));
      after = page[page.length - 1]!;
    }
    for (let after: string | null = null; ; ) {
      const ids = await repo.servicePageWithoutCpe(db, organisationId, after, CHUNK);
      if (ids.length === 0) break;
      add(await matchChunk(db, organisationId, ids, candidates));
      after = ids[ids.length - 1]!;
    }
  } else {
    const changed = await repo.changedServices(db, organisationId, since);
    const advisories = await repo.changedAdvisories(db, since);
    const ofAdvisories = advisories.count > 0 ? await repo.servicesOfAdvisories(db, organisationId, advisories.keys, advisories.cves) : [];
    const ids = [...new Set([...changed, ...ofAdvisories])];
    for (let i = 0; i < ids.length; i += CHUNK) add(await matchChunk(db, organisationId, ids.slice(i, i + CHUNK), candidates));
  }
  await repo.setMatchState(db, organisationId, mark);
  return { detail: { ...counts }, value: counts };
}
