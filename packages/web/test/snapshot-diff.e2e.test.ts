import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addCertificate, addHost, addService, addVulnerability } from '../../server/test/fixtures.js';
import { type Console, haveChromium, heading, nav, ownerPage, ownerWithPassword, POLL, shot, startConsole } from './harness.js';

// The snapshot diff in the console (issue 15): two snapshots taken from the Snapshots page before
// and after changes to the inventory, compared from that page; the counts first, each a filter of
// the changes below; the other direction by "swap"; identical snapshots; a refusal's detail shown.

describe.skipIf(!haveChromium)('snapshot diff in Chromium', () => {
  let c: Console;

  beforeAll(async () => {
    c = await startConsole();
    await ownerWithPassword(c);
  });
  afterAll(() => c?.close());

  it('compares two snapshots: counts first, the changes with each changed field old → new, both directions', async () => {
    const db = c.server.database.db;
    const o = c.org.organisationId;
    // The findings below are written straight into the table, backed by no advisory: the job
    // cve.match's first (full) run would resolve them. Let it run first; later runs read the change
    // log only, which these writes do not touch.
    await expect
      .poll(async () => (await db.selectFrom('advisory_match_state').select('matched_at').where('organisation_id', '=', o).executeTakeFirst()) !== undefined, { timeout: 60_000, interval: 200 })
      .toBe(true);
    const web = await addHost(db, o, { hostname: 'web-01', addresses: ['10.20.0.10'], os: 'Debian 12' });
    const dbHost = await addHost(db, o, { hostname: 'db-01', addresses: ['10.20.0.20'] });
    const printer = await addHost(db, o, { hostname: 'printer-3f', addresses: ['10.20.0.99'] });
    const https = await addService(db, o, web, { port: 443, name: 'https', product: 'nginx', version: '1.24.0' });
    const ssh = await addService(db, o, web, { port: 22, name: 'ssh', product: 'OpenSSH', version: '9.2' });
    const cert = await addCertificate(db, o, web, { trustStatus: 'trusted' });
    const finding = await addVulnerability(db, o, https, web, { cveId: 'CVE-2024-6387', severity: 'critical' });

    const p = await ownerPage(c);
    await nav(p, 'Snapshots').click();
    await heading(p, 'Snapshots');
    const take = async (reason: string) => {
      await p.getByRole('region', { name: 'Take a snapshot' }).getByLabel('Reason', { exact: true }).selectOption({ label: reason });
      const taken = p.waitForResponse((r) => r.url().endsWith('/api/v1/snapshots') && r.request().method() === 'POST');
      await p.getByRole('button', { name: 'Take snapshot' }).click();
      expect((await taken).status()).toBe(201);
      await p.getByRole('status').filter({ hasText: `Snapshot taken (${reason.toLowerCase()}` }).waitFor();
    };
    await take('Before a change');

    // The changes: a host added, one removed, one renamed with a new address; a service removed
    // and one upgraded; the certificate expired; the finding acknowledged; a new finding.
    const laptop = await addHost(db, o, { hostname: 'laptop-17', addresses: ['10.20.0.50'] });
    await db.deleteFrom('hosts').where('id', '=', printer).execute();
    await db.updateTable('hosts').set({ hostname: 'db-primary' }).where('id', '=', dbHost).execute();
    await db.deleteFrom('services').where('id', '=', ssh).execute();
    await db.updateTable('services').set({ version: '1.26.2' }).where('id', '=', https).execute();
    await db.updateTable('certificates').set({ trust_status: 'expired' }).where('id', '=', cert).execute();
    await db.updateTable('vulnerabilities').set({ state: 'acknowledged' }).where('id', '=', finding).execute();
    const laptopSsh = await addService(db, o, laptop, { port: 22, name: 'ssh', product: 'OpenSSH', version: '8.9' });
    await addVulnerability(db, o, laptopSsh, laptop, { cveId: 'CVE-2023-38408', severity: 'high' });
    await take('After a change');

    const compare = p.getByRole('heading', { name: 'Compare two snapshots' });
    await compare.waitFor();
    // The latest by default; the base picked (the daily job's scheduled snapshot may sit in between).
    await expect.poll(() => p.getByLabel('Snapshot', { exact: true }).locator('option:checked').textContent(), POLL).toContain('post change');
    const base = p.getByLabel('Against (the base)');
    await base.selectOption((await base.locator('option', { hasText: 'pre change' }).getAttribute('value'))!);
    await shot(p, 'snapshot-diff-01-pick');
    await p.getByRole('button', { name: 'Compare' }).click();

    await heading(p, 'Snapshot diff');
    const counts = p.getByRole('table', { name: /Differences per section/ });
    await counts.waitFor();
    const row = (section: string) => counts.getByRole('row').filter({ has: p.getByRole('rowheader', { name: section }) });
    await expect.poll(async () => (await row('Hosts').getByRole('cell').allTextContents()).join(' '), POLL).toBe('1 1 1');
    expect((await row('Services').getByRole('cell').allTextContents()).join(' ')).toBe('1 1 1');
    expect((await row('Certificates').getByRole('cell').allTextContents()).join(' ')).toBe('0 0 1');
    expect((await row('Vulnerabilities').getByRole('cell').allTextContents()).join(' ')).toBe('1 0 1');
    await p.getByRole('heading', { name: '9 differences' }).waitFor();
    const changes = p.getByRole('table', { name: 'Changes, by section then id' });
    await changes.getByRole('row').filter({ hasText: 'laptop-17' }).filter({ hasText: 'added' }).first().waitFor();
    await changes.getByRole('row').filter({ hasText: 'printer-3f' }).filter({ hasText: 'removed' }).waitFor();
    const renamed = changes.getByRole('row').filter({ hasText: 'db-primary' });
    expect(await renamed.textContent()).toContain('hostname: db-01 → db-primary');
    expect(await changes.getByRole('row').filter({ hasText: '443/tcp' }).textContent()).toContain('version: 1.24.0 → 1.26.2');
    expect(await changes.getByRole('row').filter({ hasText: 'CN=example.test' }).textContent()).toContain('trust: trusted → expired');
    expect(await changes.getByRole('row').filter({ hasText: 'CVE-2024-6387' }).textContent()).toContain('state: open → acknowledged');
    await shot(p, 'snapshot-diff-02-changes');

    // Export CSV: every change, each changed field old → new.
    const [download] = await Promise.all([p.waitForEvent('download'), p.getByRole('button', { name: 'Export CSV' }).click()]);
    const csv = readFileSync((await download.path())!, 'utf8').replace(/^\uFEFF/, '').trimEnd().split('\r\n');
    expect(csv[0]).toBe('Section,Change,Id,What,Fields');
    expect(csv).toHaveLength(1 + 9);
    expect(csv.find((l) => l.includes('db-primary'))).toContain('hostname: db-01 → db-primary');

    // A count is a filter: the changed hosts only, the counts of all still shown.
    await counts.getByRole('link', { name: 'Changed hosts: 1' }).click();
    await p.getByRole('heading', { name: 'Changed · Hosts' }).waitFor();
    await expect.poll(() => changes.getByRole('row').count(), POLL).toBe(2);
    expect(await changes.getByRole('row').nth(1).textContent()).toContain('db-primary');
    await shot(p, 'snapshot-diff-03-filtered');
    await p.getByRole('link', { name: 'Show all changes' }).click();
    await expect.poll(() => changes.getByRole('row').count(), POLL).toBe(10);

    // The other direction: added and removed swap, each change goes new → old.
    await p.getByRole('link', { name: 'swap' }).click();
    await expect.poll(async () => (await row('Vulnerabilities').getByRole('cell').allTextContents()).join(' '), POLL).toBe('0 1 1');
    await changes.getByRole('row').filter({ hasText: 'printer-3f' }).filter({ hasText: 'added' }).waitFor();
    expect(await changes.getByRole('row').filter({ hasText: 'CVE-2024-6387' }).textContent()).toContain('state: acknowledged → open');

    // Nothing changed since: no differences.
    await nav(p, 'Snapshots').click();
    await heading(p, 'Snapshots');
    await take('Audit');
    await expect.poll(() => p.getByLabel('Snapshot', { exact: true }).locator('option:checked').textContent(), POLL).toContain('audit');
    await p.getByRole('button', { name: 'Compare' }).click();
    await p.getByRole('heading', { name: 'No differences' }).waitFor();
    await p.getByText('The two snapshots hold the same hosts').waitFor();
    await shot(p, 'snapshot-diff-04-identical');
  });

  it('shows the refusal\'s detail for a snapshot that is not there', async () => {
    const p = await ownerPage(c);
    const missing = randomUUID();
    await p.goto(`/snapshots/${missing}/diff?against=${randomUUID()}`);
    await heading(p, 'Snapshot diff');
    await p.getByRole('alert').filter({ hasText: `No snapshot ${missing}.` }).waitFor();
    await shot(p, 'snapshot-diff-05-not-found');
  });
});
