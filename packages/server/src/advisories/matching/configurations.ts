import { ANY, type Cpe, compareAttribute, cpeMatches, hasWildcard, isLiteral, literalText, NA, parseCpe23, productKey } from './cpe.js';
import { compareVersions, isPreReleaseUpdate, sameUpdate, splitPackedVersion } from './version.js';

/** NVD CVE API 2.0 `configurations[].nodes[].cpeMatch[]`. */
export interface CpeMatch {
  criteria: string;
  vulnerable: boolean;
  versionStartIncluding?: string;
  versionStartExcluding?: string;
  versionEndIncluding?: string;
  versionEndExcluding?: string;
}

export interface ConfigNode {
  operator: 'AND' | 'OR';
  negate?: boolean;
  cpeMatch: CpeMatch[];
}

export interface Configuration {
  operator?: 'AND' | 'OR';
  negate?: boolean;
  nodes: ConfigNode[];
}

/** OpenSSH-style packed versions (`8.5p1`), which NVD writes as version `8.5`, update `p1`. */
const PACKED_PATCH = /^(\d+(?:\.\d+)*)(p\d+)$/;
const PATCH_UPDATE = /^p\d+$/;

const plain = (v: string) => isLiteral(v) && !hasWildcard(v);

/**
 * The forms of a target to test; it matches when any form does.
 *
 * 1. A packed version is also tried split the way NVD names it (`splitPackedVersion`): OpenSSH
 *    `8.5p1` as version `8.5` update `p1`, a pre-release `3.11.0a1` as `3.11.0` + `a1` (NVD:
 *    `3.11.0:alpha1`), `2.0-beta9` as `2.0` + `beta9`, `1.0rc2` as `1.0` + `rc2`; only when the
 *    target's update is ANY. OpenSSL's `1.1.1w` and Cisco's `15.2(4)m3` are one version in NVD too.
 * 2. Decision (the update NA): a target with a literal version and update ANY (a banner, nmap or a
 *    derived CPE never says "no update", it just does not name one) is the release itself, NVD's
 *    dictionary name `x.y:-`: its update is taken as NA. So `2.0` meets NVD's `log4j:2.0:-` and
 *    `2.0:*`, never `2.0:beta9` (a beta would have been reported, and is then split as in 1). Strict
 *    NISTIR 7696 has NA in the criteria against ANY in the target as SUBSET, no match, which would
 *    miss every `x.y:-` criteria for what scanners report; NVD itself matches `x.y:-` criteria
 *    against its dictionary names, where a release without update is named `x.y:-`.
 */
function targetForms(target: Cpe): Cpe[] {
  if (target.update !== ANY || !plain(target.version)) return [target];
  const forms = [{ ...target, update: NA }];
  const split = splitPackedVersion(literalText(target.version));
  if (split) forms.push({ ...target, version: split.version, update: split.update });
  return forms;
}

/**
 * The version of a target to hold against a range bound: its version attribute, joined with its
 * update when that is a pre-release (`3.11.0` + `alpha3` is `3.11.0-alpha3`, before `3.11.0`); when
 * the bound itself is packed (`8.3p1`) and the target's update is `pN`, the joined `8.3p1`, so both
 * spellings of a bound compare like with like. Any other update (OpenSSH's `p1` against `8.7`,
 * FreeBSD's `p3`) is left out: NVD's `versionEndIncluding: 8.7` takes in 8.7p1.
 */
function versionAgainst(bound: string, target: Cpe): string {
  const version = literalText(target.version);
  if (!plain(target.update)) return version;
  const update = literalText(target.update);
  if (isPreReleaseUpdate(update)) return `${version}-${update}`;
  return PACKED_PATCH.test(bound) && PATCH_UPDATE.test(update) ? version + update : version;
}

/**
 * A criteria with an exact version against a target: NISTIR 7696 name matching, or else the same
 * release spelt otherwise: every attribute but version and update matches, both versions are plain
 * literals equal by `compareVersions` (`2.4` = `2.4.0`, `5.7.44-log` = `5.7.44`, `1.2.3+build.5` =
 * `1.2.3`) and the update meets the criteria's: ANY takes any, NA only NA, a literal the same update
 * by `sameUpdate` (`a1` = `alpha1`), a wildcard as NISTIR 7696 says.
 */
function exactMatches(criteria: Cpe, t: Cpe): boolean {
  if (cpeMatches(criteria, t)) return true;
  if (!plain(criteria.version) || !plain(t.version)) return false;
  if (!cpeMatches({ ...criteria, version: ANY, update: ANY }, { ...t, version: ANY, update: ANY })) return false;
  if (compareVersions(literalText(criteria.version), literalText(t.version)) !== 0) return false;
  const c = criteria.update;
  if (c === ANY) return true;
  if (c === NA || t.update === NA || t.update === ANY) return c === t.update;
  if (hasWildcard(c)) return ['EQUAL', 'SUPERSET'].includes(compareAttribute(c, t.update));
  return plain(t.update) && sameUpdate(literalText(c), literalText(t.update));
}

function hasRange(m: CpeMatch): boolean {
  return [m.versionStartIncluding, m.versionStartExcluding, m.versionEndIncluding, m.versionEndExcluding].some((b) => typeof b === 'string' && b !== '');
}

function inRange(m: CpeMatch, target: Cpe): boolean {
  if (!isLiteral(target.version) || hasWildcard(target.version)) return false;
  const holds = (bound: string | undefined, ok: (c: number) => boolean) => !bound || ok(compareVersions(versionAgainst(bound, target), bound));
  return (
    holds(m.versionStartIncluding, (c) => c >= 0) &&
    holds(m.versionStartExcluding, (c) => c > 0) &&
    holds(m.versionEndIncluding, (c) => c <= 0) &&
    holds(m.versionEndExcluding, (c) => c < 0)
  );
}

/**
 * Whether one cpeMatch applies to a target CPE. Without a version range: `cpeMatches(criteria,
 * target)`, attribute by attribute, or the same release spelt otherwise (`exactMatches`).
 * With a range: every attribute but the version matches as above (the criteria's version, ANY in
 * NVD's data, is not looked at), the target's version is a literal (a target with version ANY or NA,
 * or a wildcard, never satisfies a range) and each bound present holds by `compareVersions`.
 * A malformed criteria never applies. Packed versions and a target without update: see `targetForms`.
 */
export function cpeMatchApplies(m: CpeMatch, target: Cpe): boolean {
  const criteria = parseCpe23(m.criteria);
  if (!criteria) return false;
  const ranged = hasRange(m);
  return targetForms(target).some((t) => {
    if (!ranged) return exactMatches(criteria, t);
    return cpeMatches({ ...criteria, version: ANY }, { ...t, version: ANY }) && inRange(m, t);
  });
}

/**
 * Whether an NVD CVE's `configurations` apply to a service, evaluated as written:
 * - the advisory applies when ANY configuration matches;
 * - a configuration combines its nodes by its `operator` (absent: OR), then `negate` inverts;
 * - a node: OR = any of its cpeMatch applies, AND = all apply (an empty AND holds, an empty OR does
 *   not); then `negate` inverts;
 * - a `vulnerable: true` cpeMatch applies only against `service` (the service under test); a
 *   `vulnerable: false` one (a platform, such as the OS an application runs on) applies when it
 *   matches `service` or any of `platforms`;
 * - a configuration only counts when at least one `vulnerable: true` cpeMatch inside it applied to
 *   the service: a configuration satisfied by platforms alone says nothing about this service.
 */
export function matchesConfigurations(configs: Configuration[], target: { service: Cpe; platforms: Cpe[] }): boolean {
  return configs.some((config) => {
    let vulnerableApplied = false;
    const nodeHolds = (node: ConfigNode): boolean => {
      const applied = node.cpeMatch.map((m) => {
        if (m.vulnerable) {
          const ok = cpeMatchApplies(m, target.service);
          if (ok) vulnerableApplied = true;
          return ok;
        }
        return cpeMatchApplies(m, target.service) || target.platforms.some((p) => cpeMatchApplies(m, p));
      });
      const result = node.operator === 'AND' ? applied.every(Boolean) : applied.some(Boolean);
      return node.negate ? !result : result;
    };
    // Every node is evaluated (no short cut), so vulnerableApplied sees all of them.
    const results = config.nodes.map(nodeHolds);
    let result = config.operator === 'AND' ? results.length > 0 && results.every(Boolean) : results.some(Boolean);
    if (config.negate) result = !result;
    return result && vulnerableApplied;
  });
}

/** The distinct `productKey`s of every `vulnerable: true` criteria, sorted; criteria without one are left out. */
export function indexKeys(configs: Configuration[]): string[] {
  const keys = new Set<string>();
  for (const config of configs)
    for (const node of config.nodes)
      for (const m of node.cpeMatch) {
        if (!m.vulnerable) continue;
        const c = parseCpe23(m.criteria);
        const key = c && productKey(c);
        if (key) keys.add(key);
      }
  return [...keys].sort();
}
