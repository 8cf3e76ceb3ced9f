import { describe } from 'vitest';
import { type Tool, haveTools, skipOrFail } from '../../../test/system-tools.js';
import { type ChildProcess, execFile, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

// A lab of real hosts for the daemon's tests: network namespaces joined by a bridge in this
// (the root) namespace, each with IPv4 and IPv6 addresses and real services (test/fixtures/
// lab-services.mjs), scanned from the root namespace through the bridge.

const SERVICES = fileURLToPath(new URL('./fixtures/lab-services.mjs', import.meta.url));
const PCAP_SHIM = fileURLToPath(new URL('./fixtures/pcap-immediate.c', import.meta.url));

function ip(...args: string[]) {
  execFileSync('ip', args, { stdio: ['ignore', 'ignore', 'pipe'] });
}

/** Whether this machine lets the test build a lab (root, iproute2, `ip netns`); when not, why. */
export function labSupport(): { ok: true } | { ok: false; why: string } {
  if (process.platform !== 'linux') return { ok: false, why: `network namespaces are Linux only (this is ${process.platform})` };
  if (process.getuid?.() !== 0) return { ok: false, why: 'building the lab needs root (ip netns add, ip link add)' };
  const probe = `svprobe${randomBytes(3).toString('hex')}`;
  try {
    ip('netns', 'add', probe);
    ip('netns', 'del', probe);
    ip('link', 'add', probe, 'type', 'bridge');
    ip('link', 'del', probe);
    return { ok: true };
  } catch (e) {
    return { ok: false, why: `ip netns / ip link add is not permitted here: ${String((e as { stderr?: Buffer }).stderr ?? (e as Error).message).trim()}` };
  }
}

export interface LabHost {
  ns: string;
  v4: string;
  v6: string;
  mac: string;
}

export interface Lab {
  /** Starts softflowd on the bridge, exporting to `collector` (host:port) as NetFlow v9 or IPFIX. */
  exportFlows(collector: string, version: 9 | 10): Promise<void>;
  /** lldpd's control socket in this (the daemon's) namespace, when built with `lldp`. */
  lldpSocket?: string;
  v4Cidr: string;
  v6Cidr: string;
  hosts: LabHost[];
  /** Folder holding the lab's generated certificate and key. */
  dir: string;
  close(): void;
}

export interface LabHostSpec {
  /** Services: `http:80`, `tls:443` (a certificate for `cn` is generated), `ssh:22`. */
  services: string[];
  cn?: string;
}

/**
 * Builds the lab: a bridge with x.x.x.1 and ::1 here, and one namespace per spec at .2, .3, …
 * (a /28 and a /124 of random private ranges, so labs of parallel test files never collide).
 */
export async function buildLab(specs: LabHostSpec[], opts: { lldp?: boolean } = {}): Promise<Lab> {
  const id = randomBytes(3).toString('hex');
  const bridge = `svbr${id}`;
  const [a, b, c] = [...randomBytes(3)];
  const v4net = `10.${200 + (a! % 50)}.${b}`;
  // Written canonically (RFC 5952: no leading zeros in a group, no zero group before the `::`), as
  // the daemon and the server print addresses: a test comparing the texts must not depend on the draw.
  const v6net = `fd5e:${((a! << 8) | b!).toString(16)}:${((c! % 255) + 1).toString(16)}::`;
  const dir = mkdtempSync(join(tmpdir(), 'surveyor-lab-'));
  chmodSync(dir, 0o755); // lldpd's unprivileged half reaches its control socket here
  const namespaces: string[] = [];
  const procs: ChildProcess[] = [];
  const lab: Lab = {
    v4Cidr: `${v4net}.0/28`,
    v6Cidr: `${v6net}/124`,
    hosts: [],
    dir,
    async exportFlows(collector, version) {
      const shim = join(dir, 'pcap-immediate.so');
      execFileSync('gcc', ['-shared', '-fPIC', '-o', shim, PCAP_SHIM, '-ldl']);
      const p = spawn('softflowd', ['-d', '-i', bridge, '-n', collector, '-v', String(version), '-6', '-p', join(dir, `softflowd${version}.pid`), '-c', join(dir, `softflowd${version}.ctl`), '-t', 'maxlife=1', '-t', 'expint=1', '-t', 'general=1', '-t', 'tcp=1', '-t', 'tcp.fin=1', '-t', 'tcp.rst=1', '-t', 'udp=1', '-t', 'icmp=1'], { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, LD_PRELOAD: shim } });
      procs.push(p);
      let err = '';
      p.stderr!.on('data', (d: Buffer) => (err += d.toString()));
      await new Promise((r) => setTimeout(r, 300));
      if (p.exitCode !== null) throw new Error(`softflowd exited with ${p.exitCode}: ${err}`);
    },
    close() {
      for (const p of procs) if (p.exitCode === null) p.kill('SIGTERM');
      for (const ns of namespaces) {
        try {
          ip('netns', 'del', ns);
        } catch {
          // already gone
        }
      }
      try {
        ip('link', 'del', bridge);
      } catch {
        // already gone
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
  try {
    ip('link', 'add', bridge, 'type', 'bridge');
    execFileSync('sysctl', ['-qw', `net.ipv6.conf.${bridge}.accept_dad=0`]);
    ip('addr', 'add', `${v4net}.1/28`, 'dev', bridge);
    ip('addr', 'add', `${v6net}1/124`, 'dev', bridge, 'nodad');
    ip('link', 'set', bridge, 'up');
    for (const [i, spec] of specs.entries()) {
      const ns = `sv${id}h${i}`;
      const veth = `sv${id}v${i}`;
      ip('netns', 'add', ns);
      namespaces.push(ns);
      ip('link', 'add', veth, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', ns);
      ip('link', 'set', veth, 'master', bridge, 'up');
      const inNs = (...args: string[]) => ip('-n', ns, ...args);
      execFileSync('ip', ['netns', 'exec', ns, 'sysctl', '-qw', 'net.ipv6.conf.eth0.accept_dad=0']);
      const v4 = `${v4net}.${i + 2}`;
      const v6 = `${v6net}${(i + 2).toString(16)}`;
      inNs('addr', 'add', `${v4}/28`, 'dev', 'eth0');
      inNs('addr', 'add', `${v6}/124`, 'dev', 'eth0', 'nodad');
      inNs('link', 'set', 'lo', 'up');
      inNs('link', 'set', 'eth0', 'up');
      const mac = (JSON.parse(execFileSync('ip', ['-n', ns, '-json', 'link', 'show', 'eth0'], { encoding: 'utf8' })) as { address: string }[])[0]!.address;
      lab.hosts.push({ ns, v4, v6, mac });
      if (opts.lldp) {
        // lldpd needs a control socket of its own in each namespace.
        const socket = join(dir, `${ns}.lldpd.sock`);
        procs.push(spawn('ip', ['netns', 'exec', ns, 'lldpd', '-d', '-u', socket, '-I', 'eth0', '-S', 'Surveyor lab host'], { stdio: 'ignore' }));
        await lldpReady(socket);
        for (const conf of [['system', 'hostname', `lab-h${i}`], ['system', 'ip', 'management', 'pattern', v4], ['lldp', 'tx-interval', '1']]) execFileSync('lldpcli', ['-u', socket, 'configure', ...conf]);
      }
      if (spec.services.length === 0) continue;
      const args = spec.services.map((s) => {
        if (!s.startsWith('tls:')) return s;
        const cert = join(dir, `${ns}.crt`);
        const key = join(dir, `${ns}.key`);
        execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', key, '-out', cert, '-days', '30', '-subj', `/CN=${spec.cn ?? `${ns}.lab.test`}/O=Surveyor Lab`], { stdio: 'ignore' });
        return `${s}:${cert}:${key}`;
      });
      const p = spawn('ip', ['netns', 'exec', ns, process.execPath, SERVICES, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
      procs.push(p);
      await new Promise<void>((resolve, reject) => {
        let err = '';
        p.stderr!.on('data', (d: Buffer) => (err += d.toString()));
        p.stdout!.on('data', (d: Buffer) => d.toString().includes('ready') && resolve());
        p.once('exit', (code) => reject(new Error(`lab services in ${ns} exited with ${code}: ${err}`)));
      });
    }
    if (opts.lldp) {
      // And one here, on this side of each host's link, as the daemon's host runs it.
      lab.lldpSocket = join(dir, 'lldpd.sock');
      procs.push(spawn('lldpd', ['-d', '-u', lab.lldpSocket, '-I', `sv${id}v*`], { stdio: 'ignore' }));
      await lldpReady(lab.lldpSocket);
      execFileSync('lldpcli', ['-u', lab.lldpSocket, 'configure', 'lldp', 'tx-interval', '1']);
      for (let i = 0; i < 100; i++) {
        const seen = JSON.parse(execFileSync('lldpcli', ['-u', lab.lldpSocket, '-f', 'json', 'show', 'neighbors'], { encoding: 'utf8' })) as { lldp?: { interface?: unknown } };
        const n = seen.lldp?.interface;
        if ((Array.isArray(n) ? n.length : n ? Object.keys(n).length : 0) >= specs.length) break;
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    return lab;
  } catch (e) {
    lab.close();
    throw e;
  }
}

/**
 * `describe` for tests that need the lab and the programs `tools` (besides `ip` and `openssl`,
 * which every lab uses). Where the lab cannot be built or a program is missing they are skipped,
 * saying why (test/system-tools.ts); under CI (CI=true), which can build it, that is a failure.
 */
export function describeLab(name: string, body: () => void, tools: readonly Tool[] = []): void {
  const what = `the daemon's lab tests "${name}"`;
  let ok = haveTools(what, ['ip', 'openssl', 'ps', ...tools]);
  if (ok) {
    const support = labSupport();
    ok = support.ok || skipOrFail(what, support.why);
  }
  describe.skipIf(!ok)(name, body);
}

async function lldpReady(socket: string) {
  for (let i = 0; i < 100; i++) {
    try {
      execFileSync('lldpcli', ['-u', socket, 'show', 'chassis'], { stdio: 'ignore' });
      return;
    } catch {
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  throw new Error(`lldpd did not come up on ${socket}`);
}

/** An HTTP GET run inside a lab host's namespace (real traffic across the bridge). */
export function fetchFrom(ns: string, url: string): Promise<void> {
  const script = `require('http').get(${JSON.stringify(url)}, (r) => { r.resume(); r.on('end', () => process.exit(0)); }).on('error', (e) => { console.error(e.message); process.exit(1); })`;
  return new Promise((resolve, reject) => execFile('ip', ['netns', 'exec', ns, process.execPath, '-e', script], (err) => (err ? reject(err) : resolve())));
}

/** Whether an nmap process is running against `address` (seen in the process list). */
export function nmapRunningOn(address: string): boolean {
  return execFileSync('ps', ['-eo', 'args'], { encoding: 'utf8' }).split('\n').some((l) => l.includes('nmap') && l.includes(address));
}
