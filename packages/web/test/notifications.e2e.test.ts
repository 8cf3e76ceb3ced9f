import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addHost, addHosts } from '../../server/test/fixtures.js';
import { type Console, haveChromium, heading, ownerPage, ownerWithPassword, POLL, shot, startConsole } from './harness.js';

// Settings → Notifications (issue 23): an admin routes more event kinds to a destination by
// editing it, and reads in the recent deliveries which certificate and which host each concerns.

describe.skipIf(!haveChromium)('notifications in Chromium', () => {
  let c: Console;
  beforeAll(async () => {
    c = await startConsole();
    await ownerWithPassword(c);
  });
  afterAll(() => c?.close());

  it('edits a destination\'s event kinds, and the deliveries name the certificate and the host', async () => {
    const db = c.server.database.db;
    const o = c.org.organisationId;
    const p = await ownerPage(c, { viewport: { width: 1440, height: 900 } });
    await p.goto('/settings/notifications');
    await heading(p, 'Notifications');

    // Add a webhook with the default kinds (host.discovered is not one of them).
    await p.getByLabel('Name').fill('Ops webhook');
    await p.getByLabel('URL').fill('http://127.0.0.1:9/hook');
    expect(await p.getByRole('checkbox', { name: 'host.discovered' }).isChecked()).toBe(false);
    expect(await p.getByRole('checkbox', { name: 'tls.expiring' }).isChecked()).toBe(true);
    await p.getByRole('button', { name: 'Create destination' }).click();
    await p.getByLabel('Signing secret', { exact: true }).waitFor();
    await p.getByRole('button', { name: 'Copy' }).waitFor();
    await p.getByRole('button', { name: 'Done' }).click();
    const row = p.getByRole('row').filter({ hasText: 'Ops webhook' });
    await row.waitFor();

    // Edit: route host.discovered too, stop daemon.online; confirmed by a button named by the action.
    await row.getByRole('button', { name: 'Edit Ops webhook' }).click();
    const dialog = p.getByRole('dialog', { name: 'Edit destination “Ops webhook”' });
    await dialog.waitFor();
    // None chosen: the contract's refusal on the field, nothing sent.
    for (const box of await dialog.getByRole('checkbox').all()) await box.uncheck();
    await dialog.getByRole('button', { name: 'Save destination' }).click();
    await dialog.getByText('choose at least one').waitFor();
    await dialog.getByRole('checkbox', { name: 'tls.expiring' }).check();
    await dialog.getByRole('checkbox', { name: 'host.discovered' }).check();
    await dialog.getByRole('checkbox', { name: 'daemon.offline' }).check();
    await shot(p, 'notifications-01-edit-dialog');
    await dialog.getByRole('button', { name: 'Save destination' }).click();
    await dialog.waitFor({ state: 'detached' });
    await p.getByRole('status').filter({ hasText: 'Saved “Ops webhook”: it receives tls.expiring, daemon.offline, host.discovered' }).waitFor();
    await expect.poll(() => row.textContent(), POLL).toContain('host.discovered');
    const stored = await db.selectFrom('notification_destinations').select('event_kinds').where('organisation_id', '=', o).executeTakeFirstOrThrow();
    expect([...stored.event_kinds].sort()).toEqual(['daemon.offline', 'host.discovered', 'tls.expiring']);

    // Events about a certificate and about hosts: a site of hosts discovered, one certificate expiring.
    const web = await addHost(db, o, { hostname: 'web-5', addresses: ['10.90.0.5'] });
    const cert = (await sql<{ id: string }>`
      insert into certificates (organisation_id, host_id, address, port, subject, issuer, not_before, not_after, sha256, trust_status)
      values (${o}, ${web}, '10.90.0.5', 443, 'CN=shop.example.net', 'CN=Example CA', now() - interval '300 days', now() + interval '5 days', ${'ab'.repeat(32)}, 'trusted')
      returning id`.execute(db)).rows[0]!.id;
    const many = await addHosts(db, o, 40, 'app');
    await sql`insert into events (organisation_id, kind, severity, subject_type, subject_id, data)
              select ${o}, 'host.discovered', 'info', 'host', id::text, jsonb_build_object('fingerprint', 'fp-' || id, 'siteId', null)
              from unnest(${[...many, web]}::uuid[]) as h(id)`.execute(db);
    await sql`insert into events (organisation_id, kind, severity, subject_type, subject_id, data)
              values (${o}, 'tls.expiring', 'warning', 'certificate', ${cert},
                      jsonb_build_object('thresholdDays', 7, 'expired', false, 'notAfter', now() + interval '5 days', 'daysLeft', 5, 'subject', 'CN=shop.example.net',
                                         'issuer', 'CN=Example CA', 'sha256', ${'ab'.repeat(32)}::text, 'hostId', ${web}::text, 'address', '10.90.0.5', 'port', 443))`.execute(db);

    await p.getByRole('button', { name: 'Refresh' }).click();
    const deliveries = p.getByRole('table', { name: 'Recent deliveries, the newest first' });
    const tls = deliveries.getByRole('row').filter({ hasText: 'tls.expiring' });
    await tls.waitFor();
    expect(await tls.textContent()).toContain('CN=shop.example.net on 10.90.0.5:443');
    await tls.getByRole('link', { name: 'web-5' }).waitFor();
    // Host events name their host (looked up), not an id.
    await deliveries.getByRole('row').filter({ hasText: 'host.discovered' }).getByRole('link', { name: /^app-\d+$/ }).first().waitFor();
    await shot(p, 'notifications-02-deliveries');

    // The host link opens the host.
    await tls.getByRole('link', { name: 'web-5' }).click();
    await heading(p, 'web-5');
  });

  it('reads at a phone\'s width', async () => {
    const p = await ownerPage(c, { viewport: { width: 390, height: 844 } });
    await p.goto('/settings/notifications');
    await heading(p, 'Notifications');
    await p.getByRole('table', { name: 'Recent deliveries, the newest first' }).waitFor();
    await shot(p, 'notifications-03-phone');
  });
});
