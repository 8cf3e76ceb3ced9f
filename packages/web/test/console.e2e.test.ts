import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as admin from '../../server/src/admin/admin.service.js';
import { importAdvisories } from '../../server/src/advisories/import.service.js';
import { matchOrganisation } from '../../server/src/advisories/match.service.js';
import type { SeededOrg } from '../../server/test/helpers.js';
import { type Scanning, createNetwork, ingest, onlineDaemon, startSession } from '../../server/test/scanning.js';
import { type Console, POLL, fieldError, haveChromium, heading, nav, ownerPage, PASSWORD, repoRoot, shot, signIn, startConsole } from './harness.js';

// The console end to end (issue 14), on the shared harness (harness.ts): the first sign-in, hosts
// put in through the daemon protocol appearing live, a finding acknowledged, a key minted and
// revoked, the jobs, and what a viewer does not see.

const fixture = (name: string) => JSON.parse(readFileSync(path.join(repoRoot, 'packages/server/test/fixtures/advisories', name), 'utf8'));

describe.skipIf(!haveChromium)('the web console in Chromium', () => {
  let c: Console;
  let owner: Console['owner'];
  let org: SeededOrg;
  let server: Console['server'];
  let scanning: Scanning;
  const t = () => c.t;
  const page = () => c.page();

  beforeAll(async () => {
    c = await startConsole();
    ({ owner, org, server } = c);
  });
  afterAll(() => c?.close());

  it('signs in the first-run owner with the one-time password, forces a new one, then shows the overview', async () => {
    const p = await page();
    await p.goto('/vulnerabilities');
    await heading(p, 'Sign in');
    await shot(p, '01-sign-in');
    // A wrong password says why, and keeps the user on the page.
    await p.getByLabel('Email').fill(owner.email);
    await p.getByLabel('Password').fill('not the password');
    await p.getByRole('button', { name: 'Sign in' }).click();
    await p.getByRole('alert').waitFor();
    expect(await p.getByRole('alert').textContent()).toMatch(/\S/);
    await p.getByLabel('Password').fill(owner.password);
    await p.getByRole('button', { name: 'Sign in' }).click();
    await heading(p, 'Change password');
    await shot(p, '02-change-password');
    // The contract's rule, under its field, before anything is sent; gone once met.
    const current = p.getByLabel('Current password');
    const fresh = p.getByLabel('New password');
    await current.fill('not the password');
    await fresh.fill('too short');
    await p.getByRole('button', { name: 'Change password' }).click();
    await expect.poll(() => fieldError(fresh), POLL).toBe('at least 12 characters');
    await fresh.fill(PASSWORD);
    await expect.poll(() => fieldError(fresh), POLL).toBeNull();
    // The server's refusal names body.currentPassword: its detail in the alert, its message on that field.
    await p.getByRole('button', { name: 'Change password' }).click();
    await p.getByRole('alert').filter({ hasText: 'The current password is wrong.' }).waitFor();
    await expect.poll(() => fieldError(current), POLL).toBe('wrong password');
    expect(await fieldError(fresh)).toBeNull();
    await shot(p, '02b-wrong-current-password');
    await current.fill(owner.password);
    await expect.poll(() => fieldError(current), POLL).toBeNull();
    await p.getByRole('button', { name: 'Change password' }).click();
    // Back where the user was headed.
    await heading(p, 'Vulnerabilities');
    owner.password = PASSWORD;
    await nav(p, 'Overview').click();
    await heading(p, 'Overview');
    await shot(p, '03-overview-empty');
    const me = await server.database.db.selectFrom('users').select('must_change_password').where('email', '=', owner.email).executeTakeFirstOrThrow();
    expect(me.must_change_password).toBe(false);
  });

  it('shows a host the moment a daemon reports it (live, without a reload), and its page', async () => {
    const p = await ownerPage(c);
    await nav(p, 'Hosts').click();
    await heading(p, 'Hosts');
    await shot(p, '04-hosts-empty');
    // An operator's key, an online daemon, a network scanned: the daemon reports a host.
    const api = (await admin.createApiKey(server.database.db, { type: 'cli' }, { org: org.organisationId, userEmail: owner.email, scopes: ['inventory:read', 'inventory:write', 'scan:run'] })).token;
    const daemon = await onlineDaemon(t(), org, { networkCidrs: ['10.20.0.0/24'] });
    scanning = { org, api, daemon, siteId: null };
    const sessionId = await startSession(t(), scanning, await createNetwork(t(), scanning, '10.20.0.0/24'));
    await ingest(t(), daemon, {
      sessionId,
      hosts: [{ fingerprint: 'fp-web-01', hostname: 'web-01', os: 'Debian 12' }],
      ips: [{ hostFingerprint: 'fp-web-01', address: '10.20.0.11' }],
      services: [
        { fingerprint: 'fp-web-01', address: '10.20.0.11', protocol: 'tcp', port: 22, name: 'ssh', product: 'OpenSSH', version: '9.6p1', cpe: 'cpe:2.3:a:openbsd:openssh:9.6:p1:*:*:*:*:*:*' },
        { fingerprint: 'fp-web-01', address: '10.20.0.11', protocol: 'tcp', port: 443, name: 'https', product: 'nginx', version: '1.24.0', cpe: 'cpe:2.3:a:f5:nginx:1.24.0:*:*:*:*:*:*:*' },
      ],
    });
    await p.getByRole('cell', { name: 'web-01' }).first().waitFor();
    await shot(p, '05-hosts');
    await p.getByRole('link', { name: 'web-01' }).first().click();
    await p.getByRole('heading', { level: 1 }).filter({ hasText: 'web-01' }).waitFor();
    await p.getByText('OpenSSH').first().waitFor();
    await shot(p, '06-host');
  });

  it('acknowledges a finding with a note, offering only the moves its state allows', async () => {
    await importAdvisories(server.database.db, [fixture('nvd-CVE-2024-6387.json')]);
    await matchOrganisation(server.database.db, org.organisationId);
    const p = await ownerPage(c);
    await shot(p, '07-overview');
    await nav(p, 'Vulnerabilities').click();
    await heading(p, 'Vulnerabilities');
    await p.getByRole('cell', { name: 'CVE-2024-6387' }).waitFor();
    // From open: acknowledge or mark false positive, never reopen.
    expect(await p.getByRole('button', { name: 'Reopen' }).count()).toBe(0);
    await shot(p, '08-vulnerabilities');
    await p.getByRole('button', { name: 'Acknowledge' }).click();
    // The contract's 2000-character limit of a note, shown as it is typed; the dialog's button (named by its action) waits for it.
    const note = p.getByLabel('Note (optional)');
    await note.fill('x'.repeat(2001));
    await expect.poll(() => fieldError(note), POLL).toBe('at most 2000 characters');
    expect(await p.getByRole('button', { name: 'Acknowledge CVE-2024-6387' }).isDisabled()).toBe(true);
    await note.fill('patch window on Friday');
    await expect.poll(() => fieldError(note), POLL).toBeNull();
    await shot(p, '09-acknowledge-dialog');
    await p.getByRole('button', { name: 'Acknowledge CVE-2024-6387' }).click();
    await p.getByRole('button', { name: 'Reopen' }).waitFor();
    const row = await server.database.db.selectFrom('vulnerabilities').select(['state', 'note']).where('cve_id', '=', 'CVE-2024-6387').executeTakeFirstOrThrow();
    expect(row).toEqual({ state: 'acknowledged', note: 'patch window on Friday' });
    await shot(p, '10-vulnerabilities-acknowledged');
  });

  it('mints a key shown once, and revokes it', async () => {
    const p = await ownerPage(c);
    await nav(p, 'API keys').click();
    await heading(p, 'API keys');
    // Nothing named: the contract's refusal under the field, nothing sent; gone once named.
    await p.getByRole('button', { name: 'Mint key' }).click();
    await expect.poll(() => fieldError(p.getByLabel('Name')), POLL).toBe('required');
    await p.getByLabel('Name').fill('export-job');
    await expect.poll(() => fieldError(p.getByLabel('Name')), POLL).toBeNull();
    await p.getByLabel('inventory:read').check();
    await p.getByRole('button', { name: 'Mint key' }).click();
    const token = p.getByLabel('Token');
    await token.waitFor();
    expect(await token.inputValue()).toMatch(/^svk_/);
    await shot(p, '11-key-minted');
    await p.getByRole('button', { name: 'Done' }).click();
    const minted = await server.database.db.selectFrom('keys').select(['id', 'revoked_at']).where('name', '=', 'export-job').executeTakeFirstOrThrow();
    expect(minted.revoked_at).toBeNull();
    await p.getByRole('row').filter({ hasText: 'export-job' }).getByRole('button', { name: 'Revoke' }).click();
    await p.getByRole('button', { name: 'Revoke key' }).click();
    await expect.poll(async () => (await server.database.db.selectFrom('keys').select('revoked_at').where('id', '=', minted.id).executeTakeFirstOrThrow()).revoked_at, { timeout: 10_000 }).not.toBeNull();
    await shot(p, '12-keys');
  });

  it('lists every scheduled job under Settings → Jobs', async () => {
    const p = await ownerPage(c);
    await nav(p, 'Jobs').click();
    await heading(p, 'Jobs');
    for (const job of ['scan.schedule', 'scan.stall', 'notify.deliver', 'cve.match', 'topology.dependencies', 'notify.certificates', 'inventory.snapshot']) {
      await p.getByRole('cell', { name: job, exact: true }).first().waitFor();
    }
    await shot(p, '13-jobs');
  });

  it('shows a viewer no write action: no finding moves, no Jobs', async () => {
    const email = 'viewer@console.test';
    await admin.createUser(server.database.db, { type: 'cli' }, { org: org.organisationId, email, role: 'viewer', password: PASSWORD });
    const p = await page();
    await signIn(p, email, PASSWORD);
    await heading(p, 'Overview');
    await nav(p, 'Vulnerabilities').click();
    await heading(p, 'Vulnerabilities');
    await p.getByRole('cell', { name: 'CVE-2024-6387' }).waitFor();
    for (const name of ['Acknowledge', 'Mark false positive', 'Reopen']) expect(await p.getByRole('button', { name }).count(), name).toBe(0);
    expect(await nav(p, 'Jobs').count()).toBe(0);
    await shot(p, '14-viewer-vulnerabilities');
  });
});
