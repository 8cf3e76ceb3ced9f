import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { importAdvisories } from '../../server/src/advisories/import.service.js';
import { matchOrganisation } from '../../server/src/advisories/match.service.js';
import { seedMemberWithKey } from '../../server/test/helpers.js';
import { type Scanning, createNetwork, ingest, onlineDaemon, startSession } from '../../server/test/scanning.js';
import { type Console, haveChromium, heading, nav, ownerPage, ownerWithPassword, shot, startConsole } from './harness.js';

// Backport-aware findings on screen (issue 29): Ubuntu builds that carry the fix for regreSSHion
// show as resolved with the distribution's advisory; the builds without it stay open, saying which
// package version fixes them.

const fixture = (name: string) => JSON.parse(readFileSync(new URL(`../../server/test/fixtures/advisories/${name}`, import.meta.url), 'utf8'));
// Real banners of Ubuntu 22.04 builds: as released, an update without the fix, the fixed update.
const BUILDS = ['3', '3ubuntu0.6', '3ubuntu0.10'];
const PER_BUILD = 12;

describe.skipIf(!haveChromium)('backport-aware findings in Chromium', () => {
  let c: Console;

  beforeAll(async () => {
    c = await startConsole();
    await ownerWithPassword(c);
    const api = (await seedMemberWithKey(c.t.database, c.org, 'editor', ['scan:run', 'inventory:write', 'inventory:read'])).token;
    const daemon = await onlineDaemon(c.t, c.org, { networkCidrs: ['10.71.0.0/24'], siteCode: 'dc1' });
    const s: Scanning = { org: c.org, api, daemon, siteId: null };
    const sessionId = await startSession(c.t, s, await createNetwork(c.t, s, '10.71.0.0/24'));
    const hosts = BUILDS.flatMap((rev, b) => Array.from({ length: PER_BUILD }, (_, i) => ({ fp: `fp-${b}-${i}`, name: `jammy-${b * PER_BUILD + i + 1}`, address: `10.71.0.${b * PER_BUILD + i + 10}`, rev })));
    await ingest(c.t, daemon, {
      sessionId,
      hosts: hosts.map((h) => ({ fingerprint: h.fp, hostname: h.name })),
      ips: hosts.map((h) => ({ hostFingerprint: h.fp, address: h.address, family: 4 })),
      ports: hosts.map((h) => ({ fingerprint: h.fp, address: h.address, protocol: 'tcp', number: 22, state: 'open', banner: `SSH-2.0-OpenSSH_8.9p1 Ubuntu-${h.rev}` })),
      services: hosts.map((h) => ({
        fingerprint: h.fp, address: h.address, protocol: 'tcp', port: 22, signatureId: 'nmap:probed:ssh', signatureSource: 'nmap', name: 'ssh',
        product: 'OpenSSH', vendor: 'openbsd', version: `8.9p1 Ubuntu ${h.rev}`, cpe: 'cpe:2.3:a:openbsd:openssh:8.9p1:*:*:*:*:*:*:*', evidence: 'Ubuntu Linux; protocol 2.0',
      })),
      stats: { hostsTotal: hosts.length, hostsScanned: hosts.length, portsScanned: hosts.length * 100 },
      final: true,
    });
    await importAdvisories(c.server.database.db, [fixture('nvd-CVE-2024-6387.json'), fixture('distro/osv-USN-6859-1.json'), fixture('distro/osv-UBUNTU-CVE-2024-6387.json')]);
    await matchOrganisation(c.server.database.db, c.org.organisationId);
  });
  afterAll(() => c?.close());

  it('shows the fixed builds resolved with the distribution\'s advisory, and the others open with the version that fixes them', async () => {
    const p = await ownerPage(c);
    await p.setViewportSize({ width: 1440, height: 900 });
    await nav(p, 'Vulnerabilities').click();
    await heading(p, 'Vulnerabilities');
    // Open by default: the two vulnerable builds only.
    await p.getByText(`${2 * PER_BUILD} findings`, { exact: false }).first().waitFor();
    const open = p.getByRole('row').filter({ hasText: 'jammy-1' }).first();
    const badge = open.getByText('update', { exact: true });
    expect(await badge.getAttribute('title')).toBe('Ubuntu 22.04 openssh 1:8.9p1-3 is affected; fixed in 1:8.9p1-3ubuntu0.10 (USN-6859-1)');
    await shot(p, 'backports-01-open');

    await p.goto('/vulnerabilities?state=resolved');
    await p.getByText(`${PER_BUILD} findings`, { exact: false }).first().waitFor();
    const fixed = p.getByRole('row').filter({ hasText: 'jammy-25' }).first();
    expect(await fixed.getByText('backport').getAttribute('title')).toBe('Fixed in 1:8.9p1-3ubuntu0.10 by USN-6859-1 (Ubuntu 22.04 openssh 1:8.9p1-3ubuntu0.10)');
    await shot(p, 'backports-02-resolved');
  });
});
