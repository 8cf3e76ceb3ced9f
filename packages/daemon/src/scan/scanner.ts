import type { NetworkJob, ObservationsRequest } from '@surveyor/contract';
import { setMaxListeners } from 'node:events';
import { networkInterfaces } from 'node:os';
import type { z } from 'zod';
import type { DaemonConfig } from '../config.js';
import type { Logger } from '../log.js';
import { readNeighbors } from './lldp.js';
import { readLocalFacts } from './local.js';
import { type NmapHost, NmapError, nmapArgs, parseNmapXml, platformCpes, runNmap } from './nmap.js';
import { type Neighbour, isConfirmed, isPending, readNeighbours } from './neighbours.js';
import { eachLimited } from './pool.js';
import { DISCOVERY_PORTS, topTcpPorts, topUdpPorts } from './ports.js';
import { type Banner, connectProbe, grabBanner } from './probe.js';
import { identify } from './signatures.js';
import { type Targets, targetsOf } from './targets.js';

type Job = z.output<typeof NetworkJob>;
export type Batch = Omit<z.input<typeof ObservationsRequest>, 'sessionId'>;

export class ScanCancelled extends Error {
  constructor() {
    super('the scan was cancelled');
  }
}

export interface ScanContext {
  config: DaemonConfig['scan'];
  /** The nmap executable when nmap is available, else null. */
  nmap: string | null;
  /** Whether nmap also runs its OS detection (DaemonConfig.nmapOs). */
  nmapOs?: boolean;
  log: Logger;
  signal: AbortSignal;
  /** Delivers one batch (retrying as needed); a rejection ends the scan. */
  send(batch: Batch): Promise<void>;
  /** Reports a part that failed without failing the scan (nmap crashed, fell back to the own scan). */
  degrade(reason: string): void;
  /**
   * The daemon host's own key: its addresses found in the range are that host, and the first
   * batch carries its interfaces, VLANs, LAG groups and routes. Absent: local addresses are hosts like any other.
   */
  localFingerprint?: string;
  /** Where to read LLDP/CDP neighbours of the daemon host (sent with the first batch); absent: not read. */
  lldp?: { lldpcli: string; socket?: string };
}

export interface LiveHost {
  address: string;
  mac?: string;
  fingerprint: string;
}

/**
 * A network job: sweep `cidr` minus `excludeCidrs` for live hosts, send them (with `hostsTotal`) as
 * the first batch, then scan their top ports a few hosts at a time, one batch each, the last `final`.
 * With `nmap.enabled` the ports are scanned by nmap; otherwise by the daemon's own TCP connect scan.
 * Banners and TLS certificates are read by the daemon either way. A cancel (the signal) stops it
 * between hosts and kills nmap; no final batch is sent then.
 */
export async function runNetworkScan(job: Job, ctx: ScanContext): Promise<{ hostsTotal: number; ports: number }> {
  const started = Date.now();
  const { target } = job;
  // Every socket in flight listens for the cancel.
  setMaxListeners(ctx.config.concurrency + 64, ctx.signal);
  const targets = targetsOf(target.cidr, target.excludeCidrs, ctx.config.maxSweepAddresses);
  const checkCancel = () => {
    if (ctx.signal.aborted) throw new ScanCancelled();
  };

  const hosts = await discover(targets, ctx);
  checkCancel();
  const local = ctx.localFingerprint ? await readLocalFacts(ctx.localFingerprint) : undefined;
  const neighbors = ctx.localFingerprint && ctx.lldp ? await readNeighbors(ctx.lldp.lldpcli, ctx.lldp.socket, ctx.localFingerprint) : undefined;
  const tcpPorts = topTcpPorts(target.topPortsTcp);
  // UDP needs raw sockets: only nmap as root scans it.
  const udpPorts = ctx.nmap && target.nmap.enabled && process.getuid?.() === 0 ? topUdpPorts(target.topPortsUdp) : [];
  if (target.topPortsUdp > 0 && udpPorts.length === 0) ctx.log.info('UDP ports not scanned: that needs nmap running as root', { sessionId: job.sessionId });
  ctx.log.info('sweep done', { sessionId: job.sessionId, cidr: target.cidr, hostsTotal: hosts.length, tcpPorts: tcpPorts.length, nmap: !!(ctx.nmap && target.nmap.enabled) });

  const stats = { hostsTotal: hosts.length, hostsScanned: 0, portsScanned: 0, durationMs: 0 };
  const stamp = () => ({ ...stats, durationMs: Date.now() - started });
  const family = targets.range.family;
  const remote = hosts.filter((h) => h.fingerprint !== ctx.localFingerprint || !local);
  const localIps = new Set(local?.ips.map((i) => i.address));
  await ctx.send({
    final: hosts.length === 0,
    hosts: [...(local?.hosts ?? []), ...remote.map((h) => ({ fingerprint: h.fingerprint, ...(h.mac ? { interfaces: [{ name: 'eth', mac: h.mac, addresses: [h.address] }] } : {}) }))],
    ips: [...(local?.ips ?? []), ...hosts.filter((h) => !localIps.has(h.address)).map((h) => ({ hostFingerprint: h.fingerprint, address: h.address, family, ...(h.mac ? { mac: h.mac } : {}) }))],
    ...(local ? { vlans: local.vlans, lagGroups: local.lagGroups, routes: local.routes } : {}),
    ...(neighbors ? { neighbors } : {}),
    stats: stamp(),
  });

  let openPorts = 0;
  for (let i = 0; i < hosts.length; i += ctx.config.batchHosts) {
    checkCancel();
    const chunk = hosts.slice(i, i + ctx.config.batchHosts);
    const batch = await scanChunk(chunk, tcpPorts, udpPorts, family, job, ctx);
    checkCancel();
    stats.hostsScanned += chunk.length;
    stats.portsScanned += chunk.length * (tcpPorts.length + udpPorts.length);
    openPorts += batch.ports?.length ?? 0;
    await ctx.send({ ...batch, final: i + ctx.config.batchHosts >= hosts.length, stats: stamp() });
  }
  return { hostsTotal: hosts.length, ports: openPorts };
}

/**
 * Live hosts: an address that answered a discovery probe (open or refused), or whose neighbour
 * entry is REACHABLE after our probes (it answered ARP/NDP even with every port filtered). A STALE
 * entry is only what the kernel remembers from before, maybe of a host long gone, and DELAY/PROBE
 * is such an entry being checked again: neither makes a host live; they only lend a live host its MAC.
 */
export function liveHosts(
  candidates: string[],
  answered: Iterable<string>,
  neighbours: Neighbour[],
  includes: (address: string) => boolean,
  fingerprintOf: (address: string) => string | undefined = () => undefined,
): LiveHost[] {
  const alive = new Set<string>(answered);
  const considered = new Set(candidates);
  const macOf = new Map<string, string>();
  for (const n of neighbours) {
    if (!includes(n.address)) continue;
    // A confirmed entry's MAC wins over a stale one for the same address.
    if (!macOf.has(n.address) || isConfirmed(n)) macOf.set(n.address, n.mac);
    if (isConfirmed(n) && considered.has(n.address)) alive.add(n.address);
  }
  return [...alive]
    .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
    .map((address) => {
      const mac = macOf.get(address);
      return { address, ...(mac ? { mac } : {}), fingerprint: fingerprintOf(address) ?? (mac ? `mac:${mac}` : `ip:${address}`) };
    });
}

/** Linux: delay_first_probe_time (5 s) + ucast_solicit (3) x retrans_time (1 s), and a little more. */
const NEIGHBOUR_SETTLE_MS = 9000;

/** Probes the candidates, then reads the neighbour table our probes refreshed (liveHosts). */
async function discover(targets: Targets, ctx: ScanContext): Promise<LiveHost[]> {
  const local = new Set(
    Object.values(networkInterfaces())
      .flat()
      .map((i) => i?.address)
      .filter((a): a is string => !!a && targets.includes(a)),
  );
  let candidates = targets.addresses;
  if (!candidates) {
    // Too wide to sweep (an IPv6 /64): the hosts the kernel already knows of, each probed like any other.
    candidates = (await readNeighbours()).map((n) => n.address).filter((a) => targets.includes(a));
    ctx.log.info('range too wide to sweep; scanning the neighbour table\'s hosts in it', { candidates: candidates.length });
  }
  const answered = new Set<string>(local);
  const perHost = DISCOVERY_PORTS.length;
  await eachLimited(
    candidates,
    Math.max(1, Math.floor(ctx.config.concurrency / perHost)),
    async (address) => {
      if (answered.has(address)) return;
      const states = await Promise.all(DISCOVERY_PORTS.map((p) => connectProbe(address, p, ctx.config.connectTimeoutMs, ctx.signal)));
      if (states.some((s) => s !== 'filtered')) answered.add(address);
    },
    ctx.signal,
  );
  // Entries our probes sent to a STALE MAC are being confirmed (DELAY, then PROBE): wait for the
  // kernel's verdict (REACHABLE or FAILED), a few seconds at most, on hosts no probe answered.
  let neighbours = await readNeighbours();
  const pending = () => neighbours.some((n) => isPending(n) && !answered.has(n.address) && targets.includes(n.address));
  for (const until = Date.now() + NEIGHBOUR_SETTLE_MS; pending() && Date.now() < until && !ctx.signal.aborted; ) {
    await new Promise((r) => setTimeout(r, 500));
    neighbours = await readNeighbours();
  }
  return liveHosts(candidates, answered, neighbours, targets.includes, (address) => (local.has(address) ? ctx.localFingerprint : undefined));
}

async function scanChunk(chunk: LiveHost[], tcpPorts: number[], udpPorts: number[], family: 4 | 6, job: Job, ctx: ScanContext): Promise<Required<Pick<Batch, 'ports' | 'services' | 'tls'>> & Pick<Batch, 'hosts'>> {
  let nmapHosts: NmapHost[] | undefined;
  if (ctx.nmap && job.target.nmap.enabled && tcpPorts.length + udpPorts.length > 0) {
    const args = nmapArgs({ tcpPorts, udpPorts, scripts: job.target.nmap.scripts, family, targets: chunk.map((h) => h.address), os: ctx.nmapOs === true });
    try {
      ctx.log.debug('running nmap', { sessionId: job.sessionId, args });
      nmapHosts = parseNmapXml(await runNmap(ctx.nmap, args, ctx.signal));
    } catch (e) {
      if (ctx.signal.aborted) throw new ScanCancelled();
      const reason = e instanceof NmapError ? e.message : `nmap output unreadable: ${(e as Error).message}`;
      ctx.log.warn('nmap failed; scanning these hosts with the daemon\'s own connect scan', { sessionId: job.sessionId, reason });
      ctx.degrade(reason);
    }
  }

  const open: { host: LiveHost; port: number; protocol: 'tcp' | 'udp' }[] = [];
  const byAddress = new Map<string, NmapHost>();
  if (nmapHosts) {
    for (const h of nmapHosts) for (const a of h.addresses) byAddress.set(a.addr, h);
    for (const host of chunk) for (const p of byAddress.get(host.address)?.ports ?? []) if (p.state === 'open' && p.protocol !== 'sctp') open.push({ host, port: p.number, protocol: p.protocol });
  } else {
    const tasks = chunk.flatMap((host) => tcpPorts.map((port) => ({ host, port })));
    await eachLimited(
      tasks,
      ctx.config.concurrency,
      async ({ host, port }) => {
        if ((await connectProbe(host.address, port, ctx.config.connectTimeoutMs, ctx.signal)) === 'open') open.push({ host, port, protocol: 'tcp' });
      },
      ctx.signal,
    );
  }
  if (ctx.signal.aborted) throw new ScanCancelled();

  const batch: Required<Pick<Batch, 'ports' | 'services' | 'tls'>> & Pick<Batch, 'hosts'> = { ports: [], services: [], tls: [] };
  // The hosts' own CPEs (operating system, hardware), where nmap names them.
  const platforms = chunk.flatMap((host) => {
    const n = byAddress.get(host.address);
    const cpes = n ? platformCpes(n) : [];
    return cpes.length ? [{ fingerprint: host.fingerprint, cpes }] : [];
  });
  if (platforms.length) batch.hosts = platforms;
  open.sort((a, b) => (a.host.address < b.host.address ? -1 : a.host.address > b.host.address ? 1 : a.port - b.port));
  await eachLimited(
    open,
    Math.min(32, ctx.config.concurrency),
    async ({ host, port, protocol }) => {
      const banner: Banner = protocol === 'tcp' ? await grabBanner(host.address, port, ctx.config.connectTimeoutMs * 2) : { raw: '' };
      const key = { fingerprint: host.fingerprint, address: host.address, protocol };
      batch.ports.push({ ...key, number: port, state: 'open', ...(banner.text ? { banner: banner.text.slice(0, 4000) } : {}) });
      const nmapPort = byAddress.get(host.address)?.ports.find((p) => p.number === port && p.protocol === protocol);
      const s = nmapPort?.service;
      if (s?.name && s.name !== 'unknown') {
        const cpe = s.cpes.find((c) => c.startsWith('cpe:2.3:a:')) ?? s.cpes[0];
        const vendor = cpe?.split(':')[3];
        const evidence = (nmapPort?.scripts ?? []).map((x) => `${x.id}: ${x.output.trim()}`).join('\n');
        batch.services.push({
          ...key,
          port,
          signatureId: `nmap:${s.method ?? 'probed'}:${s.name}`,
          signatureSource: 'nmap',
          name: (s.tunnel === 'ssl' || banner.tls) && s.name === 'http' ? 'https' : s.name,
          ...(s.product ? { product: s.product.slice(0, 200) } : {}),
          ...(vendor && vendor !== '*' ? { vendor } : {}),
          ...(s.version ? { version: s.version.slice(0, 100) } : {}),
          ...(cpe ? { cpe } : {}),
          ...(s.confidence !== undefined ? { confidence: s.confidence } : {}),
          ...(evidence ? { evidence: evidence.slice(0, 4000) } : s.extrainfo ? { evidence: s.extrainfo.slice(0, 4000) } : {}),
        });
      } else {
        const id = identify(banner.raw, !!banner.tls);
        if (id) batch.services.push({ ...key, port, signatureSource: 'core', ...id, ...(banner.text ? { evidence: banner.text.split(/\r?\n/)[0]!.slice(0, 4000) } : {}) });
        else if (banner.tls) batch.services.push({ ...key, port, signatureSource: 'core', signatureId: 'core:tls', name: 'ssl', confidence: 60 });
      }
      if (banner.tls) batch.tls.push({ fingerprint: host.fingerprint, address: host.address, port, ...banner.tls });
    },
    ctx.signal,
  );
  return batch;
}
