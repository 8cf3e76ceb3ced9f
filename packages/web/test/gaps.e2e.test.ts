import { sql } from 'kysely';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as admin from '../../server/src/admin/admin.service.js';
import * as sites from '../../server/src/sites/sites.service.js';
import { addCertificate, addHost, addHosts, addService, addVulnerability } from '../../server/test/fixtures.js';
import { bearer, seedMemberWithKey } from '../../server/test/helpers.js';
import { onlineDaemon } from '../../server/test/scanning.js';
import { type Console, haveChromium, heading, nav, ownerPage, ownerWithPassword, PASSWORD, POLL, shot, signIn, startConsole } from './harness.js';

// The console's gaps of issue #14, end to end: cancelling a scan (confirmed; a refusal shows the
// problem's detail; viewers see no button), pages that name what they show however long the list
// (a network, hosts and sites past the first 500), snapshots newest first, every certificate
// expiry window of the overview linking to its list, and sites following the live change stream.

const DAY = 86_400_000;

describe.skipIf(!haveChromium)('console gaps (#14) in Chromium', () => {
  let c: Console;
  let key: string;
  const viewer = 'viewer@gaps.test';
  const db = () => c.server.database.db;
  const org = () => c.org.organisationId;
  const post = async (url: string, payload: Record<string, unknown>, status: number) => {
    const res = await c.t.app.inject({ method: 'POST', url, headers: bearer(key), payload });
    expect(res.statusCode, res.body).toBe(status);
    return res.json();
  };
  const viewerPage = async (): Promise<Page> => {
    const v = await c.page();
    await signIn(v, viewer, PASSWORD);
    await heading(v, 'Overview');
    return v;
  };

  beforeAll(async () => {
    c = await startConsole();
    await ownerWithPassword(c);
    key = (await seedMemberWithKey(c.server.database, c.org, 'editor', ['scan:run', 'inventory:write', 'inventory:read'])).token;
    await admin.createUser(db(), { type: 'cli' }, { org: org(), email: viewer, role: 'viewer', password: PASSWORD });
  });
  afterAll(() => c?.close());

  it('cancels a queued scan after confirmation, shows a refusal\'s detail, and offers viewers no cancel', async () => {
    await onlineDaemon(c.t, c.org, { networkCidrs: ['10.60.0.0/16'] });
    const network = await post('/api/v1/networks', { name: 'cancel-lab', cidr: '10.60.1.0/24' }, 201);
    await post('/api/v1/scans', { networkId: network.id }, 202);

    const p = await ownerPage(c);
    await p.goto(`/networks/${network.id}`);
    await heading(p, 'cancel-lab');
    const live = p.getByRole('region', { name: 'Scan in progress' });
    await live.getByText('queued', { exact: true }).waitFor();
    await live.getByRole('button', { name: 'Cancel scan' }).click();
    const dialog = p.getByRole('dialog', { name: 'Cancel this scan?' });
    await dialog.getByText('stops before it starts').waitFor();
    await shot(p, 'gaps-01-cancel-confirm');
    await dialog.getByRole('button', { name: 'Cancel scan' }).click();
    await dialog.waitFor({ state: 'detached' });
    const done = p.getByRole('region', { name: 'Scan cancelled' });
    await done.getByText('cancelled', { exact: true }).waitFor();
    await p.getByRole('table', { name: 'Scan history' }).getByText('cancelled', { exact: true }).waitFor();
    await shot(p, 'gaps-02-cancelled');

    // A second scan, finished behind the page's back while the confirmation is open: the 409's detail.
    const second = await post('/api/v1/scans', { networkId: network.id }, 202);
    await live.getByRole('button', { name: 'Cancel scan' }).click();
    await dialog.waitFor();
    await post(`/api/v1/scans/${second.sessionId}/cancel`, {}, 200);
    await live.waitFor({ state: 'detached' }); // the live stream ended it on the page
    await dialog.getByRole('button', { name: 'Cancel scan' }).click();
    await dialog.getByRole('alert').filter({ hasText: 'The scan session has already finished.' }).waitFor();
    await shot(p, 'gaps-03-cancel-refused');
    await dialog.getByRole('button', { name: 'Close' }).click();
    await dialog.waitFor({ state: 'detached' });

    // A viewer follows a scan but cannot cancel it.
    await post('/api/v1/scans', { networkId: network.id }, 202);
    const v = await viewerPage();
    await v.goto(`/networks/${network.id}`);
    await v.getByRole('region', { name: 'Scan in progress' }).getByText('queued', { exact: true }).waitFor();
    expect(await v.getByRole('button', { name: 'Cancel scan' }).count()).toBe(0);
    expect(await v.getByRole('button', { name: 'Scan now' }).count()).toBe(0);
  });

  it('names a network, hosts and sites past the first 500 of their lists', async () => {
    // 510 networks before the one opened, 600 hosts before the one with a finding.
    await sql`insert into networks (organisation_id, name, cidr)
      select ${org()}, 'bulk-' || g, ('10.200.' || g % 256 || '.' || (g / 256) * 16 || '/28')::cidr from generate_series(1, 510) g`.execute(db());
    const far = (await sites.createSite(db(), { type: 'cli', organisationId: org() }, { code: 'far', name: 'Far away' })).id;
    const network = await post('/api/v1/networks', { name: 'the 511th', cidr: '10.201.0.0/24', siteId: far }, 201);
    await addHosts(db(), org(), 600, 'early');
    const late = await addHost(db(), org(), { hostname: 'late-web', addresses: ['10.201.0.9'], siteId: far });
    const svc = await addService(db(), org(), late, { port: 443, name: 'https' });
    await addVulnerability(db(), org(), svc, late, { cveId: 'CVE-2024-0001', severity: 'critical', score: 9.8 });

    const p = await ownerPage(c);
    await p.goto(`/networks/${network.id}`);
    await heading(p, 'the 511th');
    await p.getByText('10.201.0.0/24', { exact: true }).waitFor();
    const siteField = p.locator('dl.fields dt', { hasText: /^Site$/ }).locator('xpath=following-sibling::dd[1]');
    await expect.poll(() => siteField.textContent(), POLL).toBe('Far away');
    await shot(p, 'gaps-04-network-past-500');

    await nav(p, 'Vulnerabilities').click();
    await heading(p, 'Vulnerabilities');
    const row = p.getByRole('row').filter({ hasText: 'CVE-2024-0001' });
    await row.getByRole('link', { name: 'late-web' }).waitFor();
    await shot(p, 'gaps-05-finding-host-past-500');

    await p.goto('/hosts?search=late-web');
    await heading(p, 'Hosts');
    await p.getByRole('row').filter({ hasText: 'late-web' }).getByRole('cell', { name: 'Far away' }).waitFor();

    // An unknown id is said so, not an error.
    await p.goto('/networks/00000000-0000-4000-8000-000000000000');
    await p.getByText('No network 00000000-0000-4000-8000-000000000000 in this organisation.').waitFor();
  });

  it('lists snapshots newest first', async () => {
    await post('/api/v1/snapshots', { reason: 'pre_change' }, 201);
    await post('/api/v1/snapshots', { reason: 'post_change' }, 201);
    const p = await ownerPage(c);
    await nav(p, 'Snapshots').click();
    await heading(p, 'Snapshots');
    const table = p.getByRole('table', { name: 'Snapshots, the newest first' });
    await table.waitFor();
    // The daily job's (scheduled) snapshot of the fresh server, whenever it ran, is older than ours.
    const reasons = async () => (await table.locator('tbody tr td:nth-child(2)').allTextContents()).filter((r) => r !== 'Scheduled');
    await expect.poll(reasons, POLL).toEqual(['After a change', 'Before a change']);
    // One taken here comes first too.
    await p.getByLabel('Reason', { exact: true }).selectOption('audit');
    await p.getByRole('button', { name: 'Take snapshot' }).click();
    await expect.poll(reasons, POLL).toEqual(['Audit', 'After a change', 'Before a change']);
    await shot(p, 'gaps-06-snapshots-newest-first');
  });

  it('shows every certificate expiry window on the overview, each opening its certificates', async () => {
    const h = await addHost(db(), org(), { hostname: 'tls-host' });
    const now = Date.now();
    const notAfter: [string, number][] = [
      ['CN=gone-since.example', -60_000], // expired since it was seen: recorded as trusted
      ['CN=today.example', DAY / 2],
      ['CN=this-week.example', 5 * DAY],
      ['CN=fortnight.example', 10 * DAY],
      ['CN=month.example', 20 * DAY],
    ];
    for (const [i, [subject, offset]] of notAfter.entries()) {
      const id = await addCertificate(db(), org(), h, { trustStatus: 'trusted', port: 8000 + i });
      await sql`update certificates set subject = ${subject}, not_after = ${new Date(now + offset)} where id = ${id}`.execute(db());
    }
    const p = await ownerPage(c);
    const figure = (label: string) => p.locator('li.figure').filter({ has: p.locator('.figure-label', { hasText: new RegExp(`^${label}$`, 'i') }) });
    const windows: [string, string, number][] = [
      ['expired', 'expired', 1],
      ['within 1 day', '1d', 1],
      ['within 7 days', '7d', 2],
      ['within 14 days', '14d', 3],
      ['within 30 days', '30d', 4],
    ];
    for (const [label, w, n] of windows) {
      await figure(label).locator('.figure-value', { hasText: String(n) }).waitFor();
      expect(await figure(label).getByRole('link').getAttribute('href')).toBe(`/certificates?expiring=${w}`);
    }
    await shot(p, 'gaps-07-overview-certificates');

    await figure('within 14 days').getByRole('link').click();
    await heading(p, 'Certificates');
    expect(await p.getByLabel('Expiry').inputValue()).toBe('14d');
    const subjects = () => p.getByRole('table', { name: 'Certificates' }).locator('tbody tr').allTextContents();
    await expect.poll(async () => (await subjects()).map((r) => /CN=[a-z-]+\.example/.exec(r)?.[0]), POLL).toEqual(['CN=today.example', 'CN=this-week.example', 'CN=fortnight.example']);
    await shot(p, 'gaps-08-certificates-14d');

    // The expired figure counts by notAfter: it opens the certificate the scan recorded as trusted.
    await p.goto('/');
    await heading(p, 'Overview');
    await figure('expired').getByRole('link').click();
    await heading(p, 'Certificates');
    await p.getByRole('row').filter({ hasText: 'CN=gone-since.example' }).waitFor();
    expect(await p.getByRole('table', { name: 'Certificates' }).locator('tbody tr').count()).toBe(1);
  });

  it('shows a site added, renamed or given a daemon elsewhere without a reload', async () => {
    const p = await ownerPage(c);
    await nav(p, 'Sites').click();
    await heading(p, 'Sites');
    await p.getByRole('table', { name: 'Sites' }).waitFor();
    const d = await c.page();
    await signIn(d, c.owner.email, c.owner.password);
    await heading(d, 'Overview');
    await nav(d, 'Daemons').click();
    await heading(d, 'Daemons');

    const actor = { type: 'cli' as const, organisationId: org() };
    const added = await sites.createSite(db(), actor, { code: 'live-1', name: 'Live one' });
    await p.getByRole('row').filter({ hasText: 'live-1' }).getByRole('cell', { name: 'Live one' }).waitFor();
    await sites.renameSite(db(), actor, added.id, { name: 'Live renamed' });
    await p.getByRole('row').filter({ hasText: 'live-1' }).getByRole('cell', { name: 'Live renamed' }).waitFor();
    await shot(p, 'gaps-09-site-renamed-live');

    // A daemon moved to the site elsewhere: the Daemons page shows it there.
    const daemon = await onlineDaemon(c.t, c.org, { name: 'mover', networkCidrs: ['10.70.0.0/24'] });
    const moverSite = d.getByLabel('Site of mover');
    const shown = () => moverSite.evaluate((el) => (el as unknown as { selectedOptions: { textContent: string | null }[] }).selectedOptions[0]?.textContent);
    await expect.poll(shown, POLL).toBe('No site');
    await sites.setDaemonSite(db(), actor, daemon.id, added.id);
    await expect.poll(shown, POLL).toBe('Live renamed (live-1)');
    await sites.renameSite(db(), actor, added.id, { name: 'Live again' });
    await expect.poll(shown, POLL).toBe('Live again (live-1)');
    await shot(d, 'gaps-10-daemon-site-live');
  }, 120_000);
});
