import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { canonicalIp, parseCidr } from '@surveyor/contract';
import type { Batch } from './scanner.js';

// Facts about the daemon's own host, from iproute2's JSON: its interfaces and addresses, VLANs
// (`ip -d` link info of kind vlan), LAG groups (bonds and their members) and routes.

function run(cmd: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => execFile(cmd, args, { timeout: 5000, maxBuffer: 16 * 1024 * 1024 }, (err, stdout) => (err ? reject(err) : resolve(stdout))));
}

/** The daemon host's stable key: its machine id, else its host name. */
export function localFingerprint(): string {
  try {
    const id = readFileSync('/etc/machine-id', 'utf8').trim();
    if (/^[0-9a-f]{32}$/.test(id)) return `machine:${id}`;
  } catch {
    // not systemd
  }
  return `hostname:${hostname()}`;
}

interface IpLink {
  ifname: string;
  link?: string;
  master?: string;
  address?: string;
  link_type?: string;
  linkinfo?: { info_kind?: string; info_slave_kind?: string; info_data?: { id?: number; mode?: string; protocol?: string } };
  addr_info?: { family: string; local: string; prefixlen: number; scope?: string }[];
}

interface IpRoute {
  dst: string;
  gateway?: string;
  dev?: string;
  metric?: number;
  type?: string;
}

export type LocalFacts = Required<Pick<Batch, 'hosts' | 'ips' | 'vlans' | 'lagGroups' | 'routes'>>;

/** Builds the facts from `ip -json -d addr show` and `ip -json route show` (IPv4, then IPv6) output. */
export function localFactsFrom(fingerprint: string, links: IpLink[], routes4: IpRoute[], routes6: IpRoute[]): LocalFacts {
  const mac = (l: IpLink) => (l.link_type === 'ether' && l.address && /^([0-9a-f]{2}:){5}[0-9a-f]{2}$/i.test(l.address) && l.address !== '00:00:00:00:00:00' ? l.address.toLowerCase() : undefined);
  const own = links.filter((l) => l.link_type !== 'loopback');
  const addressesOf = (l: IpLink) =>
    (l.addr_info ?? [])
      .filter((a) => a.scope !== 'host' && a.scope !== 'link')
      .map((a) => canonicalIp(a.local))
      .filter((a): a is string => !!a);
  const interfaces = own.slice(0, 256).map((l) => {
    const m = mac(l);
    const addresses = addressesOf(l).slice(0, 64);
    return { name: l.ifname.slice(0, 100), ...(m ? { mac: m } : {}), ...(addresses.length ? { addresses } : {}) };
  });
  const ips = own.flatMap((l) => addressesOf(l).map((address) => ({ hostFingerprint: fingerprint, address, family: (address.includes(':') ? 6 : 4) as 4 | 6, ...(mac(l) ? { mac: mac(l)! } : {}) })));

  const vlanIds = new Map<number, { names: string[]; tagged: Set<string> }>();
  for (const l of own) {
    const id = l.linkinfo?.info_kind === 'vlan' ? l.linkinfo.info_data?.id : undefined;
    if (id === undefined) continue;
    const v = vlanIds.get(id) ?? { names: [], tagged: new Set<string>() };
    v.names.push(l.ifname);
    if (l.link) v.tagged.add(l.link);
    vlanIds.set(id, v);
  }
  const vlans = [...vlanIds].sort((a, b) => a[0] - b[0]).map(([vlanId, v]) => ({ fingerprint, vlanId, name: v.names.sort()[0]!, tagged: [...v.tagged].sort() }));

  const lagGroups = own
    .filter((l) => l.linkinfo?.info_kind === 'bond' || l.linkinfo?.info_kind === 'team')
    .map((l) => ({
      fingerprint,
      name: l.ifname,
      protocol: (l.linkinfo?.info_data?.mode === '802.3ad' ? 'lacp' : 'static') as 'lacp' | 'static',
      members: own.filter((m) => m.master === l.ifname).map((m) => m.ifname).sort(),
    }));

  const route = (family: 4 | 6) => (r: IpRoute) => {
    if (r.type && r.type !== 'unicast') return [];
    const dst = r.dst === 'default' ? (family === 4 ? '0.0.0.0/0' : '::/0') : r.dst.includes('/') ? r.dst : `${r.dst}/${family === 4 ? 32 : 128}`;
    if (!parseCidr(dst)) return [];
    const nextHop = r.gateway ? canonicalIp(r.gateway) : null;
    return [{ fingerprint, destination: dst, ...(nextHop ? { nextHop } : {}), ...(r.dev ? { interface: r.dev } : {}), ...(r.metric !== undefined ? { metric: r.metric } : {}) }];
  };
  const routes = [...routes4.flatMap(route(4)), ...routes6.flatMap(route(6))];
  return { hosts: [{ fingerprint, interfaces }], ips, vlans, lagGroups, routes };
}

/** The daemon host's facts, read now; undefined when iproute2 is not there. */
export async function readLocalFacts(fingerprint: string): Promise<LocalFacts | undefined> {
  try {
    const [links, r4, r6] = await Promise.all([run('ip', ['-json', '-d', 'addr', 'show']), run('ip', ['-4', '-json', 'route', 'show']), run('ip', ['-6', '-json', 'route', 'show']).catch(() => '[]')]);
    return localFactsFrom(fingerprint, JSON.parse(links) as IpLink[], JSON.parse(r4) as IpRoute[], JSON.parse(r6) as IpRoute[]);
  } catch {
    return undefined;
  }
}
