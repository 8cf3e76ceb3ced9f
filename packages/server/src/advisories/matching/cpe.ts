/**
 * CPE 2.3 names: parsing the formatted string and the 2.2 URI (NISTIR 7695, naming), binding back
 * to a formatted string, and name matching (NISTIR 7696).
 *
 * The normalised form of an attribute value in a `Cpe` (the WFN of NISTIR 7695, written with
 * less quoting so that a version reads as itself):
 * - `'*'` is the logical value ANY and `'-'` the logical value NA, exactly those one-character strings;
 * - any other string is a literal value, lowercase, with every escape of the source undone
 *   (`foo\:bar` -> `foo:bar`, `1\.0` -> `1.0`, `%2f` in a URI -> `/`), EXCEPT three characters that
 *   stay backslash-quoted because they would otherwise mean something: a literal backslash `\\`, a
 *   literal asterisk `\*` and a literal question mark `\?`; and a literal value that is a single
 *   hyphen is written `\-` (so it is not NA);
 * - an unquoted `*` (at the start and/or the end of the value) and unquoted `?`s (a run at the start
 *   and/or the end) are the wildcards of NISTIR 7696: `*` matches any number of characters, a run
 *   of n `?` matches zero to n characters.
 * `literalText` gives a literal value's plain text (quotes removed), as used to compare versions.
 */
export interface Cpe {
  part: string;
  vendor: string;
  product: string;
  version: string;
  update: string;
  edition: string;
  language: string;
  swEdition: string;
  targetSw: string;
  targetHw: string;
  other: string;
}

/** The logical value ANY in a normalised attribute value. */
export const ANY = '*';
/** The logical value NA (not applicable) in a normalised attribute value. */
export const NA = '-';

/** The attributes in the order of the formatted string. */
export const CPE_ATTRIBUTES = [
  'part',
  'vendor',
  'product',
  'version',
  'update',
  'edition',
  'language',
  'swEdition',
  'targetSw',
  'targetHw',
  'other',
] as const satisfies readonly (keyof Cpe)[];

const PARTS = new Set(['a', 'o', 'h', ANY, NA]);

/** True for a value that is neither ANY nor NA. */
export function isLiteral(v: string): boolean {
  return v !== ANY && v !== NA;
}

/** True when a literal value holds an unquoted `*` or `?`. */
export function hasWildcard(v: string): boolean {
  if (!isLiteral(v)) return false;
  for (let i = 0; i < v.length; i++) {
    const c = v[i];
    if (c === '\\') i++;
    else if (c === '*' || c === '?') return true;
  }
  return false;
}

/** A literal value's plain text: its quotes removed (`\*` -> `*`, `\-` -> `-`). */
export function literalText(v: string): string {
  return v.replace(/\\(.)/gs, '$1');
}

/** The normalised literal value for plain text (no wildcards): lowercase, `\ * ?` quoted. */
export function literalValue(text: string): string {
  const quoted = text.toLowerCase().replace(/[\\*?]/g, (c) => `\\${c}`);
  return quoted === '-' ? '\\-' : quoted;
}

/** The CPE with every attribute ANY. */
export function anyCpe(): Cpe {
  return { part: ANY, vendor: ANY, product: ANY, version: ANY, update: ANY, edition: ANY, language: ANY, swEdition: ANY, targetSw: ANY, targetHw: ANY, other: ANY };
}

// ---------------------------------------------------------------------------------------------
// Formatted string (CPE 2.3)

/**
 * A CPE 2.3 formatted string (`cpe:2.3:` and 11 colon-separated components, `\` quoting the next
 * character) in the normalised form; null when malformed: another prefix, not exactly 11
 * components, an empty component, a `\` at the end, white space or a non-ASCII character, `*`
 * other than at the start or end of a component (or `**`), `?` other than in a run at the start or
 * end, a part other than a, o, h, `*` or `-`. Letters are lowercased. Unquoted punctuation other
 * than `-`, `.`, `_` (strictly to be quoted) is accepted as itself.
 */
export function parseCpe23(s: string): Cpe | null {
  if (typeof s !== 'string' || s.slice(0, 8).toLowerCase() !== 'cpe:2.3:') return null;
  const components = splitUnquoted(s.slice(8));
  if (!components || components.length !== 11) return null;
  const values: string[] = [];
  for (const raw of components) {
    const v = parseFsValue(raw);
    if (v === null) return null;
    values.push(v);
  }
  return toCpe(values);
}

function splitUnquoted(s: string): string[] | null {
  const out: string[] = [];
  let cur = '';
  for (let i = 0; i < s.length; i++) {
    const c = s[i] as string;
    if (c === '\\') {
      if (i + 1 >= s.length) return null;
      cur += c + s[i + 1];
      i++;
    } else if (c === ':') {
      out.push(cur);
      cur = '';
    } else cur += c;
  }
  out.push(cur);
  return out;
}

function isPrintableAscii(c: string): boolean {
  const code = c.charCodeAt(0);
  return code > 0x20 && code < 0x7f;
}

function parseFsValue(raw: string): string | null {
  if (raw === '') return null;
  if (raw === '*') return ANY;
  if (raw === '-') return NA;
  let out = '';
  for (let i = 0; i < raw.length; i++) {
    const c = raw[i] as string;
    if (!isPrintableAscii(c)) return null;
    if (c === '\\') {
      const next = raw[i + 1];
      if (next === undefined || !isPrintableAscii(next)) return null;
      out += next === '\\' || next === '*' || next === '?' ? `\\${next}` : next.toLowerCase();
      i++;
    } else if (c === '*') {
      if ((i !== 0 && i !== raw.length - 1) || raw[i + 1] === '*') return null;
      out += c;
    } else if (c === '?') {
      if (!/^\?*$/.test(raw.slice(0, i)) && !/^\?*$/.test(raw.slice(i + 1))) return null;
      out += c;
    } else out += c.toLowerCase();
  }
  return out === '-' ? '\\-' : out;
}

function toCpe(values: string[]): Cpe | null {
  const c = anyCpe();
  CPE_ATTRIBUTES.forEach((name, i) => {
    c[name] = values[i] ?? ANY;
  });
  return PARTS.has(c.part) ? c : null;
}

/** One normalised value bound for a formatted string (NISTIR 7695 6.2.2). */
export function fsValue(v: string): string {
  if (v === ANY || v === NA) return v;
  let out = '';
  for (let i = 0; i < v.length; i++) {
    const c = v[i] as string;
    if (c === '\\') {
      out += `\\${v[i + 1] ?? '\\'}`;
      i++;
    } else if (c === '*' || c === '?' || /[a-z0-9_.-]/.test(c)) out += c;
    else out += `\\${c}`;
  }
  return out;
}

/** The CPE 2.3 formatted string: `cpe:2.3:` and each value bound with its quoting. */
export function toCpe23(c: Cpe): string {
  return `cpe:2.3:${CPE_ATTRIBUTES.map((name) => fsValue(c[name])).join(':')}`;
}

// ---------------------------------------------------------------------------------------------
// URI (CPE 2.2), as nmap reports it

/**
 * A CPE 2.2 URI (`cpe:/part:vendor:product:version:update:edition:language`, trailing components
 * optional and then ANY) in the normalised form; null when malformed. An empty component is ANY,
 * `-` is NA; `%xx` is decoded (`%01` is the `?` wildcard and `%02` the `*` wildcard); an edition
 * starting with `~` is the packed form `~edition~sw_edition~target_sw~target_hw~other`. Null for
 * another prefix, more than 7 components, a bad `%` escape, white space or non-ASCII, a part other
 * than a, o, h, or a packed edition without exactly five fields.
 */
export function parseCpe22(uri: string): Cpe | null {
  if (typeof uri !== 'string' || uri.slice(0, 5).toLowerCase() !== 'cpe:/') return null;
  const parts = uri.slice(5).split(':');
  if (parts.length > 7) return null;
  const values: string[] = [];
  for (let i = 0; i < 5; i++) {
    const v = parseUriValue(parts[i] ?? '');
    if (v === null) return null;
    values.push(v);
  }
  const edition = parts[5] ?? '';
  let packed = [edition, '', '', '', ''];
  if (edition.startsWith('~')) {
    const fields = edition.slice(1).split('~');
    if (fields.length !== 5) return null;
    packed = fields;
  }
  const unpacked: string[] = [];
  for (const raw of packed) {
    const v = parseUriValue(raw);
    if (v === null) return null;
    unpacked.push(v);
  }
  const language = parseUriValue(parts[6] ?? '');
  if (language === null) return null;
  // Formatted-string order: edition, language, sw_edition, target_sw, target_hw, other.
  values.push(unpacked[0] as string, language, ...unpacked.slice(1));
  const c = toCpe(values);
  return c && c.part !== NA ? c : null;
}

function parseUriValue(raw: string): string | null {
  if (raw === '') return ANY;
  if (raw === '-') return NA;
  const chars: { c: string; wildcard: boolean }[] = [];
  for (let i = 0; i < raw.length; i++) {
    const c = raw[i] as string;
    if (!isPrintableAscii(c)) return null;
    if (c === '%') {
      const hex = raw.slice(i + 1, i + 3);
      if (!/^[0-9a-fA-F]{2}$/.test(hex)) return null;
      const code = Number.parseInt(hex, 16);
      i += 2;
      if (code === 1) chars.push({ c: '?', wildcard: true });
      else if (code === 2) chars.push({ c: '*', wildcard: true });
      else {
        const d = String.fromCharCode(code);
        if (!isPrintableAscii(d)) return null;
        chars.push({ c: d, wildcard: false });
      }
    } else chars.push({ c, wildcard: false });
  }
  let out = '';
  chars.forEach(({ c, wildcard }, i) => {
    if (wildcard) {
      // Wildcards only at the ends (a run of ? at the start or end, one * at the start or end).
      const before = chars.slice(0, i);
      const after = chars.slice(i + 1);
      const edge = (xs: typeof chars) => xs.every((x) => x.wildcard && x.c === c);
      const ok = c === '*' ? (i === 0 || i === chars.length - 1) && !after[0]?.wildcard : edge(before) || edge(after);
      out += ok ? c : `\\${c}`;
    } else out += c === '\\' || c === '*' || c === '?' ? `\\${c}` : c.toLowerCase();
  });
  return out === '-' ? '\\-' : out;
}

// ---------------------------------------------------------------------------------------------
// Name matching (NISTIR 7696)

export type Relation = 'EQUAL' | 'SUPERSET' | 'SUBSET' | 'DISJOINT' | 'UNDEFINED';

/**
 * The relation of a source attribute value to a target value (NISTIR 7696 table 6-2): ANY is a
 * SUPERSET of everything but ANY (EQUAL); NA is EQUAL to NA, a SUBSET of ANY and DISJOINT from a
 * literal; a literal is a SUBSET of ANY, DISJOINT from NA, UNDEFINED against a target holding
 * wildcards, and against a literal EQUAL (the same), a SUPERSET (its wildcards match the target)
 * or DISJOINT.
 */
export function compareAttribute(source: string, target: string): Relation {
  if (source === ANY) return target === ANY ? 'EQUAL' : 'SUPERSET';
  if (target === ANY) return 'SUBSET';
  if (source === NA) return target === NA ? 'EQUAL' : 'DISJOINT';
  if (target === NA) return 'DISJOINT';
  if (hasWildcard(target)) return 'UNDEFINED';
  if (source === target) return 'EQUAL';
  if (!hasWildcard(source)) return 'DISJOINT';
  return wildcardMatches(source, literalText(target)) ? 'SUPERSET' : 'DISJOINT';
}

/** NISTIR 7696 compare_strings: the source's leading/trailing wildcards around its literal middle. */
function wildcardMatches(source: string, target: string): boolean {
  let start = 0;
  let end = source.length;
  let begins = 0; // characters allowed before the middle; -1: any number
  let ends = 0;
  if (source[0] === '*') {
    start = 1;
    begins = -1;
  } else
    while (start < end && source[start] === '?') {
      start++;
      begins++;
    }
  const unquotedAt = (i: number) => {
    let slashes = 0;
    for (let j = i - 1; j >= start && source[j] === '\\'; j--) slashes++;
    return slashes % 2 === 0;
  };
  if (end > start && source[end - 1] === '*' && unquotedAt(end - 1)) {
    end--;
    ends = -1;
  } else
    while (end > start && source[end - 1] === '?' && unquotedAt(end - 1)) {
      end--;
      ends++;
    }
  const middle = literalText(source.slice(start, end));
  for (let index = target.indexOf(middle); index !== -1; index = target.indexOf(middle, index + 1)) {
    if (begins !== -1 && index > begins) return false;
    const leftover = target.length - index - middle.length;
    if (ends === -1 || leftover <= ends) return true;
  }
  return false;
}

/** NISTIR 7696 CPE_Name_Compare then the match test: every attribute SUPERSET or EQUAL. */
export function cpeMatches(criterion: Cpe, target: Cpe): boolean {
  return CPE_ATTRIBUTES.every((name) => {
    const r = compareAttribute(criterion[name], target[name]);
    return r === 'SUPERSET' || r === 'EQUAL';
  });
}

/**
 * The index key `part:vendor:product`, each value as bound in a formatted string (so a `:` inside a
 * value stays `\:` and the key is unambiguous); null when part, vendor or product is ANY, NA or holds
 * a wildcard: such criteria are never indexed, and so never matched.
 */
export function productKey(c: Cpe): string | null {
  const values = [c.part, c.vendor, c.product];
  if (values.some((v) => !isLiteral(v) || hasWildcard(v))) return null;
  return values.map(fsValue).join(':');
}

/**
 * Operating systems and device firmware that answer on the network themselves (a router's SSH or
 * web UI is the operating system's), as NVD names them: `vendor:product` (product `*` for every
 * product of the vendor whose name starts with the given prefix). NVD lists them under part `o`
 * (operating system) or `h` (hardware); a service derived without a CPE gets that part, so
 * advisories of, say, Cisco IOS (`cpe:2.3:o:cisco:ios:…`) reach it. Anything else is an
 * application (`a`).
 */
export const PART_BY_PRODUCT: readonly { vendor: string; product: string; part: 'o' | 'h' }[] = [
  { vendor: 'cisco', product: 'ios', part: 'o' },
  { vendor: 'cisco', product: 'ios_xe', part: 'o' },
  { vendor: 'cisco', product: 'ios_xr', part: 'o' },
  { vendor: 'cisco', product: 'nx-os', part: 'o' },
  { vendor: 'cisco', product: 'adaptive_security_appliance_software', part: 'o' },
  { vendor: 'juniper', product: 'junos', part: 'o' },
  { vendor: 'juniper', product: 'junos_os_evolved', part: 'o' },
  { vendor: 'fortinet', product: 'fortios', part: 'o' },
  { vendor: 'paloaltonetworks', product: 'pan-os', part: 'o' },
  { vendor: 'mikrotik', product: 'routeros', part: 'o' },
  { vendor: 'arista', product: 'eos', part: 'o' },
  { vendor: 'ui', product: 'edgeos', part: 'o' },
  { vendor: 'arubanetworks', product: 'arubaos', part: 'o' },
  { vendor: 'sonicwall', product: 'sonicos', part: 'o' },
  { vendor: 'vmware', product: 'esxi', part: 'o' },
  { vendor: 'microsoft', product: 'windows*', part: 'o' },
  { vendor: 'zyxel', product: '*_firmware', part: 'o' },
  { vendor: 'tp-link', product: '*_firmware', part: 'o' },
  { vendor: 'netgear', product: '*_firmware', part: 'o' },
  { vendor: 'hp', product: '*_firmware', part: 'o' },
];

/** The CPE part of a (normalised) vendor and product: `o`/`h` by PART_BY_PRODUCT, else `a`. */
export function inferPart(vendor: string, product: string): 'a' | 'o' | 'h' {
  for (const r of PART_BY_PRODUCT) {
    if (r.vendor !== vendor) continue;
    const hit = r.product.startsWith('*') ? product.endsWith(r.product.slice(1)) : r.product.endsWith('*') ? product.startsWith(r.product.slice(0, -1)) : product === r.product;
    if (hit) return r.part;
  }
  return 'a';
}

/**
 * The CPE for a service reported with vendor, product and version but no CPE:
 * `cpe:2.3:<part>:<vendor>:<product>:<version>:*:*:*:*:*:*:*`, the part by inferPart (`a` unless
 * the product is a network operating system or device firmware). Each value is trimmed, lowercased, every run
 * of white space becomes one `_`, and then bound like any formatted-string value: characters other
 * than letters, digits, `_`, `.`, `-` are backslash-quoted (`*` and `?` too, so they are literal,
 * never wildcards), and a value that is just `-` is written `\-` (a literal, not NA). Null when a
 * value is empty after trimming. It parses back with `parseCpe23`.
 */
export function deriveCpe(vendor: string, product: string, version: string): string | null {
  const values = [vendor, product, version].map((v) => (typeof v === 'string' ? v.trim().toLowerCase().replace(/\s+/g, '_') : ''));
  if (values.some((v) => v === '')) return null;
  const c = anyCpe();
  c.part = inferPart(values[0]!, values[1]!);
  [c.vendor, c.product, c.version] = values.map(literalValue) as [string, string, string];
  return toCpe23(c);
}
