import { copyFileSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { importAdvisories } from '../../server/src/advisories/import.service.js';
import { bearer, login, seedMemberWithKey } from '../../server/test/helpers.js';
import { type Scanning, createNetwork, ingest, onlineDaemon, startSession } from '../../server/test/scanning.js';
import { type Console, haveChromium, heading, ownerPage, ownerWithPassword, POLL, repoRoot, shot, startConsole } from './harness.js';

// The README's two pictures of the console (docs/images), taken from a site as a daemon reports it:
// 48 servers and a switch with SSH, HTTPS and their certificates, one advisory matched, a snapshot.
// The figures on screen are checked against what was put in; `UPDATE_README_IMAGES=1` copies the
// screenshots over docs/images (look at them first).

const NVD = JSON.parse(readFileSync(new URL('../../server/test/fixtures/advisories/nvd-CVE-2024-6387.json', import.meta.url), 'utf8'));
const DAY = 86_400_000;
const SERVERS = 48;

describe.skipIf(!haveChromium)("the README's console pictures", () => {
  let c: Console;

  beforeAll(async () => {
    c = await startConsole();
    await ownerWithPassword(c);
  });
  afterAll(() => c?.close());

  it('shows a reported site on the overview and a server on its host page', async () => {
    const api = (await seedMemberWithKey(c.t.database, c.org, 'editor', ['scan:run', 'inventory:write', 'inventory:read'])).token;
    const daemon = await onlineDaemon(c.t, c.org, { name: 'hq-scanner', networkCidrs: ['10.60.0.0/24'], siteCode: 'hq', capabilities: { nmap: true } });
    const s: Scanning = { org: c.org, api, daemon, siteId: null };
    const sessionId = await startSession(c.t, s, await createNetwork(c.t, s, '10.60.0.0/24'));
    const servers = Array.from({ length: SERVERS }, (_, i) => ({ n: i + 1, fp: `fp-srv-${i + 1}`, address: `10.60.0.${20 + i}`, name: i < 8 ? `web-${i + 1}` : i < 16 ? `db-${i - 7}` : `app-${i - 15}` }));
    const web = servers.filter((v) => v.name.startsWith('web-'));
    const now = Date.now();
    await ingest(c.t, daemon, {
      sessionId,
      hosts: [{ fingerprint: 'fp-sw', hostname: 'access-sw-1', vendor: 'Juniper', deviceType: 'switch' }, ...servers.map((v) => ({ fingerprint: v.fp, hostname: v.name, os: 'Debian 12', vendor: 'Dell' }))],
      ips: [{ hostFingerprint: 'fp-sw', address: '10.60.0.2', family: 4 }, ...servers.map((v) => ({ hostFingerprint: v.fp, address: v.address, family: 4 }))],
      ports: servers.flatMap((v) => [
        { fingerprint: v.fp, address: v.address, protocol: 'tcp', number: 22, state: 'open' },
        ...(v.name.startsWith('web-') ? [{ fingerprint: v.fp, address: v.address, protocol: 'tcp', number: 443, state: 'open' }] : []),
      ]),
      services: servers.flatMap((v) => [
        { fingerprint: v.fp, address: v.address, protocol: 'tcp', port: 22, signatureId: 'nmap:ssh', signatureSource: 'nmap', name: 'ssh', product: 'OpenSSH', vendor: 'openbsd', version: '9.2p1', cpe: 'cpe:2.3:a:openbsd:openssh:9.2:p1:*:*:*:*:*:*', confidence: 90 },
        ...(v.name.startsWith('web-') ? [{ fingerprint: v.fp, address: v.address, protocol: 'tcp', port: 443, signatureId: 'nmap:https', signatureSource: 'nmap', name: 'https', product: 'nginx', vendor: 'f5', version: '1.22.1', cpe: 'cpe:2.3:a:f5:nginx:1.22.1:*:*:*:*:*:*:*', confidence: 90 }] : []),
      ]),
      neighbors: [{ fingerprint: 'fp-srv-1', localInterface: 'eno1', remoteChassisId: '00:16:3e:aa:bb:cc', remotePortId: 'ge-0/0/1', remoteSystemName: 'access-sw-1', managementAddress: '10.60.0.2', protocol: 'lldp' }],
      tls: web.map((v, i) => ({
        fingerprint: v.fp, address: v.address, port: 443, subject: `CN=${v.name}.example.net`, issuer: 'CN=Example Issuing CA',
        // Two expired, two within a week, the rest with months left.
        notBefore: new Date(now - 300 * DAY).toISOString(), notAfter: new Date(now + (i < 2 ? -3 - i : i < 4 ? 3 + i : 120 + i) * DAY).toISOString(), sha256: (i + 10).toString(16).padStart(2, '0').repeat(32),
      })),
      stats: { hostsTotal: SERVERS + 1, hostsScanned: SERVERS + 1, portsScanned: (SERVERS + 1) * 1000 },
      final: true,
    });
    await importAdvisories(c.server.database.db, [NVD]);
    const owner = await login(c.t.app, c.owner.email, c.owner.password);
    const matched = await c.t.app.inject({ method: 'POST', url: '/api/v1/admin/cve-match', headers: { cookie: owner.cookie, 'x-csrf-token': owner.csrfToken } });
    expect(matched.statusCode, matched.body).toBe(200);
    // The server's own cve.match may have run first: count what is open, whoever opened it.
    const open = await c.t.app.inject({ method: 'GET', url: '/api/v1/vulnerabilities?state=open&limit=500', headers: bearer(api) });
    expect(open.json().data).toHaveLength(SERVERS);
    const snap = await c.t.app.inject({ method: 'POST', url: '/api/v1/snapshots', headers: bearer(api), payload: { reason: 'audit' } });
    expect(snap.statusCode, snap.body).toBe(201);

    const p = await ownerPage(c);
    const figure = (label: string) => p.locator('li.figure').filter({ has: p.locator('.figure-label', { hasText: new RegExp(`^${label}$`, 'i') }) }).locator('.figure-value');
    await expect.poll(() => figure('hosts').textContent(), POLL).toBe(String(SERVERS + 1));
    await expect.poll(() => figure('high').textContent(), POLL).toBe(String(SERVERS));
    expect(await figure('expired').textContent()).toBe('2');
    expect(await figure('within 7 days').textContent()).toBe('2');
    await p.setViewportSize({ width: 1280, height: 800 });
    await p.screenshot({ path: path.join(repoRoot, 'test-output/console/readme-overview.png') });

    await p.getByRole('link', { name: 'Hosts', exact: true }).click();
    await heading(p, 'Hosts');
    await p.getByRole('link', { name: 'web-1', exact: true }).click();
    await heading(p, 'web-1');
    await p.getByRole('cell', { name: 'CN=web-1.example.net' }).waitFor();
    await p.getByText('CVE-2024-6387').first().waitFor();
    // The whole page: its services, certificate, topology and the finding below them.
    await shot(p, 'readme-host');

    if (process.env.UPDATE_README_IMAGES) {
      for (const name of ['overview', 'host']) copyFileSync(path.join(repoRoot, `test-output/console/readme-${name}.png`), path.join(repoRoot, `docs/images/console-${name}.png`));
    }
  });
});
