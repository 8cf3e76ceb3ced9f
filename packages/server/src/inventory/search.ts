import { isUuid, parseCidr, parseIp } from '@surveyor/contract';

/**
 * How a host search term is matched (spec 2.3; issue 23 widened "anything else"; the contract's
 * HOST_SEARCH_RULES says the same to API users and the console).
 *
 * - `text`: the start of a hostname, FQDN, vendor or OS; and, when the term reads as one, the MACs
 *   from `macFrom` to `macTo` (a whole MAC: one value; the start of one: its range) and the
 *   addresses inside `cidr` (the start of a dotted IPv4 address in whole octets, or of an IPv6 one
 *   in whole groups).
 */
export type HostSearch =
  | { kind: 'id'; id: string }
  | { kind: 'address'; address: string }
  | { kind: 'cidr'; cidr: string }
  | { kind: 'text'; prefix: string; mac: { from: string; to: string } | null; cidr: string | null };

const HEX_PAIRS = /^[0-9a-f]{2}(?:[:-][0-9a-f]{2}){1,5}$/; // aa:bb:cc…, AA-BB-CC…
const CISCO = /^[0-9a-f]{4}(?:\.[0-9a-f]{4})?\.[0-9a-f]{2}(?:[0-9a-f]{2})?$/; // aabb.ccdd.eeff, aabb.cc
const BARE = /^(?:[0-9a-f]{2}){3,6}$/; // aabbcc … aabbccddeeff

/** The MACs a term names, as a range of the colon form: a whole MAC or the start of one in whole bytes; null when it is no MAC. */
export function macRange(term: string): { from: string; to: string } | null {
  const t = term.toLowerCase();
  let hex: string;
  if (HEX_PAIRS.test(t)) hex = t.replace(/[:-]/g, '');
  else if (CISCO.test(t)) hex = t.replace(/\./g, '');
  else if (BARE.test(t)) hex = t;
  else return null;
  if (hex.length % 2 !== 0) return null;
  const bytes = (fill: string) => (hex + fill.repeat(12 - hex.length)).match(/../g)!.join(':');
  return { from: bytes('0'), to: bytes('f') };
}

/** The network a partial address names in whole octets (`10.1.0` → 10.1.0.0/24) or IPv6 groups (`2001:db8` → 2001:db8::/32); null otherwise. */
export function addressPrefix(term: string): string | null {
  const v4 = /^(\d{1,3})(?:\.(\d{1,3}))?(?:\.(\d{1,3}))?(\.)?$/.exec(term);
  if (v4) {
    const octets = [v4[1], v4[2], v4[3]].filter((o): o is string => o !== undefined);
    if (octets.length === 1 && !v4[4]) return null; // "10": a name, not an address
    if (octets.some((o) => Number(o) > 255 || (o.length > 1 && o.startsWith('0')))) return null;
    return `${[...octets, ...Array(4 - octets.length).fill('0')].join('.')}/${octets.length * 8}`;
  }
  const v6 = /^([0-9a-f]{1,4}(?::[0-9a-f]{1,4}){0,6}):?$/i.exec(term);
  if (v6 && (term.includes(':'))) {
    const groups = v6[1]!.split(':');
    return `${groups.join(':')}${groups.length < 8 ? '::' : ''}/${groups.length * 16}`;
  }
  return null;
}

/** Classifies a host search term: UUID → id, address → address, CIDR → containment, else text (names, vendor, OS, MAC, partial address). */
export function classifySearch(term: string): HostSearch {
  if (isUuid(term)) return { kind: 'id', id: term.toLowerCase() };
  if (parseIp(term)) return { kind: 'address', address: term };
  if (parseCidr(term)) return { kind: 'cidr', cidr: term }; // host bits may be set: the search uses its network
  return { kind: 'text', prefix: term, mac: macRange(term), cidr: addressPrefix(term) };
}
