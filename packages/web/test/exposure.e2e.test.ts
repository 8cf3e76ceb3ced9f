import { readFileSync } from 'node:fs';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { importAdvisories } from '../../server/src/advisories/import.service.js';
import { matchOrganisation } from '../../server/src/advisories/match.service.js';
import { createAccount } from '../../server/src/cloud/accounts.js';
import { collectors } from '../../server/src/cloud/collectors.js';
import { syncAccount } from '../../server/src/cloud/sync.service.js';
import { FAKE_KEY, type FakeAws, generateAwsState, startFakeAws } from '../../server/test/fakes/aws.js';
import { seedMemberWithKey } from '../../server/test/helpers.js';
import { createNetwork, ingest, onlineDaemon, startSession } from '../../server/test/scanning.js';
import { type Console, POLL, haveChromium, heading, nav, ownerPage, ownerWithPassword, shot, startConsole } from './harness.js';

// Internet exposure and provenance in the console (issue 25): an AWS account (the real SDK against
// the local fake of EC2) lists 30 instances; a daemon scanned two of them, both running OpenSSH 9.2p1
// on 22 (a real NVD record matches it), both in a security group admitting 22 from anywhere, only
// host-1 (10.0.0.11) with a public address. The operator finds the one exposed service by the
// Internet filter, reads why on the host page, and sees its finding before host-0's in triage.

const table = (p: Page, name: string) => p.getByRole('table', { name, exact: true });
const NVD = JSON.parse(readFileSync(new URL('../../server/test/fixtures/advisories/nvd-CVE-2024-6387.json', import.meta.url), 'utf8'));

describe.skipIf(!haveChromium)('internet exposure in Chromium', () => {
  let c: Console;
  let aws: FakeAws;

  beforeAll(async () => {
    c = await startConsole();
    await ownerWithPassword(c);
    // host-1 (10.0.0.11) has the public address, host-0 (10.0.0.10) none; the admin group admits 22 from anywhere.
    const state = generateAwsState({ instances: 30 });
    const [i0, i1] = state.instances;
    delete i0!.interfaces[0]!.publicIp;
    i0!.interfaces[0]!.ipv6 = [];
    i1!.interfaces[0]!.publicIp = '203.0.113.99';
    state.securityGroups.find((g) => g.name === 'admin')!.inbound[0]!.cidrs = ['0.0.0.0/0'];
    aws = await startFakeAws(state);
    const api = (await seedMemberWithKey(c.t.database, c.org, 'editor', ['scan:run', 'inventory:write', 'inventory:read'])).token;
    const daemon = await onlineDaemon(c.t, c.org, { networkCidrs: ['10.0.0.0/24'] });
    const s = { org: c.org, api, daemon, siteId: null };
    const session = await startSession(c.t, s, await createNetwork(c.t, s, '10.0.0.0/24'));
    // Both run OpenSSH 9.2p1 on 22 (CVE-2024-6387, the real NVD record): one finding each, of the same severity.
    const hosts = [10, 11].map((n) => ({ fp: `fp-${n}`, address: `10.0.0.${n}` }));
    await ingest(c.t, daemon, {
      sessionId: session,
      final: true,
      hosts: hosts.map((h) => ({ fingerprint: h.fp })),
      ips: hosts.map((h) => ({ hostFingerprint: h.fp, address: h.address, family: 4 })),
      ports: hosts.map((h) => ({ fingerprint: h.fp, address: h.address, protocol: 'tcp', number: 22, state: 'open' })),
      services: hosts.map((h) => ({ fingerprint: h.fp, address: h.address, protocol: 'tcp', port: 22, name: 'ssh', product: 'OpenSSH', vendor: 'openbsd', version: '9.2p1', cpe: 'cpe:2.3:a:openbsd:openssh:9.2:p1:*:*:*:*:*:*' })),
    });
    const account = await createAccount(c.t.database.db, c.t.secretKey, { type: 'cli', organisationId: c.org.organisationId }, {
      kind: 'aws', name: 'Production', siteId: null, enabled: true, settings: { regions: ['eu-west-1'], endpoint: aws.url }, credentials: FAKE_KEY,
    });
    await syncAccount(c.t.database.db, c.t.secretKey, collectors, c.org.organisationId, account.id);
    await importAdvisories(c.t.database.db, [NVD]);
    await matchOrganisation(c.t.database.db, c.org.organisationId);
  }, 120_000);
  afterAll(async () => {
    await aws?.close();
    await c?.close();
  });

  it('filters services by exposure, explains it on the host page, and lists exposed findings first', async () => {
    const p = await ownerPage(c, { viewport: { width: 1440, height: 900 } });
    await nav(p, 'Services').click();
    await heading(p, 'Services');
    await p.getByLabel('Internet').selectOption('true');
    await p.waitForURL((u) => u.searchParams.get('exposed') === 'true');
    await expect.poll(() => table(p, 'Services').locator('tbody tr').count(), POLL).toBe(1);
    const row = table(p, 'Services').locator('tbody tr').first();
    expect(await row.textContent()).toContain('10.0.0.11');
    const badge = row.locator('.badge.exposed');
    expect(await badge.getAttribute('title')).toMatch(/^Internet-exposed: security group sg-adm\w+ admits tcp 22 from 0\.0\.0\.0\/0$/);
    await shot(p, 'exposure-01-services-1440');

    // The host page: the instance AWS lists, its tags and its inbound rules, 0.0.0.0/0 marked.
    await row.getByRole('link').first().click();
    // The AWS Name tag names the host the daemon saw.
    await heading(p, 'host-1');
    const cloud = p.getByRole('article', { name: /^AWS EC2 instance host-1$/ });
    await cloud.waitFor();
    expect(await cloud.textContent()).toContain('Production');
    await cloud.getByText('Name=host-1').waitFor();
    const rules = cloud.getByRole('table', { name: /^Inbound rules of i-/ });
    expect(await rules.locator('tbody tr').count()).toBe(2);
    expect(await rules.locator('strong.exposed-text').allTextContents()).toEqual(['0.0.0.0/0', '::/0', '0.0.0.0/0']);
    expect(await table(p, 'Services').locator('.badge.exposed').count()).toBe(1);
    await shot(p, 'exposure-02-host-1440');

    // Triage: of two findings of one CVE, the one the internet reaches (host-1) comes first, though host-0 sorts before it by name.
    await nav(p, 'Vulnerabilities').click();
    await heading(p, 'Vulnerabilities');
    const findings = table(p, 'Vulnerabilities');
    await expect.poll(() => findings.locator('tbody tr').count(), POLL).toBe(2);
    const firstRow = findings.locator('tbody tr').first();
    expect(await firstRow.textContent()).toContain('host-1');
    expect(await firstRow.locator('.badge.exposed').count()).toBe(1);
    expect(await findings.locator('tbody tr').nth(1).locator('.badge.exposed').count()).toBe(0);
    await shot(p, 'exposure-03-findings-1440');

    // The hosts list by source: the 30 instances AWS lists (the two a daemon saw among them), and the daemon's two.
    await nav(p, 'Hosts').click();
    await heading(p, 'Hosts');
    await p.getByLabel('Source').selectOption('daemon');
    await p.waitForURL((u) => u.searchParams.get('source') === 'daemon');
    await expect.poll(() => table(p, 'Hosts').locator('tbody tr').count(), POLL).toBe(2);
    await p.getByLabel('Source').selectOption('cloud');
    await expect.poll(() => table(p, 'Hosts').locator('tbody tr').count(), POLL).toBe(30);

    // At a phone's width the host page still reads.
    const m = await ownerPage(c, { viewport: { width: 390, height: 844 } });
    await m.goto('/services?exposed=true');
    await heading(m, 'Services');
    await table(m, 'Services').locator('tbody tr').first().waitFor();
    await shot(m, 'exposure-04-services-390');
  }, 120_000);
});
