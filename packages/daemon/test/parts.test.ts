import { describe, expect, it } from 'vitest';
import { backoffMs } from '../src/http.js';
import { FlowBuffer, orient } from '../src/flows/collector.js';
import { toCpe23 } from '../src/scan/cpe.js';
import { localFactsFrom } from '../src/scan/local.js';
import { nmapArgs, parseNmapXml, scriptExpression } from '../src/scan/nmap.js';
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
