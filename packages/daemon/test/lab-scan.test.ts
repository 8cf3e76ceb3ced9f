import { execFileSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { haveTools } from '../../../test/system-tools.js';
import { createLogger } from '../src/log.js';
import { type Batch, runNetworkScan } from '../src/scan/scanner.js';
import { findExecutable } from '../src/system.js';
import { type Lab, buildLab, describeLab, nmapRunningOn } from './lab.js';

// The daemon's scanner against real hosts: network namespaces with real services, real nmap.

const scanConfig = { concurrency: 512, connectTimeoutMs: 1000, maxSweepAddresses: 4096, batchHosts: 2 };

function job(cidr: string, opts: { nmap?: boolean; scripts?: ('default' | 'safe' | 'version' | 'vuln')[]; top?: number; exclude?: string[] } = {}) {
  return {
    kind: 'network' as const,
    sessionId: '00000000-0000-4000-8000-000000000001',
    target: { cidr, excludeCidrs: opts.exclude ?? [], topPortsTcp: opts.top ?? 20, topPortsUdp: 0, nmap: { enabled: opts.nmap ?? false, scripts: opts.scripts ?? [] } },
  };
}

async function scan(j: ReturnType<typeof job>, signal = new AbortController().signal, nmap: string | null = null, localFingerprint?: string, nmapOs = false) {
  const batches: Batch[] = [];
  const logs: string[] = [];
  const degraded: string[] = [];
  const result = await runNetworkScan(j, {
    config: scanConfig,
    nmap,
    nmapOs,
    log: createLogger('debug', (l) => void logs.push(l)),
    signal,
    send: async (b) => void batches.push(structuredClone(b)),
    degrade: (r) => void degraded.push(r),
    ...(localFingerprint ? { localFingerprint } : {}),
  });
  return { batches, logs, degraded, result };
}

describeLab('scanner on the lab', () => {
  let lab: Lab;
  beforeAll(async () => {
    lab = await buildLab([{ services: ['http:80', 'tls:443', 'ssh:22'], cn: 'web.lab.test' }, { services: ['http:8080'] }, { services: [] }]);
  });
  afterAll(() => lab?.close());

  it('finds the lab hosts over IPv4 with its own connect scan, streams batches with hostsTotal from the first, final on the last', async () => {
    const { batches } = await scan(job(lab.v4Cidr));
    const [web, alt, quiet] = lab.hosts;
    const first = batches[0]!;
    // The bridge's own address (this machine) answers too.
    const found = first.ips!.map((i) => i.address).sort();
    expect(found).toEqual([lab.v4Cidr.replace('.0/28', '.1'), web!.v4, alt!.v4, quiet!.v4].sort());
    for (const b of batches) expect(b.stats.hostsTotal).toBe(4);
    expect(batches.map((b) => b.final ?? false)).toEqual(batches.map((_, i) => i === batches.length - 1));
    expect(batches.at(-1)!.stats.hostsScanned).toBe(4);
    // MACs from the neighbour table identify the lab hosts.
    const byAddr = new Map(first.ips!.map((i) => [i.address, i]));
    expect(byAddr.get(web!.v4)?.mac).toBe(web!.mac);
    expect(byAddr.get(web!.v4)?.hostFingerprint).toBe(`mac:${web!.mac}`);

    const ports = batches.flatMap((b) => b.ports ?? []);
    const open = (addr: string) => ports.filter((p) => p.address === addr).map((p) => p.number).sort((x, y) => x - y);
    expect(open(web!.v4)).toEqual([22, 80, 443]);
    expect(open(alt!.v4)).toEqual([8080]);
    expect(open(quiet!.v4)).toEqual([]);
    expect(ports.find((p) => p.address === web!.v4 && p.number === 22)?.banner).toBe('SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u3');
    expect(ports.find((p) => p.address === web!.v4 && p.number === 80)?.banner).toMatch(/^HTTP\/1\.1 200 OK/);

    const services = batches.flatMap((b) => b.services ?? []);
    expect(services.find((s) => s.address === web!.v4 && s.port === 22)).toMatchObject({ signatureSource: 'core', name: 'ssh', product: 'OpenSSH', version: '9.2p1', cpe: 'cpe:2.3:a:openbsd:openssh:9.2p1:*:*:*:*:*:*:*' });
    expect(services.find((s) => s.address === web!.v4 && s.port === 443)).toMatchObject({ name: 'https' });

    const tls = batches.flatMap((b) => b.tls ?? []);
    expect(tls).toHaveLength(1);
    expect(tls[0]).toMatchObject({ address: web!.v4, port: 443, subject: 'CN=web.lab.test, O=Surveyor Lab', issuer: 'CN=web.lab.test, O=Surveyor Lab' });
    expect(tls[0]!.chainPem![0]).toMatch(/^-----BEGIN CERTIFICATE-----/);
    expect(tls[0]!.sha256).toMatch(/^[0-9a-f]{64}$/);
  });

  it('scans IPv6 and leaves out the excluded ranges', async () => {
    const [web, alt] = lab.hosts;
    const { batches } = await scan(job(lab.v6Cidr, { exclude: [`${alt!.v6}/128`] }));
    const found = batches[0]!.ips!.map((i) => i.address);
    expect(found).toContain(web!.v6);
    expect(found).not.toContain(alt!.v6);
    expect(batches[0]!.ips!.every((i) => i.family === 6)).toBe(true);
    const ports = batches.flatMap((b) => b.ports ?? []).filter((p) => p.address === web!.v6).map((p) => p.number).sort((x, y) => x - y);
    expect(ports).toEqual([22, 80, 443]);
  });

  it("counts its own address in the range as the daemon host, and sends that host's interfaces and routes with the first batch", async () => {
    const { batches } = await scan(job(lab.v4Cidr), undefined, null, 'machine:test');
    const first = batches[0]!;
    const bridgeAddress = lab.v4Cidr.replace('.0/28', '.1');
    expect(first.ips!.find((i) => i.address === bridgeAddress)?.hostFingerprint).toBe('machine:test');
    const self = first.hosts!.filter((h) => h.fingerprint === 'machine:test');
    expect(self).toHaveLength(1);
    const bridge = self[0]!.interfaces!.find((i) => i.addresses?.includes(bridgeAddress))!;
    expect(bridge.name).toMatch(/^svbr/);
    expect(first.routes).toContainEqual(expect.objectContaining({ fingerprint: 'machine:test', destination: lab.v4Cidr, interface: bridge.name }));
    expect(first.routes).toContainEqual(expect.objectContaining({ fingerprint: 'machine:test', destination: lab.v6Cidr, interface: bridge.name }));
    expect(first.stats.hostsTotal).toBe(4);
  });

  describe.skipIf(!haveTools('the lab scans with nmap', ['nmap']))('with the real nmap', () => {
    it('runs the real nmap when the job enables it: services with product, version and CPE 2.3, and the OS CPE of its OS detection', async () => {
      const nmap = findExecutable('nmap');
      const [web] = lab.hosts;
      const { batches, logs, degraded } = await scan(job(`${web!.v4}/32`, { nmap: true, scripts: ['default'] }), undefined, nmap, undefined, true);
      expect(degraded).toEqual([]);
      const ran = logs.map((l) => JSON.parse(l)).find((l) => l.msg === 'running nmap');
      expect(ran.args).toEqual(expect.arrayContaining(['-n', '-sT', '-sV', '-O', '--osscan-limit', '--script', '(default) and not (external or broadcast)', '-oX', '-']));
      // The lab's hosts are Linux network namespaces: nmap's OS detection names the kernel, sent as
      // the host's platform CPE (NVD's AND configurations ask for it).
      expect(batches.flatMap((b) => b.hosts ?? []).flatMap((h) => h.cpes ?? [])).toEqual(expect.arrayContaining([expect.stringMatching(/^cpe:2\.3:o:linux:linux_kernel:/)]));
      const services = batches.flatMap((b) => b.services ?? []);
      const ssh = services.find((s) => s.port === 22)!;
      expect(ssh).toMatchObject({ signatureSource: 'nmap', name: 'ssh', product: 'OpenSSH', vendor: 'openbsd' });
      expect(ssh.version).toMatch(/^9\.2p1/);
      expect(ssh.cpe).toBe('cpe:2.3:a:openbsd:openssh:9.2p1:*:*:*:*:*:*:*');
      expect(services.find((s) => s.port === 80)?.name).toBe('http');
      // Certificates are the daemon's own capture, nmap or not.
      expect(batches.flatMap((b) => b.tls ?? []).map((t) => t.port)).toEqual([443]);
    }, 120_000);

    it('stops at a cancel: nmap is killed and no final batch is sent', async () => {
      const [web] = lab.hosts;
      const abort = new AbortController();
      const batches: Batch[] = [];
      const run = runNetworkScan(job(`${web!.v4}/32`, { nmap: true, scripts: ['default'], top: 100 }), {
        config: scanConfig,
        nmap: findExecutable('nmap'),
        // Cancel once nmap runs (the port scan takes seconds there).
        log: createLogger('debug', (l) => {
          if (JSON.parse(l).msg === 'running nmap') setTimeout(() => abort.abort(), 500);
        }),
        signal: abort.signal,
        send: async (b) => void batches.push(b),
        degrade: () => {},
      });
      await expect(run).rejects.toThrow('cancelled');
      expect(batches).toHaveLength(1);
      expect(batches[0]!.final).toBe(false);
      await expect.poll(() => nmapRunningOn(web!.v4)).toBe(false);
    });
  });

  it('does not report again a gone host whose neighbour entry the kernel still remembers (STALE)', async () => {
    const [web, alt, quiet] = lab.hosts;
    const dev = (JSON.parse(execFileSync('ip', ['-json', 'route', 'get', quiet!.v4], { encoding: 'utf8' })) as { dev: string }[])[0]!.dev;
    execFileSync('ip', ['-n', quiet!.ns, 'link', 'set', 'eth0', 'down']);
    try {
      // What a host gone a while ago leaves behind: its MAC, remembered as STALE.
      execFileSync('ip', ['neigh', 'replace', quiet!.v4, 'lladdr', quiet!.mac, 'dev', dev, 'nud', 'stale']);
      const { batches } = await scan(job(lab.v4Cidr, { top: 5 }));
      const found = batches[0]!.ips!.map((i) => i.address);
      expect(found).toEqual(expect.arrayContaining([web!.v4, alt!.v4]));
      expect(found).not.toContain(quiet!.v4);
    } finally {
      execFileSync('ip', ['-n', quiet!.ns, 'link', 'set', 'eth0', 'up']);
    }
  }, 60_000);
});
