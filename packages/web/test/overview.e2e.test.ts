import { readFileSync } from 'node:fs';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { importAdvisories } from '../../server/src/advisories/import.service.js';
import { addSite } from '../../server/test/fixtures.js';
import { bearer, seedMemberWithKey } from '../../server/test/helpers.js';
import { type Scanning, createNetwork, ingest, onlineDaemon, startSession } from '../../server/test/scanning.js';
import { type Console, haveChromium, heading, nav, ownerPage, ownerWithPassword, POLL, shot, startConsole } from './harness.js';

// The overview's figures, the host page's certificates and neighbours, and the hosts' site filter,
// end to end: a running scan session that observed an expired certificate and an LLDP neighbour,
// a snapshot and an advisory import, each shown where an operator looks for it.

const NVD = JSON.parse(readFileSync(new URL('../../server/test/fixtures/advisories/nvd-CVE-2024-6387.json', import.meta.url), 'utf8'));
const DAY = 86_400_000;

describe.skipIf(!haveChromium)('the overview and the host page in Chromium', () => {
  let c: Console;

  beforeAll(async () => {
    c = await startConsole();
    await ownerWithPassword(c);
  });
  afterAll(() => c?.close());

  it('shows every figure, the host\'s certificate and neighbour, and filters hosts by site', async () => {
    const p = await ownerPage(c);
    // Nothing yet: no advisories (the daily snapshot job may already have run on this fresh server).
    await p.getByText('No advisories loaded: import with `surveyor advisories import` or set SERVICE_ADVISORY_FEED_URL').waitFor();
    await shot(p, 'overview-01-empty');

    const db = c.server.database.db;
    const api = (await seedMemberWithKey(c.t.database, c.org, 'editor', ['scan:run', 'inventory:write', 'inventory:read'])).token;
    const daemon = await onlineDaemon(c.t, c.org, { networkCidrs: ['10.60.0.0/24'], siteCode: 'hq' });
    const s: Scanning = { org: c.org, api, daemon, siteId: null };
    const sessionId = await startSession(c.t, s, await createNetwork(c.t, s, '10.60.0.0/24'));
    await ingest(c.t, daemon, {
      sessionId,
      hosts: [
        { fingerprint: 'fp-rtr', hostname: 'core-rtr-1', deviceType: 'router' },
        { fingerprint: 'fp-web', hostname: 'web-1' },
      ],
      ips: [
        { hostFingerprint: 'fp-rtr', address: '10.60.0.1', family: 4 },
        { hostFingerprint: 'fp-web', address: '10.60.0.20', family: 4 },
      ],
      ports: [{ fingerprint: 'fp-web', address: '10.60.0.20', protocol: 'tcp', number: 443, state: 'open' }],
      neighbors: [{ fingerprint: 'fp-rtr', localInterface: 'ge-0/0/0', remoteChassisId: '00:16:3e:aa:bb:cc', remotePortId: 'Gi1/0/1', remoteSystemName: 'access-sw-1', managementAddress: '10.60.0.2', protocol: 'lldp' }],
      tls: [
        {
          fingerprint: 'fp-web', address: '10.60.0.20', port: 443, subject: 'CN=web-1.example.net', issuer: 'CN=Example Issuing CA',
          notBefore: new Date(Date.now() - 400 * DAY).toISOString(), notAfter: new Date(Date.now() - 3 * DAY).toISOString(), sha256: 'ab'.repeat(32),
        },
      ],
      stats: { hostsTotal: 4, hostsScanned: 2, portsScanned: 10 },
    });
    const snap = await c.t.app.inject({ method: 'POST', url: '/api/v1/snapshots', headers: bearer(api), payload: {} });
    expect(snap.statusCode, snap.body).toBe(201);
    await importAdvisories(db, [NVD]);
    // A second site holding the router: the hosts' site filter tells them apart.
    const branch = (await addSite(db, c.org.organisationId, 'branch')).id;
    await sql`update hosts set site_id = ${branch} where organisation_id = ${c.org.organisationId} and hostname = 'core-rtr-1'`.execute(db);

    await p.reload();
    await heading(p, 'Overview');
    const figure = (label: string) => p.locator('li.figure').filter({ has: p.locator('.figure-label', { hasText: new RegExp(`^${label}$`, 'i') }) });
    await figure('scan sessions running').locator('.figure-value', { hasText: '1' }).waitFor();
    expect(await figure('scan sessions running').getByRole('link').getAttribute('href')).toBe('/networks');
    expect(await figure('scan sessions stalled').locator('.figure-value').textContent()).toBe('0');
    expect(await figure('scan sessions stalled').getAttribute('class')).not.toContain('bad');
    expect(await figure('last snapshot').locator('.figure-value').textContent()).toMatch(/^\d+ s ago$/);
    expect(await figure('last snapshot').getByRole('link').getAttribute('href')).toBe('/snapshots');
    expect(await figure('advisory feed').locator('.figure-value').textContent()).toMatch(/^\d+ s old$/);
    expect(await figure('advisory feed').getByRole('link').getAttribute('href')).toBe('/vulnerabilities');
    expect(await figure('expired').locator('.figure-value').textContent()).toBe('1');
    expect(await figure('expired').getAttribute('class')).toContain('bad');
    expect(await figure('expired').getByRole('link').getAttribute('href')).toBe('/certificates?expiring=expired');
    expect(await figure('within 7 days').locator('.figure-value').textContent()).toBe('0');
    const quiet = p.getByRole('list', { name: 'Quietest online daemons' });
    await quiet.getByRole('listitem').first().waitFor();
    expect(await quiet.getByRole('listitem').count()).toBe(1);
    expect(await quiet.textContent()).toMatch(/quiet \d+ s/);
    await shot(p, 'overview-02-figures');

    // The expired figure opens the expired certificates.
    await figure('expired').getByRole('link').click();
    await heading(p, 'Certificates');
    await p.getByRole('row').filter({ hasText: 'CN=web-1.example.net' }).waitFor();

    // The hosts' site filter, kept in the URL.
    await nav(p, 'Hosts').click();
    await heading(p, 'Hosts');
    await p.getByRole('link', { name: 'core-rtr-1' }).waitFor();
    await p.getByRole('link', { name: 'web-1' }).waitFor();
    await p.getByLabel('Site').selectOption({ label: 'Site branch' });
    await p.waitForURL(/siteId=/);
    await p.getByRole('link', { name: 'web-1' }).waitFor({ state: 'detached' });
    await p.getByRole('link', { name: 'core-rtr-1' }).waitFor();
    await shot(p, 'overview-03-hosts-by-site');
    await p.reload();
    await heading(p, 'Hosts');
    await expect.poll(() => p.getByLabel('Site').locator('option:checked').textContent(), POLL).toBe('Site branch');
    await p.getByRole('link', { name: 'core-rtr-1' }).waitFor();
    expect(await p.getByRole('link', { name: 'web-1' }).count()).toBe(0);

    // The router's page: its LLDP neighbour, and no certificate.
    await p.getByRole('link', { name: 'core-rtr-1' }).click();
    await heading(p, 'core-rtr-1');
    const neighbours = p.getByRole('table', { name: 'Neighbours of this host' });
    await neighbours.getByRole('row').filter({ hasText: 'access-sw-1' }).waitFor();
    expect(await neighbours.textContent()).toContain('Gi1/0/1');
    await p.getByText('No TLS certificate seen on this host.').waitFor();
    await shot(p, 'overview-04-router-page');

    // The web server's page: its expired certificate, and no neighbour.
    await p.goto('/hosts');
    await heading(p, 'Hosts');
    await p.getByRole('link', { name: 'web-1' }).click();
    await heading(p, 'web-1');
    const certs = p.getByRole('table', { name: 'Certificates of this host' });
    const row = certs.getByRole('row').filter({ hasText: 'CN=web-1.example.net' });
    await row.waitFor();
    expect(await row.textContent()).toContain('443');
    expect(await row.textContent()).toContain('Expired');
    expect(await row.locator('.days-expired').count()).toBe(1);
    await p.getByText('No LLDP or CDP neighbour reported for this host.').waitFor();
    await shot(p, 'overview-05-web-page');
  });
});
