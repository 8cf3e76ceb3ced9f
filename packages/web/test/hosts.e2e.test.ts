import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { seedMemberWithKey } from '../../server/test/helpers.js';
import { type Json, type Scanning, createNetwork, ingest, onlineDaemon, startSession } from '../../server/test/scanning.js';
import { type Console, POLL, haveChromium, heading, nav, ownerPage, ownerWithPassword, repoRoot, shot, startConsole } from './harness.js';

// Hosts at an operator's scale (issue 23), end to end: 300 servers and a core switch a daemon
// reported; a second completed scan no longer finds a dozen of them. The operator searches by MAC
// in two notations, by vendor and by the start of an address; sees the gone hosts hidden, then
// shown; reads the switch's interfaces, VLANs, LAG groups, routes and port map.

const N = 300;
const VENDORS = ['Dell Inc.', 'HPE', 'Supermicro', 'Lenovo'];
const OSES = ['Ubuntu 22.04', 'Debian 12', 'Rocky Linux 9', 'Windows Server 2022'];
const pad = (n: number) => String(n).padStart(3, '0');
const hex = (n: number) => n.toString(16).padStart(2, '0');
const macOf = (n: number) => `52:54:00:10:${hex(n >> 8)}:${hex(n & 0xff)}`;
const addressOf = (n: number) => `10.20.${Math.floor((n - 1) / 200)}.${((n - 1) % 200) + 10}`;
/** Hosts the second scan no longer finds. */
const GONE = new Set([7, 19, 33, 58, 101, 150, 177, 203, 230, 251, 275, 299]);

function server(n: number): Json {
  return {
    fingerprint: `fp-srv-${n}`, hostname: `srv-${pad(n)}`, fqdn: `srv-${pad(n)}.dc1.example.net`, vendor: VENDORS[n % 4], os: OSES[(n >> 2) % 4], deviceType: 'server',
    interfaces: [{ name: 'eno1', mac: macOf(n), addresses: [addressOf(n)] }],
  };
}

const SWITCH: Json = {
  fingerprint: 'fp-sw', hostname: 'sw-core-1', fqdn: 'sw-core-1.dc1.example.net', vendor: 'Cisco', os: 'IOS-XE 17.9', deviceType: 'switch',
  interfaces: [
    { name: 'Vlan20', mac: '00:1b:54:c0:00:01', addresses: ['10.20.0.1'] },
    ...Array.from({ length: 12 }, (_, i) => ({ name: `Gi1/0/${i + 1}`, mac: `00:1b:54:c0:01:${hex(i + 1)}` })),
    { name: 'Te1/1/1', mac: '00:1b:54:c0:02:01' },
    { name: 'Te1/1/2', mac: '00:1b:54:c0:02:02' },
  ],
};

function batch(sessionId: string, servers: number[], final: boolean): Json {
  return {
    sessionId,
    final,
    hosts: [SWITCH, ...servers.map(server)],
    ips: [{ hostFingerprint: 'fp-sw', address: '10.20.0.1', mac: '00:1b:54:c0:00:01' }],
    vlans: [
      { fingerprint: 'fp-sw', vlanId: 20, name: 'servers-dc1', tagged: ['Po1'], untagged: Array.from({ length: 12 }, (_, i) => `Gi1/0/${i + 1}`) },
      { fingerprint: 'fp-sw', vlanId: 30, name: 'storage', tagged: ['Po1'], untagged: [] },
      { fingerprint: 'fp-sw', vlanId: 99, name: 'mgmt', tagged: ['Po1', 'Gi1/0/12'], untagged: [] },
    ],
    lagGroups: [{ fingerprint: 'fp-sw', name: 'Po1', protocol: 'lacp', members: ['Te1/1/1', 'Te1/1/2'] }],
    routes: [
      { fingerprint: 'fp-sw', destination: '0.0.0.0/0', nextHop: '10.20.0.254', interface: 'Vlan20', metric: 1 },
      { fingerprint: 'fp-sw', destination: '10.30.0.0/16', nextHop: addressOf(1), interface: 'Vlan20', metric: 20 },
      { fingerprint: 'fp-sw', destination: '10.20.0.0/22', interface: 'Vlan20', metric: 0 },
    ],
    // Servers 1..12 report the switch (its management address) on ports Gi1/0/1..12.
    neighbors: servers.filter((n) => n <= 12).map((n) => ({
      fingerprint: `fp-srv-${n}`, localInterface: 'eno1', remoteChassisId: '00:1b:54:c0:00:01', remotePortId: `Gi1/0/${n}`, remoteSystemName: 'sw-core-1',
      managementAddress: '10.20.0.1', protocol: n % 3 === 0 ? 'cdp' : 'lldp',
    })),
  };
}

/** What the screen shows now (not the whole page): a phone's first look. */
const screen = (p: Page, name: string) => p.screenshot({ path: path.join(repoRoot, 'test-output/console', `${name}.png`) });
const table = (p: Page, name: string) => p.getByRole('table', { name, exact: true });
const firstColumn = (p: Page, name: string) => table(p, name).locator('tbody tr td:first-child').allTextContents();

async function searchFor(p: Page, term: string) {
  await p.getByLabel('Search').fill(term);
  await p.waitForURL((u) => u.searchParams.get('search') === term);
}

describe.skipIf(!haveChromium)('hosts at an operator\'s scale in Chromium', () => {
  let c: Console;

  beforeAll(async () => {
    c = await startConsole();
    await ownerWithPassword(c);
    const api = (await seedMemberWithKey(c.t.database, c.org, 'editor', ['scan:run', 'inventory:write', 'inventory:read'])).token;
    const daemon = await onlineDaemon(c.t, c.org, { networkCidrs: ['10.20.0.0/22'] });
    const s: Scanning = { org: c.org, api, daemon, siteId: null };
    const net = await createNetwork(c.t, s, '10.20.0.0/22');
    const all = Array.from({ length: N }, (_, i) => i + 1);
    await ingest(c.t, daemon, batch(await startSession(c.t, s, net), all, true));
    await ingest(c.t, daemon, batch(await startSession(c.t, s, net), all.filter((n) => !GONE.has(n)), true));
  });
  afterAll(() => c?.close());

  it('an operator searches 300 hosts by MAC, vendor and address, sees the gone ones hidden then shown, and reads a switch', async () => {
    const p = await ownerPage(c);
    await p.setViewportSize({ width: 1440, height: 900 });

    // The overview counts the hosts present, as the Hosts screen lists them.
    const present = N + 1 - GONE.size;
    const hostsFigure = p.locator('li.figure').filter({ has: p.locator('.figure-label', { hasText: /^hosts$/i }) });
    await hostsFigure.locator('.figure-value', { hasText: String(present) }).waitFor();
    expect(await hostsFigure.locator('.figure-hint').textContent()).toBe(`${GONE.size} gone`);

    await nav(p, 'Hosts').click();
    await heading(p, 'Hosts');
    const hint = await p.getByLabel('Search').getAttribute('aria-describedby');
    expect(await p.locator(`[id="${hint}"]`).textContent()).toContain('a MAC in any notation');
    await table(p, 'Hosts').locator('tbody tr').first().waitFor();
    await shot(p, 'hosts-01-list-1440');

    // A MAC in two notations finds the one host.
    await searchFor(p, macOf(123));
    await expect.poll(() => firstColumn(p, 'Hosts'), POLL).toEqual(['srv-123']);
    await searchFor(p, macOf(123).toUpperCase().replace(/:/g, '-'));
    await expect.poll(() => firstColumn(p, 'Hosts'), POLL).toEqual(['srv-123']);
    await searchFor(p, '5254.0010.007b');
    await expect.poll(() => firstColumn(p, 'Hosts'), POLL).toEqual(['srv-123']);
    await shot(p, 'hosts-02-by-mac');

    // The vendor: every Supermicro host present (n % 4 === 2), none gone.
    await searchFor(p, 'supermicro');
    const supermicro = Array.from({ length: N }, (_, i) => i + 1).filter((n) => n % 4 === 2 && !GONE.has(n)).map((n) => `srv-${pad(n)}`);
    await expect.poll(async () => (await firstColumn(p, 'Hosts')).sort(), POLL).toEqual(supermicro);
    expect(new Set(await table(p, 'Hosts').locator('tbody tr td:nth-child(4)').allTextContents())).toEqual(new Set(['Supermicro']));

    // The start of an address in whole octets: 10.20.1 is 10.20.1.0/24 (hosts 201..300), never 10.20.10.x.
    await searchFor(p, '10.20.1');
    const second = Array.from({ length: 100 }, (_, i) => i + 201).filter((n) => !GONE.has(n)).map((n) => `srv-${pad(n)}`);
    await expect.poll(async () => (await firstColumn(p, 'Hosts')).sort(), POLL).toEqual(second);
    await shot(p, 'hosts-03-by-address');

    // A gone host is hidden by default, and says so; shown with "Show gone hosts", marked gone.
    await searchFor(p, 'srv-177');
    await p.getByText('No host matches “srv-177”. Gone hosts are hidden:').waitFor();
    await p.getByRole('button', { name: 'Show gone hosts' }).click();
    await p.waitForURL((u) => u.searchParams.get('gone') === '1');
    const row = table(p, 'Hosts, gone ones included').getByRole('row').filter({ hasText: 'srv-177' });
    await row.waitFor();
    expect(await row.locator('.host-gone').textContent()).toMatch(/^gone \d+ s ago$/);
    expect(await row.getAttribute('class')).toContain('gone');
    expect(await p.getByLabel('Show gone hosts').isChecked()).toBe(true);
    await searchFor(p, 'srv-0');
    await expect.poll(async () => (await firstColumn(p, 'Hosts, gone ones included')).length, POLL).toBe(99);
    expect(await table(p, 'Hosts, gone ones included').locator('.host-gone').count()).toBe([7, 19, 33, 58].length);
    await shot(p, 'hosts-04-gone-shown');
    // The box follows the URL, which the router updates in a transition: click, then wait for the URL
    // (`uncheck()` reads the box right after the click and fails when the transition is still pending).
    await p.getByLabel('Show gone hosts').click();
    await p.waitForURL((u) => !u.searchParams.has('gone'));
    await expect.poll(() => p.getByLabel('Show gone hosts').isChecked(), POLL).toBe(false);
    await expect.poll(async () => (await firstColumn(p, 'Hosts')).length, POLL).toBe(99 - 4);

    // A gone host's page says so.
    await p.goto('/hosts?search=srv-177&gone=1');
    await table(p, 'Hosts, gone ones included').getByRole('link', { name: 'srv-177' }).click();
    await heading(p, 'srv-177');
    await p.getByText(/^Gone since \d+ s ago: a completed scan covering all its addresses no longer found it/).waitFor();
    await shot(p, 'hosts-04b-gone-host');

    // The switch: interfaces in natural order, VLANs with names, the LAG, routes and its port map.
    await p.goto('/hosts');
    await searchFor(p, 'cisco');
    await table(p, 'Hosts').getByRole('link', { name: 'sw-core-1' }).click();
    await heading(p, 'sw-core-1');
    await table(p, 'Interfaces of this host').locator('tbody tr').first().waitFor();
    const interfaces = await firstColumn(p, 'Interfaces of this host');
    expect(interfaces).toEqual([...Array.from({ length: 12 }, (_, i) => `Gi1/0/${i + 1}`), 'Te1/1/1', 'Te1/1/2', 'Vlan20']);
    expect(await table(p, 'Interfaces of this host').getByRole('row').filter({ hasText: 'Vlan20' }).textContent()).toContain('10.20.0.1');
    const vlans = table(p, 'VLANs of this host');
    expect(await vlans.locator('tbody tr td:nth-child(2)').allTextContents()).toEqual(['servers-dc1', 'storage', 'mgmt']);
    expect(await vlans.getByRole('row').filter({ hasText: 'mgmt' }).textContent()).toContain('Gi1/0/12, Po1');
    const lag = table(p, 'Link aggregation groups of this host').getByRole('row').filter({ hasText: 'Po1' });
    expect(await lag.textContent()).toContain('LACP');
    expect(await lag.textContent()).toContain('Te1/1/1, Te1/1/2');
    const routes = table(p, 'Routes of this host');
    expect(await routes.locator('tbody tr td:first-child').allTextContents()).toEqual(['0.0.0.0/0', '10.20.0.0/22', '10.30.0.0/16']);
    expect(await routes.getByRole('row').filter({ hasText: '10.30.0.0/16' }).getByRole('link', { name: addressOf(1) }).count()).toBe(1);
    expect(await routes.getByRole('row').filter({ hasText: '10.20.0.0/22' }).textContent()).toContain('direct');
    const ports = table(p, "Hosts on this host's ports");
    expect(await ports.locator('tbody tr td:first-child').allTextContents()).toEqual(Array.from({ length: 12 }, (_, i) => `Gi1/0/${i + 1}`));
    expect(await ports.locator('tbody tr td:nth-child(2)').allTextContents()).toEqual(Array.from({ length: 12 }, (_, i) => `srv-${pad(i + 1)}`));
    expect(await ports.getByRole('row').filter({ hasText: 'Gi1/0/3' }).textContent()).toContain('CDP');
    // srv-007 is gone: its link stays as last reported, marked.
    expect(await ports.getByRole('row').filter({ hasText: 'srv-007' }).locator('.host-gone').count()).toBe(1);
    expect(await ports.locator('.host-gone').count()).toBe(1);
    await shot(p, 'hosts-05-switch-1440');

    // Narrow screen: the list and the switch still read.
    await p.setViewportSize({ width: 390, height: 844 });
    await shot(p, 'hosts-06-switch-390');
    await ports.scrollIntoViewIfNeeded();
    await screen(p, 'hosts-06-switch-390-port-map');
    await p.goto('/hosts?search=10.20.0');
    await table(p, 'Hosts').locator('tbody tr').first().waitFor();
    await shot(p, 'hosts-07-list-390');
    await screen(p, 'hosts-07-list-390-top');

    // A server: its own interface, and the port map's empty state.
    await p.setViewportSize({ width: 1440, height: 900 });
    await p.goto('/hosts?search=srv-005');
    await table(p, 'Hosts').getByRole('link', { name: 'srv-005' }).click();
    await heading(p, 'srv-005');
    await p.getByText('No host reports this one as its LLDP or CDP neighbour.').waitFor();
    expect(await firstColumn(p, 'Interfaces of this host')).toEqual(['eno1']);
    await p.getByText('No VLAN reported for this host.').waitFor();
    await shot(p, 'hosts-08-server');
    // A walk through nine screens at 300 hosts: about 21 s in CI, past 30 s on a busier machine.
  }, 120_000);
});
