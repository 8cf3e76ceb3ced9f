import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { canonicalIp } from '@surveyor/contract';

export interface Neighbour {
  address: string;
  mac: string;
  dev?: string;
  state: string[];
}

function run(cmd: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => execFile(cmd, args, { timeout: 5000, maxBuffer: 16 * 1024 * 1024 }, (err, stdout) => (err ? reject(err) : resolve(stdout))));
}

/**
 * Whether the host answered ARP/NDP lately: REACHABLE. STALE is only remembered; DELAY and PROBE
 * are a STALE entry the kernel is checking again because we sent it traffic (they end REACHABLE
 * or FAILED within a few seconds), so neither says the host is there.
 */
export function isConfirmed(n: Neighbour): boolean {
  return n.state.includes('REACHABLE');
}

/** An entry the kernel is still confirming (DELAY, PROBE). */
export function isPending(n: Neighbour): boolean {
  return n.state.includes('DELAY') || n.state.includes('PROBE');
}

/** Entries of `ip -json neigh show` output that carry a link-layer address (INCOMPLETE and FAILED ones do not). */
export function neighboursFromIpJson(text: string): Neighbour[] {
  const rows = JSON.parse(text) as { dst?: string; dev?: string; lladdr?: string; state?: string[] }[];
  return rows.flatMap((r) => {
    const address = r.dst && canonicalIp(r.dst);
    if (!address || !r.lladdr || !/^([0-9a-f]{2}:){5}[0-9a-f]{2}$/i.test(r.lladdr)) return [];
    const state = r.state ?? [];
    if (state.includes('FAILED') || state.includes('INCOMPLETE')) return [];
    return [{ address, mac: r.lladdr.toLowerCase(), ...(r.dev ? { dev: r.dev } : {}), state }];
  });
}

/**
 * The kernel's neighbour table (ARP and NDP) where readable: `ip -json neigh`, else /proc/net/arp
 * (IPv4 only; its complete entries carry no freshness, so they count as STALE). Entries without a
 * link-layer address (INCOMPLETE, FAILED) are left out.
 */
export async function readNeighbours(): Promise<Neighbour[]> {
  try {
    return neighboursFromIpJson(await run('ip', ['-json', 'neigh', 'show']));
  } catch {
    try {
      const text = await readFile('/proc/net/arp', 'utf8');
      return text
        .split('\n')
        .slice(1)
        .flatMap((line) => {
          const [ip, , flags, mac, , dev] = line.trim().split(/\s+/);
          if (!ip || !mac || flags === '0x0' || mac === '00:00:00:00:00:00') return [];
          return [{ address: ip, mac: mac.toLowerCase(), ...(dev ? { dev } : {}), state: ['STALE'] }];
        });
    } catch {
      return [];
    }
  }
}
