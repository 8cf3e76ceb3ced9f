import { readFileSync } from 'node:fs';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { importAdvisories } from '../../server/src/advisories/import.service.js';
import { login, seedMemberWithKey } from '../../server/test/helpers.js';
import { type Scanning, createNetwork, ingest, onlineDaemon, startSession } from '../../server/test/scanning.js';
import { type ChatRequest, type FakeOpenAI, type Turn, startFakeOpenAI } from '../../server/test/fakes/openai.js';
import { type Console, haveChromium, heading, ownerPage, ownerWithPassword, shot, startConsole, POLL } from './harness.js';

// Every screen of the console at an operator's size (issue 23): a site of 220 hosts with their
// services, certificates and findings, walked at desk width (1440 px) and at phone width (390 px).
// At 390 px the navigation folds behind a Menu button and no page scrolls sideways (a wide table
// scrolls inside its own frame). The screenshots (test-output/console/walk-*) are for a person to
// look at after a change to the console.

const NVD = JSON.parse(readFileSync(new URL('../../server/test/fixtures/advisories/nvd-CVE-2024-6387.json', import.meta.url), 'utf8'));
const DAY = 86_400_000;
const HOSTS = 220;

/** Each screen: its path and the heading it shows once loaded. */
const SCREENS: { path: string; title: string; name: string }[] = [
  { path: '/', title: 'Overview', name: 'overview' },
  { path: '/hosts', title: 'Hosts', name: 'hosts' },
  { path: '/networks', title: 'Networks', name: 'networks' },
  { path: '/sites', title: 'Sites', name: 'sites' },
  { path: '/topology', title: 'Topology', name: 'topology' },
  { path: '/services', title: 'Services', name: 'services' },
  { path: '/certificates', title: 'Certificates', name: 'certificates' },
  { path: '/vulnerabilities', title: 'Vulnerabilities', name: 'vulnerabilities' },
  { path: '/daemons', title: 'Daemons', name: 'daemons' },
  { path: '/snapshots', title: 'Snapshots', name: 'snapshots' },
  { path: '/settings/keys', title: 'API keys', name: 'keys' },
  { path: '/settings/advisories', title: 'Advisories', name: 'advisories' },
  { path: '/settings/members', title: 'Members', name: 'members' },
  { path: '/settings/jobs', title: 'Jobs', name: 'jobs' },
  { path: '/settings/notifications', title: 'Notifications', name: 'notifications' },
  { path: '/settings/cloud', title: 'Cloud accounts', name: 'cloud' },
  { path: '/settings/scim', title: 'SCIM provisioning', name: 'scim' },
  { path: '/settings/activity', title: 'Activity', name: 'activity' },
];

// The page's own globals, inside evaluate (the test files compile without the DOM library).
declare const document: any;

/** How far the page scrolls sideways (0 when everything fits), and the elements that stick out. */
const sideways = (p: Page) =>
  p.evaluate(() => {
    const width = document.documentElement.clientWidth;
    const over = document.documentElement.scrollWidth - width;
    if (over <= 0) return 0;
    const out = [...document.querySelectorAll('body *')]
      .filter((e: any) => e.getBoundingClientRect().right > width + 1 && !e.closest('.table-wrap'))
      .slice(-5)
      .map((e: any) => `${e.tagName.toLowerCase()}.${e.className} (${Math.round(e.getBoundingClientRect().right)} px)`);
    return `${over} px over: ${out.join(', ')}`;
  });

describe.skipIf(!haveChromium)('the console at the size of a real site', () => {
  let c: Console;
  /** The assistant's provider: a model that looks the host up and answers from what the tool returned. */
  let fake: FakeOpenAI;
  /** The pages of one thing (a host, a network, a site, a daemon), found once the site is seeded. */
  const pages: { path: string; title: string; name: string }[] = [];

  beforeAll(async () => {
    fake = await startFakeOpenAI((r: ChatRequest): Turn => {
      const result = r.messages.find((m) => m.role === 'tool');
      if (!result) return { tools: [{ name: 'host_detail', arguments: { hostId: /looking at host (\S+)/.exec(r.messages[0]?.content ?? '')?.[1] ?? '' } }] };
      const found = JSON.parse(result.content ?? '{}') as { rows?: { hostname?: string; addresses?: string[] }[]; services?: { port: number; protocol: string; product?: string; version?: string }[] };
      const host = found.rows?.[0] ?? {};
      const services = (found.services ?? []).map((x) => `- ${x.product ?? 'unknown'} ${x.version ?? ''} on ${x.port}/${x.protocol}`.replace('  ', ' '));
      return { text: `${host.hostname ?? 'The host'} (${host.addresses?.[0] ?? 'no address'}) runs ${services.length} services:\n${services.join('\n')}\n\nIts open findings are on the Vulnerabilities page.` };
    });
    c = await startConsole({ SERVICE_AI_BASE_URL: fake.baseUrl, SERVICE_AI_API_KEY: fake.apiKey, SERVICE_AI_MODEL: 'fake-model' });
    await ownerWithPassword(c);
    const api = (await seedMemberWithKey(c.t.database, c.org, 'editor', ['scan:run', 'inventory:write', 'inventory:read'])).token;
    const daemon = await onlineDaemon(c.t, c.org, { name: 'dc1-scanner', networkCidrs: ['10.70.0.0/23'], siteCode: 'dc1', capabilities: { nmap: true } });
    const s: Scanning = { org: c.org, api, daemon, siteId: null };
    const networkId = await createNetwork(c.t, s, '10.70.0.0/23');
    const sessionId = await startSession(c.t, s, networkId);
    const hosts = Array.from({ length: HOSTS }, (_, i) => {
      const role = i % 4 === 0 ? 'web' : i % 4 === 1 ? 'db' : i % 4 === 2 ? 'app' : 'cache';
      return { fp: `fp-${i}`, name: `${role}-${String(i).padStart(3, '0')}.dc1.example.net`, address: `10.70.${Math.floor(i / 200)}.${(i % 200) + 10}`, role };
    });
    const now = Date.now();
    await ingest(c.t, daemon, {
      sessionId,
      hosts: hosts.map((h, i) => ({ fingerprint: h.fp, hostname: h.name, os: i % 3 ? 'Debian 12' : 'Ubuntu 22.04', vendor: i % 2 ? 'Dell Inc.' : 'Hewlett Packard Enterprise', interfaces: [{ name: 'eno1', mac: `00:50:56:00:${(i >> 8).toString(16).padStart(2, '0')}:${(i & 255).toString(16).padStart(2, '0')}`, addresses: [h.address] }] })),
      ips: hosts.map((h) => ({ hostFingerprint: h.fp, address: h.address, family: 4 })),
      ports: hosts.flatMap((h) => [
        { fingerprint: h.fp, address: h.address, protocol: 'tcp', number: 22, state: 'open' },
        ...(h.role === 'web' ? [{ fingerprint: h.fp, address: h.address, protocol: 'tcp', number: 443, state: 'open' }] : []),
      ]),
      services: hosts.flatMap((h) => [
        { fingerprint: h.fp, address: h.address, protocol: 'tcp', port: 22, signatureId: 'nmap:ssh', signatureSource: 'nmap', name: 'ssh', product: 'OpenSSH', vendor: 'openbsd', version: '9.2p1', cpe: 'cpe:2.3:a:openbsd:openssh:9.2:p1:*:*:*:*:*:*', confidence: 90 },
        ...(h.role === 'web' ? [{ fingerprint: h.fp, address: h.address, protocol: 'tcp', port: 443, signatureId: 'nmap:https', signatureSource: 'nmap', name: 'https', product: 'Apache httpd', vendor: 'apache', version: '2.4.49', cpe: 'cpe:2.3:a:apache:http_server:2.4.49:*:*:*:*:*:*:*', confidence: 90 }] : []),
      ]),
      tls: hosts.filter((h) => h.role === 'web').map((h, i) => ({
        fingerprint: h.fp, address: h.address, port: 443, subject: `CN=${h.name}`, issuer: 'CN=Example Issuing CA',
        notBefore: new Date(now - 300 * DAY).toISOString(), notAfter: new Date(now + ((i % 9) * 20 - 10) * DAY).toISOString(), sha256: (i + 16).toString(16).padStart(4, '0').repeat(16),
      })),
      stats: { hostsTotal: HOSTS, hostsScanned: HOSTS, portsScanned: HOSTS * 1000 },
      final: true,
    });
    await importAdvisories(c.server.database.db, [NVD]);
    const owner = await login(c.t.app, c.owner.email, c.owner.password);
    const matched = await c.t.app.inject({ method: 'POST', url: '/api/v1/admin/cve-match', headers: { cookie: owner.cookie, 'x-csrf-token': owner.csrfToken } });
    expect(matched.statusCode, matched.body).toBe(200);
    const db = c.server.database.db;
    const host = await db.selectFrom('hosts').select('id').where('hostname', '=', hosts[0]!.name).executeTakeFirstOrThrow();
    const site = await db.selectFrom('sites').select(['id', 'name']).where('code', '=', 'dc1').executeTakeFirstOrThrow();
    pages.push(
      { path: `/hosts/${host.id}`, title: hosts[0]!.name, name: 'host' },
      { path: `/networks/${networkId}`, title: 'net 10.70.0.0/23', name: 'network' },
      { path: `/sites/${site.id}`, title: site.name, name: 'site' },
      { path: `/daemons/${daemon.id}`, title: 'dc1-scanner', name: 'daemon' },
    );
  });
  afterAll(async () => {
    await c?.close();
    await fake?.close();
  });

  it('shows every screen at desk width with the whole site in it', async () => {
    const p = await ownerPage(c, { viewport: { width: 1440, height: 900 } });
    for (const s of [...SCREENS, ...pages]) {
      await p.goto(s.path);
      await heading(p, s.title);
      await p.waitForLoadState('networkidle');
      await shot(p, `walk-1440-${s.name}`, { fullPage: false });
      expect(await sideways(p), `${s.path} scrolls sideways`).toBe(0);
    }
  }, 180_000);

  it("asks the assistant about the host on screen, at desk width and on a phone", async () => {
    const host = pages.find((x) => x.name === 'host')!;
    for (const [width, height] of [[1440, 900], [390, 844]] as const) {
      const p = await ownerPage(c, { viewport: { width, height }, ...(width < 720 ? { isMobile: true, hasTouch: true } : {}) });
      await p.goto(host.path);
      await heading(p, host.title);
      await p.getByRole('button', { name: 'Assistant', exact: true }).click();
      const panel = p.getByRole('complementary', { name: 'Assistant' });
      await panel.getByRole('button', { name: `Ask about ${host.title}` }).click();
      await panel.getByRole('button', { name: 'Ask', exact: true }).click();
      await panel.getByText('Its open findings are on the Vulnerabilities page.').waitFor();
      await panel.getByRole('link', { name: host.title }).waitFor();
      await shot(p, `walk-${width}-assistant`, { fullPage: false });
      expect(await sideways(p), `the assistant's panel scrolls sideways at ${width} px`).toBe(0);
    }
  }, 60_000);

  it('exports every finding the filters select as CSV, over the cursors and not only the loaded rows', async () => {
    const p = await ownerPage(c, { viewport: { width: 1440, height: 900 } });
    await p.goto('/vulnerabilities');
    await heading(p, 'Vulnerabilities');
    // 100 rows load on screen; the export reads every page of 200 from the API.
    await expect.poll(() => p.getByRole('row').count(), POLL).toBe(101);
    const pages: string[] = [];
    p.on('request', (r) => {
      if (r.url().includes('/api/v1/findings?')) pages.push(new URL(r.url()).searchParams.get('limit') ?? '');
    });
    const [download] = await Promise.all([p.waitForEvent('download'), p.getByRole('button', { name: 'Export CSV' }).click()]);
    expect(download.suggestedFilename()).toMatch(/^vulnerabilities-\d{4}-\d{2}-\d{2}\.csv$/);
    const text = readFileSync((await download.path())!, 'utf8').replace(/^\uFEFF/, '');
    const lines = text.trimEnd().split('\r\n');
    expect(lines[0]).toBe('CVE,Severity,Score,Host,Address,Port,Service,Internet,State,First seen');
    expect(lines).toHaveLength(1 + HOSTS);
    expect(new Set(lines.slice(1).map((l) => l.split(',')[4])).size).toBe(HOSTS);
    expect(pages.filter((l) => l === '200')).toHaveLength(2);
  }, 60_000);

  it('fits every screen on a phone (390 px) and reaches them through the Menu button', async () => {
    const p = await ownerPage(c, { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
    const menu = p.getByRole('button', { name: 'Menu' });
    const navigation = p.getByRole('navigation', { name: 'Main' });
    expect(await menu.getAttribute('aria-expanded')).toBe('false');
    expect(await navigation.isVisible()).toBe(false);
    await menu.click();
    expect(await menu.getAttribute('aria-expanded')).toBe('true');
    await navigation.getByRole('link', { name: 'Vulnerabilities', exact: true }).click();
    await heading(p, 'Vulnerabilities');
    // Following a link folds the menu again, so the page is what shows.
    expect(await navigation.isVisible()).toBe(false);
    for (const s of [...SCREENS, ...pages]) {
      await p.goto(s.path);
      await heading(p, s.title);
      await p.waitForLoadState('networkidle');
      await shot(p, `walk-390-${s.name}`, { fullPage: false });
      expect(await sideways(p), `${s.path} scrolls sideways at 390 px`).toBe(0);
    }
  }, 180_000);
});
