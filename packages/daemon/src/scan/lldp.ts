import { execFile } from 'node:child_process';
import { canonicalIp } from '@surveyor/contract';
import type { Batch } from './scanner.js';

// LLDP (and CDP, when lldpd has it enabled) neighbours as the local lldpd sees them, read with
// `lldpcli -f json0 show neighbors details` (json0: every value in an array, a fixed shape).

export type Neighbours = NonNullable<Batch['neighbors']>;

interface Valued {
  value?: string;
  type?: string;
}
interface Json0Interface {
  name?: string;
  via?: string;
  chassis?: { id?: Valued[]; name?: Valued[]; 'mgmt-ip'?: Valued[] }[];
  port?: { id?: Valued[]; descr?: Valued[] }[];
}

/** Neighbours from `lldpcli -f json0 show neighbors details` output. */
export function neighboursFromJson0(fingerprint: string, text: string): Neighbours {
  const doc = JSON.parse(text) as { lldp?: { interface?: Json0Interface[] }[] };
  const out: Neighbours = [];
  for (const block of doc.lldp ?? []) {
    for (const i of block.interface ?? []) {
      const chassis = i.chassis?.[0];
      const chassisId = chassis?.id?.[0]?.value;
      if (!i.name || !chassisId) continue;
      const portId = i.port?.[0]?.id?.[0]?.value;
      const name = chassis?.name?.[0]?.value;
      const mgmt = (chassis?.['mgmt-ip'] ?? []).map((m) => (m.value ? canonicalIp(m.value) : null)).filter((a): a is string => !!a);
      // A routable management address before a link-local one.
      const managementAddress = mgmt.find((a) => !/^fe[89ab]/i.test(a)) ?? mgmt[0];
      out.push({
        fingerprint,
        localInterface: i.name.slice(0, 100),
        remoteChassisId: chassisId.slice(0, 200),
        ...(portId ? { remotePortId: portId.slice(0, 200) } : {}),
        ...(name ? { remoteSystemName: name.slice(0, 255) } : {}),
        ...(managementAddress ? { managementAddress } : {}),
        protocol: i.via?.toUpperCase().startsWith('CDP') ? 'cdp' : 'lldp',
      });
    }
  }
  return out;
}

/** Runs lldpcli (against `socket`, or lldpd's default one). Rejects when lldpd is not reachable. */
export function lldpcli(executable: string, socket: string | undefined, args: string[]): Promise<string> {
  return new Promise((resolve, reject) =>
    execFile(executable, [...(socket ? ['-u', socket] : []), ...args], { timeout: 10_000, maxBuffer: 16 * 1024 * 1024 }, (err, stdout) => (err ? reject(err) : resolve(stdout))),
  );
}

/** The neighbours lldpd knows now; undefined when it cannot be asked. */
export async function readNeighbors(executable: string, socket: string | undefined, fingerprint: string): Promise<Neighbours | undefined> {
  try {
    return neighboursFromJson0(fingerprint, await lldpcli(executable, socket, ['-f', 'json0', 'show', 'neighbors', 'details']));
  } catch {
    return undefined;
  }
}
