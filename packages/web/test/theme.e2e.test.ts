import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as admin from '../../server/src/admin/admin.service.js';
import { clearMatchState } from '../../server/src/advisories/advisories.repo.js';
import { importAdvisories } from '../../server/src/advisories/import.service.js';
import { matchOrganisation } from '../../server/src/advisories/match.service.js';
import { daemonHeaders } from '../../server/test/daemon-client.js';
import { addCertificate, addHost, addService, addSite, addVulnerability } from '../../server/test/fixtures.js';
import { type Scanning, createNetwork, onlineDaemon } from '../../server/test/scanning.js';
import { lowContrast, unnamedControls } from './a11y.js';
import { type Console, haveChromium, heading, nav, ownerWithPassword, POLL, shot, signIn, startConsole } from './harness.js';

// The console in light and in dark (it follows prefers-color-scheme; Chromium emulates either per
// context): every main screen, with findings of each severity, a host's topology drawing, an
// alert, a dialog and a reveal-once panel, checked for text contrast (WCAG AA) and for controls
// without an accessible name. Screenshots: test-output/console/theme-{light,dark}-*.png.

const hasFocus = (el: unknown) => el === (el as { ownerDocument: { activeElement: unknown } }).ownerDocument.activeElement;

describe.skipIf(!haveChromium)('the console in light and dark', () => {
  let c: Console;
  let web = '';
  let networkId = '';

  beforeAll(async () => {
    c = await startConsole();
    await ownerWithPassword(c);
    const db = c.server.database.db;
    const org = c.org.organisationId;
    await addSite(db, org, 'hq');
    web = await addHost(db, org, { hostname: 'web-1', addresses: ['10.70.0.10'], os: 'Debian 12' });
    await addHost(db, org, { hostname: 'client-1', addresses: ['10.70.0.20'] });
    const ssh = await addService(db, org, web, { port: 22, name: 'ssh', product: 'OpenSSH', version: '9.2p1', cpe: 'cpe:2.3:a:openbsd:openssh:9.2p1:*:*:*:*:*:*:*' });
    const https = await addService(db, org, web, { port: 443, name: 'https', product: 'nginx', version: '1.24.0' });
    for (const [i, severity] of (['critical', 'high', 'medium', 'low', 'none'] as const).entries()) {
      await addVulnerability(db, org, i % 2 ? https : ssh, web, { cveId: `CVE-2024-000${i + 1}`, severity, score: 9.5 - i * 2, state: i === 4 ? 'resolved' : 'open' });
    }
    // One real finding (OpenSSH 9.2p1 and regreSSHion) stays open; the matcher resolves the made-up ones.
    await importAdvisories(db, [JSON.parse(readFileSync(new URL('../../server/test/fixtures/advisories/nvd-CVE-2024-6387.json', import.meta.url), 'utf8'))]);
    // The server's own cve.match run may overlap this one: match everything again until the finding shows.
    const states = () => db.selectFrom('vulnerabilities').select('state').where('organisation_id', '=', org).where('cve_id', '=', 'CVE-2024-6387').execute();
    for (let i = 0; i < 50 && (await states()).map((v) => v.state).join() !== 'open'; i++) {
      await clearMatchState(db);
      await matchOrganisation(db, org);
      await new Promise((resolve) => setTimeout(resolve, POLL.interval));
    }
    expect((await states()).map((v) => v.state)).toEqual(['open']);
    for (const [port, trustStatus] of [[443, 'trusted'], [8443, 'expired'], [9443, 'self_signed']] as const) await addCertificate(db, org, web, { trustStatus, port });
    const api = (await admin.createApiKey(db, { type: 'cli' }, { org, userEmail: c.owner.email, scopes: ['inventory:read', 'inventory:write', 'scan:run'] })).token;
    const daemon = await onlineDaemon(c.t, c.org, { name: 'edge-1', networkCidrs: ['10.70.0.0/24'], capabilities: { ebpf: true } });
    const s: Scanning = { org: c.org, api, daemon, siteId: null };
    networkId = await createNetwork(c.t, s, '10.70.0.0/24');
    const minute = new Date(Math.floor((Date.now() - 10 * 60_000) / 60_000) * 60_000).toISOString();
    const flow = (o: Record<string, unknown>) => ({ bucketStart: minute, protocol: 'tcp', packets: 10, bytes: 5000, source: 'ebpf', ...o });
    const res = await c.server.app.inject({
      method: 'POST', url: '/api/v1/daemon/flows', headers: daemonHeaders(daemon.token, daemon.id),
      payload: { flows: [flow({ srcIp: '10.70.0.20', dstIp: '10.70.0.10', dstPort: 443 }), flow({ srcIp: '10.70.0.10', dstIp: '198.51.100.7', dstPort: 53, protocol: 'udp' })], dropped: 0 },
    });
    expect(res.statusCode, res.body).toBe(200);
  });
  afterAll(() => c?.close());

  for (const scheme of ['light', 'dark'] as const) {
    it(`shows every main screen readable in ${scheme}`, async () => {
      const p = await c.page({ colorScheme: scheme });
      const problems: string[] = [];
      /** Screenshot, then the contrast and naming checks of what is on screen. */
      const check = async (name: string) => {
        await shot(p, `theme-${scheme}-${name}`);
        for (const l of await lowContrast(p)) problems.push(`${name}: "${l.text}" ${l.ratio}:1 (${l.color} on ${l.background})`);
        for (const role of await unnamedControls(p)) problems.push(`${name}: a ${role} without a name`);
      };

      await p.goto('/');
      await heading(p, 'Sign in');
      const media = () => (globalThis as unknown as { matchMedia: (q: string) => { matches: boolean } }).matchMedia('(prefers-color-scheme: dark)').matches;
      expect(await p.evaluate(media)).toBe(scheme === 'dark');
      // A wrong password: the alert.
      await p.getByLabel('Email').fill(c.owner.email);
      await p.getByLabel('Password').fill('not the password');
      await p.getByRole('button', { name: 'Sign in' }).click();
      await p.getByRole('alert').waitFor();
      await check('sign-in-refused');

      await signIn(p, c.owner.email, c.owner.password);
      await heading(p, 'Overview');
      await p.locator('li.figure .figure-value').first().waitFor();
      await expect.poll(() => p.getByText('…', { exact: true }).count(), POLL).toBe(0);
      await check('overview');

      await nav(p, 'Hosts').click();
      await heading(p, 'Hosts');
      await p.getByRole('link', { name: 'web-1' }).waitFor();
      await check('hosts');

      await p.getByRole('link', { name: 'web-1' }).click();
      await heading(p, 'web-1');
      const topology = p.getByRole('region', { name: 'Topology' });
      await topology.getByRole('table', { name: 'Inbound (callers)' }).getByRole('link', { name: 'client-1' }).waitFor();
      await expect.poll(() => topology.getByRole('img').evaluate((el) => (el as unknown as { naturalWidth: number }).naturalWidth), POLL).toBeGreaterThan(0);
      await p.getByRole('cell', { name: 'CVE-2024-6387' }).waitFor();
      await check('host');

      await nav(p, 'Networks').click();
      await heading(p, 'Networks');
      await p.getByRole('link', { name: 'net 10.70.0.0/24' }).waitFor();
      // An invalid field: its message and red border.
      await p.getByLabel('CIDR').fill('10.0.0.300/8');
      await p.locator('[aria-invalid="true"]').first().waitFor();
      await check('networks');

      await p.goto(`/networks/${networkId}`);
      await heading(p, 'net 10.70.0.0/24');
      await check('network');

      for (const [link, name, ready] of [
        ['Sites', 'sites', 'hq'],
        ['Services', 'services', 'OpenSSH'],
        ['Certificates', 'certificates', '9443'],
        ['Vulnerabilities', 'vulnerabilities', 'CVE-2024-6387'],
        ['Daemons', 'daemons', 'edge-1'],
        ['Snapshots', 'snapshots', ''],
        ['API keys', 'keys', ''],
        ['Members', 'members', c.owner.email],
        ['Jobs', 'jobs', ''],
        ['Notifications', 'notifications', ''],
      ] as const) {
        await nav(p, link).click();
        await heading(p, link);
        if (ready) await p.getByRole('row').filter({ hasText: ready }).first().waitFor();
        await expect.poll(() => p.locator('.loading').count(), POLL).toBe(0);
        await check(name);
      }

      // A dialog over the vulnerabilities.
      await nav(p, 'Vulnerabilities').click();
      await heading(p, 'Vulnerabilities');
      const acknowledge = p.getByRole('row').filter({ hasText: 'CVE-2024-6387' }).getByRole('button', { name: 'Acknowledge' });
      await acknowledge.click();
      await p.getByRole('dialog').waitFor();
      // Focus is in the note; Escape cancels and gives focus back to the button.
      await expect.poll(() => p.getByLabel('Note (optional)').evaluate(hasFocus), POLL).toBe(true);
      await check('vulnerability-dialog');
      await p.keyboard.press('Escape');
      await p.getByRole('dialog').waitFor({ state: 'detached' });
      await expect.poll(() => acknowledge.evaluate(hasFocus), POLL).toBe(true);

      // A reveal-once panel: a key minted.
      await nav(p, 'API keys').click();
      await heading(p, 'API keys');
      await p.getByLabel('Name').fill(`theme-${scheme}`);
      await p.getByRole('button', { name: 'Mint key' }).click();
      await p.getByRole('heading', { name: `Key “theme-${scheme}” minted` }).waitFor();
      await check('key-minted');

      expect(problems).toEqual([]);
    }, 120_000);
  }
});
