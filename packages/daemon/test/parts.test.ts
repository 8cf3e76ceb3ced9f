import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { backoffMs } from '../src/http.js';
import { createLogger, withoutUserinfo } from '../src/log.js';
import { FlowBuffer, orient } from '../src/flows/collector.js';
import { TemplateCache, decodePacket } from '../src/flows/netflow.js';
import { neighboursFromJson0 } from '../src/scan/lldp.js';
import { isConfirmed, isPending, neighboursFromIpJson } from '../src/scan/neighbours.js';
import { liveHosts } from '../src/scan/scanner.js';
import { FIELDS, ipfix as ipfixPacket, record, set, template, v9 as v9Packet } from './export-packets.js';
import { toCpe23 } from '../src/scan/cpe.js';
import { localFactsFrom } from '../src/scan/local.js';
import { nmapArgs, parseNmapXml, platformCpes, scriptExpression } from '../src/scan/nmap.js';
import { topTcpPorts } from '../src/scan/ports.js';
import { printable } from '../src/scan/probe.js';
import { identify } from '../src/scan/signatures.js';
import { networkOf, targetsOf } from '../src/scan/targets.js';

describe('CPE 2.2 URIs (nmap) to CPE 2.3 formatted strings (NISTIR 7695)', () => {
  it.each([
    ['cpe:/a:openbsd:openssh:9.2p1', 'cpe:2.3:a:openbsd:openssh:9.2p1:*:*:*:*:*:*:*'],
    ['cpe:/o:linux:linux_kernel', 'cpe:2.3:o:linux:linux_kernel:*:*:*:*:*:*:*:*'],
    ['cpe:/a:apache:http_server:2.4.57', 'cpe:2.3:a:apache:http_server:2.4.57:*:*:*:*:*:*:*'],
    ['cpe:/a:microsoft:internet_explorer:8.0.6001:beta', 'cpe:2.3:a:microsoft:internet_explorer:8.0.6001:beta:*:*:*:*:*:*'],
    ['cpe:/a:hp:insight_diagnostics:7.4.0.1570::~~online~win2003~x64~', 'cpe:2.3:a:hp:insight_diagnostics:7.4.0.1570:*:*:*:online:win2003:x64:*'],
    ['cpe:/a:foo%21bar:baz', 'cpe:2.3:a:foo\\!bar:baz:*:*:*:*:*:*:*:*'],
    ['cpe:/a:Vendor:Product:1.0:-', 'cpe:2.3:a:vendor:product:1.0:-:*:*:*:*:*:*'],
    ['cpe:/h:cisco:router:1.0 2', 'cpe:2.3:h:cisco:router:1.0\\ 2:*:*:*:*:*:*:*'],
    ['cpe:2.3:a:openbsd:openssh:9.2p1:*:*:*:*:*:*:*', 'cpe:2.3:a:openbsd:openssh:9.2p1:*:*:*:*:*:*:*'],
  ])('%s -> %s', (uri, fs) => expect(toCpe23(uri)).toBe(fs));

  it.each(['', 'openssh', 'cpe:/x:a:b', 'cpe:/a:a:b:c:d:e:f:g', 'cpe:/a:a:b:%zz', 'cpe:/a:a:b:1::~bad~packing'])('refuses %j', (bad) => expect(toCpe23(bad)).toBeNull());
});

describe('nmap command line', () => {
  it('builds --script only from the four categories, always excluding external and broadcast', () => {
    expect(scriptExpression(['default'])).toBe('(default) and not (external or broadcast)');
    expect(scriptExpression(['vuln', 'default', 'safe', 'version'])).toBe('(default or safe or version or vuln) and not (external or broadcast)');
    // Names, paths and expressions from a job never reach nmap.
    expect(scriptExpression(['http-title', '/tmp/evil.nse', 'all', 'default or external', 'external'])).toBeUndefined();
    expect(scriptExpression([])).toBeUndefined();
  });

  it('runs without DNS, connect scan, version detection, XML to stdout, targets after --', () => {
    const args = nmapArgs({ tcpPorts: [80, 443], udpPorts: [], scripts: ['safe', '--script=evil'], family: 6, targets: ['2001:db8::1'] });
    expect(args).toEqual(['-n', '-Pn', '-sT', '-sV', '-6', '-T4', '--max-retries', '2', '--host-timeout', '15m', '--script', '(safe) and not (external or broadcast)', '--script-timeout', '2m', '-p', 'T:80,443', '-oX', '-', '--', '2001:db8::1']);
    expect(nmapArgs({ tcpPorts: [22], udpPorts: [161], scripts: [], family: 4, targets: ['10.0.0.1'] })).toEqual(
      expect.arrayContaining(['-sU', '-p', 'T:22,U:161']),
    );
    // OS detection only when asked; as another user than root nmap is told it holds raw-socket capabilities.
    const os = nmapArgs({ tcpPorts: [22], udpPorts: [], scripts: [], family: 4, targets: ['10.0.0.1'], os: true });
    expect(os.slice(0, 7)).toEqual(['-n', '-Pn', '-sT', '-sV', '-O', '--osscan-limit', ...(process.getuid?.() === 0 ? ['-T4'] : ['--privileged'])]);
    expect(nmapArgs({ tcpPorts: [22], udpPorts: [], scripts: [], family: 4, targets: ['10.0.0.1'], os: false })).not.toContain('-O');
  });

  it('parses hosts, open ports, services with CPE 2.3 and script output from -oX', () => {
    const xml = `<?xml version="1.0"?><nmaprun scanner="nmap" args="nmap -n -oX -"><host><status state="up"/><address addr="10.0.0.5" addrtype="ipv4"/><address addr="02:00:00:00:00:05" addrtype="mac" vendor="Acme"/><hostnames/>
      <ports><extraports state="closed" count="98"/>
      <port protocol="tcp" portid="22"><state state="open" reason="syn-ack"/><service name="ssh" product="OpenSSH" version="9.2p1 Debian 2+deb12u3" extrainfo="protocol 2.0" method="probed" conf="10"><cpe>cpe:/a:openbsd:openssh:9.2p1</cpe><cpe>cpe:/o:linux:linux_kernel</cpe></service></port>
      <port protocol="tcp" portid="443"><state state="open"/><service name="http" tunnel="ssl" method="probed" conf="10"/><script id="http-title" output="lab &amp; co"/></port>
      </ports></host></nmaprun>`;
    const [h] = parseNmapXml(xml);
    expect(h!.addresses).toEqual([{ addr: '10.0.0.5', type: 'ipv4' }, { addr: '02:00:00:00:00:05', type: 'mac', vendor: 'Acme' }]);
    expect(h!.ports).toEqual([
      { protocol: 'tcp', number: 22, state: 'open', scripts: [], service: { name: 'ssh', product: 'OpenSSH', version: '9.2p1 Debian 2+deb12u3', extrainfo: 'protocol 2.0', method: 'probed', confidence: 100, cpes: ['cpe:2.3:a:openbsd:openssh:9.2p1:*:*:*:*:*:*:*', 'cpe:2.3:o:linux:linux_kernel:*:*:*:*:*:*:*:*'] } },
      { protocol: 'tcp', number: 443, state: 'open', scripts: [{ id: 'http-title', output: 'lab & co' }], service: { name: 'http', tunnel: 'ssl', method: 'probed', confidence: 100, cpes: [] } },
    ]);
    expect(parseNmapXml('<nmaprun/>')).toEqual([]);
    // No OS detection ran: the platform is what service detection named (the SSH server's kernel).
    expect(h!.osCpes).toEqual([]);
    expect(platformCpes(h!)).toEqual(['cpe:2.3:o:linux:linux_kernel:*:*:*:*:*:*:*:*']);
  });

  it('takes the operating system and hardware CPEs of the best OS match, and of service detection, as the host\'s platform (issue 29)', () => {
    // The shape of nmap -O output for a Cisco switch (osmatch > osclass > cpe), its SSH server naming IOS too.
    const xml = `<?xml version="1.0"?><nmaprun><host><status state="up"/><address addr="10.0.0.9" addrtype="ipv4"/>
      <ports><port protocol="tcp" portid="22"><state state="open"/><service name="ssh" product="Cisco SSH" version="1.25" method="probed" conf="10"><cpe>cpe:/a:cisco:ssh:1.25</cpe><cpe>cpe:/o:cisco:ios</cpe></service></port></ports>
      <os><osmatch name="Cisco Catalyst 2960 switch (IOS 15.0)" accuracy="98"><osclass type="switch" vendor="Cisco" osfamily="IOS" osgen="15.X" accuracy="98"><cpe>cpe:/h:cisco:catalyst_2960</cpe><cpe>cpe:/o:cisco:ios:15</cpe></osclass></osmatch>
      <osmatch name="Cisco 2900 router" accuracy="90"><osclass type="router" vendor="Cisco" osfamily="IOS" accuracy="90"><cpe>cpe:/h:cisco:2900</cpe></osclass></osmatch></os>
      </host></nmaprun>`;
    const [h] = parseNmapXml(xml);
    expect(h!.os).toBe('Cisco Catalyst 2960 switch (IOS 15.0)');
    expect(h!.osCpes).toEqual(['cpe:2.3:h:cisco:catalyst_2960:*:*:*:*:*:*:*:*', 'cpe:2.3:o:cisco:ios:15:*:*:*:*:*:*:*']);
    // The second-best match is not the host's; an application CPE is a service's, not the platform's.
    expect(platformCpes(h!)).toEqual(['cpe:2.3:h:cisco:catalyst_2960:*:*:*:*:*:*:*:*', 'cpe:2.3:o:cisco:ios:15:*:*:*:*:*:*:*', 'cpe:2.3:o:cisco:ios:*:*:*:*:*:*:*:*']);
  });
});

describe('scan targets: cidr minus excludeCidrs', () => {
  it('sweeps an IPv4 range without its network and broadcast addresses, minus exclusions', () => {
    const t = targetsOf('192.0.2.0/29', ['192.0.2.4/31'], 1000);
    expect(t.addresses).toEqual(['192.0.2.1', '192.0.2.2', '192.0.2.3', '192.0.2.6']);
    expect(t.includes('192.0.2.5')).toBe(false);
    expect(t.includes('192.0.2.6')).toBe(true);
    expect(t.includes('192.0.2.8')).toBe(false);
    expect(t.includes('2001:db8::1')).toBe(false);
    expect(targetsOf('192.0.2.7/32', [], 10).addresses).toEqual(['192.0.2.7']);
    expect(targetsOf('192.0.2.6/31', [], 10).addresses).toEqual(['192.0.2.6', '192.0.2.7']);
  });

  it('sweeps a small IPv6 range, and leaves a wide one to the neighbour table', () => {
    const t = targetsOf('2001:db8::/126', ['2001:db8::2/128', '10.0.0.0/8'], 1000);
    expect(t.addresses).toEqual(['2001:db8::1', '2001:db8::3']);
    const wide = targetsOf('2001:db8::/64', [], 65536);
    expect(wide.addresses).toBeNull();
    expect(wide.includes('2001:db8::abcd')).toBe(true);
    expect(wide.includes('2001:db8:0:1::1')).toBe(false);
  });

  it('names the network of an interface address', () => {
    expect(networkOf('192.0.2.77', 24)).toBe('192.0.2.0/24');
    expect(networkOf('2001:db8:1:2:3:4:5:6', 64)).toBe('2001:db8:1:2::/64');
    expect(() => targetsOf('nonsense', [], 10)).toThrow('not a CIDR');
  });
});

describe('ports, signatures, banners, backoff', () => {
  it('ranks TCP ports as nmap does (most frequent first)', () => {
    expect(topTcpPorts(5)).toEqual([80, 23, 443, 21, 22]);
    expect(topTcpPorts(0)).toEqual([]);
    const many = topTcpPorts(2000);
    expect(new Set(many).size).toBe(2000);
  });

  it('identifies services from banners with CPE 2.3', () => {
    expect(identify('SSH-2.0-OpenSSH_8.4p1 Debian-5\r\n', false)).toMatchObject({ name: 'ssh', product: 'OpenSSH', version: '8.4p1', cpe: 'cpe:2.3:a:openbsd:openssh:8.4p1:*:*:*:*:*:*:*' });
    expect(identify('HTTP/1.1 200 OK\r\nServer: nginx/1.24.0\r\n\r\n', true)).toMatchObject({ name: 'https', product: 'nginx', version: '1.24.0', cpe: 'cpe:2.3:a:f5:nginx:1.24.0:*:*:*:*:*:*:*' });
    expect(identify('HTTP/1.0 404 Not Found\r\n\r\n', false)).toMatchObject({ name: 'http', signatureId: 'core:http' });
    expect(identify('220 mail.example.com ESMTP Postfix\r\n', false)).toMatchObject({ name: 'smtp' });
    expect(identify('\x00\x01garbage', false)).toBeUndefined();
    expect(printable(Buffer.from('SSH-2.0-x\x00\x1b[31m\r\n'))).toBe('SSH-2.0-x..[31m');
  });

  it('backs off exponentially with full jitter, capped', () => {
    expect(backoffMs(0, 500, 30_000, () => 1)).toBe(500);
    expect(backoffMs(3, 500, 30_000, () => 1)).toBe(4000);
    expect(backoffMs(20, 500, 30_000, () => 1)).toBe(30_000);
    expect(backoffMs(5, 500, 30_000, () => 0)).toBe(0);
    expect(backoffMs(2, 500, 30_000, () => 0.5)).toBe(1000);
  });
});

describe("the daemon host's own facts from iproute2 JSON", () => {
  it('reads interfaces, addresses, VLANs, LAG groups and routes', () => {
    // Shapes as `ip -json -d addr show` and `ip -json route show` print them (iproute2 6.x).
    const links = [
      { ifname: 'lo', link_type: 'loopback', address: '00:00:00:00:00:00', addr_info: [{ family: 'inet', local: '127.0.0.1', prefixlen: 8, scope: 'host' }] },
      { ifname: 'eno1', link_type: 'ether', address: '00:1B:21:0A:0B:0C', master: 'bond0', linkinfo: { info_slave_kind: 'bond' } },
      { ifname: 'eno2', link_type: 'ether', address: '00:1b:21:0a:0b:0c', master: 'bond0', linkinfo: { info_slave_kind: 'bond' } },
      { ifname: 'bond0', link_type: 'ether', address: '00:1b:21:0a:0b:0c', linkinfo: { info_kind: 'bond', info_data: { mode: '802.3ad' } }, addr_info: [{ family: 'inet', local: '10.1.0.5', prefixlen: 24, scope: 'global' }, { family: 'inet6', local: 'fe80::21b:21ff:fe0a:b0c', prefixlen: 64, scope: 'link' }] },
      { ifname: 'bond0.42', link: 'bond0', link_type: 'ether', address: '00:1b:21:0a:0b:0c', linkinfo: { info_kind: 'vlan', info_data: { protocol: '802.1Q', id: 42 } }, addr_info: [{ family: 'inet6', local: '2001:DB8:42::5', prefixlen: 64, scope: 'global' }] },
      { ifname: 'bond1', link_type: 'ether', address: '00:1b:21:0a:0b:0d', linkinfo: { info_kind: 'bond', info_data: { mode: 'active-backup' } } },
    ];
    const f = localFactsFrom('machine:x', links, [
      { dst: 'default', gateway: '10.1.0.1', dev: 'bond0' },
      { dst: '10.1.0.0/24', dev: 'bond0', metric: 100 },
      { dst: '10.9.9.9', gateway: '10.1.0.2', dev: 'bond0' },
      { dst: '10.255.0.0/16', type: 'blackhole' },
    ], [{ dst: 'default', gateway: '2001:db8:42::1', dev: 'bond0.42', metric: 1024 }]);
    expect(f.hosts).toEqual([{ fingerprint: 'machine:x', interfaces: [
      { name: 'eno1', mac: '00:1b:21:0a:0b:0c' },
      { name: 'eno2', mac: '00:1b:21:0a:0b:0c' },
      { name: 'bond0', mac: '00:1b:21:0a:0b:0c', addresses: ['10.1.0.5'] },
      { name: 'bond0.42', mac: '00:1b:21:0a:0b:0c', addresses: ['2001:db8:42::5'] },
      { name: 'bond1', mac: '00:1b:21:0a:0b:0d' },
    ] }]);
    expect(f.ips).toEqual([
      { hostFingerprint: 'machine:x', address: '10.1.0.5', family: 4, mac: '00:1b:21:0a:0b:0c' },
      { hostFingerprint: 'machine:x', address: '2001:db8:42::5', family: 6, mac: '00:1b:21:0a:0b:0c' },
    ]);
    expect(f.vlans).toEqual([{ fingerprint: 'machine:x', vlanId: 42, name: 'bond0.42', tagged: ['bond0'] }]);
    expect(f.lagGroups).toEqual([
      { fingerprint: 'machine:x', name: 'bond0', protocol: 'lacp', members: ['eno1', 'eno2'] },
      { fingerprint: 'machine:x', name: 'bond1', protocol: 'static', members: [] },
    ]);
    expect(f.routes).toEqual([
      { fingerprint: 'machine:x', destination: '0.0.0.0/0', nextHop: '10.1.0.1', interface: 'bond0' },
      { fingerprint: 'machine:x', destination: '10.1.0.0/24', interface: 'bond0', metric: 100 },
      { fingerprint: 'machine:x', destination: '10.9.9.9/32', nextHop: '10.1.0.2', interface: 'bond0' },
      { fingerprint: 'machine:x', destination: '::/0', nextHop: '2001:db8:42::1', interface: 'bond0.42', metric: 1024 },
    ]);
  });
});

describe('the flow buffer', () => {
  const flow = (srcIp: string, srcPort: number, dstIp: string, dstPort: number, extra: Partial<{ startMs: number; packets: number; bytes: number; protocol: number }> = {}) => ({
    srcIp, srcPort, dstIp, dstPort, protocol: 6, packets: 1, bytes: 100, startMs: Date.parse('2026-11-25T06:00:30Z'), source: 'netflow9' as const, ...extra,
  });

  it('points a conversation client to server (the lower port is the service)', () => {
    expect(orient(flow('10.0.0.2', 51000, '10.0.0.1', 443))).toEqual({ client: '10.0.0.2', server: '10.0.0.1', port: 443 });
    expect(orient(flow('10.0.0.1', 443, '10.0.0.2', 51000))).toEqual({ client: '10.0.0.2', server: '10.0.0.1', port: 443 });
    expect(orient(flow('10.0.0.9', 0, '10.0.0.1', 0, { protocol: 1 }))).toEqual({ client: '10.0.0.1', server: '10.0.0.9', port: 0 });
  });

  it('folds replies into requests per minute, and counts what does not fit as dropped until a delivery takes it', () => {
    const b = new FlowBuffer(2);
    b.add(flow('10.0.0.2', 51000, '10.0.0.1', 443, { packets: 3, bytes: 300 }));
    b.add(flow('10.0.0.1', 443, '10.0.0.2', 51000, { packets: 2, bytes: 5000 }));
    b.add(flow('10.0.0.2', 51001, '10.0.0.1', 443, { startMs: Date.parse('2026-11-25T06:01:10Z') }));
    b.add(flow('10.0.0.3', 51000, '10.0.0.1', 22)); // a third bucket: no room
    expect(b.size).toBe(2);
    const out = b.take();
    expect(out.dropped).toBe(1);
    expect(out.flows).toEqual([
      { bucketStart: '2026-11-25T06:00:00.000Z', srcIp: '10.0.0.2', dstIp: '10.0.0.1', dstPort: 443, protocol: 'tcp', packets: 5, bytes: 5300, source: 'netflow9' },
      { bucketStart: '2026-11-25T06:01:00.000Z', srcIp: '10.0.0.2', dstIp: '10.0.0.1', dstPort: 443, protocol: 'tcp', packets: 1, bytes: 100, source: 'netflow9' },
    ]);
    expect(b.take()).toEqual({ flows: [], dropped: 0 });
    // A failed delivery goes back, merged with what came meanwhile.
    b.add(flow('10.0.0.2', 51002, '10.0.0.1', 443, { packets: 1, bytes: 1 }));
    b.restore(out);
    expect(b.take()).toMatchObject({ dropped: 1, flows: [{ packets: 6, bytes: 5301 }, { packets: 1 }] });
  });
});

describe('host discovery: live hosts from probe answers and confirmed neighbour entries', () => {
  // As `ip -json neigh show` prints them (iproute2 6.x): no lladdr on FAILED/INCOMPLETE, `router` on routers.
  const table = JSON.stringify([
    { dst: '192.0.2.10', dev: 'br0', lladdr: '02:00:00:00:00:0a', state: ['STALE'] },
    { dst: '192.0.2.11', dev: 'br0', lladdr: '02:00:00:00:00:0B', state: ['REACHABLE'] },
    { dst: '192.0.2.12', dev: 'br0', lladdr: '02:00:00:00:00:0c', state: ['STALE'] },
    { dst: '192.0.2.13', dev: 'br0', lladdr: '02:00:00:00:00:0d', state: ['DELAY'] },
    { dst: '192.0.2.14', dev: 'br0', lladdr: '02:00:00:00:00:0e', state: ['PROBE'] },
    { dst: '192.0.2.15', dev: 'br0', state: ['FAILED'] },
    { dst: '192.0.2.16', dev: 'br0', state: ['INCOMPLETE'] },
    { dst: '192.0.2.17', dev: 'br0', lladdr: '02:00:00:00:00:11', state: ['PERMANENT'] },
    { dst: '192.0.2.18', dev: 'br0', lladdr: '02:00:00:00:00:12', state: ['REACHABLE'] },
    { dst: '198.51.100.1', dev: 'eth0', lladdr: '02:00:00:00:00:99', router: null, state: ['REACHABLE'] },
    { dst: '2001:DB8::1', dev: 'br0', lladdr: '02:00:00:00:00:61', router: null, state: ['REACHABLE'] },
  ]);

  it('reads iproute2 JSON: entries with a link-layer address, MACs lower-cased, addresses canonical', () => {
    const n = neighboursFromIpJson(table);
    expect(n.map((x) => x.address)).toEqual(['192.0.2.10', '192.0.2.11', '192.0.2.12', '192.0.2.13', '192.0.2.14', '192.0.2.17', '192.0.2.18', '198.51.100.1', '2001:db8::1']);
    expect(n[1]).toEqual({ address: '192.0.2.11', mac: '02:00:00:00:00:0b', dev: 'br0', state: ['REACHABLE'] });
  });

  it('a STALE (or DELAY, PROBE, PERMANENT) entry never makes a host live; it lends a host that answered its MAC', () => {
    const t = targetsOf('192.0.2.8/29', ['192.0.2.18/32'], 1000);
    // 192.0.2.12 answered a discovery probe; 192.0.2.11 answered only ARP (every port filtered).
    const hosts = liveHosts(t.addresses!, ['192.0.2.12'], neighboursFromIpJson(table), t.includes);
    expect(hosts).toEqual([
      { address: '192.0.2.11', mac: '02:00:00:00:00:0b', fingerprint: 'mac:02:00:00:00:00:0b' },
      { address: '192.0.2.12', mac: '02:00:00:00:00:0c', fingerprint: 'mac:02:00:00:00:00:0c' },
    ]);
    // A gone host whose entry is only remembered is not reported again.
    expect(liveHosts(t.addresses!, [], neighboursFromIpJson(table), t.includes).map((h) => h.address)).toEqual(['192.0.2.11']);
    expect(liveHosts(t.addresses!, ['192.0.2.9'], [], t.includes, (a) => (a === '192.0.2.9' ? 'machine:me' : undefined))).toEqual([{ address: '192.0.2.9', fingerprint: 'machine:me' }]);
  });

  it('confirmation and pending states', () => {
    const n = neighboursFromIpJson(table);
    expect(n.filter(isConfirmed).map((x) => x.address)).toEqual(['192.0.2.11', '192.0.2.18', '198.51.100.1', '2001:db8::1']);
    expect(n.filter(isPending).map((x) => x.address)).toEqual(['192.0.2.13', '192.0.2.14']);
  });
});

describe('LLDP/CDP neighbours from `lldpcli -f json0 show neighbors details`', () => {
  // Captured from lldpd 1.0.16: one neighbour (an LLDP peer), and two (LLDP, and CDPv2 from lldpd -cccc).
  const fixture = (name: string) => readFileSync(fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url)), 'utf8');

  it('one neighbour: chassis, port, name and the routable management address before the link-local one', () => {
    expect(neighboursFromJson0('machine:b', fixture('lldpcli-json0-one.json'))).toEqual([
      { fingerprint: 'machine:b', localInterface: 'eth0', remoteChassisId: '7e:e4:2f:bd:17:66', remotePortId: expect.stringMatching(/^([0-9a-f]{2}:){5}[0-9a-f]{2}$/), remoteSystemName: 'vm', managementAddress: '192.0.2.1', protocol: 'lldp' },
    ]);
  });

  it('several neighbours, LLDP and CDP', () => {
    expect(neighboursFromJson0('machine:a', fixture('lldpcli-json0-lldp-cdp.json'))).toEqual([
      { fingerprint: 'machine:a', localInterface: 'fxa0', remoteChassisId: 'c6:e1:0f:e3:c6:31', remotePortId: 'c6:e1:0f:e3:c6:31', remoteSystemName: 'lab-b', managementAddress: '192.0.2.2', protocol: 'lldp' },
      { fingerprint: 'machine:a', localInterface: 'fxa1', remoteChassisId: 'cisco-c', remotePortId: 'eth0', remoteSystemName: 'cisco-c', managementAddress: '192.0.2.3', protocol: 'cdp' },
    ]);
  });

  it('no neighbours', () => {
    expect(neighboursFromJson0('machine:a', '{"lldp": [{}]}')).toEqual([]);
    expect(neighboursFromJson0('machine:a', '{"lldp": []}')).toEqual([]);
  });
});

describe('NetFlow v9 / IPFIX templates', () => {
  const EXPORT = 1_795_000_000; // seconds
  const ipfix = (domain: number, ...sets: Buffer[]) => ipfixPacket(EXPORT, domain, ...sets);
  const v9 = (domain: number, ...sets: Buffer[]) => v9Packet(EXPORT, domain, ...sets);
  const data = (id: number, dstPort = 443) => set(id, record('10.0.0.2', '10.0.0.1', dstPort));

  it('decodes data records by the template of their exporter and domain', () => {
    const cache = new TemplateCache();
    expect(decodePacket(ipfix(1, set(2, template(256, FIELDS)), data(256)), 'a:1', cache)).toEqual([
      { srcIp: '10.0.0.2', dstIp: '10.0.0.1', srcPort: 51000, dstPort: 443, protocol: 6, packets: 3, bytes: 300, startMs: EXPORT * 1000, source: 'ipfix' },
    ]);
    expect(decodePacket(ipfix(2, data(256)), 'a:1', cache)).toEqual([]); // another domain: no template
    expect(decodePacket(ipfix(1, data(256)), 'b:1', cache)).toEqual([]); // another exporter
    expect(decodePacket(v9(7, set(0, template(300, FIELDS)), data(300)), 'a:1', cache)).toMatchObject([{ source: 'netflow9', dstPort: 443 }]);
  });

  it('IPFIX: a template record with no fields withdraws that template; one with the set id withdraws the domain', () => {
    const cache = new TemplateCache();
    decodePacket(ipfix(1, set(2, Buffer.concat([template(256, FIELDS), template(257, FIELDS)]))), 'a:1', cache);
    decodePacket(ipfix(2, set(2, template(256, FIELDS))), 'a:1', cache);
    expect(cache.size).toBe(3);
    decodePacket(ipfix(1, set(2, template(256, []))), 'a:1', cache);
    expect(cache.size).toBe(2);
    expect(decodePacket(ipfix(1, data(256), data(257)), 'a:1', cache)).toHaveLength(1);
    // All Templates Withdrawal (RFC 7011 8.1): template id 2 in a template set.
    decodePacket(ipfix(1, set(2, template(2, []))), 'a:1', cache);
    expect(decodePacket(ipfix(1, data(257)), 'a:1', cache)).toEqual([]);
    expect(decodePacket(ipfix(2, data(256)), 'a:1', cache)).toHaveLength(1);
    expect(cache.size).toBe(1);
  });

  it('NetFlow v9 has no withdrawal: a template without fields leaves the template in place', () => {
    const cache = new TemplateCache();
    decodePacket(v9(1, set(0, template(256, FIELDS))), 'a:1', cache);
    decodePacket(v9(1, set(0, template(256, []))), 'a:1', cache);
    expect(decodePacket(v9(1, data(256)), 'a:1', cache)).toHaveLength(1);
  });

  it('is bounded per exporter and domain and in total, forgetting the oldest template first', () => {
    const cache = new TemplateCache({ perDomain: 3, total: 5 });
    for (let id = 256; id < 262; id++) decodePacket(ipfix(1, set(2, template(id, FIELDS))), 'a:1', cache);
    expect(cache.size).toBe(3);
    const known = (exporter: string, domain: number, ids: number[]) => ids.filter((id) => decodePacket(ipfix(domain, data(id)), exporter, cache).length === 1);
    expect(known('a:1', 1, [256, 257, 258, 259, 260, 261])).toEqual([259, 260, 261]);
    // A redefinition makes a template the newest again.
    decodePacket(ipfix(1, set(2, template(259, FIELDS))), 'a:1', cache);
    // Three more from another exporter: the third finds the total (5) full and forgets the oldest, a:1's 260 (259 was redefined).
    for (const id of [256, 257, 258]) decodePacket(ipfix(1, set(2, template(id, FIELDS))), 'b:1', cache);
    expect(cache.size).toBe(5);
    expect(known('a:1', 1, [259, 260, 261])).toEqual([259, 261]);
    expect(known('b:1', 1, [256, 257, 258])).toEqual([256, 257, 258]);
  });
});

describe('logs', () => {
  it('take the userinfo out of any URL logged', () => {
    const lines: string[] = [];
    const log = createLogger('info', (l) => void lines.push(l));
    log.info('starting', { server: 'https://admin:s3cret@surveyor.example.com:8443/base', other: 'see http://u@h/x and ftp://a:b@c' });
    log.error('failed', { error: new TypeError('Request cannot be constructed from a URL that includes credentials: http://admin:s3cret@h/api') });
    expect(JSON.parse(lines[0]!)).toMatchObject({ server: 'https://surveyor.example.com:8443/base', other: 'see http://h/x and ftp://c' });
    expect(JSON.parse(lines[1]!).error.message).toBe('Request cannot be constructed from a URL that includes credentials: http://h/api');
    expect(lines.join('')).not.toContain('s3cret');
    expect(withoutUserinfo('https://surveyor.example.com/a@b')).toBe('https://surveyor.example.com/a@b');
  });
});
