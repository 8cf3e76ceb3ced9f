/**
 * The version orders of distribution packages, as the package managers themselves define them:
 * Debian and Ubuntu (dpkg, deb-version(7)), Red Hat and its rebuilds (rpm's rpmvercmp and EVR),
 * Alpine (apk-tools). Each returns <0, 0 or >0. The test suite checks dpkg's against the `dpkg`
 * binary itself and the others against the package managers' own test tables.
 */

// ------------------------------------------------------------------------------------------
// dpkg: [epoch:]upstream[-revision]

interface Evr {
  epoch: number;
  version: string;
  release: string | null;
}

function splitEpoch(v: string): { epoch: number; rest: string } {
  const m = /^(\d+):(.*)$/.exec(v.trim());
  return m ? { epoch: Number(m[1]), rest: m[2]! } : { epoch: 0, rest: v.trim() };
}

function dpkgParts(v: string): Evr {
  const { epoch, rest } = splitEpoch(v);
  const dash = rest.lastIndexOf('-');
  return dash < 0 ? { epoch, version: rest, release: null } : { epoch, version: rest.slice(0, dash), release: rest.slice(dash + 1) };
}

/** dpkg's weight of a character in the non-digit part: `~` before the end, the end before letters, letters before the rest. */
function dpkgOrder(c: string | undefined): number {
  if (c === undefined) return 0;
  if (c === '~') return -1;
  if (c >= '0' && c <= '9') return 0;
  if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z')) return c.charCodeAt(0);
  return c.charCodeAt(0) + 256;
}

const isDigit = (c: string | undefined) => c !== undefined && c >= '0' && c <= '9';

/** dpkg's verrevcmp: alternating non-digit runs (by dpkgOrder) and digit runs (by value). */
function verrevcmp(a: string, b: string): number {
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    let first = 0;
    while ((i < a.length && !isDigit(a[i])) || (j < b.length && !isDigit(b[j]))) {
      const ac = dpkgOrder(i < a.length ? a[i] : undefined);
      const bc = dpkgOrder(j < b.length ? b[j] : undefined);
      if (ac !== bc) return ac - bc;
      i++;
      j++;
    }
    while (a[i] === '0') i++;
    while (b[j] === '0') j++;
    while (isDigit(a[i]) && isDigit(b[j])) {
      if (!first) first = a.charCodeAt(i) - b.charCodeAt(j);
      i++;
      j++;
    }
    if (isDigit(a[i])) return 1;
    if (isDigit(b[j])) return -1;
    if (first) return first;
  }
  return 0;
}

/** dpkg --compare-versions: epoch by value, then upstream version, then Debian revision (a missing revision is empty). */
export function compareDpkg(a: string, b: string): number {
  const x = dpkgParts(a);
  const y = dpkgParts(b);
  if (x.epoch !== y.epoch) return x.epoch - y.epoch;
  return verrevcmp(x.version, y.version) || verrevcmp(x.release ?? '', y.release ?? '');
}

// ------------------------------------------------------------------------------------------
// rpm: [epoch:]version[-release]

const isAlnum = (c: string | undefined) => c !== undefined && /[A-Za-z0-9]/.test(c);

/** rpm's rpmvercmp (rpm 4.15 and later: `~` sorts before anything, `^` after the end but before more). */
export function rpmvercmp(a: string, b: string): number {
  if (a === b) return 0;
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    while (i < a.length && !isAlnum(a[i]) && a[i] !== '~' && a[i] !== '^') i++;
    while (j < b.length && !isAlnum(b[j]) && b[j] !== '~' && b[j] !== '^') j++;
    if (a[i] === '~' || b[j] === '~') {
      if (a[i] !== '~') return 1;
      if (b[j] !== '~') return -1;
      i++;
      j++;
      continue;
    }
    if (a[i] === '^' || b[j] === '^') {
      if (i >= a.length) return -1;
      if (j >= b.length) return 1;
      if (a[i] !== '^') return 1;
      if (b[j] !== '^') return -1;
      i++;
      j++;
      continue;
    }
    if (!(i < a.length && j < b.length)) break;
    const numeric = isDigit(a[i]);
    const run = (s: string, k: number) => {
      let e = k;
      while (e < s.length && (numeric ? isDigit(s[e]) : /[A-Za-z]/.test(s[e]!))) e++;
      return e;
    };
    const ie = run(a, i);
    const je = run(b, j);
    if (je === j) return numeric ? 1 : -1;
    let x = a.slice(i, ie);
    let y = b.slice(j, je);
    i = ie;
    j = je;
    if (numeric) {
      x = x.replace(/^0+/, '');
      y = y.replace(/^0+/, '');
      if (x.length !== y.length) return x.length > y.length ? 1 : -1;
    }
    if (x !== y) return x < y ? -1 : 1;
  }
  if (i >= a.length && j >= b.length) return 0;
  return i < a.length ? 1 : -1;
}

function rpmParts(v: string): Evr {
  const { epoch, rest } = splitEpoch(v);
  const dash = rest.lastIndexOf('-');
  return dash < 0 ? { epoch, version: rest, release: null } : { epoch, version: rest.slice(0, dash), release: rest.slice(dash + 1) };
}

/**
 * rpm's EVR order: epoch (missing is 0), version, then release. Unlike rpm's own rpmdsCompare, a
 * missing release sorts before any release (a bare `2.4.37` is not taken as equal to
 * `2.4.37-62.el8`): the matcher never reads a version without its release as fixed.
 */
export function compareRpm(a: string, b: string): number {
  const x = rpmParts(a);
  const y = rpmParts(b);
  if (x.epoch !== y.epoch) return x.epoch - y.epoch;
  const v = rpmvercmp(x.version, y.version);
  if (v !== 0) return v;
  if (x.release === null || y.release === null) return x.release === y.release ? 0 : x.release === null ? -1 : 1;
  return rpmvercmp(x.release, y.release);
}

// ------------------------------------------------------------------------------------------
// apk: digits{.digits}[letter]{_suffix[digits]}[~hash][-rN]

const APK_SUFFIX: Record<string, number> = { alpha: -4, beta: -3, pre: -2, rc: -1, cvs: 1, svn: 2, git: 3, hg: 4, p: 5 };
const APK = /^(\d+(?:\.\d+)*)([a-z]?)((?:_(?:alpha|beta|pre|rc|cvs|svn|git|hg|p)\d*)*)(?:~([0-9a-f]+))?(?:-r(\d+))?$/;

interface ApkVersion {
  numbers: string[];
  letter: string;
  suffixes: { rank: number; n: number }[];
  hash: string;
  revision: number;
}

function apkParts(v: string): ApkVersion | null {
  const m = APK.exec(v.trim());
  if (!m) return null;
  return {
    numbers: m[1]!.split('.'),
    letter: m[2]!,
    suffixes: [...m[3]!.matchAll(/_([a-z]+)(\d*)/g)].map((s) => ({ rank: APK_SUFFIX[s[1]!]!, n: Number(s[2] || 0) })),
    hash: m[4] ?? '',
    revision: Number(m[5] ?? 0),
  };
}

/**
 * apk-tools' order: numeric components (the first by value; later ones as apk does, by value
 * unless one has a leading zero, then as a decimal fraction), a longer list after a shorter
 * equal prefix, then the letter, the suffixes (`_alpha` < `_beta` < `_pre` < `_rc` < none <
 * `_cvs` < `_svn` < `_git` < `_hg` < `_p`), then `-rN`. Versions apk would call invalid compare as text.
 */
export function compareApk(a: string, b: string): number {
  const x = apkParts(a);
  const y = apkParts(b);
  if (!x || !y) return a < b ? -1 : a > b ? 1 : 0;
  const n = Math.min(x.numbers.length, y.numbers.length);
  for (let k = 0; k < n; k++) {
    const p = x.numbers[k]!;
    const q = y.numbers[k]!;
    const fraction = k > 0 && (p.startsWith('0') || q.startsWith('0'));
    const c = fraction ? (p.padEnd(q.length, '0') < q.padEnd(p.length, '0') ? -1 : p.padEnd(q.length, '0') > q.padEnd(p.length, '0') ? 1 : 0) : Number(p) - Number(q);
    if (c !== 0) return Math.sign(c);
  }
  if (x.numbers.length !== y.numbers.length) {
    // `1.2` < `1.2.1`, but `1.2.1` > `1.2_rc1`-style tails are handled by the suffix rank below.
    return x.numbers.length > y.numbers.length ? 1 : -1;
  }
  if (x.letter !== y.letter) return x.letter === '' ? -1 : y.letter === '' ? 1 : x.letter < y.letter ? -1 : 1;
  const m = Math.max(x.suffixes.length, y.suffixes.length);
  for (let k = 0; k < m; k++) {
    const s = x.suffixes[k] ?? { rank: 0, n: 0 };
    const t = y.suffixes[k] ?? { rank: 0, n: 0 };
    if (s.rank !== t.rank) return s.rank - t.rank;
    if (s.n !== t.n) return s.n - t.n;
  }
  if (x.hash !== y.hash) return x.hash < y.hash ? -1 : 1;
  return x.revision - y.revision;
}
