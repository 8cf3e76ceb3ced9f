import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as admin from '../../server/src/admin/admin.service.js';
import { daemonHeaders } from '../../server/test/daemon-client.js';
import { login } from '../../server/test/helpers.js';
import { type Scanning, createNetwork, ingest, onlineDaemon, siteIdOf, startSession } from '../../server/test/scanning.js';
import { type Console, haveChromium, heading, nav, ownerPage, ownerWithPassword, POLL, shot, startConsole } from './harness.js';

// The topology page end to end: views regenerated, a network view drawn from LLDP/LAG/VLAN facts a
// daemon reported, filtered by VLAN, a node dragged and its position saved, zoom, a share link
// opened without a session and revoked, an export downloaded, the application view by service.

describe.skipIf(!haveChromium)('topology views in Chromium', () => {
  let c: Console;
  let sw1: string;
  let reporting: { daemon: Awaited<ReturnType<typeof onlineDaemon>>; sessionId: string };

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
  });
  afterAll(() => c?.close());

  /** The owner on the topology page with the view named `name` chosen. */
  const viewPage = async (name: string) => {
    const p = await ownerPage(c);
    await nav(p, 'Topology').click();
    const select = p.getByLabel('View', { exact: true });
    await select.waitFor();
    await select.selectOption((await select.locator('option').filter({ hasText: name }).getAttribute('value'))!);
    return p;
  };

  it('regenerates the views, draws the network view, filters by VLAN, saves a dragged node, zooms', async () => {
    const p = await ownerPage(c);
    await nav(p, 'Topology').click();
    await heading(p, 'Topology');
    // The job runner of the console's process may have built the views already; either way, regenerate.
    await p.getByRole('button', { name: 'Regenerate views' }).waitFor();
    await shot(p, 'topology-01-start');

    await p.getByRole('button', { name: 'Regenerate views' }).click();
    await p.getByRole('status').filter({ hasText: 'Views rebuilt' }).waitFor();
    const select = p.getByLabel('View', { exact: true });
    await select.waitFor();
    const option = await select.locator('option').filter({ hasText: 'Network (lab)' }).getAttribute('value');
    await select.selectOption(option!);
    const canvas = p.getByRole('img', { name: /^Network \(lab\): 6 nodes, 6 edges shown$/ });
    await canvas.waitFor();
    await p.locator('text').filter({ hasText: 'LAG ae0 · VLAN 10' }).waitFor();
    await shot(p, 'topology-02-network');

    // VLAN 30: the access point's link, and the switch carrying it.
    await p.getByLabel('VLAN').selectOption('30');
    await p.getByRole('img', { name: /^Network \(lab\): 2 nodes, 1 edge shown$/ }).waitFor();
    await shot(p, 'topology-03-vlan-30');
    await p.getByLabel('VLAN').selectOption('');
    await canvas.waitFor();

    // Drag core-sw1 by 120 px right and 60 down: the position is saved.
    const node = p.locator(`g[data-node-id="host:${sw1}"]`);
    const before = await c.t.database.db.selectFrom('topology_nodes').select(['x', 'y']).where('node_id', '=', `host:${sw1}`).where('topology_id', '=', option!).executeTakeFirstOrThrow();
    const box = (await node.locator('rect').boundingBox())!;
    await p.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
    await p.mouse.down();
    await p.mouse.move(box.x + box.width / 2 + 60, box.y + box.height / 2 + 30, { steps: 5 });
    await p.mouse.move(box.x + box.width / 2 + 120, box.y + box.height / 2 + 60, { steps: 5 });
    await p.mouse.up();
    await p.getByRole('status').filter({ hasText: 'Position of core-sw1 saved.' }).waitFor();
    const stored = () => c.t.database.db.selectFrom('topology_nodes').select(['x', 'y']).where('node_id', '=', `host:${sw1}`).where('topology_id', '=', option!).executeTakeFirstOrThrow();
    await expect.poll(async () => (await stored()).x > before.x && (await stored()).y > before.y, POLL).toBe(true);
    await shot(p, 'topology-04-dragged');

    await p.getByRole('button', { name: 'Zoom in' }).click();
    await p.getByText('125 %').waitFor();
    await p.getByRole('button', { name: 'Fit' }).click();
    await p.getByText('100 %').waitFor();

    // The export carries the saved position (the session's cookie downloads it).
    const href = await p.getByRole('link', { name: 'Export draw.io' }).getAttribute('href');
    const res = await p.request.get(href!);
    expect(res.status()).toBe(200);
    const saved = await stored();
    expect(await res.text()).toContain(`<mxGeometry x="${saved.x}" y="${saved.y}"`);
    const mermaid = await p.request.get((await p.getByRole('link', { name: 'Export Mermaid' }).getAttribute('href'))!);
    expect((await mermaid.text()).split('\n')[0]).toBe('flowchart LR');
  });

  it('shares a view by a link that opens it without a session, and revokes it', async () => {
    const p = await viewPage('Network (lab)');
    await p.getByRole('img', { name: /^Network \(lab\)/ }).waitFor();
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
    await shot(p, 'topology-05-share-dialog');
    await dialog.getByRole('button', { name: 'Done' }).click();
    await dialog.waitFor({ state: 'detached' });
    await p.getByText(/shared until/).waitFor();

    // Another browser, no session: the one view.
    const anon = await c.page();
    const opened = await anon.goto(new URL(url).pathname);
    expect(opened?.status()).toBe(200);
    await anon.getByRole('heading', { level: 1, name: 'Network (lab)' }).waitFor();
    await anon.getByRole('img', { name: 'Network (lab)' }).waitFor();
    expect(await anon.content()).not.toContain('laptop-7 →');
    await shot(anon, 'topology-06-shared-page');

    await p.getByRole('button', { name: 'Share…' }).click();
    await dialog.getByRole('button', { name: 'Revoke link' }).click();
    await dialog.waitFor({ state: 'detached' });
    await p.getByText(/shared until/).waitFor({ state: 'detached' });
    const again = await anon.goto(new URL(url).pathname);
    expect(again?.status()).toBe(404);
  });

  it('shows the application view and filters it by service', async () => {
    const p = await viewPage('Application dependencies (lab)');
    await p.getByRole('img', { name: /^Application dependencies \(lab\): 2 nodes, 1 edge shown$/ }).waitFor();
    await p.getByLabel('Service', { exact: true }).selectOption('https');
    await p.getByRole('img', { name: /^Application dependencies \(lab\): 2 nodes, 1 edge shown$/ }).waitFor();
    await shot(p, 'topology-07-application');
  });

  it('redraws a view rebuilt elsewhere without a reload (topology.updated on the live stream)', async () => {
    const p = await viewPage('Network (lab)');
    await p.getByRole('img', { name: /^Network \(lab\): \d+ nodes/ }).waitFor();
    await p.evaluate(() => Object.assign(globalThis, { notReloaded: true }));
    // The daemon reports a third switch behind core-sw1, and another session rebuilds the views.
    await ingest(c.t, reporting.daemon, {
      sessionId: reporting.sessionId,
      hosts: [{ fingerprint: 'fp-sw3', hostname: 'core-sw3', interfaces: [{ name: 'xe-9', mac: '02:00:00:00:03:09' }] }],
      ips: [{ hostFingerprint: 'fp-sw3', address: '10.30.0.4' }],
      neighbors: [{ fingerprint: 'fp-sw1', localInterface: 'xe-3', remoteChassisId: '02:00:00:00:03:09', remotePortId: 'xe-9', managementAddress: '10.30.0.4', protocol: 'lldp' }],
    });
    expect(await p.locator('text').filter({ hasText: 'core-sw3' }).count()).toBe(0);
    const owner = await login(c.t.app, c.owner.email, c.owner.password);
    // The process's own job may hold the organisation's build for a moment (409 conflict): press again.
    await expect
      .poll(async () => (await c.t.app.inject({ method: 'POST', url: '/api/v1/topology/regenerate', headers: { cookie: owner.cookie, 'x-csrf-token': owner.csrfToken } })).statusCode, POLL)
      .toBe(200);
    await p.locator('text').filter({ hasText: 'core-sw3' }).first().waitFor();
    expect(await p.evaluate(() => (globalThis as { notReloaded?: boolean }).notReloaded)).toBe(true);
    await shot(p, 'topology-08-redrawn-live');
  });
});
