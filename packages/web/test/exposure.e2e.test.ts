import { sql } from 'kysely';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAccount } from '../../server/src/cloud/accounts.js';
import { collectors } from '../../server/src/cloud/collectors.js';
import { syncAccount } from '../../server/src/cloud/sync.service.js';
import { FAKE_KEY, type FakeAws, generateAwsState, startFakeAws } from '../../server/test/fakes/aws.js';
import { seedMemberWithKey } from '../../server/test/helpers.js';
import { createNetwork, ingest, onlineDaemon, startSession } from '../../server/test/scanning.js';
import { type Console, POLL, haveChromium, heading, nav, ownerPage, ownerWithPassword, shot, startConsole } from './harness.js';

// Internet exposure and provenance in the console (issue 25): an AWS account (the real SDK against
// the local fake of EC2) lists 30 instances; a daemon scanned two of them (10.0.0.10 with a public
// address and a security group admitting 443 from anywhere; 10.0.0.11 without one), each with 443
// and 22 open. The operator finds the one exposed service by the Internet filter, reads why on the
// host page, and sees its finding first in triage.

const table = (p: Page, name: string) => p.getByRole('table', { name, exact: true });

describe.skipIf(!haveChromium)('internet exposure in Chromium', () => {
  let c: Console;
  let aws: FakeAws;

  beforeAll(async () => {
    c = await startConsole();
    await ownerWithPassword(c);
    aws = await startFakeAws(generateAwsState({ instances: 30 }));
    const api = (await seedMemberWithKey(c.t.database, c.org, 'editor', ['scan:run', 'inventory:write', 'inventory:read'])).token;
    const daemon = await onlineDaemon(c.t, c.org, { networkCidrs: ['10.0.0.0/24'] });
    const net = await createNetwork(c.t, { org: c.org, api, daemon, siteId: null }, '10.0.0.0/24');
    const session = await startSession(c.t, { org: c.org, api, daemon, siteId: null }, net);
    const hosts = [10, 11].map((n) => ({ fingerprint: `fp-${n}`, hostname: `web-${n}.lab`, interfaces: [{ name: 'eth0', addresses: [`10.0.0.${n}`] }] }));
    const ports = [10, 11].flatMap((n) => [443, 22].map((port) => ({ fingerprint: `fp-${n}`, address: `10.0.0.${n}`, protocol: 'tcp', number: port, state: 'open' })));
    await ingest(c.t, daemon, { sessionId: session, final: true, hosts, ports });
    const account = await createAccount(c.t.database.db, c.t.secretKey, { type: 'cli', organisationId: c.org.organisationId }, {
      kind: 'aws', name: 'Production', siteId: null, enabled: true, settings: { regions: ['eu-west-1'], endpoint: aws.url }, credentials: FAKE_KEY,
    });
    await syncAccount(c.t.database.db, c.t.secretKey, collectors, c.org.organisationId, account.id);
    const services = await sql<{ id: string; host_id: string; address: string; port: number }>`
      select id, host_id, host(address) as address, port from services where organisation_id = ${c.org.organisationId} and port = 443 order by address`.execute(c.t.database.db);
    const [exposed, hidden] = services.rows;
    await sql`insert into vulnerabilities (organisation_id, service_id, host_id, cve_id, severity, score, summary) values
      (${c.org.organisationId}, ${hidden!.id}, ${hidden!.host_id}, 'CVE-2026-1001', 'critical', 9.8, 'A critical flaw nobody outside reaches'),
      (${c.org.organisationId}, ${exposed!.id}, ${exposed!.host_id}, 'CVE-2026-1002', 'medium', 5.3, 'A medium flaw the internet reaches')`.execute(c.t.database.db);
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
    expect(await row.textContent()).toContain('10.0.0.10');
    const badge = row.locator('.badge.exposed');
    expect(await badge.getAttribute('title')).toMatch(/^Internet-exposed: security group sg-web\w+ admits tcp 443 from 0\.0\.0\.0\/0$/);
    await shot(p, 'exposure-01-services-1440');

    // The host page: the instance AWS lists, its tags and its inbound rules, 0.0.0.0/0 marked.
    await row.getByRole('link').first().click();
    // The AWS Name tag, the latest name observed, names the host the daemon saw.
    await heading(p, 'host-0');
    const cloud = p.getByRole('article', { name: /^AWS EC2 instance host-0$/ });
    await cloud.waitFor();
    expect(await cloud.textContent()).toContain('Production');
    await cloud.getByText('Name=host-0').waitFor();
    const rules = cloud.getByRole('table', { name: /^Inbound rules of i-/ });
    expect(await rules.locator('tbody tr').count()).toBe(2);
    expect(await rules.locator('strong.exposed-text').allTextContents()).toEqual(['0.0.0.0/0', '::/0']);
    expect(await table(p, 'Services').locator('.badge.exposed').count()).toBe(1);
    await shot(p, 'exposure-02-host-1440');

    // Triage: the medium finding the internet reaches comes before the critical one it does not.
    await nav(p, 'Vulnerabilities').click();
    await heading(p, 'Vulnerabilities');
    const findings = table(p, 'Vulnerabilities');
    await expect.poll(() => findings.locator('tbody tr').count(), POLL).toBe(2);
    const firstRow = findings.locator('tbody tr').first();
    expect(await firstRow.textContent()).toContain('CVE-2026-1002');
    expect(await firstRow.locator('.badge.exposed').count()).toBe(1);
    await shot(p, 'exposure-03-findings-1440');

    // At a phone's width the host page still reads.
    const m = await ownerPage(c, { viewport: { width: 390, height: 844 } });
    await m.goto(p.url().replace(/\/vulnerabilities.*$/, '/services?exposed=true'));
    await heading(m, 'Services');
    await table(m, 'Services').locator('tbody tr').first().waitFor();
    await shot(m, 'exposure-04-services-390');
  }, 120_000);
});
