import { sql } from 'kysely';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createUser } from '../../server/src/admin/admin.service.js';
import { addHost, addService, addSite, addTopology, addVulnerability } from '../../server/test/fixtures.js';
import { bearer, seedMemberWithKey } from '../../server/test/helpers.js';
import { onlineDaemon } from '../../server/test/scanning.js';
import { type Console, haveChromium, heading, PASSWORD, shot, signIn, startConsole, ownerWithPassword } from './harness.js';

// Issue 23: a viewer never sees a form it cannot submit. A viewer signs in to an organisation with
// something on every screen (a site, a network, a host with a finding, a daemon, a topology view, a
// snapshot) and walks every screen: no write button, no role or site select, no add/take/enrol
// form, and the admin screens say who may use them instead of failing with 403s.

// The page's DOM, inside p.evaluate (this file is type-checked without the DOM library).
declare const document: any;

/** Buttons that write (or open a form that writes): none may show to a viewer. */
const WRITES = /^(Scan|Cancel scan|Take snapshot|Add|Rename|Enrol|Create|Run now|Import|Upload|Acknowledge|Mark false positive|Reopen|Regenerate|Share|Edit|Delete|Remove|Disable|Enable|Send test|Revoke link|Save)\b/;

async function writeControls(p: Page): Promise<string[]> {
  return p.evaluate((source) => {
    const re = new RegExp(source);
    const found: string[] = [];
    for (const b of Array.from(document.querySelectorAll('main button, main input[type=submit]')) as any[]) {
      const name = (b.getAttribute('aria-label') ?? b.textContent ?? '').trim();
      if (re.test(name)) found.push(`button “${name}”`);
    }
    for (const s of Array.from(document.querySelectorAll('main select[aria-label^="Role of"], main select[aria-label^="Site of"]')) as any[]) found.push(`select “${s.getAttribute('aria-label')}”`);
    for (const f of Array.from(document.querySelectorAll('main input[type=file]')) as any[]) found.push(`file input ${f.id}`);
    return found;
  }, WRITES.source);
}

describe.skipIf(!haveChromium)('a viewer in Chromium', () => {
  let c: Console;
  let host: string;
  let network: string;
  const viewer = 'vera@example.com';

  beforeAll(async () => {
    c = await startConsole();
    await ownerWithPassword(c);
    const db = c.server.database.db;
    const o = c.org.organisationId;
    await createUser(db, { type: 'cli' }, { org: o, email: viewer, role: 'viewer', password: PASSWORD });
    await sql`update users set must_change_password = false where email = ${viewer}`.execute(db);
    const site = (await addSite(db, o, 'hq')).id;
    network = (await sql<{ id: string }>`insert into networks (organisation_id, site_id, name, cidr) values (${o}, ${site}, 'HQ servers', '10.95.0.0/24') returning id`.execute(db)).rows[0]!.id;
    host = await addHost(db, o, { hostname: 'db-1', addresses: ['10.95.0.7'], siteId: site });
    const svc = await addService(db, o, host, { port: 22, name: 'ssh', product: 'OpenSSH', version: '9.2p1' });
    await addVulnerability(db, o, svc, host, { cveId: 'CVE-2024-6387', severity: 'high', score: 8.1 });
    await onlineDaemon(c.t, c.org, { name: 'hq-daemon', siteCode: 'hq', networkCidrs: ['10.95.0.0/24'] });
    await addTopology(db, o, { kind: 'network', siteId: site });
    const editor = await seedMemberWithKey(c.server.database, c.org, 'editor', ['inventory:write']);
    const snap = await c.server.app.inject({ method: 'POST', url: '/api/v1/snapshots', headers: bearer(editor.token), payload: { reason: 'audit' } });
    expect(snap.statusCode, snap.body).toBe(201);
  });
  afterAll(() => c?.close());

  it('walks every screen and finds no form it cannot submit', async () => {
    const p = await c.page({ viewport: { width: 1440, height: 900 } });
    // Every call a screen makes: a viewer's screens make none the server refuses.
    const refused: string[] = [];
    p.on('response', (r) => void (r.url().includes('/api/') && r.status() === 403 && refused.push(`${r.request().method()} ${new URL(r.url()).pathname}`)));
    await signIn(p, viewer, PASSWORD);
    await heading(p, 'Overview');
    const screens: [string, string][] = [
      ['/', 'Overview'],
      ['/hosts', 'Hosts'],
      [`/hosts/${host}`, 'db-1'],
      ['/networks', 'Networks'],
      [`/networks/${network}`, 'HQ servers'],
      ['/sites', 'Sites'],
      ['/topology', 'Topology'],
      ['/services', 'Services'],
      ['/certificates', 'Certificates'],
      ['/vulnerabilities', 'Vulnerabilities'],
      ['/daemons', 'Daemons'],
      ['/snapshots', 'Snapshots'],
      ['/settings/keys', 'API keys'],
      ['/settings/advisories', 'Advisories'],
      ['/settings/members', 'Members'],
      ['/settings/jobs', 'Jobs'],
      ['/settings/notifications', 'Notifications'],
      ['/settings/cloud', 'Cloud accounts'],
      ['/settings/scim', 'SCIM provisioning'],
      ['/settings/activity', 'Activity'],
    ];
    const seen: Record<string, string[]> = {};
    for (const [url, title] of screens) {
      await p.goto(url);
      await heading(p, title);
      // Let the screen's data arrive (a write control would come with it).
      await p.waitForLoadState('networkidle');
      seen[url] = await writeControls(p);
    }
    expect(seen).toEqual(Object.fromEntries(screens.map(([url]) => [url, []])));
    expect(refused).toEqual([]);
    await shot(p, 'viewer-01-activity');

    // What is there instead: the data, and who may change it.
    await p.goto(`/hosts/${host}`);
    await heading(p, 'db-1');
    await p.getByText('CVE-2024-6387').first().waitFor();
    expect(await writeControls(p)).toEqual([]);
    await shot(p, 'viewer-02-host-findings');
    await p.goto('/settings/members');
    await p.getByText('Members are managed by admins and owners of the organisation. You are viewer.').waitFor();
    await shot(p, 'viewer-03-members');
    // The one form a viewer may submit: an API key with the scopes a viewer holds.
    await p.goto('/settings/keys');
    await heading(p, 'API keys');
    await p.getByRole('button', { name: 'Mint key' }).waitFor();
    expect(await p.getByLabel('inventory:write').count()).toBe(0);
    await shot(p, 'viewer-04-keys');
  }, 120_000);

  it('reads at a phone\'s width', async () => {
    const p = await c.page({ viewport: { width: 390, height: 844 } });
    await signIn(p, viewer, PASSWORD);
    await heading(p, 'Overview');
    await p.goto('/networks');
    await heading(p, 'Networks');
    await p.getByRole('link', { name: 'HQ servers' }).waitFor();
    expect(await writeControls(p)).toEqual([]);
    await shot(p, 'viewer-05-phone-networks');
  });
});
