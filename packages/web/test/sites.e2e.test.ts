import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { heartbeat, register } from '../../server/test/daemon-client.js';
import { type Console, fieldError, haveChromium, heading, nav, ownerPage, ownerWithPassword, POLL, shot, startConsole } from './harness.js';

// Sites and daemon enrolment in the console, end to end: a site added (a duplicate code shows the
// API's 409 detail) and renamed; a daemon enrolled (its token shown once, in the command line),
// registered through the protocol with that token, assigned to the site from the Daemons page,
// then registered again with another --site: it stays where the console put it.

describe.skipIf(!haveChromium)('sites and daemon enrolment in Chromium', () => {
  let c: Console;

  beforeAll(async () => {
    c = await startConsole();
    await ownerWithPassword(c);
  });
  afterAll(() => c?.close());

  it('adds and renames a site, enrols a daemon and assigns it to the site, which a later --site does not change', async () => {
    const p = await ownerPage(c);
    await nav(p, 'Sites').click();
    await heading(p, 'Sites');
    await p.getByText('No sites yet').waitFor();

    // The contract's code rule, shown as the user types.
    const submit = p.getByRole('button', { name: 'Add site' });
    await p.getByLabel('Code').fill('fra 1');
    await p.getByText('letters, digits, dot, underscore and hyphen only').waitFor();
    expect(await submit.isDisabled()).toBe(true);
    await shot(p, 'sites-01-bad-code');
    expect(await fieldError(p.getByLabel('Code'))).toBe('letters, digits, dot, underscore and hyphen only');
    await p.getByLabel('Code').fill('fra-1');
    await expect.poll(() => fieldError(p.getByLabel('Code')), POLL).toBeNull();
    await p.getByLabel('Name', { exact: true }).fill('Frankfurt');
    await submit.click();
    await p.getByRole('status').filter({ hasText: 'added' }).waitFor();
    const row = p.getByRole('row').filter({ hasText: 'fra-1' });
    await row.waitFor();

    // The same code again, in other case: the API's 409 duplicate, its detail shown.
    await p.getByLabel('Code').fill('FRA-1');
    await p.getByLabel('Name', { exact: true }).fill('Frankfurt again');
    await submit.click();
    await p.getByRole('alert').filter({ hasText: 'A site with code "FRA-1" exists' }).waitFor();
    await shot(p, 'sites-02-duplicate');

    await row.getByRole('button', { name: 'Rename fra-1' }).click();
    const dialog = p.getByRole('dialog', { name: 'Rename site fra-1' });
    await dialog.getByLabel('Name').fill('Frankfurt office');
    await shot(p, 'sites-03-rename');
    await dialog.getByRole('button', { name: 'Rename' }).click();
    await dialog.waitFor({ state: 'detached' });
    await p.getByRole('row').filter({ hasText: 'Frankfurt office' }).waitFor();
    await shot(p, 'sites-04-renamed');

    // Enrol a daemon: the token once, the command line with it.
    await nav(p, 'Daemons').click();
    await heading(p, 'Daemons');
    await p.getByRole('button', { name: 'Enrol a daemon' }).click();
    const enrol = p.getByRole('dialog', { name: 'Enrol a daemon' });
    await enrol.getByLabel('Key name (optional)').fill('edge key');
    await shot(p, 'sites-05-enrol-dialog');
    await enrol.getByRole('button', { name: 'Mint key' }).click();
    await p.getByText('it is shown only once').waitFor();
    const token = await p.getByLabel('Token').inputValue();
    expect(token).toMatch(/^svd_/);
    const command = (await p.getByLabel('Command line').textContent()) ?? '';
    expect(command).toContain(`--key ${token}`);
    expect(command).toMatch(/^surveyor-daemon --server http:\/\/\S+ --key svd_\S+$/);
    await shot(p, 'sites-06-enrolled');
    await p.getByRole('button', { name: 'Done' }).click();
    await p.getByText('it is shown only once').waitFor({ state: 'detached' });

    // The daemon starts with that key and its own --site.
    const name = `edge-${randomUUID().slice(0, 6)}`;
    const id = await register(c.t.app, token, { name, siteCode: 'own-site' });
    await heartbeat(c.t.app, token, id);
    const select = p.getByLabel(`Site of ${name}`);
    await p.reload();
    await select.waitFor();
    await expect.poll(() => select.locator('option:checked').textContent(), POLL).toBe('own-site (own-site)');

    // Assigned from the console: shown at once.
    const saved = p.waitForResponse((r) => r.url().endsWith(`/api/v1/daemons/${id}/site`) && r.status() === 200);
    await select.selectOption({ label: 'Frankfurt office (fra-1)' });
    await saved;
    await expect.poll(() => select.locator('option:checked').textContent(), POLL).toBe('Frankfurt office (fra-1)');
    await p.getByText('A site assigned here wins over').waitFor();
    await shot(p, 'sites-07-assigned');

    // The daemon restarts with another --site: it stays on the site the console chose.
    expect(await register(c.t.app, token, { name, siteCode: 'elsewhere' })).toBe(id);
    await p.reload();
    await heading(p, 'Daemons');
    await select.waitFor();
    await expect.poll(() => select.locator('option:checked').textContent(), POLL).toBe('Frankfurt office (fra-1)');
    const row2 = await c.t.database.db.selectFrom('daemons').innerJoin('sites', 'sites.id', 'daemons.site_id').select(['sites.code', 'daemons.site_set_in_ui']).where('daemons.id', '=', id).executeTakeFirstOrThrow();
    expect(row2).toEqual({ code: 'fra-1', site_set_in_ui: true });
    await shot(p, 'sites-08-kept');
  });
});
