import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedMemberWithKey } from '../../server/test/helpers.js';
import { type Scanning, createNetwork, ingest, onlineDaemon, startSession } from '../../server/test/scanning.js';
import { type Console, haveChromium, heading, nav, ownerPage, ownerWithPassword, POLL, shot, startConsole } from './harness.js';

// Settings → Activity (issue 23): the event log and the audit trail, the newest first, filtered.

describe.skipIf(!haveChromium)('activity in Chromium', () => {
  let c: Console;
  let editorEmail: string;

  beforeAll(async () => {
    c = await startConsole();
    await ownerWithPassword(c);
    const editor = await seedMemberWithKey(c.t.database, c.org, 'editor', ['scan:run', 'inventory:write', 'inventory:read']);
    editorEmail = editor.email;
    const daemon = await onlineDaemon(c.t, c.org, { networkCidrs: ['10.80.0.0/24'], siteCode: 'lab' });
    const s: Scanning = { org: c.org, api: editor.token, daemon, siteId: null };
    const sessionId = await startSession(c.t, s, await createNetwork(c.t, s, '10.80.0.0/24'));
    await ingest(c.t, daemon, {
      sessionId,
      hosts: [{ fingerprint: 'fp-a', hostname: 'audit-a' }, { fingerprint: 'fp-b', hostname: 'audit-b' }],
      ips: [{ hostFingerprint: 'fp-a', address: '10.80.0.10', family: 4 }, { hostFingerprint: 'fp-b', address: '10.80.0.11', family: 4 }],
      stats: { hostsTotal: 2, hostsScanned: 2, portsScanned: 20 },
      final: true,
    });
  });
  afterAll(() => c?.close());

  it('shows the events and the audit trail, the newest first, filtered by kind and action', async () => {
    const p = await ownerPage(c);
    await nav(p, 'Activity').click();
    await heading(p, 'Activity');
    await p.getByLabel('Kind').selectOption('host.discovered');
    const events = p.getByRole('table', { name: 'Events, the newest first' });
    // The previous (unfiltered) page stays on screen until the filtered one arrives: wait for the latter.
    const kinds = () => events.locator('tbody tr td:nth-child(2)').allTextContents();
    await expect.poll(kinds, POLL).toEqual(['host.discovered', 'host.discovered']);
    await shot(p, 'activity-01-events');

    await p.getByRole('tab', { name: 'Audit trail' }).click();
    const audit = p.getByRole('table', { name: 'Audit trail, the newest first' });
    await audit.waitFor();
    const created = audit.getByRole('row').filter({ hasText: 'network.created' });
    await created.waitFor();
    // Stored lower-cased, as every email.
    expect(await created.textContent()).toContain(editorEmail.toLowerCase());
    expect(await created.textContent()).toMatch(/API key svk_/);
    await p.getByLabel('Action').fill('scan.');
    await expect.poll(() => audit.getByRole('row').filter({ hasText: 'network.created' }).count(), POLL).toBe(0);
    expect(await audit.getByRole('row').filter({ hasText: 'scan.' }).count()).toBeGreaterThan(0);
    await shot(p, 'activity-02-audit');
  });
});
