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
 * The kernel's neighbour table (ARP and NDP) where readable: `ip -json neigh`, else /proc/net/arp
 * (IPv4 only). Entries without a link-layer address (INCOMPLETE, FAILED) are left out.
 */
export async function readNeighbours(): Promise<Neighbour[]> {
  try {
    const rows = JSON.parse(await run('ip', ['-json', 'neigh', 'show'])) as { dst?: string; dev?: string; lladdr?: string; state?: string[] }[];
    return rows.flatMap((r) => {
      const address = r.dst && canonicalIp(r.dst);
      if (!address || !r.lladdr || !/^([0-9a-f]{2}:){5}[0-9a-f]{2}$/i.test(r.lladdr)) return [];
      return [{ address, mac: r.lladdr.toLowerCase(), ...(r.dev ? { dev: r.dev } : {}), state: r.state ?? [] }];
    });
  } catch {
    try {
      const text = await readFile('/proc/net/arp', 'utf8');
      return text
        .split('\n')
        .slice(1)
        .flatMap((line) => {
          const [ip, , flags, mac, , dev] = line.trim().split(/\s+/);
          if (!ip || !mac || flags === '0x0' || mac === '00:00:00:00:00:00') return [];
          return [{ address: ip, mac: mac.toLowerCase(), ...(dev ? { dev } : {}), state: ['REACHABLE'] }];
        });
    } catch {
      return [];
    }
  }
}
