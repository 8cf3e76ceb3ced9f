import { spawn } from 'node:child_process';
import { XMLParser } from 'fast-xml-parser';
import { toCpe23 } from './cpe.js';

/** The script categories a job may ask for (spec 2.3); anything else is ignored, never passed on. */
export const SCRIPT_CATEGORIES = ['default', 'safe', 'version', 'vuln'] as const;

/**
 * nmap's --script expression for the job's categories: `(default or safe) and not (external or broadcast)`.
 * Only the four category names can reach nmap (a script name or path from a job never does);
 * undefined when none is asked.
 */
export function scriptExpression(scripts: readonly string[]): string | undefined {
  const cats = SCRIPT_CATEGORIES.filter((c) => scripts.includes(c));
  return cats.length ? `(${cats.join(' or ')}) and not (external or broadcast)` : undefined;
}

export interface NmapRun {
  tcpPorts: number[];
  udpPorts: number[];
  scripts: readonly string[];
  family: 4 | 6;
  targets: string[];
  /** OS detection (`-O --osscan-limit`; `--privileged` when not root: raw sockets by capability). */
  os?: boolean;
}

/** The nmap command line: no DNS (`-n`), hosts taken as up (the daemon found them), connect scan, version detection, OS detection when asked, XML on stdout. */
export function nmapArgs(run: NmapRun): string[] {
  const ports = [...(run.tcpPorts.length ? [`T:${run.tcpPorts.join(',')}`] : []), ...(run.udpPorts.length ? [`U:${run.udpPorts.join(',')}`] : [])].join(',');
  const script = scriptExpression(run.scripts);
  return [
    '-n',
    '-Pn',
    '-sT',
    ...(run.udpPorts.length ? ['-sU'] : []),
    '-sV',
    ...(run.os ? ['-O', '--osscan-limit', ...(process.getuid?.() === 0 ? [] : ['--privileged'])] : []),
    ...(run.family === 6 ? ['-6'] : []),
    '-T4',
    '--max-retries',
    '2',
    '--host-timeout',
    '15m',
    ...(script ? ['--script', script, '--script-timeout', '2m'] : []),
    '-p',
    ports,
    '-oX',
    '-',
    '--',
    ...run.targets,
  ];
}

export class NmapError extends Error {}

/** Runs nmap and returns its XML; the signal kills it (SIGTERM, then SIGKILL after 2 s). */
export function runNmap(executable: string, args: string[], signal: AbortSignal): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(executable, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (d: Buffer) => out.push(d));
    child.stderr.on('data', (d: Buffer) => err.length < 64 && err.push(d));
    let killTimer: NodeJS.Timeout | undefined;
    const onAbort = () => {
      child.kill('SIGTERM');
      killTimer = setTimeout(() => child.kill('SIGKILL'), 2000);
    };
    signal.addEventListener('abort', onAbort, { once: true });
    child.once('error', (e) => {
      signal.removeEventListener('abort', onAbort);
      reject(new NmapError(`cannot run ${executable}: ${e.message}`));
    });
    child.once('close', (code, sig) => {
      signal.removeEventListener('abort', onAbort);
      clearTimeout(killTimer);
      if (signal.aborted) return reject(new NmapError('nmap stopped: the scan was cancelled'));
      if (code !== 0) return reject(new NmapError(`nmap exited with ${code ?? sig}: ${Buffer.concat(err).toString('utf8').trim().slice(0, 500)}`));
      resolve(Buffer.concat(out).toString('utf8'));
    });
  });
}

export interface NmapService {
  name?: string;
  product?: string;
  version?: string;
  extrainfo?: string;
  tunnel?: string;
  confidence?: number;
  method?: string;
  cpes: string[];
}

export interface NmapPort {
  protocol: 'tcp' | 'udp' | 'sctp';
  number: number;
  state: string;
  service?: NmapService;
  scripts: { id: string; output: string }[];
}

export interface NmapHost {
  addresses: { addr: string; type: string; vendor?: string }[];
  status?: string;
  hostnames: string[];
  ports: NmapPort[];
  os?: string;
  /** The CPEs OS detection gives its best match (operating system, hardware), as CPE 2.3. */
  osCpes: string[];
}

const ARRAYS = new Set(['host', 'address', 'hostname', 'port', 'cpe', 'script', 'osmatch']);

/** nmap's XML (-oX) as hosts and ports; CPEs converted to CPE 2.3. */
export function parseNmapXml(xml: string): NmapHost[] {
  const parser = new XMLParser({ ignoreAttributes: false, attributeNamePrefix: '', parseAttributeValue: false, parseTagValue: false, isArray: (name) => ARRAYS.has(name) });
  const doc = parser.parse(xml) as { nmaprun?: { host?: any[] } };
  const hosts = doc.nmaprun?.host ?? [];
  return hosts.map((h): NmapHost => ({
    addresses: (h.address ?? []).map((a: any) => ({ addr: String(a.addr), type: String(a.addrtype), ...(a.vendor ? { vendor: String(a.vendor) } : {}) })),
    ...(h.status?.state ? { status: String(h.status.state) } : {}),
    hostnames: (h.hostnames?.hostname ?? []).map((n: any) => String(n.name)),
    ports: (h.ports?.port ?? []).map((p: any): NmapPort => ({
      protocol: p.protocol,
      number: Number(p.portid),
      state: String(p.state?.state ?? 'unknown'),
      ...(p.service ? { service: service(p.service) } : {}),
      scripts: (p.script ?? []).map((s: any) => ({ id: String(s.id), output: String(s.output ?? '') })),
    })),
    ...(h.os?.osmatch?.[0]?.name ? { os: String(h.os.osmatch[0].name) } : {}),
    osCpes: cpesOf([h.os?.osmatch?.[0]?.osclass ?? []].flat().flatMap((c: any) => c?.cpe ?? [])),
  }));
}

function cpesOf(values: unknown[]): string[] {
  return [...new Set(values.map((c) => toCpe23(typeof c === 'string' ? c : String((c as { '#text'?: string })?.['#text'] ?? ''))).filter((c): c is string => !!c))];
}

/**
 * The CPEs of a host itself, for NVD's AND configurations: the operating system and hardware
 * (`o`, `h`) CPEs of its best OS match (when nmap's output has one: the daemon does not ask for
 * -O, which needs root and time) and of its services' detection (an SSH server on a Cisco device
 * names `cpe:/o:cisco:ios`), at most 16, none longer than the contract's 300 characters.
 */
export function platformCpes(h: NmapHost): string[] {
  const all = [...h.osCpes, ...h.ports.flatMap((p) => p.service?.cpes ?? [])];
  return [...new Set(all.filter((c) => /^cpe:2\.3:[oh]:/.test(c) && c.length <= 300))].slice(0, 16);
}

function service(s: any): NmapService {
  const text = (v: unknown) => (v === undefined || v === null || v === '' ? undefined : String(v));
  const cpes = (s.cpe ?? []).map((c: unknown) => toCpe23(typeof c === 'string' ? c : String((c as { '#text'?: string })['#text'] ?? ''))).filter((c: string | null): c is string => !!c);
  const out: NmapService = { cpes };
  for (const k of ['name', 'product', 'version', 'extrainfo', 'tunnel', 'method'] as const) {
    const v = text(s[k]);
    if (v) out[k] = v;
  }
  if (s.conf !== undefined) out.confidence = Math.min(100, Number(s.conf) * 10);
  return out;
}
