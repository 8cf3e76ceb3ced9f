import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { refreshHostSummaries } from '../src/inventory/host-summaries.js';
import { type TestApp, bearer, buildTestApp, login, seedMemberWithKey } from './helpers.js';
import { type Json, type Scanning, createNetwork, getScan, ingest, scanningOrg, startSession } from './scanning.js';

// Hosts at an operator's scale (issue 23): the search's notations (MAC, vendor, OS, partial
// address), gone hosts (only a completed session covering every address marks one gone; seen
// again, it is back), and a host's layer 2/3 detail with a switch's port map. Driven through HTTP
// as a daemon and an operator would.

let t: TestApp;
beforeAll(async () => {
  t = await buildTestApp();
});
afterAll(() => t.close());

/** Every host matching the query, walking the pages (2 a page, so the cursors are exercised). */
async function hosts(s: Scanning, query: string, limit = 2): Promise<Json[]> {
  const out: Json[] = [];
  let cursor: string | null = null;
  do {
    const res: Awaited<ReturnType<TestApp['app']['inject']>> = await t.app.inject({
      method: 'GET',
      url: `/api/v1/hosts?limit=${limit}${query}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      headers: bearer(s.api),
    });
    expect(res.statusCode, res.body).toBe(200);
    out.push(...res.json().data);
    cursor = res.json().nextCursor;
  } while (cursor);
  return out;
}
const names = async (s: Scanning, query: string) => (await hosts(s, query)).map((h) => h.hostname as string).sort();
const search = (s: Scanning, term: string) => names(s, `&search=${encodeURIComponent(term)}`);

describe('host search: names, vendor, OS, MACs in any notation, partial addresses (spec 2.3, issue 23)', () => {
  let s: Scanning;
  beforeAll(async () => {
    s = await scanningOrg(t);
    const sessionId = await startSession(t, s, await createNetwork(t, s, '10.0.0.0/8'));
    const host = (fp: string, hostname: string, vendor: string, os: string, mac: string, address: string, more: Json = {}) => ({
      fingerprint: fp, hostname, fqdn: `${hostname}.corp.example`, vendor, os, interfaces: [{ name: 'eth0', mac, addresses: [address] }], ...more,
    });
    await ingest(t, s.daemon, {
      sessionId,
      hosts: [
        host('fp-a', 'web-1', 'Dell Inc.', 'Ubuntu 22.04', 'aa:bb:cc:00:00:01', '10.1.0.5'),
        host('fp-b', 'web-2', 'Dell Inc.', 'Debian 12', 'aa:bb:cc:00:00:02', '10.1.0.77'),
        host('fp-c', 'db-1', 'HPE', 'Ubuntu 20.04', 'aa:bb:dd:00:00:03', '10.1.20.5'),
        host('fp-d', 'sw-core', 'Cisco', 'IOS 15.2', '00:1b:54:aa:bb:cc', '10.2.0.1'),
        host('fp-e', 'v6-host', 'Supermicro', 'FreeBSD 14', '3c:ec:ef:12:34:56', '2001:db8:5::10'),
      ],
      ips: [{ hostFingerprint: 'fp-e', address: '10.3.0.9', mac: '3c:ec:ef:99:99:99' }],
    });
  });

  it('matches a whole MAC in each common notation, case-insensitively', async () => {
    for (const term of ['aa:bb:cc:00:00:02', 'AA-BB-CC-00-00-02', 'aabb.cc00.0002', 'AABBCC000002', 'aa:bb:cc:00:00:02'.toUpperCase()]) {
      expect(await search(s, term), term).toEqual(['web-2']);
    }
  });

  it('matches a MAC seen on an address (not an interface) too', async () => {
    expect(await search(s, '3c-ec-ef-99-99-99')).toEqual(['v6-host']);
  });

  it('matches the start of a MAC in whole bytes, in each notation', async () => {
    expect(await search(s, 'aa:bb:cc')).toEqual(['web-1', 'web-2']);
    expect(await search(s, 'AA-BB')).toEqual(['db-1', 'web-1', 'web-2']);
    expect(await search(s, 'aabbcc')).toEqual(['web-1', 'web-2']);
    expect(await search(s, 'aabb.dd')).toEqual(['db-1']);
  });

  it('matches the start of the vendor or of the OS, case-insensitively', async () => {
    expect(await search(s, 'dell')).toEqual(['web-1', 'web-2']);
    expect(await search(s, 'Ubuntu')).toEqual(['db-1', 'web-1']);
    expect(await search(s, 'ubuntu 22')).toEqual(['web-1']);
    expect(await search(s, 'cisco')).toEqual(['sw-core']);
  });

  it('still matches the start of a hostname or FQDN, and nothing inside it', async () => {
    expect(await search(s, 'web')).toEqual(['web-1', 'web-2']);
    expect(await search(s, 'db-1.corp')).toEqual(['db-1']);
    expect(await search(s, 'core')).toEqual([]);
  });

  it('matches a partial dotted IPv4 address as whole octets: 10.1.0 is 10.1.0.0/24, never 10.1.20.x', async () => {
    expect(await search(s, '10.1.0')).toEqual(['web-1', 'web-2']);
    expect(await search(s, '10.1.0.')).toEqual(['web-1', 'web-2']);
    expect(await search(s, '10.1')).toEqual(['db-1', 'web-1', 'web-2']);
    expect(await search(s, '10.1.')).toEqual(['db-1', 'web-1', 'web-2']);
    expect(await search(s, '10.')).toEqual(['db-1', 'sw-core', 'v6-host', 'web-1', 'web-2']);
    expect(await search(s, '10.1.2')).toEqual([]);
  });

  it('matches an IPv6 prefix in whole groups', async () => {
    expect(await search(s, '2001:db8')).toEqual(['v6-host']);
    expect(await search(s, '2001:db8:5:')).toEqual(['v6-host']);
    expect(await search(s, '2001:db9')).toEqual([]);
  });

  it('keeps the address, CIDR and id rules', async () => {
    expect(await search(s, '10.1.0.77')).toEqual(['web-2']);
    expect(await search(s, '10.1.0.0/24')).toEqual(['web-1', 'web-2']);
    const web1 = (await hosts(s, '&search=web-1')).find((h) => h.hostname === 'web-1')!;
    expect(await search(s, web1.id)).toEqual(['web-1']);
  });

  it('pages a search with the keyset cursor (one host a page) and finds each match once', async () => {
    const one = await hosts(s, '&search=10.', 1);
    expect(one.map((h) => h.hostname).sort()).toEqual(['db-1', 'sw-core', 'v6-host', 'web-1', 'web-2']);
  });

  it('pages a partial address or a MAC prefix matching over 5,000 hosts (the walk over the page index) in insertion order, each once', async () => {
    const big = await scanningOrg(t);
    const o = big.org.organisationId;
    await sql`insert into hosts (organisation_id, fingerprint, hostname) select ${o}, 'bulk-' || g, 'bulk-' || g from generate_series(1, 5100) g`.execute(t.database.db);
    await sql`
      insert into host_addresses (organisation_id, host_id, address, mac)
      select ${o}, id, ('10.77.' || (seq % 250) || '.' || (seq / 250 + 1))::inet, ('02:77:00:00:' || lpad(to_hex(seq / 256), 2, '0') || ':' || lpad(to_hex(seq % 256), 2, '0'))::macaddr
      from hosts where organisation_id = ${o}`.execute(t.database.db);
    // Written behind the writers' backs: stored on the hosts as the writers store it.
    const ids = (await sql<{ id: string }>`select id from hosts where organisation_id = ${o}`.execute(t.database.db)).rows.map((r) => r.id);
    await refreshHostSummaries(t.database.db, o, ids);
    const walk = async (term: string) => {
      const got = await hosts(big, `&search=${encodeURIComponent(term)}`, 500);
      const ids = got.map((h) => h.id as string);
      expect(new Set(ids).size).toBe(ids.length);
      return got;
    };
    const byAddress = await walk('10.77');
    expect(byAddress).toHaveLength(5100);
    const seqOrder = (await sql<{ id: string }>`select id from hosts where organisation_id = ${o} order by seq`.execute(t.database.db)).rows.map((r) => r.id);
    expect(byAddress.map((h) => h.id)).toEqual(seqOrder);
    expect(await walk('02:77:00')).toHaveLength(5100);
    const in3 = (await sql<{ n: number }>`select count(*)::int as n from host_addresses where organisation_id = ${o} and address <<= '10.77.3.0/24'`.execute(t.database.db)).rows[0]!.n;
    expect(in3).toBeGreaterThan(0);
    expect(await walk('10.77.3')).toHaveLength(in3);
  }, 120_000); // 5,100 hosts walked three times, 500 a page: slow on PGlite on a busy machine

  it('answers every odd term that reads almost as an address or a MAC with a page, never a failure', async () => {
    const odd = ['::', '1:', 'ff:ff', '0.', '255.255.255.', '256.1', '01.2', 'ffff.ffff.ffff', 'ffff.ff', '2001:DB8:', 'a:b:c:d:e:f:1:2:3', 'aa:bb:cc:dd:ee:ff:00', 'aabbccddeeff00', '%_', '\\\\', '10.1.0.0/33', 'aa:b', 'abc'];
    for (const term of odd) {
      const res = await t.app.inject({ method: 'GET', url: `/api/v1/hosts?search=${encodeURIComponent(term)}`, headers: bearer(s.api) });
      expect(res.statusCode, `${term}: ${res.body}`).toBe(200);
    }
    expect(await search(s, '%_')).toEqual([]);
  });

  it('refuses a search shorter than 2 characters with 400 invalid_filter', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/api/v1/hosts?search=a', headers: bearer(s.api) });
    expect(res.statusCode).toBe(400);
    expect(res.json().code).toBe('invalid_filter');
  });

  it('never matches another organisation\'s hosts', async () => {
    const other = await scanningOrg(t);
    expect(await search(other, 'aa:bb:cc:00:00:02')).toEqual([]);
    expect(await search(other, 'dell')).toEqual([]);
    expect(await search(other, '10.1.0')).toEqual([]);
  });
});

describe('gone hosts: a completed session covering every address of a host that no longer finds it marks it gone (decisions.md "Scan sessions")', () => {
  const seen = (sessionId: string, who: string[], extra: Json = {}) => ({
    sessionId,
    hosts: who.map((h) => ({ fingerprint: `fp-${h}`, hostname: h })),
    ips: who.flatMap((h) => addressesOf[h]!.map((address) => ({ hostFingerprint: `fp-${h}`, address }))),
    ...extra,
  });
  const addressesOf: Record<string, string[]> = { a: ['10.4.0.10'], b: ['10.4.0.11'], both: ['10.4.0.12', '10.99.0.12'] };
  const goneOf = async (s: Scanning) => Object.fromEntries((await hosts(s, '', 500)).map((h) => [h.hostname, h.goneAt !== null]));

  async function afterFirstScan() {
    const s = await scanningOrg(t);
    const net = await createNetwork(t, s, '10.4.0.0/24');
    const first = await startSession(t, s, net);
    await ingest(t, s.daemon, seen(first, ['a', 'b', 'both'], { final: true }));
    expect(await goneOf(s)).toEqual({ a: false, b: false, both: false });
    return { s, net };
  }

  it('marks gone a host the second completed session did not find, not one with an address outside its CIDR, and brings it back when seen again', async () => {
    const { s, net } = await afterFirstScan();
    const second = await startSession(t, s, net);
    await ingest(t, s.daemon, seen(second, ['a']));
    expect(await goneOf(s)).toEqual({ a: false, b: false, both: false });
    await ingest(t, s.daemon, { sessionId: second, final: true });
    expect(await goneOf(s)).toEqual({ a: false, b: true, both: false });
    const b = (await hosts(s, '', 500)).find((h) => h.hostname === 'b')!;
    expect(Date.parse(b.goneAt)).toBeGreaterThanOrEqual(Date.parse(b.lastSeenAt));

    const third = await startSession(t, s, net);
    await ingest(t, s.daemon, seen(third, ['b']));
    expect(await goneOf(s)).toEqual({ a: false, b: false, both: false });
  });

  it('is seen again through an address alone (a batch naming the host only in ips)', async () => {
    const { s, net } = await afterFirstScan();
    const second = await startSession(t, s, net);
    await ingest(t, s.daemon, { ...seen(second, ['a']), final: true });
    expect((await goneOf(s)).b).toBe(true);
    const third = await startSession(t, s, net);
    await ingest(t, s.daemon, { sessionId: third, ips: [{ hostFingerprint: 'fp-b', address: '10.4.0.11' }] });
    expect((await goneOf(s)).b).toBe(false);
  });

  it('never marks a host gone for a session that is not completed (cancelled, or still running)', async () => {
    const { s, net } = await afterFirstScan();
    const second = await startSession(t, s, net);
    await ingest(t, s.daemon, seen(second, ['a']));
    expect((await getScan(t, s, second)).state).toBe('running');
    expect(await goneOf(s)).toEqual({ a: false, b: false, both: false });
    const cancel = await t.app.inject({ method: 'POST', url: `/api/v1/scans/${second}/cancel`, headers: bearer(s.api) });
    expect(cancel.statusCode, cancel.body).toBe(200);
    expect(await goneOf(s)).toEqual({ a: false, b: false, both: false });
  });

  it('never marks gone a host an overlapping session saw after this one started, even one that started before it', async () => {
    const { s, net } = await afterFirstScan();
    const narrow = await createNetwork(t, s, '10.4.0.0/25');
    // B (the narrow network) starts and sees b; A (the whole /24) starts after it.
    const b = await startSession(t, s, narrow);
    await ingest(t, s.daemon, seen(b, ['b']));
    const a = await startSession(t, s, net);
    await ingest(t, s.daemon, seen(a, ['a', 'both']));
    // B sees b again (another batch: a port of it), after A started; A then completes without b.
    await ingest(t, s.daemon, seen(b, ['b'], { ports: [{ fingerprint: 'fp-b', address: '10.4.0.11', protocol: 'tcp', number: 22, state: 'open' }] }));
    await ingest(t, s.daemon, { sessionId: a, final: true });
    expect(await goneOf(s)).toEqual({ a: false, b: false, both: false });
  });

  it('never marks a host gone when its address lies in the session\'s excluded ranges', async () => {
    const s = await scanningOrg(t);
    const net = await createNetwork(t, s, '10.4.0.0/24', { excludeCidrs: ['10.4.0.11/32'] });
    const first = await startSession(t, s, net);
    await ingest(t, s.daemon, seen(first, ['a', 'b'], { final: true }));
    const second = await startSession(t, s, net);
    await ingest(t, s.daemon, { ...seen(second, []), final: true });
    expect(await goneOf(s)).toEqual({ a: true, b: false });
  });

  it('filters with gone=exclude and gone=only (absent: every host), documented, with cursors bound to the filter', async () => {
    const { s, net } = await afterFirstScan();
    const second = await startSession(t, s, net);
    await ingest(t, s.daemon, { ...seen(second, ['a']), final: true });
    expect(await names(s, '')).toEqual(['a', 'b', 'both']);
    expect(await names(s, '&gone=exclude')).toEqual(['a', 'both']);
    expect(await names(s, '&gone=only')).toEqual(['b']);
    expect(await names(s, '&gone=only&search=10.4')).toEqual(['b']);
    expect(await names(s, '&gone=exclude&search=10.4.0.')).toEqual(['a', 'both']);
    const bad = await t.app.inject({ method: 'GET', url: '/api/v1/hosts?gone=maybe', headers: bearer(s.api) });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().code).toBe('invalid_filter');
    // A cursor of one filter is refused under another.
    const page = await t.app.inject({ method: 'GET', url: '/api/v1/hosts?gone=exclude&limit=1', headers: bearer(s.api) });
    const cursor = page.json().nextCursor as string;
    const other = await t.app.inject({ method: 'GET', url: `/api/v1/hosts?gone=only&limit=1&cursor=${encodeURIComponent(cursor)}`, headers: bearer(s.api) });
    expect(other.statusCode).toBe(400);
    expect(other.json().code).toBe('invalid_cursor');
  });

  it('logs a host as updated in change_log when it goes and when it comes back', async () => {
    const { s, net } = await afterFirstScan();
    const b = (await hosts(s, '', 500)).find((h) => h.hostname === 'b')!;
    const count = async () =>
      (await sql<{ n: number }>`select count(*)::int as n from change_log where organisation_id = ${s.org.organisationId} and entity_type = 'host' and entity_id = ${b.id} and action = 'updated'`.execute(t.database.db)).rows[0]!.n;
    const before = await count();
    const second = await startSession(t, s, net);
    await ingest(t, s.daemon, { ...seen(second, ['a']), final: true });
    expect(await count()).toBe(before + 1);
    const third = await startSession(t, s, net);
    await ingest(t, s.daemon, seen(third, ['b']));
    expect(await count()).toBe(before + 2);
  });

  it('counts hosts present and gone on the overview, present as the Hosts screen lists them by default (gone=exclude)', async () => {
    const { s, net } = await afterFirstScan();
    const second = await startSession(t, s, net);
    await ingest(t, s.daemon, { ...seen(second, ['a']), final: true });
    const owner = await login(t.app, s.org.ownerEmail);
    const res = await t.app.inject({ method: 'GET', url: '/api/v1/overview', headers: { cookie: owner.cookie } });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().hosts).toEqual({ present: (await hosts(s, '&gone=exclude', 500)).length, gone: 1 });
    expect(res.json().hosts.present).toBe(2);
  });
});

describe('a host\'s detail: interfaces, VLANs, LAGs, routes and a switch\'s port map (internal)', () => {
  let s: Scanning;
  let cookie: string;
  const byName: Record<string, string> = {};
  beforeAll(async () => {
    s = await scanningOrg(t);
    cookie = (await login(t.app, (await seedMemberWithKey(t.database, s.org, 'viewer', ['inventory:read'])).email)).cookie;
    const sessionId = await startSession(t, s, await createNetwork(t, s, '10.5.0.0/24'));
    const server = (n: number, port: string) => ({
      fingerprint: `fp-srv-${n}`, hostname: `srv-${n}`, interfaces: [{ name: 'eno1', mac: `00:16:3e:05:00:${String(n).padStart(2, '0')}`, addresses: [`10.5.0.${n}`] }],
      port,
    });
    const servers = [server(1, 'Gi1/0/10'), server(2, 'Gi1/0/2'), server(3, 'Gi1/0/1'), server(4, 'Te1/1/1')];
    await ingest(t, s.daemon, {
      sessionId,
      hosts: [
        {
          fingerprint: 'fp-sw', hostname: 'sw-access-1', vendor: 'Cisco',
          interfaces: [
            { name: 'Vlan10', mac: '00:1b:54:00:00:01', addresses: ['10.5.0.254'] },
            { name: 'Gi1/0/10', mac: '00:1b:54:00:00:0a' },
            { name: 'Gi1/0/2', mac: '00:1b:54:00:00:02' },
          ],
        },
        ...servers.map(({ port: _port, ...h }) => h),
      ],
      ips: [{ hostFingerprint: 'fp-sw', address: '10.5.0.254', mac: '00:1b:54:00:00:01' }],
      vlans: [
        { fingerprint: 'fp-sw', vlanId: 20, name: 'storage', tagged: ['Po1'], untagged: [] },
        { fingerprint: 'fp-sw', vlanId: 10, name: 'servers', tagged: ['Po1'], untagged: ['Gi1/0/1', 'Gi1/0/2'] },
      ],
      lagGroups: [{ fingerprint: 'fp-sw', name: 'Po1', protocol: 'lacp', members: ['Te1/1/10', 'Te1/1/2'] }],
      routes: [
        { fingerprint: 'fp-sw', destination: '0.0.0.0/0', nextHop: '10.5.0.1', interface: 'Vlan10', metric: 1 },
        { fingerprint: 'fp-sw', destination: '10.6.0.0/16', nextHop: '10.5.0.9', interface: 'Vlan10', metric: 20 },
      ],
      neighbors: [
        // By management address, by chassis MAC (Cisco dotted), by system name, and one by name alone.
        { fingerprint: 'fp-srv-1', localInterface: 'eno1', remoteChassisId: 'sw-access-1', remotePortId: 'Gi1/0/10', managementAddress: '10.5.0.254', protocol: 'lldp' },
        { fingerprint: 'fp-srv-2', localInterface: 'eno1', remoteChassisId: '001b.5400.0001', remotePortId: 'Gi1/0/2', protocol: 'cdp' },
        { fingerprint: 'fp-srv-3', localInterface: 'eno1', remoteChassisId: '00:1b:54:00:00:0a', remotePortId: 'Gi1/0/1', protocol: 'lldp' },
        { fingerprint: 'fp-srv-4', localInterface: 'eno2', remoteChassisId: 'x', remoteSystemName: 'SW-ACCESS-1', remotePortId: 'Te1/1/1', protocol: 'lldp' },
        // The switch's own view of a server is about the server, not the switch's port map.
        { fingerprint: 'fp-sw', localInterface: 'Gi1/0/10', remoteChassisId: '00:16:3e:05:00:01', remotePortId: 'eno1', managementAddress: '10.5.0.1', protocol: 'lldp' },
      ],
    });
    for (const h of await hosts(s, '', 500)) byName[h.hostname] = h.id;
  });
  const detail = (id: string, c = cookie) => t.app.inject({ method: 'GET', url: `/api/v1/hosts/${id}/detail`, headers: { cookie: c } });

  it('lists the interfaces in natural order with their MACs and the addresses seen with them', async () => {
    const res = await detail(byName['sw-access-1']!);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().interfaces.map((i: Json) => [i.name, i.mac, i.addresses])).toEqual([
      ['Gi1/0/2', '00:1b:54:00:00:02', []],
      ['Gi1/0/10', '00:1b:54:00:00:0a', []],
      ['Vlan10', '00:1b:54:00:00:01', ['10.5.0.254']],
    ]);
  });

  it('lists the VLANs by id with names and members, the LAG groups and the routes with the next hop\'s host', async () => {
    const d = (await detail(byName['sw-access-1']!)).json();
    expect(d.vlans.map((v: Json) => [v.vlanId, v.name, v.tagged, v.untagged])).toEqual([
      [10, 'servers', ['Po1'], ['Gi1/0/1', 'Gi1/0/2']],
      [20, 'storage', ['Po1'], []],
    ]);
    expect(d.lagGroups.map((l: Json) => [l.name, l.protocol, l.members])).toEqual([['Po1', 'lacp', ['Te1/1/2', 'Te1/1/10']]]);
    expect(d.routes.map((r: Json) => [r.destination, r.nextHop, r.nextHopHostId, r.interface, r.metric])).toEqual([
      ['0.0.0.0/0', '10.5.0.1', byName['srv-1'], 'Vlan10', 1],
      ['10.6.0.0/16', '10.5.0.9', null, 'Vlan10', 20],
    ]);
  });

  it('lists, on a switch, the hosts reporting being on its ports, sorted by port naturally', async () => {
    const d = (await detail(byName['sw-access-1']!)).json();
    expect(d.portMap.map((p: Json) => [p.port, p.hostname, p.localInterface, p.protocol])).toEqual([
      ['Gi1/0/1', 'srv-3', 'eno1', 'lldp'],
      ['Gi1/0/2', 'srv-2', 'eno1', 'cdp'],
      ['Gi1/0/10', 'srv-1', 'eno1', 'lldp'],
      ['Te1/1/1', 'srv-4', 'eno2', 'lldp'],
    ]);
    expect(d.portMap[0].hostId).toBe(byName['srv-3']);
    expect(d.portMap.every((p: Json) => p.goneAt === null)).toBe(true);
    expect(d.portMap[0].address).toBe('10.5.0.3');
  });

  it('answers empty lists for a host nothing was reported of', async () => {
    const d = (await detail(byName['srv-2']!)).json();
    expect(d).toMatchObject({ interfaces: [{ name: 'eno1' }], vlans: [], lagGroups: [], routes: [], portMap: [] });
  });

  it('answers 404 not_found for another organisation\'s host, and for no host at all', async () => {
    const other = await scanningOrg(t);
    const theirs = (await login(t.app, other.org.ownerEmail)).cookie;
    const res = await detail(byName['sw-access-1']!, theirs);
    expect(res.statusCode).toBe(404);
    expect(res.json().code).toBe('not_found');
    const none = await detail('00000000-0000-4000-8000-000000000000');
    expect(none.statusCode).toBe(404);
    expect(none.json().code).toBe('not_found');
  });

  it('refuses an API key with 401 unauthorized: the console\'s route takes a session', async () => {
    const res = await t.app.inject({ method: 'GET', url: `/api/v1/hosts/${byName['srv-1']}/detail`, headers: bearer(s.api) });
    expect(res.statusCode).toBe(401);
    expect(res.json().code).toBe('unauthorized');
  });
});
