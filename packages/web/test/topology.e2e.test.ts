import type { Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as admin from '../../server/src/admin/admin.service.js';
import { daemonHeaders } from '../../server/test/daemon-client.js';
import { login } from '../../server/test/helpers.js';
import { type Scanning, createNetwork, ingest, onlineDaemon, siteIdOf, startSession } from '../../server/test/scanning.js';
import { lowContrast, unnamedControls } from './a11y.js';
import { type Console, haveChromium, heading, nav, ownerPage, ownerWithPassword, POLL, shot, startConsole } from './harness.js';

// The topology page end to end (issue 24), in Chromium against the real server: views regenerated;
// a small lab drawn whole (its one group open) with LLDP/LAG/VLAN facts, filtered by VLAN (the view
// is fitted again), a node dragged and its position saved; the background dragged to pan, the wheel
// zooming at the pointer, keys; a site of 1,000 hosts over four /24s that opens grouped and
// readable, a group opened and kept open across a reload, a host found in a closed group (opened,
// centred, highlighted with its neighbours), its details in the side panel; a share link, exports
// of what is on screen, the application view by service, a view redrawn live. Screenshots:
// test-output/console/topology-*.png.

// The page's DOM inside evaluate (the test files compile without the DOM library).
declare const document: any, getComputedStyle: (e: unknown) => { fontSize: string };

const BIG = 1000;
/** Host i of the big site: four /24s of 250 hosts in one /22 network (cut into /24 groups). */
const bigHost = (i: number) => ({ fp: `big-${i}`, name: `big-${String(i).padStart(4, '0')}.example.net`, address: `10.80.${Math.floor(i / 250)}.${(i % 250) + 2}` });

const canvas = (p: Page) => p.locator('svg.topo-canvas');
const node = (p: Page, id: string) => p.locator(`svg.topo-canvas [data-node-id="${id}"]`);
/** The box of a node on screen (its first rect: the box, or an open group's title band). */
const boxOf = async (l: Locator) => (await l.locator('rect').first().boundingBox())!;
const centreOf = (b: { x: number; y: number; width: number; height: number }) => ({ x: b.x + b.width / 2, y: b.y + b.height / 2 });

/** The canvas camera as the page exposes it: zoom and translation. */
async function camera(p: Page) {
  const [x, y] = (await canvas(p).getAttribute('data-camera'))!.split(',').map(Number) as [number, number];
  return { k: Number(await canvas(p).getAttribute('data-zoom')), x, y };
}
/** The camera once it has stopped moving (it is applied once per animation frame). */
async function settled(p: Page) {
  let last = '';
  await expect.poll(async () => {
    const now = JSON.stringify(await camera(p));
    const same = now === last;
    last = now;
    return same;
  }, POLL).toBe(true);
  return camera(p);
}

/** A point of the canvas with nothing drawn under it (away from the minimap). */
const emptyPoint = (p: Page) =>
  p.evaluate(() => {
    const svg = document.querySelector('svg.topo-canvas');
    const r = svg.getBoundingClientRect();
    for (let y = r.top + 10; y < r.bottom - 10; y += 13) {
      for (let x = r.left + 10; x < r.right - 220; x += 17) if (document.elementFromPoint(x, y) === svg) return { x, y };
    }
    return null;
  }) as Promise<{ x: number; y: number } | null>;

/** Where the drawn boxes lie against the canvas: all inside it, and how far their middle is from its middle. */
const extent = (p: Page) =>
  p.evaluate(() => {
    const svg = document.querySelector('svg.topo-canvas');
    const r = svg.getBoundingClientRect();
    let [x0, y0, x1, y1] = [Infinity, Infinity, -Infinity, -Infinity];
    for (const e of svg.querySelectorAll('.topo-frame-box, .topo-batch, [data-node-id] > rect:first-of-type')) {
      const b = e.getBoundingClientRect();
      [x0, y0, x1, y1] = [Math.min(x0, b.left), Math.min(y0, b.top), Math.max(x1, b.right), Math.max(y1, b.bottom)];
    }
    return { inside: x0 >= r.left - 1 && y0 >= r.top - 1 && x1 <= r.right + 1 && y1 <= r.bottom + 1, dx: (x0 + x1) / 2 - (r.left + r.width / 2), dy: (y0 + y1) / 2 - (r.top + r.height / 2) };
  }) as Promise<{ inside: boolean; dx: number; dy: number }>;

/**
 * Host boxes drawn, `cls` (a class such as `.dim`) or all: elements of their own, plus those drawn far
 * out as one path per kind and look (`path.topo-batch`, its `data-count` boxes).
 */
const hostsDrawn = (p: Page, cls = '') =>
  p.evaluate((cls: string) => {
    const svg = document.querySelector('svg.topo-canvas');
    let n = svg.querySelectorAll(`.topo-node.topo-host${cls}`).length;
    for (const b of svg.querySelectorAll(`path.topo-batch.topo-host${cls}`)) n += Number(b.getAttribute('data-count'));
    return n;
  }, cls) as Promise<number>;

/** The screen height of the labels drawn (text is left out, never shrunk, under 9 px). */
const labelHeights = (p: Page) =>
  p.evaluate(() => [...document.querySelectorAll('svg.topo-canvas [data-node-id] text:not(.topo-toggle)')].map((t: any) => t.getBoundingClientRect().height)) as Promise<number[]>;

describe.skipIf(!haveChromium)('topology views in Chromium', () => {
  let c: Console;
  let sw1: string;
  let bigIds: Map<string, string>;
  let reporting: { daemon: Awaited<ReturnType<typeof onlineDaemon>>; sessionId: string };
  /** The owner's session without the browser (the server limits sign-in attempts: one for the file). */
  let owner: Awaited<ReturnType<typeof login>>;
  const viewIds = new Map<string, string>();

  beforeAll(async () => {
    c = await startConsole();
    await ownerWithPassword(c);
    const t = c.t;
    const org = c.org;
    const api = (await admin.createApiKey(t.database.db, { type: 'cli' }, { org: org.organisationId, userEmail: c.owner.email, scopes: ['inventory:read', 'inventory:write', 'scan:run'] })).token;
    const daemon = await onlineDaemon(t, org, { networkCidrs: ['10.30.0.0/24'], siteCode: 'lab' });
    const s: Scanning = { org, api, daemon, siteId: await siteIdOf(t, org, 'lab') };
    const sessionId = await startSession(t, s, await createNetwork(t, s, '10.30.0.0/24'));
    reporting = { daemon, sessionId };
    await ingest(t, daemon, {
      sessionId,
      hosts: [
        { fingerprint: 'fp-sw1', hostname: 'core-sw1', interfaces: [{ name: 'xe-1', mac: '02:00:00:00:01:01' }, { name: 'xe-2', mac: '02:00:00:00:01:02' }, { name: 'ge-5', mac: '02:00:00:00:01:05' }] },
        { fingerprint: 'fp-sw2', hostname: 'core-sw2', interfaces: [{ name: 'xe-1', mac: '02:00:00:00:02:01' }] },
        { fingerprint: 'fp-web', hostname: 'web-01' },
        { fingerprint: 'fp-client', hostname: 'laptop-7' },
      ],
      ips: [
        { hostFingerprint: 'fp-sw1', address: '10.30.0.2' },
        { hostFingerprint: 'fp-sw2', address: '10.30.0.3' },
        { hostFingerprint: 'fp-web', address: '10.30.0.20' },
        { hostFingerprint: 'fp-client', address: '10.30.0.30' },
      ],
      services: [{ fingerprint: 'fp-web', address: '10.30.0.20', protocol: 'tcp', port: 443, name: 'https' }],
      neighbors: [
        { fingerprint: 'fp-sw1', localInterface: 'xe-1', remoteChassisId: '02:00:00:00:02:01', remotePortId: 'xe-1', managementAddress: '10.30.0.3', protocol: 'lldp' },
        { fingerprint: 'fp-sw1', localInterface: 'xe-2', remoteChassisId: '02:00:00:00:02:01', remotePortId: 'xe-2', managementAddress: '10.30.0.3', protocol: 'lldp' },
        { fingerprint: 'fp-sw1', localInterface: 'ge-5', remoteChassisId: 'aa:bb:cc:dd:ee:ff', remotePortId: 'eth0', remoteSystemName: 'ap-lobby', protocol: 'lldp' },
      ],
      vlans: [
        { fingerprint: 'fp-sw1', vlanId: 10, name: 'users', tagged: ['ae0'], untagged: [] },
        { fingerprint: 'fp-sw1', vlanId: 30, name: 'wifi', tagged: [], untagged: ['ge-5'] },
      ],
      lagGroups: [{ fingerprint: 'fp-sw1', name: 'ae0', protocol: 'lacp', members: ['xe-1', 'xe-2'] }],
    });
    const flows = [{ bucketStart: new Date(Date.now() - 3_600_000).toISOString(), srcIp: '10.30.0.30', dstIp: '10.30.0.20', dstPort: 443, protocol: 'tcp', packets: 9, bytes: 9000, source: 'ebpf' }];
    const f = await t.app.inject({ method: 'POST', url: '/api/v1/daemon/flows', headers: daemonHeaders(daemon.token, daemon.id), payload: { flows, dropped: 0 } });
    expect(f.statusCode, f.body).toBe(200);
    sw1 = (await t.database.db.selectFrom('hosts').select('id').where('hostname', '=', 'core-sw1').executeTakeFirstOrThrow()).id;

    // The big site: 1,000 hosts in 10.80.0.0/22, so four /24 groups of 250.
    const big = await onlineDaemon(t, org, { networkCidrs: ['10.80.0.0/22'], siteCode: 'big' });
    const b: Scanning = { org, api, daemon: big, siteId: await siteIdOf(t, org, 'big') };
    const bigSession = await startSession(t, b, await createNetwork(t, b, '10.80.0.0/22'), big);
    const hosts = Array.from({ length: BIG }, (_, i) => bigHost(i));
    await ingest(t, big, {
      sessionId: bigSession,
      hosts: hosts.map((h) => ({ fingerprint: h.fp, hostname: h.name })),
      ips: hosts.map((h) => ({ hostFingerprint: h.fp, address: h.address })),
      services: hosts.filter((_, i) => i % 10 === 0).map((h) => ({ fingerprint: h.fp, address: h.address, protocol: 'tcp', port: 22, name: 'ssh' })),
    });
    const rows = await t.database.db.selectFrom('hosts').select(['id', 'hostname']).where('hostname', 'like', 'big-%').execute();
    bigIds = new Map(rows.map((r) => [r.hostname!, r.id]));
    expect(bigIds.size).toBe(BIG);
    // Every test finds the views built (the first also rebuilds them from the page).
    owner = await login(t.app, c.owner.email, c.owner.password);
    // The process's own job may hold the organisation's build for a moment (409 conflict): ask again.
    for (let i = 0; ; i++) {
      const res = await t.app.inject({ method: 'POST', url: '/api/v1/topology/regenerate', headers: { cookie: owner.cookie, 'x-csrf-token': owner.csrfToken } });
      if (res.statusCode === 200) break;
      expect(i < 100 && res.statusCode === 409, res.body).toBe(true);
      await new Promise((resolve) => setTimeout(resolve, POLL.interval));
    }
  });
  afterAll(() => c?.close());

  /** The owner on the topology page with the view named `name` chosen. */
  const viewPage = async (name: string, options?: Parameters<typeof ownerPage>[1]) => {
    const p = await ownerPage(c, options);
    await nav(p, 'Topology').click();
    const select = p.getByLabel('View', { exact: true });
    await select.waitFor();
    const id = (await select.locator('option').filter({ hasText: name }).getAttribute('value'))!;
    viewIds.set(name, id);
    await select.selectOption(id);
    await p.getByRole('group', { name: new RegExp(`^${name.replace(/[()]/g, '\\$&')}: \\d+ nodes`) }).waitFor();
    return p;
  };

  it('regenerates the views, draws the lab with its group open, fits again after a VLAN filter, saves a dragged node without panning', async () => {
    const p = await ownerPage(c);
    await nav(p, 'Topology').click();
    await heading(p, 'Topology');
    await p.getByRole('button', { name: 'Regenerate views' }).click();
    await p.getByRole('status').filter({ hasText: 'Views rebuilt' }).waitFor();
    const select = p.getByLabel('View', { exact: true });
    const lab = (await select.locator('option').filter({ hasText: 'Network (lab)' }).getAttribute('value'))!;
    viewIds.set('Network (lab)', lab);
    await select.selectOption(lab);
    await p.getByRole('group', { name: /^Network \(lab\): \d+ nodes, \d+ edges shown$/ }).waitFor();
    // A small view opens whole: the lab's one group is a frame with its hosts in it, readable at 100 %.
    await node(p, `host:${sw1}`).waitFor();
    expect(await p.locator('svg.topo-canvas [aria-expanded="true"]').count()).toBe(1);
    expect(await node(p, `host:${sw1}`).getAttribute('aria-label')).toBe('core-sw1, host, 10.30.0.2');
    // The LAG's two links are one edge (its label is its tooltip where the line is too short to carry it).
    expect(await p.locator('svg.topo-canvas .topo-edge-link title').filter({ hasText: 'LAG ae0' }).count()).toBe(1);
    expect((await settled(p)).k).toBe(1);
    expect(Math.min(...(await labelHeights(p)))).toBeGreaterThanOrEqual(9);
    await shot(p, 'topology-01-lab');

    // Pan away, then filter by VLAN 30 (named as the switch reports it): the view is fitted to what is left.
    const start = (await emptyPoint(p))!;
    await p.mouse.move(start.x, start.y);
    await p.mouse.down();
    await p.mouse.move(start.x + 200, start.y + 150, { steps: 6 });
    await p.mouse.up();
    expect(Math.abs((await extent(p)).dx)).toBeGreaterThan(100);
    const vlan = p.getByLabel('VLAN');
    expect(await vlan.locator('option').allTextContents()).toEqual(['All', '10 · users', '30 · wifi']);
    await vlan.selectOption({ label: '30 · wifi' });
    await expect.poll(() => new URL(p.url()).searchParams.get('vlan'), POLL).toBe('30');
    await node(p, 'device:aa:bb:cc:dd:ee:ff').waitFor();
    await expect.poll(() => p.locator('svg.topo-canvas [aria-label^="web-01,"]').count(), POLL).toBe(0);
    await settled(p);
    const fitted = await extent(p);
    expect(fitted.inside).toBe(true);
    expect(Math.abs(fitted.dx)).toBeLessThanOrEqual(2);
    expect(Math.abs(fitted.dy)).toBeLessThanOrEqual(2);
    // What is exported is what is on screen.
    expect(await p.getByRole('link', { name: 'Export draw.io' }).getAttribute('href')).toContain('vlan=30');
    await shot(p, 'topology-02-vlan-30');
    await vlan.selectOption('');
    await expect.poll(() => new URL(p.url()).searchParams.get('vlan'), POLL).toBeNull();

    // Drag core-sw1 by 400 px right and 60 down (an empty place of its frame): the server answers saved, its answer draws it there, the view did not pan.
    const sw = node(p, `host:${sw1}`);
    await sw.waitFor();
    const cam = await settled(p);
    const before = await boxOf(sw);
    const graphUrl = `/api/v1/topology/${lab}/graph`;
    const stored = async () => ((await (await p.request.get(graphUrl)).json()) as { nodes: { id: string; x: number; y: number }[] }).nodes.find((n) => n.id === `host:${sw1}`)!;
    const was = await stored();
    const put = p.waitForResponse((r) => r.request().method() === 'PUT' && r.url().endsWith(`/topology/${lab}/positions`));
    const from = centreOf(before);
    await p.mouse.move(from.x, from.y);
    await p.mouse.down();
    await p.mouse.move(from.x + 200, from.y + 30, { steps: 5 });
    await p.mouse.move(from.x + 400, from.y + 60, { steps: 5 });
    await p.mouse.up();
    const answer = await put;
    expect(answer.status()).toBe(200);
    expect(await answer.json()).toEqual({ saved: 1 });
    const sent = JSON.parse(answer.request().postData()!) as { positions: { nodeId: string; x: number; y: number }[] };
    expect(sent.positions).toHaveLength(1);
    expect(sent.positions[0]!.nodeId).toBe(`host:${sw1}`);
    expect(Math.abs(sent.positions[0]!.x - (was.x + 400 / cam.k))).toBeLessThanOrEqual(1);
    expect(Math.abs(sent.positions[0]!.y - (was.y + 60 / cam.k))).toBeLessThanOrEqual(1);
    await p.getByRole('status').filter({ hasText: 'Position of core-sw1 saved.' }).waitFor();
    await expect.poll(async () => { const s = await stored(); return [s.x, s.y]; }, POLL).toEqual([sent.positions[0]!.x, sent.positions[0]!.y]);
    expect(await camera(p)).toEqual(cam);
    const after = await boxOf(sw);
    expect(Math.abs(after.x - before.x - 400)).toBeLessThanOrEqual(2);
    expect(Math.abs(after.y - before.y - 60)).toBeLessThanOrEqual(2);
    await shot(p, 'topology-03-dragged');
  });

  it('pans by dragging the background, zooms at the pointer (wheel and keys), moves between nodes with the keyboard', async () => {
    const p = await viewPage('Network (lab)');
    const sw = node(p, `host:${sw1}`);
    await sw.waitFor();
    const c0 = await settled(p);

    // A drag on the background moves the drawing with the pointer.
    const at = (await emptyPoint(p))!;
    const swBefore = await boxOf(sw);
    await p.mouse.move(at.x, at.y);
    await p.mouse.down();
    await p.mouse.move(at.x - 90, at.y + 40, { steps: 4 });
    await p.mouse.move(at.x - 180, at.y + 70, { steps: 4 });
    await p.mouse.up();
    const c1 = await settled(p);
    expect(c1.k).toBe(c0.k);
    expect(c1.x - c0.x).toBeCloseTo(-180, 0);
    expect(c1.y - c0.y).toBeCloseTo(70, 0);
    const swPanned = await boxOf(sw);
    expect(swPanned.x - swBefore.x).toBeCloseTo(-180, 0);
    expect(swPanned.y - swBefore.y).toBeCloseTo(70, 0);
    // A click on the background (no move) selected nothing; no details opened.
    expect(await p.getByRole('complementary').count()).toBe(0);

    // The wheel zooms in around the pointer: the point under it stays under it.
    const box = await boxOf(sw);
    const pointer = { x: box.x + box.width * 0.25, y: box.y + box.height * 0.75 };
    await p.mouse.move(pointer.x, pointer.y);
    await p.mouse.wheel(0, -300);
    const c2 = await settled(p);
    expect(c2.k).toBeGreaterThan(c1.k * 1.5);
    const zoomed = await boxOf(sw);
    expect(zoomed.width / box.width).toBeCloseTo(c2.k / c1.k, 1);
    expect(zoomed.x + zoomed.width * 0.25).toBeCloseTo(pointer.x, 0);
    expect(zoomed.y + zoomed.height * 0.75).toBeCloseTo(pointer.y, 0);
    expect(await p.getByText(`${Math.round(c2.k * 100)} %`, { exact: true }).count()).toBe(1);
    await shot(p, 'topology-04-zoomed-at-pointer');

    // Shift+wheel pans sideways, at the same zoom.
    await p.keyboard.down('Shift');
    await p.mouse.wheel(0, 120);
    await p.keyboard.up('Shift');
    const c3 = await settled(p);
    expect(c3.k).toBe(c2.k);
    expect(c3.y).toBe(c2.y);
    expect(Math.abs(c3.x - c2.x)).toBeCloseTo(120, 0);

    // Keys on the canvas: 0 fits, + and − zoom by 1.25 around the middle, arrows pan.
    await canvas(p).focus();
    await p.keyboard.press('0');
    expect((await settled(p)).k).toBe(c0.k);
    expect((await extent(p)).inside).toBe(true);
    await p.keyboard.press('+');
    expect((await settled(p)).k).toBeCloseTo(c0.k * 1.25, 6);
    await p.keyboard.press('-');
    expect((await settled(p)).k).toBeCloseTo(c0.k, 6);
    const beforeArrow = await settled(p);
    await p.keyboard.press('ArrowLeft');
    expect((await settled(p)).x - beforeArrow.x).toBe(80);

    // Tab reaches one node (a roving tabindex); arrows go from node to node; Enter shows its details; Escape closes them.
    await p.keyboard.press('0');
    await p.keyboard.press('Tab');
    const focused = () => p.evaluate(() => document.activeElement?.getAttribute('data-node-id') ?? null) as Promise<string | null>;
    const first = await focused();
    expect(first).not.toBeNull();
    expect(await p.locator('svg.topo-canvas [data-node-id][tabindex="0"]').count()).toBe(1);
    let moved = false;
    for (const key of ['ArrowRight', 'ArrowDown', 'ArrowLeft', 'ArrowUp']) {
      await p.keyboard.press(key);
      if ((await focused()) !== first) {
        moved = true;
        break;
      }
    }
    expect(moved).toBe(true);
    const target = (await focused())!;
    await shot(p, 'topology-05-keyboard-focus');
    await p.keyboard.press('Enter');
    const label = (await node(p, target).getAttribute('aria-label'))!.split(',')[0]!;
    const panel = p.getByRole('complementary', { name: label });
    await panel.waitFor();
    await p.keyboard.press('Escape');
    await panel.waitFor({ state: 'detached' });
    expect(await focused()).toBe(target);
  });

  it('opens a site of 1,000 hosts grouped and readable, opens a group (kept across a reload), finds a host in a closed group and shows its details', async () => {
    const p = await viewPage('Network (big)', { viewport: { width: 1440, height: 900 } });
    // Grouped: four closed /24 groups of 250 and the network, fitted, at a zoom where every label reads.
    const closed = p.locator('svg.topo-canvas [data-node-id^="group:"][aria-expanded="false"]');
    await expect.poll(() => closed.count(), POLL).toBe(4);
    expect(await p.locator('svg.topo-canvas [data-node-id^="host:"]').count()).toBe(0);
    expect(await p.locator('svg.topo-canvas').getAttribute('aria-label')).toMatch(/^Network \(big\): 5 nodes, 4 edges shown$/);
    await p.getByText(/grouped by subnet into 4 groups \(0 open\)/).waitFor();
    const heights = await labelHeights(p);
    expect(heights.length).toBeGreaterThanOrEqual(8);
    expect(Math.min(...heights)).toBeGreaterThanOrEqual(9);
    expect((await extent(p)).inside).toBe(true);
    expect(await closed.first().getAttribute('aria-label')).toMatch(/^net 10\.80\.0\.0\/22 · 10\.80\.\d\.0\/24, group of 250 hosts, closed$/);
    await shot(p, 'topology-06-big-grouped', { fullPage: false });

    // A click on a group opens it in place (its 250 hosts inside its frame); the URL keeps it across a reload.
    const second = p.locator('svg.topo-canvas [data-node-id$="10.80.1.0/24"]');
    const groupId = (await second.getAttribute('data-node-id'))!;
    await second.click();
    await expect.poll(() => new URL(p.url()).searchParams.get('open'), POLL).toBe(groupId);
    await expect.poll(() => p.locator(`svg.topo-canvas [data-node-id="${groupId}"]`).getAttribute('aria-expanded'), POLL).toBe('true');
    const inGroup = p.locator('svg.topo-canvas [data-node-id^="host:"]');
    await expect.poll(() => inGroup.count(), POLL).toBeGreaterThan(0);
    await p.getByRole('complementary', { name: /10\.80\.1\.0\/24/ }).getByRole('button', { name: 'Close group' }).waitFor();
    await shot(p, 'topology-07-big-group-open', { fullPage: false });
    await p.reload();
    await p.locator(`svg.topo-canvas [data-node-id="${groupId}"][aria-expanded="true"]`).waitFor();
    await p.getByText(/into 4 groups \(1 open\)/).waitFor();

    // Close all; then find big-0770 (in 10.80.3.0/24, closed): its group opens, it is centred, highlighted, its details show.
    await p.getByRole('button', { name: 'Close all' }).click();
    await expect.poll(() => new URL(p.url()).searchParams.get('open'), POLL).toBe('');
    await expect.poll(() => closed.count(), POLL).toBe(4);
    const host = bigHost(770);
    const hostId = bigIds.get(host.name)!;
    const search = p.getByRole('combobox', { name: 'Find in view' });
    await search.fill('big-0770');
    const option = p.getByRole('option', { name: new RegExp(host.name.replace(/\./g, '\\.')) });
    await option.waitFor();
    await search.press('Enter');
    const found = node(p, `host:${hostId}`);
    await found.waitFor();
    await expect.poll(() => new URL(p.url()).searchParams.get('open')?.endsWith('10.80.3.0/24'), POLL).toBe(true);
    await settled(p);
    const middle = await p.evaluate(() => {
      const r = document.querySelector('svg.topo-canvas').getBoundingClientRect();
      return { x: r.left + r.width / 2, y: r.top + r.height / 2 };
    });
    const at = centreOf(await boxOf(found));
    expect(Math.abs(at.x - middle.x)).toBeLessThanOrEqual(2);
    expect(Math.abs(at.y - middle.y)).toBeLessThanOrEqual(2);
    expect(await found.getAttribute('class')).toContain('selected');
    const panel = p.getByRole('complementary', { name: host.name });
    await panel.getByText(host.address, { exact: true }).waitFor();
    await panel.getByText('22/tcp').waitFor();
    expect(await panel.getByRole('link', { name: 'Open the host page' }).getAttribute('href')).toBe(`/hosts/${hostId}`);
    expect(Math.min(...(await labelHeights(p)))).toBeGreaterThanOrEqual(9);
    await shot(p, 'topology-08-big-found', { fullPage: false });

    // Zoomed in, the minimap shows where the view is; a click on it moves the view there.
    const minimap = p.getByTestId('topology-minimap');
    await minimap.waitFor();
    const before = await settled(p);
    const mm = (await minimap.boundingBox())!;
    await p.mouse.click(mm.x + 8, mm.y + 8);
    const after = await settled(p);
    expect(after.k).toBe(before.k);
    expect(Math.hypot(after.x - before.x, after.y - before.y)).toBeGreaterThan(100);
    // Fitted, its neighbour (the network it has an address in, through its group's folded edge) is highlighted, the other hosts dimmed.
    await p.getByRole('button', { name: 'Fit' }).click();
    await settled(p);
    expect(await p.locator('svg.topo-canvas .topo-network.near').count()).toBe(1);
    expect(await p.locator('svg.topo-canvas .topo-edge.near').count()).toBe(1);
    expect(await hostsDrawn(p, '.dim')).toBe(249);
    expect(await found.getAttribute('class')).toContain('selected');
    await shot(p, 'topology-09-big-found-fitted', { fullPage: false });
    await p.keyboard.press('Escape');
    await panel.waitFor({ state: 'detached' });

    // Open all: 1,000 hosts fitted; their labels would be under 9 px, so their boxes are drawn without
    // text; each frame's title is written inside it at 13 px on screen.
    await p.getByRole('button', { name: 'Open all' }).click();
    await expect.poll(() => new URL(p.url()).searchParams.get('open'), POLL).toBe('all');
    await p.getByText(/into 4 groups \(4 open\)/).waitFor();
    await settled(p);
    await expect.poll(async () => (await camera(p)).k < 0.6, POLL).toBe(true);
    const whole = await extent(p);
    expect(whole.inside).toBe(true);
    expect(Math.abs(whole.dy)).toBeLessThanOrEqual(2);
    expect(await labelHeights(p)).toEqual([]);
    const titles = await p.evaluate(() => [...document.querySelectorAll('svg.topo-canvas text.topo-overlay-label')].map((t: any) => ({ text: t.textContent, px: Number.parseFloat(getComputedStyle(t).fontSize) * Number(document.querySelector('svg.topo-canvas').getAttribute('data-zoom')) })));
    expect(titles.map((t: { text: string }) => t.text).sort()).toEqual(['10.80.0.0/24', '10.80.1.0/24', '10.80.2.0/24', '10.80.3.0/24']);
    for (const t of titles) expect(t.px).toBeCloseTo(13, 3);
    // Drawn far out as one path per look, the focusable node alone an element of its own: a camera
    // move repaints a handful of elements, not a thousand.
    expect(await hostsDrawn(p)).toBe(BIG);
    expect(await p.locator('svg.topo-canvas [data-node-id^="host:"]').count()).toBeLessThanOrEqual(1);
    expect(await p.locator('svg.topo-canvas path.topo-batch.topo-host').count()).toBe(1);
    await shot(p, 'topology-10-big-all-open', { fullPage: false });
    // A click on a box of the path selects that host: its details show, and it is drawn on its own, selected, where the click was.
    const target = await p.evaluate(() => {
      const svg = document.querySelector('svg.topo-canvas');
      const r = svg.getBoundingClientRect();
      const [x, y] = svg.getAttribute('data-camera').split(',').map(Number);
      const k = Number(svg.getAttribute('data-zoom'));
      const d = svg.querySelector('path.topo-batch.topo-host').getAttribute('d');
      // The 101st box: M x y h w v h h -w z
      const m = [...d.matchAll(/M([-\d.]+) ([-\d.]+)h([-\d.]+)v([-\d.]+)/g)][100];
      const [bx, by, bw, bh] = m.slice(1).map(Number);
      return { x: r.left + x + (bx + bw / 2) * k, y: r.top + y + (by + bh / 2) * k, bx, by };
    });
    await p.mouse.click(target.x, target.y);
    const picked = p.locator('svg.topo-canvas .topo-node.topo-host.selected');
    await picked.waitFor();
    // The box clicked (in the drawing: the details panel narrows the canvas, which then moves on screen).
    const pickedBox = picked.locator('rect').first();
    expect([Number(await pickedBox.getAttribute('x')), Number(await pickedBox.getAttribute('y'))]).toEqual([target.bx, target.by]);
    const pickedName = (await picked.getAttribute('aria-label'))!.split(',')[0]!;
    expect(pickedName).toMatch(/^big-\d{4}\.example\.net$/);
    await p.getByRole('complementary', { name: pickedName }).waitFor();
    expect(await hostsDrawn(p)).toBe(BIG);
    await p.keyboard.press('Escape');
    // Zoomed in at the pointer to 100 %, only what is near the screen is drawn, with its text.
    const canvasBox = (await canvas(p).boundingBox())!;
    await p.mouse.move(canvasBox.x + canvasBox.width / 3, canvasBox.y + canvasBox.height / 3);
    for (let i = 0; i < 8 && (await camera(p)).k < 1; i++) {
      await p.mouse.wheel(0, -200);
      await settled(p);
    }
    expect((await camera(p)).k).toBeGreaterThanOrEqual(1);
    await expect.poll(() => hostsDrawn(p), POLL).toBeLessThan(BIG);
    expect(await p.locator('svg.topo-canvas path.topo-batch').count()).toBe(0);
    const far = await p.evaluate(() => {
      const r = document.querySelector('svg.topo-canvas').getBoundingClientRect();
      const m = Math.max(r.width, r.height);
      return [...document.querySelectorAll('svg.topo-canvas [data-node-id^="host:"] > rect:first-of-type')].filter((e: any) => {
        const b = e.getBoundingClientRect();
        return b.right < r.left - m || b.left > r.right + m || b.bottom < r.top - m || b.top > r.bottom + m;
      }).length;
    });
    // Far off only the node keyboard focus goes to next (the roving tabindex) and the one selected, kept drawn on purpose.
    expect(far).toBeLessThanOrEqual(2);
    expect(Math.min(...(await labelHeights(p)))).toBeGreaterThanOrEqual(9);
    await shot(p, 'topology-11-big-all-open-100', { fullPage: false });
  }, 120_000);

  it('reads in light and in dark: contrast and names of the big view with a group open and a host selected', async () => {
    const p = await viewPage('Network (big)', { viewport: { width: 1440, height: 900 } });
    const group = p.locator('svg.topo-canvas [data-node-id$="10.80.2.0/24"]');
    await group.click();
    await p.locator('svg.topo-canvas [data-node-id$="10.80.2.0/24"][aria-expanded="true"]').waitFor();
    await p.getByRole('combobox', { name: 'Find in view' }).fill('big-0510');
    await p.getByRole('option', { name: /big-0510/ }).click();
    await p.getByRole('complementary', { name: 'big-0510.example.net' }).getByText('10.80.2.12', { exact: true }).waitFor();
    // One sign-in for both (the server limits sign-in attempts): the page follows the emulated scheme.
    for (const scheme of ['light', 'dark'] as const) {
      await p.emulateMedia({ colorScheme: scheme });
      expect(await p.evaluate(() => (globalThis as unknown as { matchMedia: (q: string) => { matches: boolean } }).matchMedia('(prefers-color-scheme: dark)').matches)).toBe(scheme === 'dark');
      await shot(p, `topology-12-${scheme}`, { fullPage: false });
      expect(await lowContrast(p), scheme).toEqual([]);
      expect(await unnamedControls(p), scheme).toEqual([]);
    }
  });

  it('shares a view by a link that opens it without a session, and revokes it', async () => {
    const p = await viewPage('Network (lab)');
    await p.getByRole('button', { name: 'Share…' }).click();
    const dialog = p.getByRole('dialog', { name: 'Share Network (lab)' });
    await dialog.getByLabel('Expires in (hours)').fill('0');
    await dialog.getByText('A whole number of hours from 1 to 720.').waitFor();
    expect(await dialog.getByRole('button', { name: 'Create link' }).isDisabled()).toBe(true);
    await dialog.getByLabel('Expires in (hours)').fill('24');
    await dialog.getByRole('button', { name: 'Create link' }).click();
    const link = dialog.getByLabel('Share link');
    await link.waitFor();
    const url = await link.inputValue();
    expect(url).toMatch(/\/share\/topology\/svt_[A-Za-z0-9_-]{43}$/);
    await shot(p, 'topology-13-share-dialog');
    await dialog.getByRole('button', { name: 'Done' }).click();
    await dialog.waitFor({ state: 'detached' });
    await p.getByText(/shared until/).waitFor();

    // Another browser, no session: the one view.
    const anon = await c.page();
    const opened = await anon.goto(new URL(url).pathname);
    expect(opened?.status()).toBe(200);
    await anon.getByRole('heading', { level: 1, name: 'Network (lab)' }).waitFor();
    await anon.getByRole('img', { name: /Network \(lab\)/ }).waitFor();
    await shot(anon, 'topology-14-shared-page');

    await p.getByRole('button', { name: 'Share…' }).click();
    await dialog.getByRole('button', { name: 'Revoke link' }).click();
    await dialog.waitFor({ state: 'detached' });
    await p.getByText(/shared until/).waitFor({ state: 'detached' });
    const again = await anon.goto(new URL(url).pathname);
    expect(again?.status()).toBe(404);
  });

  it('exports what is on screen: the groups open and closed', async () => {
    const p = await viewPage('Network (big)');
    // The server's default (a large view: every group closed) is what the links export until a group opens.
    expect(await p.getByRole('link', { name: 'Export Mermaid' }).getAttribute('href')).not.toContain('expand');
    await p.getByRole('button', { name: 'Open all' }).click();
    await expect.poll(() => new URL(p.url()).searchParams.get('open'), POLL).toBe('all');
    // The links follow the URL on the next render: wait for them as for the URL.
    const mermaid = p.getByRole('link', { name: 'Export Mermaid' });
    await expect.poll(() => mermaid.getAttribute('href'), POLL).toContain('expand=all');
    const openHref = (await mermaid.getAttribute('href'))!;
    const openText = await (await p.request.get(openHref)).text();
    expect(openText.split('\n')[0]).toBe('flowchart LR');
    expect(openText.match(/subgraph/g)).toHaveLength(4);
    await p.getByRole('button', { name: 'Close all' }).click();
    await expect.poll(() => new URL(p.url()).searchParams.get('open'), POLL).toBe('');
    const drawio = p.getByRole('link', { name: 'Export draw.io' });
    await expect.poll(() => drawio.getAttribute('href'), POLL).toMatch(/[?&]expand=$/);
    const closedHref = (await drawio.getAttribute('href'))!;
    const res = await p.request.get(closedHref);
    expect(res.status()).toBe(200);
    const xml = await res.text();
    expect(xml).toContain('<mxfile');
    expect(xml).not.toContain('big-0001.example.net');
  });

  it('shows the application view and filters it by service', async () => {
    const p = await viewPage('Application dependencies (lab)');
    const service = p.getByLabel('Service', { exact: true });
    expect(await service.locator('option').allTextContents()).toContain('https');
    await service.selectOption('https');
    await expect.poll(() => new URL(p.url()).searchParams.get('service'), POLL).toBe('https');
    await p.getByRole('group', { name: /^Application dependencies \(lab\): \d+ nodes, 1 edge shown$/ }).waitFor();
    await p.locator('svg.topo-canvas [aria-label^="laptop-7,"]').waitFor();
    await shot(p, 'topology-15-application');
  });

  it('moves a group with its members when its frame is dragged, and regroups a view by VLAN (fitted again)', async () => {
    const p = await viewPage('Network (lab)');
    const lab = viewIds.get('Network (lab)')!;
    const head = p.locator('svg.topo-canvas [data-node-id^="group:"][aria-expanded="true"]');
    const groupId = (await head.getAttribute('data-node-id'))!;
    const sw = node(p, `host:${sw1}`);
    await sw.waitFor();
    const cam = await settled(p);
    const [headBefore, swBefore] = [await boxOf(head), await boxOf(sw)];
    // Dragged by its title band 90 px down: one position saved, the group's; its members came along.
    const put = p.waitForResponse((r) => r.request().method() === 'PUT' && r.url().endsWith(`/topology/${lab}/positions`));
    const from = { x: headBefore.x + 40, y: headBefore.y + headBefore.height / 2 };
    await p.mouse.move(from.x, from.y);
    await p.mouse.down();
    await p.mouse.move(from.x, from.y + 45, { steps: 4 });
    await p.mouse.move(from.x, from.y + 90, { steps: 4 });
    await p.mouse.up();
    const answer = await put;
    expect(answer.status()).toBe(200);
    const sent = JSON.parse(answer.request().postData()!) as { positions: { nodeId: string; x: number; y: number }[] };
    expect(sent.positions.map((x) => x.nodeId)).toEqual([groupId]);
    await p.getByRole('status').filter({ hasText: /^Position of .+ saved\.$/ }).waitFor();
    await expect.poll(async () => Math.round((await boxOf(sw)).y - swBefore.y), POLL).toBe(90);
    expect(Math.round((await boxOf(head)).y - headBefore.y)).toBe(90);
    expect(await camera(p)).toEqual(cam);
    const graph = (await (await p.request.get(`/api/v1/topology/${lab}/graph`)).json()) as { nodes: { id: string; y: number }[] };
    expect(graph.nodes.find((n) => n.id === groupId)!.y).toBe(sent.positions[0]!.y);
    await shot(p, 'topology-16-group-dragged');

    // Group by VLAN: the view is rebuilt (PATCH), the switch carrying VLAN 10 goes in its group, the new drawing is fitted.
    const patch = p.waitForResponse((r) => r.request().method() === 'PATCH' && r.url().endsWith(`/topology/${lab}`));
    await p.getByLabel('Group by').selectOption('vlan');
    expect((await patch).status()).toBe(200);
    await p.getByText(/grouped by vlan into \d+ groups/).waitFor();
    await p.locator('svg.topo-canvas [data-node-id^="group:vlan:"]').first().waitFor();
    expect(await p.locator('svg.topo-canvas [aria-label^="VLAN 10 · users, group of "]').count()).toBe(1);
    const regrouped = (await (await p.request.get(`/api/v1/topology/${lab}/graph`)).json()) as { nodes: { id: string; group: string | null }[] };
    expect(regrouped.nodes.find((n) => n.id === `host:${sw1}`)!.group).toMatch(/^group:vlan:vlan:10$/);
    await settled(p);
    const fitted = await extent(p);
    expect(fitted.inside).toBe(true);
    expect(Math.abs(fitted.dx)).toBeLessThanOrEqual(2);
    expect(Math.abs(fitted.dy)).toBeLessThanOrEqual(2);
    await shot(p, 'topology-17-grouped-by-vlan');
    await p.getByLabel('Group by').selectOption('subnet');
    await p.getByText(/grouped by subnet into/).waitFor();
  });

  it('redraws a view rebuilt elsewhere without a reload (topology.updated on the live stream)', async () => {
    const p = await viewPage('Network (lab)');
    await p.evaluate(() => Object.assign(globalThis, { notReloaded: true }));
    // The daemon reports a third switch behind core-sw1, and another session rebuilds the views.
    await ingest(c.t, reporting.daemon, {
      sessionId: reporting.sessionId,
      hosts: [{ fingerprint: 'fp-sw3', hostname: 'core-sw3', interfaces: [{ name: 'xe-9', mac: '02:00:00:00:03:09' }] }],
      ips: [{ hostFingerprint: 'fp-sw3', address: '10.30.0.4' }],
      neighbors: [{ fingerprint: 'fp-sw1', localInterface: 'xe-3', remoteChassisId: '02:00:00:00:03:09', remotePortId: 'xe-9', managementAddress: '10.30.0.4', protocol: 'lldp' }],
    });
    const sw3 = p.locator('svg.topo-canvas [aria-label^="core-sw3,"]');
    expect(await sw3.count()).toBe(0);
    // The process's own job may hold the organisation's build for a moment (409 conflict): press again.
    await expect
      .poll(async () => (await c.t.app.inject({ method: 'POST', url: '/api/v1/topology/regenerate', headers: { cookie: owner.cookie, 'x-csrf-token': owner.csrfToken } })).statusCode, POLL)
      .toBe(200);
    await sw3.waitFor();
    expect(await p.evaluate(() => (globalThis as { notReloaded?: boolean }).notReloaded)).toBe(true);
    await shot(p, 'topology-18-redrawn-live');
  });
});
