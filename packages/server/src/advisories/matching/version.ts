import semver from 'semver';

/**
 * The order of real product versions (OpenSSH `9.6p1`, OpenSSL `1.1.1w`, Windows `10.0.19041`, Java
 * `1.8.0_392`, Debian `2.4.57-2`, Maven `8.0.0-rc1`, Cisco IOS `15.2(4)M3`...), which semver cannot
 * parse. No npm package does this order (compare-versions and semver are semver-only; mvncmp, Maven's
 * order, sorts `dev`/`pre`/`preview` after the release), so it is written here.
 *
 * The rule:
 * 1. Case-insensitive; surrounding white space and a leading `v` or `go` before a digit (`v1.2`,
 *    Go's `go1.21.3`) are dropped. A Debian epoch (`1:2.4.57-2`) is compared first, as a number
 *    (absent: 0).
 * 2. What is not the version is dropped (`spellingOf`): a MySQL server's suffixes (`5.7.44-log`,
 *    `-debug`, `-valgrind`, `-embedded`, `-enterprise-commercial-advanced`, MariaDB's `-MariaDB` and
 *    the `5.5.5-` it prefixes: `5.5.5-10.6.16-MariaDB-log` is 10.6.16); semver build metadata
 *    (`1.2.3+build.5`, `1.0.0-rc.1+sha.5114f85` when the version is semver `X.Y.Z[-pre]`, the
 *    pre-release not a bare number, and there is no epoch: Debian's `2.4.57-2+deb12u1` and
 *    `1:9.2p1-2+deb12u3` keep their `+`, which orders security updates there).
 * 3. The rest is cut into runs of digits (numbers) and runs of letters (words); every other character
 *    (`.`, `-`, `_`, `+`, `~`, `(`, `)`...) only separates runs.
 * 4. Each run is a token; tokens are ordered:
 *      pre-release words  <  (end of version) = 0  <  other words  <  1 < 2 < 3 ...
 *    - numbers compare numerically (any length, leading zeros ignored);
 *    - pre-release words, in this order: `dev` = `snapshot` < `alpha` = `a` < `beta` = `b` <
 *      `milestone` = `m` < `pre` = `preview` < `rc` = `cr`. The single letters `a`, `b`, `m` are
 *      pre-release only when a digit follows at once (`3.0b1`, `1.0a2`, `9.0.0.M1`); alone they are
 *      the post-release letters of OpenSSL (`1.1.1a`);
 *    - `final`, `ga`, `release`, `stable` are the release itself (equal to the end of the version);
 *    - any other word (`p`, `patch`, `sp`, `u`, `r`, `w`, `zd`...) is after the release and before
 *      the next number: `9.6 < 9.6p1 < 9.6.1`, `1.1.1 < 1.1.1a < 1.1.1w < 1.1.1za`. Such words
 *      compare alphabetically between themselves.
 *    - Cisco IOS versions (`major.minor(build)` then the train: `15.2(4)M3`, `12.2(55)SE`,
 *      `15.1(2)SY1a`; NVD writes them `15.2\(4\)m3` in a CPE, read back as `15.2(4)m3`) have no
 *      pre-release: every word there is an "other word", so the train comes before its rebuilds and
 *      they order by number then letter: `15.2(4)M < 15.2(4)M3 < 15.2(4)M10`, `12.2(55)SE <
 *      12.2(55)SE1 < 12.2(55)SE12`, `15.1(2)SY < 15.1(2)SY1 < 15.1(2)SY1a < 15.1(2)SY2`. (Without this
 *      `M3` would read as "milestone 3", before the release.) Two trains compare alphabetically,
 *      which means nothing but keeps the order total.
 * 5. Two versions compare token by token; the shorter is padded with end-of-version tokens, so
 *    `2.4 == 2.4.0`, `8.0.0-rc1 < 8.0.0`, `2.4.57 < 2.4.57-2` (Debian revision).
 *
 * Every version is mapped to one list of tokens, and every token has one place in one order, so the
 * comparison is a total preorder (antisymmetric and transitive), which the property test checks.
 */
export function compareVersions(a: string, b: string): number {
  const x = tokenise(a);
  const y = tokenise(b);
  if (x.epoch !== y.epoch) return compareDigits(x.epoch, y.epoch);
  const n = Math.max(x.tokens.length, y.tokens.length);
  for (let i = 0; i < n; i++) {
    const c = compareTokens(x.tokens[i] ?? END, y.tokens[i] ?? END);
    if (c !== 0) return c;
  }
  return 0;
}

/** A token's class, in the order of the classes. */
const enum Kind {
  Pre = 0,
  Release = 1,
  Post = 2,
  Number = 3,
}

interface Token {
  kind: Kind;
  /** Pre: the rank; Post: the word; Number: the digits without leading zeros ('' for zero). */
  value: string | number;
}

const END: Token = { kind: Kind.Release, value: 0 };

const PRE_RANK: Record<string, number> = {
  dev: 0,
  snapshot: 0,
  alpha: 1,
  beta: 2,
  milestone: 3,
  pre: 4,
  preview: 4,
  rc: 5,
  cr: 5,
};
/** Single letters that are pre-release words when a digit follows. */
const PRE_LETTER: Record<string, number> = { a: 1, b: 2, m: 3 };
const RELEASE_WORDS = new Set(['final', 'ga', 'release', 'stable']);

/** A MySQL/MariaDB server's version suffixes (`SELECT VERSION()`, the handshake banner), not version. */
const SERVER_SUFFIX = /(?<=\d)(?:-(?:log|debug|valgrind|embedded|enterprise|commercial|advanced|mariadb))+$/;
/** MariaDB 10+ over the MySQL protocol says `5.5.5-<its version>-MariaDB...`. */
const MARIADB_PREFIX = /^5\.5\.5-(?=\d+\.\d+\.\d+-mariadb)/;
/** A semver version with build metadata; group 1 is the version without it. */
const SEMVER_BUILD = /^(\d+\.\d+\.\d+(?:-[0-9a-z-]+(?:\.[0-9a-z-]+)*)?)\+[0-9a-z-]+(?:\.[0-9a-z-]+)*$/;
/** A Cisco IOS version: `major.minor(build)`, then the train and its rebuild. */
const CISCO_IOS = /^\d+\.\d+\(\d+[a-z]?\)/;

/**
 * A version reduced to what is compared: lowercase, trimmed, epoch apart, `v`/`go` prefix, CPE
 * escapes of `(` `)`, server suffixes and semver build metadata dropped (rules 1 and 2 of
 * `compareVersions`).
 */
export function spellingOf(version: string): { epoch: string; version: string } {
  let s = version.trim().toLowerCase();
  let epoch = '';
  const e = /^(\d+):(?=.)/.exec(s);
  if (e) {
    epoch = stripZeros(e[1] ?? '');
    s = s.slice(e[0].length);
  }
  if (/^(?:v|go)\d/.test(s)) s = s.slice(s[0] === 'v' ? 1 : 2);
  // A Cisco version still escaped as in a CPE formatted string: `15.2\(4\)m3`.
  s = s.replace(/\\([()])/g, '$1');
  s = s.replace(MARIADB_PREFIX, '').replace(SERVER_SUFFIX, '');
  const build = e ? null : SEMVER_BUILD.exec(s);
  // A bare-number pre-release (`2.4.57-2`) is a Debian revision, whose `+deb12u1` is ordered.
  if (build && !/^\d+\.\d+\.\d+-\d+$/.test(build[1] as string)) s = build[1] as string;
  return { epoch, version: s };
}

function tokenise(version: string): { epoch: string; tokens: Token[] } {
  const { epoch, version: s } = spellingOf(version);
  return { epoch, tokens: tokensOf(s) };
}

/** The tokens of an already lowercased text (rules 3 and 4). */
function tokensOf(s: string): Token[] {
  const cisco = CISCO_IOS.test(s);
  const tokens: Token[] = [];
  // A Cisco interim build's letter (`15.0(2a)SE`) comes after the build it rebuilds and before the
  // next: `15.0(2)SE < 15.0(2a)SE < 15.0(3)SE`, so a build without one holds an end token there.
  const interim = cisco ? /^(\d+\.\d+\(\d+)([a-z]?)\)/.exec(s) : null;
  if (interim) {
    tokens.push(...tokensOf(interim[1]!.replace('(', '.')), interim[2] ? { kind: Kind.Post, value: interim[2] } : END);
    s = s.slice(interim[0].length);
  }
  for (const m of s.matchAll(/\d+|[a-z]+/g)) {
    const run = m[0];
    if (isDigitAt(run, 0)) {
      const digits = stripZeros(run);
      // A number 0 is the same as the end of the version: 2.4 == 2.4.0.
      tokens.push(digits === '' ? END : { kind: Kind.Number, value: digits });
      continue;
    }
    const digitFollows = isDigitAt(s, m.index + run.length);
    const pre = cisco ? undefined : (PRE_RANK[run] ?? (digitFollows ? PRE_LETTER[run] : undefined));
    if (pre !== undefined) tokens.push({ kind: Kind.Pre, value: pre });
    else if (RELEASE_WORDS.has(run)) tokens.push(END);
    else tokens.push({ kind: Kind.Post, value: run });
  }
  return tokens;
}

function isDigitAt(s: string, i: number): boolean {
  const c = s.charCodeAt(i);
  return c >= 48 && c <= 57;
}

function stripZeros(digits: string): string {
  return digits.replace(/^0+/, '');
}

function compareDigits(a: string, b: string): number {
  if (a.length !== b.length) return a.length - b.length;
  return a < b ? -1 : a > b ? 1 : 0;
}

function compareTokens(a: Token, b: Token): number {
  if (a.kind !== b.kind) return a.kind - b.kind;
  switch (a.kind) {
    case Kind.Pre:
      return (a.value as number) - (b.value as number);
    case Kind.Release:
      return 0;
    case Kind.Post:
      return a.value < b.value ? -1 : a.value > b.value ? 1 : 0;
    case Kind.Number:
      return compareDigits(a.value as string, b.value as string);
  }
}

/**
 * How NVD splits a packed version into its CPE version and update attributes: OpenSSH's portable
 * patch (`8.5p1` -> `8.5` + `p1`) and a pre-release (`3.11.0a1` -> `3.11.0` + `a1`, `2.0-beta9` ->
 * `2.0` + `beta9`, `1.0rc2` -> `1.0` + `rc2`, `9.0.0.M1` -> `9.0.0` + `m1`, `8.0.0-rc.1` ->
 * `8.0.0` + `rc.1`), as NVD names `cpe:...:python:3.11.0:alpha1`, `cpe:...:log4j:2.0:beta9`. The
 * version part is digits and dots only (a `v`/`go` prefix dropped), so OpenSSL's `1.1.1w`, Cisco's
 * `15.2(4)m3` and `2.4.57-2` are never split. The update keeps the source's spelling (`a1`); compare
 * it with `sameUpdate`. Null when the version is not so packed.
 */
export function splitPackedVersion(version: string): { version: string; update: string } | null {
  let s = version.trim().toLowerCase();
  if (/^(?:v|go)\d/.test(s)) s = s.slice(s[0] === 'v' ? 1 : 2);
  const m = /^(\d+(?:\.\d+)*)(?:(p\d+)|[-._]?((?:dev|snapshot|alpha|beta|milestone|preview|pre|rc|cr)(?:[-._]?\d+)*|[abm]\d+(?:[-._]?\d+)*))$/.exec(s);
  if (!m) return null;
  return { version: m[1] as string, update: (m[2] ?? m[3]) as string };
}

/** True when a CPE update (`alpha1`, `a1`, `beta9`, `rc2`, `rc.1`, `milestone3`, `m1`, `dev`) is a pre-release. */
export function isPreReleaseUpdate(update: string): boolean {
  return tokensOf(update.trim().toLowerCase())[0]?.kind === Kind.Pre;
}

/**
 * Whether two CPE update values name the same update, compared as versions are (tokens: case,
 * separators and leading zeros aside, `a` followed by a digit = `alpha`, `b` = `beta`, `m` =
 * `milestone`, `cr` = `rc`): `a1` = `alpha1` = `alpha.1`, `rc2` = `rc_2`, `p1` = `p01`; `beta9` is not
 * `beta10`, `p1` is not `sp1`.
 */
export function sameUpdate(a: string, b: string): boolean {
  const x = tokensOf(a.trim().toLowerCase());
  const y = tokensOf(b.trim().toLowerCase());
  const n = Math.max(x.length, y.length);
  for (let i = 0; i < n; i++) if (compareTokens(x[i] ?? END, y[i] ?? END) !== 0) return false;
  return true;
}

/**
 * A version as the semver package reads it for an OSV SEMVER range, or null when it is none: a
 * leading `v` dropped; a Go toolchain version read as the Go vulnerability database writes it
 * (golang.org/x/vuln: `go1.21.3` -> `1.21.3`, `1.20` / `go1.20` -> `1.20.0`, `go1` -> `1.0.0`,
 * `go1.21rc2` -> `1.21.0-rc.2`, `go1.22beta1` -> `1.22.0-beta.1`), and likewise a bare `major.minor`
 * completed with `.0`. Build metadata stays (semver ignores it when comparing: `1.2.3+build.5` is
 * 1.2.3). Anything else semver does not accept is null.
 */
export function toSemver(version: string): string | null {
  const s = version.trim().replace(/^(?:v|go)(?=\d)/i, '');
  const valid = semver.valid(s);
  if (valid !== null) return valid;
  const go = /^(\d+)(?:\.(\d+))?(?:\.(\d+))?(?:(alpha|beta|rc)\.?(\d+))?(\+[0-9A-Za-z.-]+)?$/i.exec(s);
  if (!go) return null;
  const [, major, minor = '0', patch = '0', pre, preNumber, build = ''] = go;
  return semver.valid(`${major}.${minor}.${patch}${pre ? `-${pre.toLowerCase()}.${preNumber}` : ''}${build}`);
}
