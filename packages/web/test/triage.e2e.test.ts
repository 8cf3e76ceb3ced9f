import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { importAdvisories } from '../../server/src/advisories/import.service.js';
import { matchOrganisation } from '../../server/src/advisories/match.service.js';
import { seedMemberWithKey } from '../../server/test/helpers.js';
import { type Scanning, createNetwork, ingest, onlineDaemon, startSession } from '../../server/test/scanning.js';
import { type Console, haveChromium, heading, nav, ownerPage, ownerWithPassword, POLL, shot, startConsole } from './harness.js';

// Triage at an operator's scale (issue 23): one CVE on 40 services is one move, not 40 dialogs;
// findings searched by host and address, selected and moved together; a finding's history on screen.

const NVD = JSON.parse(readFileSync(new URL('../../server/test/fixtures/advisories/nvd-CVE-2024-6387.json', import.meta.url), 'utf8'));
const HOSTS = 40;

describe.skipIf(!haveChromium)('triage of findings in Chromium', () => {
  let c: Console;

  beforeAll(async () => {
    c = await startConsole();
    await ownerWithPassword(c);
    const api = (await seedMemberWithKey(c.t.database, c.org, 'editor', ['scan:run', 'inventory:write', 'inventory:read'])).token;
    const daemon = await onlineDaemon(c.t, c.org, { networkCidrs: ['10.70.0.0/24'], siteCode: 'dc1' });
    const s: Scanning = { org: c.org, api, daemon, siteId: null };
    const sessionId = await startSession(c.t, s, await createNetwork(c.t, s, '10.70.0.0/24'));
    const hosts = Array.from({ length: HOSTS }, (_, i) => ({ fp: `fp-${i + 1}`, name: `app-${i + 1}`, address: `10.70.0.${i + 10}` }));
    await ingest(c.t, daemon, {
      sessionId,
      hosts: hosts.map((h) => ({ fingerprint: h.fp, hostname: h.name })),
      ips: hosts.map((h) => ({ hostFingerprint: h.fp, address: h.address, family: 4 })),
      ports: hosts.map((h) => ({ fingerprint: h.fp, address: h.address, protocol: 'tcp', number: 22, state: 'open' })),
      services: hosts.map((h) => ({ fingerprint: h.fp, address: h.address, protocol: 'tcp', port: 22, signatureId: 'nmap:ssh', signatureSource: 'nmap', name: 'ssh', product: 'OpenSSH', vendor: 'openbsd', version: '9.2p1', cpe: 'cpe:2.3:a:openbsd:openssh:9.2:p1:*:*:*:*:*:*' })),
      stats: { hostsTotal: HOSTS, hostsScanned: HOSTS, portsScanned: HOSTS * 100 },
      final: true,
    });
    await importAdvisories(c.server.database.db, [NVD]);
    await matchOrganisation(c.server.database.db, c.org.organisationId);
  });
  afterAll(() => c?.close());

  const states = () => c.server.database.db.selectFrom('vulnerabilities').select(['state', 'note']).where('organisation_id', '=', c.org.organisationId).execute();

  it('lists the findings with host and port, searches by host and address, and moves every finding of a CVE at once', async () => {
    const p = await ownerPage(c);
    await p.setViewportSize({ width: 1440, height: 900 });
    await nav(p, 'Vulnerabilities').click();
    await heading(p, 'Vulnerabilities');
    await p.getByText(`${HOSTS} findings`, { exact: false }).first().waitFor();
    const row = p.getByRole('row').filter({ hasText: 'app-7' });
    expect(await row.getByRole('cell', { name: '22/tcp', exact: true }).count()).toBe(1);
    expect(await row.getByRole('cell', { name: 'OpenSSH 9.2p1', exact: true }).count()).toBe(1);
    await shot(p, 'triage-01-findings');

    await p.getByLabel('Search').fill('app-3');
    // app-3 and app-30 … app-39.
    await p.getByText('11 findings').waitFor();
    await p.getByLabel('Search').fill('10.70.0.17');
    await p.getByText('1 finding', { exact: true }).waitFor();
    await p.getByLabel('Search').fill('');
    await p.getByText(`${HOSTS} findings`).waitFor();

    await p.getByRole('tab', { name: 'By advisory' }).click();
    const advisories = p.getByRole('table', { name: 'Advisories with findings' });
    await advisories.waitFor();
    const cve = advisories.getByRole('row').filter({ hasText: 'CVE-2024-6387' });
    await cve.waitFor();
    expect((await cve.getByRole('cell').allTextContents()).slice(3, 5)).toEqual([String(HOSTS), String(HOSTS)]);
    await shot(p, 'triage-02-by-advisory');
    await cve.getByRole('button', { name: `Acknowledge all ${HOSTS}` }).click();
    await p.getByLabel('Note for every finding (optional)').fill('regreSSHion: patched in the 3 Dec window');
    await shot(p, 'triage-03-bulk-dialog');
    await p.getByRole('dialog').getByRole('button', { name: 'Acknowledge' }).click();
    await p.getByRole('status').filter({ hasText: `${HOSTS} findings moved to Acknowledged.` }).waitFor();
    expect(new Set((await states()).map((s) => `${s.state}|${s.note}`))).toEqual(new Set(['acknowledged|regreSSHion: patched in the 3 Dec window']));
    await expect.poll(async () => (await cve.getByRole('cell').allTextContents()).join(' '), POLL).toContain(`${HOSTS} acknowledged`);
    await shot(p, 'triage-04-acknowledged');
  });

  it('moves a selection with one note, and shows a finding\'s history with who and when', async () => {
    const p = await ownerPage(c);
    await p.goto('/vulnerabilities?search=app-1');
    await heading(p, 'Vulnerabilities');
    // app-1 and app-10 … app-19.
    await p.getByText('11 findings').waitFor();
    await p.getByLabel('Select app-1 22/tcp', { exact: true }).check();
    await p.getByLabel('Select app-12 22/tcp', { exact: true }).check();
    await p.getByText('2 findings selected:').waitFor();
    await p.getByRole('button', { name: 'Mark false positive selected' }).click();
    await p.getByLabel('Note for every finding (optional)').fill('bastion hosts: password login off');
    await p.getByRole('dialog').getByRole('button', { name: 'Mark false positive' }).click();
    await p.getByRole('status').filter({ hasText: '2 findings moved to False positive.' }).waitFor();
    const fp = (await states()).filter((s) => s.state === 'false_positive');
    expect(fp).toEqual([{ state: 'false_positive', note: 'bastion hosts: password login off' }, { state: 'false_positive', note: 'bastion hosts: password login off' }]);
    // False positives leave the actionable set.
    await p.getByText('9 findings').waitFor();

    await p.getByRole('checkbox', { name: 'False positive' }).check();
    const one = p.getByRole('row').filter({ has: p.getByRole('link', { name: 'app-12', exact: true }) });
    await one.getByRole('button', { name: 'History' }).click();
    const dialog = p.getByRole('dialog');
    await dialog.getByText('bastion hosts: password login off').waitFor();
    const entries = await dialog.getByRole('listitem').allTextContents();
    expect(entries).toHaveLength(3);
    expect(entries[0]).toMatch(/Open · cve\.match$/);
    expect(entries[1]).toMatch(/Open → Acknowledged · admin@surveyor\.local.*regreSSHion/);
    expect(entries[2]).toMatch(/Acknowledged → False positive · admin@surveyor\.local.*bastion hosts/);
    await shot(p, 'triage-05-history');
  });
});
