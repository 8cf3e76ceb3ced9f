import { accessSync, constants, readFileSync } from 'node:fs';
import { arch, networkInterfaces, platform, release } from 'node:os';
import { delimiter, join } from 'node:path';
import { networkOf } from './scan/targets.js';

/** The daemon's version (its package.json). */
export function daemonVersion(): string {
  try {
    return (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version;
  } catch {
    return '0.0.0';
  }
}

/** An executable's path: `name` itself when it holds a slash, else the first match on PATH; null when none is executable. */
export function findExecutable(name: string, path = process.env.PATH ?? ''): string | null {
  const candidates = name.includes('/') ? [name] : path.split(delimiter).filter(Boolean).map((d) => join(d, name));
  for (const c of candidates) {
    try {
      accessSync(c, constants.X_OK);
      return c;
    } catch {
      // not here
    }
  }
  return null;
}

/** The networks of this host's interfaces (loopback and link-local left out), as CIDRs with zero host bits. */
export function interfaceNetworks(): string[] {
  const out = new Set<string>();
  for (const addrs of Object.values(networkInterfaces())) {
    for (const a of addrs ?? []) {
      if (a.internal || !a.cidr) continue;
      if (a.family === 'IPv6' && /^fe[89ab]/i.test(a.address)) continue;
      const prefix = Number(a.cidr.split('/')[1]);
      const net = networkOf(a.address, prefix);
      if (net) out.add(net);
    }
  }
  return [...out].sort();
}

export function osInfo() {
  return { os: `${platform()} ${release()}`, arch: arch() };
}
