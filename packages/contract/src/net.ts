/** IPv4/IPv6 address and CIDR parsing shared by the server, the daemon and the UI (no Node APIs). */

function parseIPv4(s: string): number[] | null {
  const parts = s.split('.');
  if (parts.length !== 4) return null;
  const out: number[] = [];
  for (const p of parts) {
    if (!/^(0|[1-9]\d{0,2})$/.test(p)) return null;
    const n = Number(p);
    if (n > 255) return null;
    out.push(n);
  }
  return out;
}

function parseIPv6(s: string): number[] | null {
  if (!/^[0-9a-fA-F:.]+$/.test(s) || s.split('::').length > 2) return null;
  let tail4: number[] = [];
  let text = s;
  if (s.includes('.')) {
    // An embedded IPv4 tail (`::ffff:10.0.0.1`) stands for the last two groups.
    const lastColon = s.lastIndexOf(':');
    const v4 = parseIPv4(s.slice(lastColon + 1));
    if (!v4) return null;
    tail4 = v4;
    text = s.slice(0, lastColon + 1);
    if (!text.endsWith('::')) text = text.slice(0, -1);
  }
  const [head, rest] = text.split('::') as [string, string | undefined];
  const groups = (g: string) => (g === '' ? [] : g.split(':'));
  const h = groups(head);
  const r = rest === undefined ? [] : groups(rest);
  const want = 8 - tail4.length / 2;
  if (rest === undefined ? h.length !== want : h.length + r.length >= want) return null; // `::` stands for at least one zero group
  const fill = rest === undefined ? [] : Array(want - h.length - r.length).fill('0');
  const all = [...h, ...fill, ...r];
  if (all.length !== want) return null;
  const bytes: number[] = [];
  for (const g of all) {
    if (!/^[0-9a-fA-F]{1,4}$/.test(g)) return null;
    const n = parseInt(g, 16);
    bytes.push(n >> 8, n & 255);
  }
  return [...bytes, ...tail4];
}

/** The bytes of an IPv4 (4) or IPv6 (16) address, or null when it is not one. */
export function parseIp(s: string): number[] | null {
  return s.includes(':') ? parseIPv6(s) : parseIPv4(s);
}

export interface ParsedCidr {
  family: 4 | 6;
  bytes: number[];
  prefix: number;
  /** True when every bit below the prefix is zero. */
  hostBitsZero: boolean;
}

/** Parses `address/prefix`; null when malformed. */
export function parseCidr(s: string): ParsedCidr | null {
  const m = /^([^/]+)\/(0|[1-9]\d{0,2})$/.exec(s);
  if (!m) return null;
  const bytes = parseIp(m[1]!);
  if (!bytes) return null;
  const prefix = Number(m[2]);
  const bits = bytes.length * 8;
  if (prefix > bits) return null;
  let hostBitsZero = true;
  for (let i = prefix; i < bits; i++) if ((bytes[i >> 3]! >> (7 - (i & 7))) & 1) hostBitsZero = false;
  return { family: bytes.length === 4 ? 4 : 6, bytes, prefix, hostBitsZero };
}

/** The canonical text of an address: dotted IPv4, or RFC 5952 IPv6 (lower case, longest zero run as `::`). */
export function canonicalIp(s: string): string | null {
  const b = parseIp(s);
  if (!b) return null;
  if (b.length === 4) return b.join('.');
  const groups = Array.from({ length: 8 }, (_, i) => (b[i * 2]! << 8) | b[i * 2 + 1]!);
  let bestStart = -1;
  let bestLen = 0;
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLen && j - i >= 2) {
      bestStart = i;
      bestLen = j - i;
    }
    i = j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (bestStart < 0) return hex.join(':');
  return `${hex.slice(0, bestStart).join(':')}::${hex.slice(bestStart + bestLen).join(':')}`;
}
