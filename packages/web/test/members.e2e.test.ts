import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { daemonHeaders } from '../../server/test/daemon-client.js';
import { addHost } from '../../server/test/fixtures.js';
import { onlineDaemon } from '../../server/test/scanning.js';
import { type Console, haveChromium, heading, nav, ownerPage, ownerWithPassword, POLL, PASSWORD, shot, signIn, startConsole } from './harness.js';

// Settings → Members end to end: the owner adds an editor (the one-time password shown once), the
// editor signs in and must change it, the owner promotes them, cannot demote the last owner (the
// API's detail shown), and removes them: the removed member's next request goes to sign-in.
// Then the host page's topology section: empty before any flow, then the peers a daemon's flows show.

describe.skipIf(!haveChromium)('members in Chromium', () => {
  let c: Console;

  beforeAll(async () => {
    c = await startConsole();
    await ownerWithPassword(c);
  });
  afterAll(() => c?.close());

  it('adds, signs in, promotes, refuses demoting the last owner, and removes a member', async () => {
    const email = 'dana@example.com';
    const p = await ownerPage(c);
    await nav(p, 'Members').click();
    await heading(p, 'Members');
    await p.getByRole('row').filter({ hasText: c.owner.email }).waitFor();

    // Add as editor: the one-time password once.
    await p.getByLabel('Email').fill(email);
    await p.getByLabel('Role', { exact: true }).selectOption('editor');
    await p.getByRole('button', { name: 'Add member' }).click();
    const otpField = p.getByLabel('One-time password');
    await otpField.waitFor();
    const otp = await otpField.inputValue();
    expect(otp.length).toBeGreaterThanOrEqual(12);
    const row = p.getByRole('row').filter({ hasText: email });
    await row.waitFor();
    expect(await row.textContent()).toContain('yes'); // must change password
    expect(await row.getByLabel(`Role of ${email}`).inputValue()).toBe('editor');
    await shot(p, 'members-01-added');
    await p.getByRole('button', { name: 'Done' }).click();
    expect(await p.getByLabel('One-time password').count()).toBe(0);
    await p.reload();
    await heading(p, 'Members');
    await row.waitFor();
    expect(await p.getByText(otp).count()).toBe(0);

    // The same email again: 409 duplicate, its detail shown.
    await p.getByLabel('Email').fill(email);
    await p.getByRole('button', { name: 'Add member' }).click();
    await p.getByRole('alert').filter({ hasText: 'already a member' }).waitFor();

    // The new member signs in in a second browser: forced to change the one-time password.
    const q = await c.page();
    await signIn(q, email, otp);
    await heading(q, 'Change password');
    await q.getByLabel('Current password').fill(otp);
    await q.getByLabel('New password').fill(PASSWORD);
    await q.getByRole('button', { name: 'Change password' }).click();
    await heading(q, 'Overview');
    expect(await nav(q, 'Members').count()).toBe(0); // an editor has no Members page
    await shot(q, 'members-02-editor-signed-in');

    // The owner promotes them to admin; on their next load they have the Members page.
    await p.reload();
    await heading(p, 'Members');
    expect(await row.textContent()).toContain('no'); // password changed
    // The last sign-in is the editor's, a moment ago (not "never").
    expect(await row.getByRole('cell').nth(4).textContent()).toMatch(/s ago|min ago|just now/);
    // Choosing a role asks first, in a dialog named by the action; nothing is sent until it is confirmed.
    let sent = 0;
    p.on('request', (r) => void (r.url().includes('/api/v1/admin/members/') && r.method() === 'PATCH' && sent++));
    await row.getByLabel(`Role of ${email}`).selectOption('admin');
    const change = p.getByRole('dialog', { name: `Change the role of ${email}?` });
    await change.waitFor();
    expect(await change.textContent()).toContain('editor → admin');
    expect(sent).toBe(0);
    await shot(p, 'members-01b-role-change-dialog');
    // Cancel keeps the role.
    await change.getByRole('button', { name: 'Cancel' }).click();
    await change.waitFor({ state: 'detached' });
    expect(await row.getByLabel(`Role of ${email}`).inputValue()).toBe('editor');
    expect(sent).toBe(0);
    await row.getByLabel(`Role of ${email}`).selectOption('admin');
    const patched = p.waitForResponse((r) => r.url().includes('/api/v1/admin/members/') && r.request().method() === 'PATCH');
    await change.getByRole('button', { name: 'Make admin' }).click();
    expect((await patched).status()).toBe(200);
    await expect.poll(() => row.getByLabel(`Role of ${email}`).inputValue(), POLL).toBe('admin');
    // Acknowledged: what changed, from what.
    await p.getByRole('status').filter({ hasText: `${email} is now an admin (was editor).` }).waitFor();
    await shot(p, 'members-01c-role-changed');
    await q.reload();
    await nav(q, 'Members').waitFor();
    await nav(q, 'Members').click();
    await heading(q, 'Members');
    // An admin is not offered owner, and cannot change the owner's role.
    const ownerSelect = q.getByLabel(`Role of ${c.owner.email}`);
    expect(await ownerSelect.isDisabled()).toBe(true);
    expect(await q.getByLabel('Role', { exact: true }).locator('option').allTextContents()).toEqual(['viewer', 'editor', 'admin']);
    expect(await q.getByRole('button', { name: `Remove ${c.owner.email}` }).count()).toBe(0);
    await shot(q, 'members-03-admin-view');

    // The owner tries to demote themself, the last owner: refused, the detail shown, the role kept.
    await p.getByLabel(`Role of ${c.owner.email}`).selectOption('admin');
    const demote = p.getByRole('dialog', { name: `Change the role of ${c.owner.email}?` });
    await demote.getByRole('button', { name: 'Make admin' }).click();
    const refusal = demote.getByRole('alert').filter({ hasText: 'last owner' });
    await refusal.waitFor();
    expect(await refusal.textContent()).toContain(`${c.owner.email} is the organisation's last owner`);
    await shot(p, 'members-04-last-owner-refused');
    await demote.getByRole('button', { name: 'Cancel' }).click();
    await demote.waitFor({ state: 'detached' });
    await expect.poll(() => p.getByLabel(`Role of ${c.owner.email}`).inputValue(), POLL).toBe('owner');

    // Remove the member (confirmed in a dialog): gone from the table.
    await row.getByRole('button', { name: `Remove ${email}` }).click();
    const dialog = p.getByRole('dialog', { name: `Remove ${email}?` });
    await dialog.waitFor();
    await shot(p, 'members-05-remove-dialog');
    await dialog.getByRole('button', { name: 'Remove member' }).click();
    await row.waitFor({ state: 'detached' });
    await shot(p, 'members-06-removed');

    // Their next request goes to sign-in.
    await nav(q, 'Hosts').click();
    await heading(q, 'Sign in');
    expect(new URL(q.url()).pathname).toBe('/login');
    await shot(q, 'members-07-removed-member-signed-out');
  }, 120_000);

  it('shows a host\'s topology: the drawing, a window picker, and the flow peers once a daemon reports flows', async () => {
    const db = c.server.database.db;
    const web = await addHost(db, c.org.organisationId, { hostname: 'web-1', addresses: ['10.40.0.10'] });
    await addHost(db, c.org.organisationId, { hostname: 'client-1', addresses: ['10.40.0.20'] });
    const p = await c.page();
    await signIn(p, c.owner.email, c.owner.password);
    await heading(p, 'Overview');
    await p.goto(`/hosts/${web}`);
    await heading(p, 'web-1');
    const section = p.getByRole('region', { name: 'Topology' });
    await section.getByText('No flow records yet: a daemon with a flow collector reports them.').waitFor();
    const img = section.getByRole('img', { name: /Topology of web-1/ });
    await expect.poll(() => img.evaluate((el) => (el as unknown as { naturalWidth: number }).naturalWidth)).toBeGreaterThan(0);
    await shot(p, 'members-08-topology-empty');

    // A daemon reports flows: a caller (in the inventory) and a destination (not).
    const daemon = await onlineDaemon(c.t, c.org, { networkCidrs: ['10.40.0.0/24'], capabilities: { ebpf: true } });
    const minute = new Date(Math.floor((Date.now() - 10 * 60_000) / 60_000) * 60_000).toISOString();
    const flow = (o: Record<string, unknown>) => ({ bucketStart: minute, protocol: 'tcp', packets: 10, bytes: 5000, source: 'ebpf', ...o });
    const res = await c.server.app.inject({
      method: 'POST', url: '/api/v1/daemon/flows', headers: daemonHeaders(daemon.token, daemon.id),
      payload: { flows: [flow({ srcIp: '10.40.0.20', dstIp: '10.40.0.10', dstPort: 443 }), flow({ srcIp: '10.40.0.10', dstIp: '198.51.100.7', dstPort: 53, protocol: 'udp', bytes: 300 })], dropped: 0 },
    });
    expect(res.statusCode, res.body).toBe(200);

    await p.reload();
    await heading(p, 'web-1');
    const inbound = section.getByRole('table', { name: 'Inbound (callers)' });
    const outbound = section.getByRole('table', { name: 'Outbound (destinations)' });
    await inbound.getByRole('link', { name: 'client-1' }).waitFor();
    expect(await inbound.textContent()).toContain('443');
    await outbound.getByText('198.51.100.7').first().waitFor();
    expect(await outbound.textContent()).toContain('not in the inventory');
    expect(await section.getByText('No flow records yet').count()).toBe(0);
    await shot(p, 'members-09-topology-24h');

    // The window picker: 1 h still holds the flow of ten minutes ago; the drawing follows the window.
    await section.getByLabel('Window').selectOption({ label: '1 h' });
    await expect.poll(() => img.getAttribute('src')).toContain('windowHours=1');
    await inbound.getByRole('link', { name: 'client-1' }).waitFor();
    await expect.poll(() => section.getByRole('img', { name: /Topology of web-1/ }).evaluate((el) => (el as unknown as { naturalWidth: number }).naturalWidth)).toBeGreaterThan(0);
    await shot(p, 'members-10-topology-1h');
  });
});
