import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { refreshHostSummaries } from '../../server/src/inventory/host-summaries.js';
import { addHosts } from '../../server/test/fixtures.js';
import { type Console, haveChromium, heading, ownerPage, ownerWithPassword, POLL, shot, startConsole } from './harness.js';

// Issue 23: the certificates an operator must act on are the ones their endpoints present now.
// A site of 300 web servers, each presenting a certificate on 443; 12 of them replaced a
// certificate expiring this week by a new one, and 3 lost the service that presented one. The
// overview's "within 7 days" counts only the current ones, the certificates list opens on them
// (the same number), and the replaced and gone ones are one filter away, marked as such.

const DAY = 86_400_000;

describe.skipIf(!haveChromium)('certificates in Chromium', () => {
  let c: Console;
  const currentSoon = 9;

  beforeAll(async () => {
    c = await startConsole();
    await ownerWithPassword(c);
    const db = c.server.database.db;
    const o = c.org.organisationId;
    const hosts = await addHosts(db, o, 300, 'web');
    await sql`insert into host_addresses (organisation_id, host_id, address)
              select ${o}, id, ('10.80.' || (n / 250) || '.' || (n % 250 + 1))::inet
              from unnest(${hosts}::uuid[]) with ordinality as h(id, n)`.execute(db);
    await sql`insert into services (organisation_id, host_id, address, protocol, port, name, product, vendor, version)
              select ${o}, h.id, a.address, 'tcp', 443, 'https', 'nginx', 'f5', '1.24.0'
              from unnest(${hosts}::uuid[]) as h(id) join host_addresses a on a.organisation_id = ${o} and a.host_id = h.id`.execute(db);
    // One current certificate per host: the first `currentSoon` expire within 7 days, the rest in 20 to 400 days.
    const now = Date.now();
    await sql`insert into certificates (organisation_id, host_id, address, port, subject, issuer, not_before, not_after, sha256, trust_status, last_seen_at)
              select ${o}, h.id, a.address, 443, 'CN=web-' || n || '.example.net', 'CN=Example Issuing CA',
                     ${new Date(now - 90 * DAY)}::timestamptz,
                     case when n <= ${currentSoon} then ${new Date(now)}::timestamptz + make_interval(days => n::int % 6 + 1, hours => 1)
                          else ${new Date(now)}::timestamptz + make_interval(days => 20 + (n::int * 7) % 380) end,
                     encode(sha256(('current-' || h.id)::bytea), 'hex'), 'trusted', now()
              from unnest(${hosts}::uuid[]) with ordinality as h(id, n) join host_addresses a on a.organisation_id = ${o} and a.host_id = h.id`.execute(db);
    // 12 hosts replaced a certificate expiring this week (seen last yesterday) by the one above.
    await sql`insert into certificates (organisation_id, host_id, address, port, subject, issuer, not_before, not_after, sha256, trust_status, last_seen_at)
              select ${o}, h.id, a.address, 443, 'CN=old-web-' || n || '.example.net', 'CN=Example Issuing CA',
                     ${new Date(now - 400 * DAY)}::timestamptz, ${new Date(now + 3 * DAY)}::timestamptz,
                     encode(sha256(('old-' || h.id)::bytea), 'hex'), 'trusted', now() - interval '1 day'
              from unnest(${hosts.slice(100, 112)}::uuid[]) with ordinality as h(id, n) join host_addresses a on a.organisation_id = ${o} and a.host_id = h.id`.execute(db);
    // 3 hosts lost the admin service on 8443 whose certificate expires this week.
    const gone = hosts.slice(200, 203);
    await sql`insert into services (organisation_id, host_id, address, protocol, port, name, gone_at)
              select ${o}, h.id, a.address, 'tcp', 8443, 'https-alt', now() - interval '2 hours'
              from unnest(${gone}::uuid[]) as h(id) join host_addresses a on a.organisation_id = ${o} and a.host_id = h.id`.execute(db);
    await sql`insert into certificates (organisation_id, host_id, address, port, subject, issuer, not_before, not_after, sha256, trust_status, last_seen_at)
              select ${o}, h.id, a.address, 8443, 'CN=admin-' || n || '.example.net', 'CN=Example Issuing CA',
                     ${new Date(now - 300 * DAY)}::timestamptz, ${new Date(now + 2 * DAY)}::timestamptz,
                     encode(sha256(('gone-' || h.id)::bytea), 'hex'), 'self_signed', now() - interval '3 hours'
              from unnest(${gone}::uuid[]) with ordinality as h(id, n) join host_addresses a on a.organisation_id = ${o} and a.host_id = h.id`.execute(db);
    // As the writers do after writing certificates and services: each certificate's state, stored on it.
    await refreshHostSummaries(db, o, hosts, hosts);
  });
  afterAll(() => c?.close());

  it('the overview counts the current certificates, the list opens on them, and the replaced or gone ones are behind the filter', async () => {
    const p = await ownerPage(c, { viewport: { width: 1440, height: 900 } });
    const figure = (label: string) => p.locator('li.figure').filter({ has: p.locator('.figure-label', { hasText: new RegExp(`^${label}$`, 'i') }) });
    await figure('within 7 days').locator('.figure-value').waitFor();
    expect(await figure('within 7 days').locator('.figure-value').textContent()).toBe(String(currentSoon));
    await shot(p, 'certificates-01-overview');

    // The figure opens the certificates it counts: the same number, none of them replaced.
    await figure('within 7 days').getByRole('link').click();
    await heading(p, 'Certificates');
    expect(await p.getByLabel('Show').inputValue()).toBe('current');
    const table = p.getByRole('table', { name: 'Certificates' });
    await table.getByRole('row').filter({ hasText: 'CN=web-1.example.net' }).waitFor();
    await expect.poll(() => table.locator('tbody tr').count(), POLL).toBe(currentSoon);
    expect(await table.getByText('Replaced').count()).toBe(0);
    await shot(p, 'certificates-02-current-within-7-days');

    // Behind the filter: the 12 replaced and the 3 whose service is gone, each marked.
    await p.getByLabel('Show').selectOption('replaced');
    await p.waitForURL(/show=replaced/);
    await table.getByRole('row').filter({ hasText: 'CN=old-web-1.example.net' }).waitFor();
    await expect.poll(() => table.locator('tbody tr').count(), POLL).toBe(15);
    expect(await table.getByText('Replaced', { exact: true }).count()).toBe(12);
    expect(await table.getByText('Service gone', { exact: true }).count()).toBe(3);
    await shot(p, 'certificates-03-replaced-or-gone');

    // Every certificate seen, the whole site: "Load more" pages on.
    await p.getByLabel('Expiry').selectOption('');
    await p.getByLabel('Show').selectOption('all');
    await p.waitForURL(/show=all/);
    await table.getByRole('row').filter({ hasText: 'CN=web-1.example.net' }).waitFor();
    await p.getByRole('button', { name: 'Load more' }).waitFor();
    await shot(p, 'certificates-04-all');
  });

  it('reads at a phone\'s width', async () => {
    const p = await ownerPage(c, { viewport: { width: 390, height: 844 } });
    await p.goto('/certificates');
    await heading(p, 'Certificates');
    await p.getByRole('table', { name: 'Certificates' }).getByRole('row').nth(1).waitFor();
    await p.goto('/certificates?show=replaced&expiring=7d');
    await p.getByText('Replaced', { exact: true }).first().waitFor();
    await shot(p, 'certificates-05-phone');
  });
});
