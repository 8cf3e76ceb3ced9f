import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addHost } from '../../server/test/fixtures.js';
import { type Console, haveChromium, heading, nav, ownerPage, ownerWithPassword, POLL, shot, startConsole } from './harness.js';

// The console's tables in a real browser: sorting from the header (mouse and keyboard), and a
// choice of columns that outlives a reload.

describe.skipIf(!haveChromium)('tables in Chromium', () => {
  let c: Console;

  beforeAll(async () => {
    c = await startConsole();
    await ownerWithPassword(c);
    const db = c.server.database.db;
    await addHost(db, c.org.organisationId, { hostname: 'web-10', addresses: ['10.70.0.10'], os: 'Debian 12' });
    await addHost(db, c.org.organisationId, { hostname: 'web-9', addresses: ['10.70.0.9'], os: 'Ubuntu 24.04' });
    await addHost(db, c.org.organisationId, { hostname: 'db-1', addresses: ['10.70.0.1'], os: 'Alpine 3.20' });
  });
  afterAll(() => c?.close());

  it('sorts hosts by a header, by mouse and by keyboard, and keeps a hidden column hidden after a reload', async () => {
    const p = await ownerPage(c);
    await nav(p, 'Hosts').click();
    await heading(p, 'Hosts');
    const table = p.getByRole('table', { name: 'Hosts' });
    const names = () => table.locator('tbody tr td:first-child').allTextContents();
    await table.getByRole('link', { name: 'db-1' }).waitFor();

    const byName = table.getByRole('button', { name: 'Hostname' });
    await byName.click();
    await expect.poll(names, POLL).toEqual(['db-1', 'web-9', 'web-10']);
    expect(await table.getByRole('columnheader', { name: 'Hostname' }).getAttribute('aria-sort')).toBe('ascending');
    // The keyboard does the same: Enter on the focused header button turns the order around.
    await byName.focus();
    await p.keyboard.press('Enter');
    await expect.poll(names, POLL).toEqual(['web-10', 'web-9', 'db-1']);
    expect(await table.getByRole('columnheader', { name: 'Hostname' }).getAttribute('aria-sort')).toBe('descending');
    // A column of ids (the site) offers no sort: its UUIDs have no order an operator reads.
    expect(await table.getByRole('button', { name: 'Site' }).count()).toBe(0);
    await shot(p, 'tables-01-hosts-sorted');

    // Hide the OS column: gone from the table, and still gone after a reload.
    await p.getByText('Columns', { exact: true }).click();
    await p.getByRole('checkbox', { name: 'Show column OS' }).uncheck();
    await shot(p, 'tables-02-columns-menu');
    await table.getByRole('columnheader', { name: 'OS', exact: true }).waitFor({ state: 'detached' });
    expect(await table.getByText('Debian 12').count()).toBe(0);
    await p.reload();
    await heading(p, 'Hosts');
    await table.getByRole('link', { name: 'db-1' }).waitFor();
    expect(await table.getByRole('columnheader', { name: 'OS', exact: true }).count()).toBe(0);
    expect(await table.getByRole('columnheader', { name: 'Addresses' }).count()).toBe(1);

    // Show all brings it back.
    await p.getByText('Columns', { exact: true }).click();
    await p.getByRole('button', { name: 'Show all' }).click();
    await table.getByRole('columnheader', { name: 'OS', exact: true }).waitFor();
    await table.getByText('Debian 12').waitFor();
  });
});
