import { readFileSync } from 'node:fs';

/** nmap's 100 most frequent TCP ports (nmap-services), in order: used when nmap's data file is absent. */
const TOP_TCP = [
  80, 23, 443, 21, 22, 25, 3389, 110, 445, 139, 143, 53, 135, 3306, 8080, 1723, 111, 995, 993, 5900, 1025, 587, 8888, 199, 1720, 465, 548, 113, 81, 6001, 10000, 514, 5060, 179, 1026, 2000,
  8443, 8000, 32768, 554, 26, 1433, 49152, 2001, 515, 8008, 49154, 1027, 5666, 646, 5000, 5631, 631, 49153, 8081, 2049, 88, 79, 5800, 106, 2121, 1110, 49155, 6000, 513, 990, 5357, 427, 49156,
  543, 544, 5101, 144, 7, 389, 8009, 3128, 444, 9999, 5009, 7070, 5190, 3000, 5432, 3986, 1900, 13, 1029, 9, 6646, 5051, 49157, 1028, 873, 1755, 2717, 4899, 9100, 119, 37,
];

/** nmap's 20 most frequent UDP ports. */
const TOP_UDP = [631, 161, 137, 123, 138, 1434, 445, 135, 67, 53, 139, 500, 68, 520, 1900, 4500, 514, 49152, 162, 69];

const NMAP_SERVICES = ['/usr/share/nmap/nmap-services', '/usr/local/share/nmap/nmap-services'];

const ranked = new Map<'tcp' | 'udp', number[]>();

/** Every port nmap knows for the protocol, most frequently open first (from nmap-services when installed). */
function rankedPorts(protocol: 'tcp' | 'udp'): number[] {
  const known = ranked.get(protocol);
  if (known) return known;
  let out: number[] = protocol === 'tcp' ? TOP_TCP : TOP_UDP;
  for (const file of NMAP_SERVICES) {
    try {
      const rows: [number, number][] = [];
      for (const line of readFileSync(file, 'utf8').split('\n')) {
        const m = /^\S+\s+(\d+)\/(tcp|udp)\s+([\d.]+)/.exec(line);
        if (m && m[2] === protocol) rows.push([Number(m[1]), Number(m[3])]);
      }
      rows.sort((a, b) => b[1] - a[1] || a[0] - b[0]);
      out = [...new Set(rows.map((r) => r[0]))];
      break;
    } catch {
      // not installed here
    }
  }
  ranked.set(protocol, out);
  return out;
}

function top(protocol: 'tcp' | 'udp', n: number): number[] {
  const known = rankedPorts(protocol);
  if (n <= known.length) return known.slice(0, n);
  const out = [...known];
  const seen = new Set(known);
  for (let p = 1; p <= 65535 && out.length < n; p++) if (!seen.has(p)) out.push(p);
  return out;
}

/**
 * The `n` most common TCP ports (nmap's ranking). When nmap's data is not installed only 100 are
 * known by rank; the rest of a larger `n` is filled with the remaining ports in numeric order.
 */
export function topTcpPorts(n: number): number[] {
  return top('tcp', n);
}

/** The `n` most common UDP ports, likewise. */
export function topUdpPorts(n: number): number[] {
  return top('udp', n);
}

/** Ports tried first when sweeping for live hosts (an answer, open or refused, proves a host). */
export const DISCOVERY_PORTS = [80, 443, 22, 445, 3389, 139, 135, 53, 8080, 25];
