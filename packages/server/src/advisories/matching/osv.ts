import semver from 'semver';
import { type Cpe, hasWildcard, isLiteral, literalText } from './cpe.js';
import { compareVersions, toSemver } from './version.js';

/** OSV schema (https://ossf.github.io/osv-schema/) `affected[].ranges[].events[]`. */
export interface OsvEvent {
  introduced?: string;
  fixed?: string;
  last_affected?: string;
  limit?: string;
}

export interface OsvAffected {
  package: { ecosystem: string; name: string; purl?: string };
  ranges?: { type: string; events: OsvEvent[] }[];
  versions?: string[];
}

/** A version as SEMVER ranges read it: `v1.2.3`, Go's `go1.21.3` and `1.20` (1.20.0), pre-releases such as `go1.21rc2` (see toSemver). */
function semverOf(v: string): string | null {
  return toSemver(v);
}

type Compare = (a: string, b: string) => number;

function eventVersion(e: OsvEvent): string | undefined {
  return e.introduced ?? e.fixed ?? e.last_affected ?? e.limit;
}

/**
 * The OSV evaluation of one SEMVER or ECOSYSTEM range (the spec's "Evaluation" pseudo-code): the
 * events sorted by version (introduced `0` first; ties keep their order), then walked: an
 * `introduced` at or below the version makes it affected, a `fixed` at or below it or a
 * `last_affected` below it makes it not affected. A `limit` at or below the version excludes it
 * whatever came before. An event whose version cannot be read is ignored.
 */
function inOsvRange(version: string, events: OsvEvent[], compare: Compare, readable: (v: string) => boolean): boolean {
  const usable = events.filter((e) => {
    const v = eventVersion(e);
    return v !== undefined && (e.introduced === '0' || readable(v));
  });
  const sorted = usable
    .map((e, i) => ({ e, i }))
    .sort((x, y) => {
      const a = eventVersion(x.e) as string;
      const b = eventVersion(y.e) as string;
      const zeroA = x.e.introduced === '0';
      const zeroB = y.e.introduced === '0';
      if (zeroA || zeroB) return zeroA && zeroB ? x.i - y.i : zeroA ? -1 : 1;
      return compare(a, b) || x.i - y.i;
    })
    .map((x) => x.e);
  let affected = false;
  for (const e of sorted) {
    if (e.introduced !== undefined) {
      if (e.introduced === '0' || compare(version, e.introduced) >= 0) affected = true;
    } else if (e.fixed !== undefined) {
      if (compare(version, e.fixed) >= 0) affected = false;
    } else if (e.last_affected !== undefined) {
      if (compare(version, e.last_affected) > 0) affected = false;
    }
  }
  if (usable.some((e) => e.limit !== undefined && compare(version, e.limit) >= 0)) return false;
  return affected;
}

/**
 * Whether an OSV `affected` entry covers a version: listed in `versions` (exactly, after trimming),
 * or inside one of its ranges. SEMVER ranges compare with the `semver` package (a leading `v` is
 * coerced away; a version that is not semver is in no SEMVER range); ECOSYSTEM ranges with
 * `compareVersions`; GIT ranges (commit hashes) and unknown types are ignored.
 */
export function osvAffects(a: OsvAffected, version: string): boolean {
  const wanted = version.trim();
  if (wanted === '') return false;
  if (a.versions?.some((v) => v.trim() === wanted)) return true;
  for (const range of a.ranges ?? []) {
    const type = range.type.toUpperCase();
    if (type === 'SEMVER') {
      const v = semverOf(wanted);
      if (v === null) continue;
      const compare: Compare = (x, y) => semver.compare(semverOf(x) as string, semverOf(y) as string);
      if (inOsvRange(v, range.events, compare, (x) => semverOf(x) !== null)) return true;
    } else if (type === 'ECOSYSTEM') {
      if (inOsvRange(wanted, range.events, compareVersions, () => true)) return true;
    }
  }
  return false;
}

/**
 * Whether an OSV `affected` entry of a distribution ecosystem covers a package version, in the
 * distribution's own order `compare` (dpkg, rpm, apk): listed in `versions`, or inside one of its
 * ECOSYSTEM ranges.
 */
export function osvAffectsWith(a: OsvAffected, version: string, compare: Compare): boolean {
  const wanted = version.trim();
  if (wanted === '') return false;
  if (a.versions?.some((v) => compare(v.trim(), wanted) === 0)) return true;
  return (a.ranges ?? []).some((r) => r.type.toUpperCase() === 'ECOSYSTEM' && inOsvRange(wanted, r.events, compare, () => true));
}

/**
 * The index key of an OSV package: `osv:<ecosystem lowercase>:<name lowercase>`; for PyPI the name
 * is also normalised as PEP 503 says (runs of `-`, `_`, `.` become `-`), as PyPI itself does.
 */
export function osvPackageKey(ecosystem: string, name: string): string {
  const eco = ecosystem.trim().toLowerCase();
  let n = name.trim().toLowerCase();
  if (eco === 'pypi') n = n.replace(/[-_.]+/g, '-');
  return `osv:${eco}:${n}`;
}

/**
 * The OSV ecosystems a CPE's software belongs to, by this table (first column: the CPE's
 * target_sw; second: its vendor; either one suffices):
 *
 * | ecosystem | target_sw            | vendor                   |
 * |-----------|----------------------|--------------------------|
 * | npm       | node.js, nodejs      | npmjs                    |
 * | PyPI      | python               | pypi, python             |
 * | Go        | go, golang           | golang                   |
 * | crates.io | rust                 | crates.io, rust-lang     |
 * | RubyGems  | ruby, rails          | rubygems                 |
 *
 * PHP (Packagist) is left out on purpose: its names are `vendor/package`, which a CPE does not carry.
 */
export const CPE_TO_OSV: readonly { ecosystem: string; targetSw: readonly string[]; vendor: readonly string[] }[] = [
  { ecosystem: 'npm', targetSw: ['node.js', 'nodejs'], vendor: ['npmjs'] },
  { ecosystem: 'PyPI', targetSw: ['python'], vendor: ['pypi', 'python'] },
  { ecosystem: 'Go', targetSw: ['go', 'golang'], vendor: ['golang'] },
  { ecosystem: 'crates.io', targetSw: ['rust'], vendor: ['crates.io', 'rust-lang'] },
  { ecosystem: 'RubyGems', targetSw: ['ruby', 'rails'], vendor: ['rubygems'] },
];

/**
 * The OSV package keys a service CPE maps to (`CPE_TO_OSV`): for each ecosystem its table row
 * selects, the key of the CPE's product. NVD writes a `-` of a package name as `_` at times, so a
 * product holding `_` also gives the name with `-` (npm, crates.io, RubyGems; PyPI's key is normalised
 * anyway). The Go toolchain (`golang:go`) is OSV's `stdlib`. Empty when the part is not `a`, the
 * product is not a plain literal, or no row applies.
 */
export function osvKeysForCpe(c: Cpe): string[] {
  if (c.part !== 'a' || !isLiteral(c.product) || hasWildcard(c.product)) return [];
  const product = literalText(c.product);
  const vendor = isLiteral(c.vendor) ? literalText(c.vendor) : '';
  const targetSw = isLiteral(c.targetSw) ? literalText(c.targetSw) : '';
  const keys = new Set<string>();
  for (const row of CPE_TO_OSV) {
    if (!row.targetSw.includes(targetSw) && !row.vendor.includes(vendor)) continue;
    if (row.ecosystem === 'Go' && vendor === 'golang' && product === 'go') {
      keys.add(osvPackageKey('Go', 'stdlib'));
      continue;
    }
    keys.add(osvPackageKey(row.ecosystem, product));
    if (product.includes('_')) keys.add(osvPackageKey(row.ecosystem, product.replace(/_/g, '-')));
  }
  return [...keys];
}
