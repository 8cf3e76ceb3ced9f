/**
 * The order of real product versions (OpenSSH `9.6p1`, OpenSSL `1.1.1w`, Windows `10.0.19041`, Java
 * `1.8.0_392`, Debian `2.4.57-2`, Maven `8.0.0-rc1`...), which semver cannot parse. No npm package
 * does this order (compare-versions and semver are semver-only; mvncmp, Maven's order, sorts
 * `dev`/`pre`/`preview` after the release), so it is written here.
 *
 * The rule:
 * 1. Case-insensitive; surrounding white space and a leading `v` before a digit (`v1.2`) are dropped.
 *    A Debian epoch (`1:2.4.57-2`) is compared first, as a number (absent: 0).
 * 2. The rest is cut into runs of digits (numbers) and runs of letters (words); every other character
 *    (`.`, `-`, `_`, `+`, `~`...) only separates runs.
 * 3. Each run is a token; tokens are ordered:
 *      pre-release words  <  (end of version) = 0  <  other words  <  1 < 2 < 3 ...
 *    - numbers compare numerically (any length, leading zeros ignored);
 *    - pre-release words, in this order: `dev` = `snapshot` < `alpha` = `a` < `beta` = `b` <
 *      `milestone` = `m` < `pre` = `preview` < `rc` = `cr`. The single letters `a`, `b`, `m` are
 *      pre-release only when a digit follows at once (`3.0b1`, `1.0a2`); alone they are the
 *      post-release letters of OpenSSL (`1.1.1a`);
 *    - `final`, `ga`, `release`, `stable` are the release itself (equal to the end of the version);
 *    - any other word (`p`, `patch`, `sp`, `u`, `r`, `w`, `zd`...) is after the release and before
 *      the next number: `9.6 < 9.6p1 < 9.6.1`, `1.1.1 < 1.1.1a < 1.1.1w < 1.1.1za`. Such words
 *      compare alphabetically between themselves.
 * 4. Two versions compare token by token; the shorter is padded with end-of-version tokens, so
 *    `2.4 == 2.4.0`, `8.0.0-rc1 < 8.0.0`, `2.4.57 < 2.4.57-2` (Debian revision).
 *
 * Every token has one place in that one order, so the comparison is a total preorder (antisymmetric
 * and transitive), which the property test checks.
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

function tokenise(version: string): { epoch: string; tokens: Token[] } {
  let s = version.trim().toLowerCase();
  let epoch = '';
  const e = /^(\d+):(?=.)/.exec(s);
  if (e) {
    epoch = stripZeros(e[1] ?? '');
    s = s.slice(e[0].length);
  }
  if (/^v\d/.test(s)) s = s.slice(1);
  const tokens: Token[] = [];
  for (const m of s.matchAll(/\d+|[a-z]+/g)) {
    const run = m[0];
    if (isDigitAt(run, 0)) {
      const digits = stripZeros(run);
      // A number 0 is the same as the end of the version: 2.4 == 2.4.0.
      tokens.push(digits === '' ? END : { kind: Kind.Number, value: digits });
      continue;
    }
    const digitFollows = isDigitAt(s, m.index + run.length);
    const pre = PRE_RANK[run] ?? (digitFollows ? PRE_LETTER[run] : undefined);
    if (pre !== undefined) tokens.push({ kind: Kind.Pre, value: pre });
    else if (RELEASE_WORDS.has(run)) tokens.push(END);
    else tokens.push({ kind: Kind.Post, value: run });
  }
  return { epoch, tokens };
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
