import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as admin from '../../server/src/admin/admin.service.js';
import { createNetwork } from '../../server/src/inventory/inventory.service.js';
import { createScan } from '../../server/src/scans/scans.service.js';
import { daemonHeaders, poll } from '../../server/test/daemon-client.js';
import { addHost } from '../../server/test/fixtures.js';
import { ingest, onlineDaemon } from '../../server/test/scanning.js';
import { type Console, PASSWORD, POLL, haveChromium, heading, nav, ownerPage, ownerWithPassword, shot, signIn, startConsole } from './harness.js';

// Issue 23, the lifecycle screens, as users do them: an editor adds a network with every field
// (warned that it overlaps another), scans it, edits it, reads its hosts and sessions and deletes
// it; an admin opens a site's page, is refused deleting a site that holds things and deletes an
// empty one; an admin disables a daemon, opens its page and removes it.

describe.skipIf(!haveChromium)('the lifecycle of networks, sites and daemons in Chromium', () => {
  let c: Console;
  let fraSite: string;
  let daemon: { token: string; id: string };

  beforeAll(async () => {
    c = await startConsole();
    await ownerWithPassword(c);
    const db = c.server.database.db;
    const org = c.org.organisationId;
    // A site with a daemon (nmap), a campus network and a few hundred hosts, one empty site.
    daemon = await onlineDaemon(c.t, c.org, { name: 'fra-scanner-01', siteCode: 'fra', networkCidrs: ['10.50.0.0/16'], capabilities: { nmap: true, netflow: true, ebpf: false } });
    fraSite = (await db.selectFrom('sites').select('id').where('code', '=', 'fra').executeTakeFirstOrThrow()).id;
    await db.updateTable('sites').set({ name: 'Frankfurt' }).where('id', '=', fraSite).execute();
    await admin.createUser(db, { type: 'cli' }, { org, email: 'editor@example.test', role: 'editor', password: PASSWORD });
    await createNetwork(db, { type: 'system', organisationId: org }, { name: 'campus', cidr: '10.50.0.0/16', siteId: fraSite });
    for (let i = 0; i < 300; i++) {
      await addHost(db, org, { hostname: `fl6-${String(i + 1).padStart(3, '0')}`, siteId: fraSite, addresses: [`10.50.${6 + Math.floor(i / 250)}.${(i % 250) + 2}`], os: i % 3 ? 'Debian 12' : 'Windows Server 2022' });
    }
    await sql`insert into sites (organisation_id, code, name) values (${org}, 'ber-old', 'Berlin (closed)')`.execute(db);
  }, 120_000);
  afterAll(() => c?.close());

  it('an editor adds a network with every field, is warned of the overlap, scans, edits, reads its hosts and sessions, and deletes it', async () => {
    const p = await c.page({ viewport: { width: 1440, height: 900 } });
    await signIn(p, 'editor@example.test', PASSWORD);
    await heading(p, 'Overview');
    await nav(p, 'Networks').click();
    await heading(p, 'Networks');

    await p.getByLabel('Name').fill('floor 6');
    await p.getByLabel('CIDR').fill('10.50.6.0/23');
    const warning = p.getByRole('status').filter({ hasText: 'overlaps' });
    await warning.waitFor();
    expect(await warning.textContent()).toContain('campus (10.50.0.0/16) contains it');
    await p.getByLabel('Site').selectOption({ label: 'Frankfurt (fra)' });
    await p.getByLabel('Scan every (minutes)').fill('60');
    await p.getByLabel('Excluded ranges').fill('10.50.6.0/28, 10.50.7.254/32');
    await p.getByLabel('Top TCP ports').fill('200');
    await p.getByLabel('Top UDP ports').fill('20');
    await p.getByLabel('Run nmap').check();
    await p.getByLabel('Script category safe').check();
    await p.getByLabel('Script category version').check();
    await shot(p, 'lifecycle-01-add-network-1440');
    await p.getByRole('button', { name: 'Add network' }).click();
    await p.getByRole('status').filter({ hasText: 'added' }).waitFor();

    // Due at once (every 60 min, never scanned): within a scheduler tick (30 s) the Scheduler
    // column names the daemon the session went to and links the session.
    const row = p.getByRole('row').filter({ hasText: '10.50.6.0/23' });
    await row.getByRole('link', { name: 'fra-scanner-01' }).waitFor({ timeout: 45_000 });
    const sessionLink = row.getByRole('link', { name: /^Session .* of floor 6$/ });
    // Scan now waits while that session is under way.
    await expect.poll(() => row.getByRole('button', { name: 'Scan floor 6 now' }).isDisabled(), POLL).toBe(true);
    await shot(p, 'lifecycle-02-networks-scheduled-1440');
    await sessionLink.click();

    await heading(p, 'floor 6');
    const fields = p.locator('dl.fields').first();
    await fields.getByText('10.50.6.0/28, 10.50.7.254/32').waitFor();
    expect(await fields.textContent()).toContain('top 200 TCP, top 20 UDP');
    expect(await fields.textContent()).toContain('on (safe, version)');
    expect(await fields.textContent()).toContain('Frankfurt');
    expect(await fields.textContent()).toContain('every 1 h');
    expect(await p.getByRole('button', { name: 'Scanning…' }).isDisabled()).toBe(true);
    // Its hosts: those with an address in the range, 50 at a time.
    const hosts = p.getByRole('table', { name: 'Hosts in floor 6' });
    await hosts.getByRole('link', { name: 'fl6-001' }).waitFor();
    await p.getByRole('button', { name: 'Load more (50 shown)' }).waitFor();

    // The daemon takes the job (every field of the network in it) and completes the session.
    const job = await poll(c.t.app, daemon.token, daemon.id);
    expect(job.json()).toMatchObject({ kind: 'network', target: { cidr: '10.50.6.0/23', excludeCidrs: ['10.50.6.0/28', '10.50.7.254/32'], topPortsTcp: 200, topPortsUdp: 20, nmap: { enabled: true, scripts: ['safe', 'version'] } } });
    const sessionId = job.json().sessionId as string;
    await ingest(c.t, daemon, { sessionId, hosts: [{ fingerprint: 'fp-new', hostname: 'fl6-new' }], ips: [{ hostFingerprint: 'fp-new', address: '10.50.7.250' }], stats: { hostsTotal: 2, hostsScanned: 1 } });
    await ingest(c.t, daemon, { sessionId, final: true, stats: { hostsTotal: 2, hostsScanned: 2, portsScanned: 400 } });
    const history = p.getByRole('table', { name: 'Scan history' });
    const done = history.getByRole('row').filter({ hasText: 'completed' });
    await done.waitFor();
    expect(await done.textContent()).toContain('fra-scanner-01');
    expect(await done.textContent()).toMatch(/under 1 s|\d+(\.\d)? s|min/);
    expect(await done.getAttribute('class')).toContain('highlight');
    await p.getByRole('button', { name: 'Scan now' }).waitFor();
    await shot(p, 'lifecycle-02-network-page-1440');

    // Edit: renamed, the schedule cleared; what happened is said.
    await p.getByRole('button', { name: 'Edit network' }).click();
    const dialog = p.getByRole('dialog', { name: /Edit network/ });
    await dialog.getByText('campus').waitFor();
    await dialog.getByLabel('Name').fill('floor 6 east');
    await dialog.getByLabel('Scan every (minutes)').fill('');
    await shot(p, 'lifecycle-03-edit-network-1440');
    await dialog.getByRole('button', { name: 'Save network' }).click();
    await p.getByRole('status').filter({ hasText: 'Network floor 6 east saved.' }).waitFor();
    await heading(p, 'floor 6 east');
    expect(await fields.textContent()).toContain('manual only');

    // Delete: the dialog says the hosts stay and the session goes.
    await p.getByRole('button', { name: 'Delete network' }).click();
    const del = p.getByRole('dialog', { name: /Delete network/ });
    const text = await del.textContent();
    expect(text).toContain('stay in the inventory');
    expect(text).toContain('1 session');
    expect(text).toContain('50+ hosts');
    await shot(p, 'lifecycle-04-delete-network-1440');
    await del.getByRole('button', { name: 'Delete network' }).click();
    await heading(p, 'Networks');
    await p.getByRole('status').filter({ hasText: 'Network floor 6 east deleted; its hosts stay in the inventory.' }).waitFor();
    await expect.poll(() => p.getByRole('row').filter({ hasText: '10.50.6.0/23' }).count(), POLL).toBe(0);
    // The hosts are still there.
    await p.goto('/hosts?search=fl6-new');
    await p.getByRole('link', { name: 'fl6-new' }).waitFor();

    // The same screens at a phone's width.
    const m = await c.page({ viewport: { width: 390, height: 844 } });
    await signIn(m, 'editor@example.test', PASSWORD);
    await heading(m, 'Overview');
    await m.goto('/networks');
    await heading(m, 'Networks');
    await m.getByLabel('CIDR').fill('10.50.0.0/20');
    await m.getByRole('status').filter({ hasText: 'overlaps' }).waitFor();
    await shot(m, 'lifecycle-05-networks-390');
  }, 120_000);

  it('an admin opens a site\'s page, is refused deleting a site that holds things, and deletes an empty one', async () => {
    const p = await ownerPage(c, { viewport: { width: 1440, height: 900 } });
    await nav(p, 'Sites').click();
    await heading(p, 'Sites');
    await p.getByRole('link', { name: 'Frankfurt' }).click();
    await heading(p, 'Frankfurt');
    await p.getByRole('table', { name: 'Networks of Frankfurt' }).getByRole('link', { name: 'campus' }).waitFor();
    await p.getByRole('table', { name: 'Daemons of Frankfurt' }).getByRole('link', { name: 'fra-scanner-01' }).waitFor();
    await p.getByRole('table', { name: 'Hosts of Frankfurt' }).getByRole('link', { name: 'fl6-001' }).waitFor();
    await shot(p, 'lifecycle-06-site-page-1440');

    await p.getByRole('button', { name: 'Delete site' }).click();
    const refuse = p.getByRole('dialog', { name: /Delete site fra/ });
    await refuse.getByRole('button', { name: 'Delete site' }).click();
    const alert = refuse.getByRole('alert');
    await alert.waitFor();
    expect(await alert.textContent()).toMatch(/Site fra still holds \d+ hosts, 1 network and 1 daemon/);
    await shot(p, 'lifecycle-07-site-refused-1440');
    await refuse.getByRole('button', { name: 'Close' }).click();

    await nav(p, 'Sites').click();
    await p.getByRole('link', { name: 'Berlin (closed)' }).click();
    await heading(p, 'Berlin (closed)');
    await p.getByText('No network in this site').waitFor();
    await p.getByRole('button', { name: 'Delete site' }).click();
    await p.getByRole('dialog', { name: /Delete site ber-old/ }).getByRole('button', { name: 'Delete site' }).click();
    await heading(p, 'Sites');
    await p.getByRole('status').filter({ hasText: 'ber-old deleted' }).waitFor();
    // The list's refetch can land after the status: wait for it rather than count once.
    await expect.poll(() => p.getByRole('link', { name: 'Berlin (closed)' }).count(), POLL).toBe(0);

    const m = await ownerPage(c, { viewport: { width: 390, height: 844 } });
    await m.goto(`/sites/${fraSite}`);
    await heading(m, 'Frankfurt');
    await m.getByRole('table', { name: 'Hosts of Frankfurt' }).waitFor();
    await shot(m, 'lifecycle-08-site-page-390');
  });

  it('an admin disables a daemon, opens its page and removes it; its key is refused from then on', async () => {
    // A session of the campus network, completed, for the daemon's page.
    const campus = (await c.server.database.db.selectFrom('networks').select('id').where('name', '=', 'campus').executeTakeFirstOrThrow()).id;
    const { sessionId } = await createScan(c.server.database.db, { type: 'system', organisationId: c.org.organisationId }, { networkId: campus });
    expect((await poll(c.t.app, daemon.token, daemon.id)).json().sessionId).toBe(sessionId);
    await ingest(c.t, daemon, { sessionId, final: true, stats: { hostsTotal: 300, hostsScanned: 300, portsScanned: 9000 } });
    const p = await ownerPage(c, { viewport: { width: 1440, height: 900 } });
    await nav(p, 'Daemons').click();
    await heading(p, 'Daemons');
    await p.getByRole('link', { name: 'fra-scanner-01' }).click();
    await heading(p, 'fra-scanner-01');
    await p.getByRole('table', { name: 'Sessions of fra-scanner-01' }).getByRole('row').filter({ hasText: 'completed' }).waitFor();

    await p.getByRole('button', { name: 'Disable daemon' }).click();
    await p.getByRole('dialog', { name: /Disable daemon/ }).getByRole('button', { name: 'Disable daemon' }).click();
    await p.getByRole('status').filter({ hasText: 'disabled: it takes no scan' }).waitFor();
    await p.locator('dl.fields').getByText('disabled', { exact: true }).waitFor();
    await p.getByRole('button', { name: 'Enable daemon' }).waitFor();
    await shot(p, 'lifecycle-09-daemon-disabled-1440');

    const m = await ownerPage(c, { viewport: { width: 390, height: 844 } });
    await m.goto(`/daemons/${daemon.id}`);
    await heading(m, 'fra-scanner-01');
    await m.getByRole('button', { name: 'Enable daemon' }).waitFor();
    await shot(m, 'lifecycle-10-daemon-390');

    await p.getByRole('button', { name: 'Remove daemon' }).click();
    const dialog = p.getByRole('dialog', { name: /Remove daemon/ });
    expect(await dialog.textContent()).toContain('revoked at once');
    await dialog.getByRole('button', { name: 'Remove daemon' }).click();
    await heading(p, 'Daemons');
    await p.getByRole('status').filter({ hasText: 'Daemon fra-scanner-01 removed' }).waitFor();
    await expect.poll(() => p.getByRole('link', { name: 'fra-scanner-01' }).count(), POLL).toBe(0);
    await shot(p, 'lifecycle-11-daemon-removed-1440');
    const hb = await c.t.app.inject({ method: 'POST', url: '/api/v1/daemon/heartbeat', headers: daemonHeaders(daemon.token, daemon.id), payload: { status: 'online' } });
    expect(hb.statusCode).toBe(401);
  });
});
