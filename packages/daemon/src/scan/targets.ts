import { canonicalIp, parseCidr, parseIp } from '@surveyor/contract';

/** An address range as numbers: the first and last address of a CIDR. */
export interface Range {
  family: 4 | 6;
  first: bigint;
  last: bigint;
  prefix: number;
}

function toBigInt(bytes: number[]): bigint {
  let n = 0n;
  for (const b of bytes) n = (n << 8n) | BigInt(b);
  return n;
}

export function addressToBigInt(ip: string): bigint | null {
  const b = parseIp(ip);
  return b ? toBigInt(b) : null;
}

export function bigIntToAddress(n: bigint, family: 4 | 6): string {
  const len = family === 4 ? 4 : 16;
  const bytes: number[] = [];
  for (let i = len - 1; i >= 0; i--) bytes.push(Number((n >> BigInt(i * 8)) & 255n));
  if (family === 4) return bytes.join('.');
  const groups = Array.from({ length: 8 }, (_, i) => ((bytes[i * 2]! << 8) | bytes[i * 2 + 1]!).toString(16));
  return canonicalIp(groups.join(':'))!;
}

export function rangeOf(cidr: string): Range | null {
  const c = parseCidr(cidr);
  if (!c) return null;
  const bits = c.family === 4 ? 32 : 128;
  const host = (1n << BigInt(bits - c.prefix)) - 1n;
  const first = toBigInt(c.bytes) & ~host & ((1n << BigInt(bits)) - 1n);
  return { family: c.family, first, last: first | host, prefix: c.prefix };
}

/** The network of an address and prefix (host bits cleared), as CIDR text. */
export function networkOf(address: string, prefix: number): string | null {
  const r = rangeOf(`${address}/${prefix}`);
  return r ? `${bigIntToAddress(r.first, r.family)}/${prefix}` : null;
}

export function rangeContains(r: Range, ip: string): boolean {
  const b = parseIp(ip);
  if (!b || (b.length === 4 ? 4 : 6) !== r.family) return false;
  const n = toBigInt(b);
  return n >= r.first && n <= r.last;
}

export interface Targets {
  range: Range;
  excludes: Range[];
  /** Whether an address is inside the target and outside every exclusion. */
  includes(ip: string): boolean;
  /** Every address to sweep, or null when the range is wider than `maxAddresses` (then sweep only what the neighbour table knows). */
  addresses: string[] | null;
}

/**
 * The addresses a scan covers: `cidr` minus `excludeCidrs`. An IPv4 range of /30 or wider skips
 * its network and broadcast addresses; an IPv6 range skips its all-zero (subnet-router anycast) address.
 */
export function targetsOf(cidr: string, excludeCidrs: string[], maxAddresses: number): Targets {
  const range = rangeOf(cidr);
  if (!range) throw new Error(`not a CIDR: ${cidr}`);
  const excludes = excludeCidrs.map(rangeOf).filter((r): r is Range => r !== null && r.family === range.family);
  const excluded = (n: bigint) => excludes.some((x) => n >= x.first && n <= x.last);
  const includes = (ip: string) => {
    const n = addressToBigInt(ip);
    return n !== null && rangeContains(range, ip) && !excluded(n) && !edge(range, n);
  };
  const size = range.last - range.first + 1n;
  let addresses: string[] | null = null;
  if (size <= BigInt(maxAddresses)) {
    addresses = [];
    for (let n = range.first; n <= range.last; n++) if (!excluded(n) && !edge(range, n)) addresses.push(bigIntToAddress(n, range.family));
  }
  return { range, excludes, includes, addresses };
}

function edge(r: Range, n: bigint): boolean {
  if (r.family === 4) return r.prefix <= 30 && (n === r.first || n === r.last);
  return r.prefix <= 126 && n === r.first;
}
