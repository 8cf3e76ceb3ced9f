import { ANY, type Cpe, cpeMatches, hasWildcard, isLiteral, literalText, parseCpe23, productKey } from './cpe.js';
import { compareVersions } from './version.js';

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

/**
 * The forms of a target to test. NVD names OpenSSH `8.5p1` as version `8.5` update `p1`, while nmap
 * and a derived CPE say version `8.5p1` (update ANY). So a target whose version is digits and dots
 * followed by `p<digits>`, with update ANY, is also tried as the split form (version `8.5`, update
 * `p1`); it matches when either form does. No other packing is split: OpenSSL's `1.1.1w` is one
 * version in NVD too.
 */
function targetForms(target: Cpe): Cpe[] {
  const m = PACKED_PATCH.exec(target.version);
  if (!m || target.update !== ANY) return [target];
  return [target, { ...target, version: m[1] as string, update: m[2] as string }];
}

/**
 * The version of a target to hold against a range bound: its version attribute; but when the
 * bound itself is packed (`8.3p1`) and the target's update is `pN`, the joined `8.3p1`, so both
 * spellings of a bound compare like with like.
 */
function versionAgainst(bound: string, target: Cpe): string {
  const version = literalText(target.version);
  return PACKED_PATCH.test(bound) && PATCH_UPDATE.test(target.update) ? version + target.update : version;
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
 * target)`, attribute by attribute (an exact version in the criteria is compared there, as a string).
 * With a range: every attribute but the version matches as above (the criteria's version, ANY in
 * NVD's data, is not looked at), the target's version is a literal (a target with version ANY or NA,
 * or a wildcard, never satisfies a range) and each bound present holds by `compareVersions`.
 * A malformed criteria never applies. Packed OpenSSH versions: see `targetForms`.
 */
export function cpeMatchApplies(m: CpeMatch, target: Cpe): boolean {
  const criteria = parseCpe23(m.criteria);
  if (!criteria) return false;
  const ranged = hasRange(m);
  return targetForms(target).some((t) => {
    if (!ranged) return cpeMatches(criteria, t);
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
