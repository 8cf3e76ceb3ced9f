import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createUser } from '../../server/src/admin/admin.service.js';
import { addSite } from '../../server/test/fixtures.js';
import { FAKE_KEY, type FakeAws, UNAUTHORIZED, generateAwsState, startFakeAws } from '../../server/test/fakes/aws.js';
import { type Console, fieldError, haveChromium, heading, ownerPage, ownerWithPassword, PASSWORD, POLL, shot, signIn, startConsole } from './harness.js';

// Settings → Cloud accounts (issue 25): an admin adds an AWS account through the form (the fake AWS
// of the server's tests, the real SDK talking to it), tests the connection, syncs it now (40
// instances become 40 hosts), sees a refusal in AWS's own words, edits it keeping the stored
// credentials, disables and deletes it. An editor is told who may manage accounts.

describe.skipIf(!haveChromium)('cloud accounts in Chromium', () => {
  let c: Console;
  let fake: FakeAws;
  let site: string;

  beforeAll(async () => {
    c = await startConsole();
    await ownerWithPassword(c);
    fake = await startFakeAws(generateAwsState({ instances: 40 }));
    site = (await addSite(c.server.database.db, c.org.organisationId, 'aws')).id;
  });
  afterAll(async () => {
    await fake?.close();
    await c?.close();
  });

  it('adds an AWS account, tests it, syncs it, shows a refusal, edits it keeping its credentials, deletes it', async () => {
    const db = c.server.database.db;
    const o = c.org.organisationId;
    const p = await ownerPage(c, { viewport: { width: 1440, height: 900 } });
    await p.getByRole('navigation').getByRole('link', { name: 'Cloud accounts' }).click();
    await heading(p, 'Cloud accounts');
    // The empty state says what an account does and the access each kind needs.
    const empty = p.getByText('No cloud accounts yet.');
    await empty.waitFor();
    const emptyText = await p.locator('.cloud-empty').textContent();
    for (const needed of ['ec2:DescribeInstances', 'ec2:DescribeNetworkInterfaces', 'ec2:DescribeVpcs', 'ec2:DescribeSubnets', 'ec2:DescribeSecurityGroups', 'ec2:DescribeRegions', 'sts:AssumeRole', 'networking.k8s.io']) expect(emptyText).toContain(needed);
    await shot(p, 'cloud-01-empty');

    // Add: a bad access key id is refused inline by the contract's schema, nothing sent.
    await p.getByRole('button', { name: 'Add AWS account' }).click();
    const add = p.getByRole('dialog', { name: 'Add AWS account' });
    await add.waitFor();
    await add.getByLabel('Name').fill('Production');
    await add.getByLabel('Site').selectOption({ label: 'Site aws (aws)' });
    await add.getByLabel('Regions').fill('eu-west-1');
    await add.getByText('Advanced').click();
    await add.getByLabel('Endpoint (optional)').fill(fake.url);
    await add.getByLabel('Access key id').fill('not a key');
    await add.getByLabel('Secret access key').fill(FAKE_KEY.secretAccessKey);
    await add.getByRole('button', { name: 'Add account' }).click();
    await expect.poll(() => fieldError(add.getByLabel('Access key id')), POLL).toBe('an access key id such as AKIAIOSFODNN7EXAMPLE');
    await shot(p, 'cloud-02-add-invalid');
    expect(await db.selectFrom('cloud_accounts').select('id').where('organisation_id', '=', o).execute()).toEqual([]);
    await add.getByLabel('Access key id').fill(FAKE_KEY.accessKeyId);
    await add.getByRole('button', { name: 'Add account' }).click();
    await add.waitFor({ state: 'detached' });
    await p.getByRole('status').filter({ hasText: 'Added “Production”' }).waitFor();
    const row = p.getByRole('row').filter({ hasText: 'Production' });
    await row.waitFor();
    // The site's name is looked up after the row is drawn: wait for it rather than read once.
    await expect.poll(() => row.textContent(), POLL).toContain('Site aws');
    expect(await row.textContent()).toContain('access key …0001');
    expect(await row.textContent()).toContain('never');
    expect(await db.selectFrom('cloud_accounts').select(['kind', 'site_id', 'settings', 'enabled']).where('organisation_id', '=', o).execute()).toEqual([
      { kind: 'aws', site_id: site, settings: { regions: ['eu-west-1'], endpoint: fake.url }, enabled: true },
    ]);
    // The secret never comes back to the page.
    expect(await p.content()).not.toContain(FAKE_KEY.secretAccessKey);

    // Test connection: the account the key reaches.
    await row.getByRole('button', { name: 'Test connection of Production' }).click();
    await row.getByRole('status').filter({ hasText: /^Connected: / }).waitFor();
    expect(await row.getByRole('status').first().textContent()).toContain('123456789012');
    await expect.poll(() => row.locator('.reaches').textContent(), POLL).toContain('123456789012');

    // Sync now: busy while it runs (the request held back a moment to see it), then 40 instances, 40 hosts in the inventory.
    await p.route('**/sync', async (route) => {
      await new Promise((r) => setTimeout(r, 1500));
      await route.continue();
    });
    await row.getByRole('button', { name: 'Sync Production now' }).click();
    const busy = row.getByRole('button', { name: 'Sync Production now' });
    await expect.poll(() => busy.textContent(), POLL).toBe('Syncing…');
    expect(await busy.isDisabled()).toBe(true);
    await row.getByRole('status').filter({ hasText: /^Syncing… \d+ s$/ }).waitFor();
    await shot(p, 'cloud-03a-syncing', { fullPage: false });
    const synced = row.getByRole('status').filter({ hasText: /^Synced in / });
    await synced.waitFor();
    expect(await synced.textContent()).toContain('40 hosts');
    await expect.poll(() => row.locator('.last-sync').textContent(), POLL).toMatch(/^ok.*42 resources · 40 hosts · \d+ changed · 0 gone/); // the scheduled cloud.sync may have run first: then nothing changed
    const hosts = await sql<{ n: number }>`select count(*)::int as n from hosts where organisation_id = ${o} and gone_at is null`.execute(db);
    expect(hosts.rows[0]!.n).toBe(40);
    await shot(p, 'cloud-03-synced');
    await p.unroute('**/sync');

    // AWS refuses: the sync fails, in AWS's words, beside the row and in its last sync.
    fake.state.faults.push({ ...UNAUTHORIZED });
    await row.getByRole('button', { name: 'Sync Production now' }).click();
    const failed = row.getByRole('status').filter({ hasText: /^Sync failed, the provider said: / });
    await failed.waitFor();
    expect(await failed.textContent()).toContain('You are not authorized to perform this operation.');
    await expect.poll(() => row.locator('.last-sync .badge').textContent(), POLL).toBe('failed');
    await row.getByText('Why it failed').click();
    await row.locator('.last-sync').getByText('UnauthorizedOperation').waitFor();
    expect(await row.locator('.last-sync .cloud-more p').textContent()).toContain('You are not authorized to perform this operation.');
    await shot(p, 'cloud-04-refused');
    fake.state.faults.length = 0;

    // At a phone's width, and in the dark: the list, and the Kubernetes dialog reading a kubeconfig file.
    const phone = await ownerPage(c, { viewport: { width: 390, height: 844 } });
    await phone.goto('/settings/cloud');
    await heading(phone, 'Cloud accounts');
    await phone.getByRole('table', { name: 'Cloud accounts' }).waitFor();
    await shot(phone, 'cloud-05-phone');
    await phone.getByRole('button', { name: 'Add Kubernetes cluster' }).click();
    const k8s = phone.getByRole('dialog', { name: 'Add Kubernetes cluster' });
    await k8s.waitFor();
    const kubeconfig = 'apiVersion: v1\nkind: Config\nclusters:\n- name: prod\n  cluster:\n    server: https://k8s.example.net:6443\n';
    await k8s.getByLabel('Or read it from a file').setInputFiles({ name: 'config', mimeType: 'text/plain', buffer: Buffer.from(kubeconfig) });
    await expect.poll(() => k8s.getByLabel('Kubeconfig').inputValue(), POLL).toBe(kubeconfig);
    await shot(phone, 'cloud-06-phone-kubernetes', { fullPage: false });
    await k8s.getByRole('button', { name: 'Cancel' }).click();
    const dark = await ownerPage(c, { viewport: { width: 1440, height: 900 }, colorScheme: 'dark' });
    await dark.goto('/settings/cloud');
    await dark.getByRole('table', { name: 'Cloud accounts' }).waitFor();
    await shot(dark, 'cloud-07-dark');

    // Edit: the credential fields start empty and say so; saved empty, the stored ones are kept.
    const hint = (await db.selectFrom('cloud_accounts').select(['credential_hint', 'credentials_sealed']).where('organisation_id', '=', o).executeTakeFirstOrThrow());
    await row.getByRole('button', { name: 'Edit Production' }).click();
    const edit = p.getByRole('dialog', { name: 'Edit AWS account “Production”' });
    await edit.waitFor();
    expect(await edit.getByLabel('Access key id').inputValue()).toBe('');
    expect(await edit.getByLabel('Secret access key').inputValue()).toBe('');
    expect(await edit.getByLabel('Regions').inputValue()).toBe('eu-west-1');
    expect(await edit.getByLabel('Endpoint (optional)').inputValue()).toBe(fake.url);
    await edit.getByText('Leave these empty to keep the stored credentials').waitFor();
    await edit.getByLabel('Name').fill('Production EU');
    await shot(p, 'cloud-08-edit');
    await edit.getByRole('button', { name: 'Save account' }).click();
    await edit.waitFor({ state: 'detached' });
    await p.getByRole('status').filter({ hasText: 'Saved “Production EU”: its stored credentials were kept.' }).waitFor();
    const after = await db.selectFrom('cloud_accounts').select(['name', 'credential_hint', 'credentials_sealed']).where('organisation_id', '=', o).executeTakeFirstOrThrow();
    expect(after).toEqual({ name: 'Production EU', credential_hint: hint.credential_hint, credentials_sealed: hint.credentials_sealed });
    // The kept credentials still reach the account.
    const renamed = p.getByRole('row').filter({ hasText: 'Production EU' });
    await renamed.getByRole('button', { name: 'Test connection of Production EU' }).click();
    await renamed.getByRole('status').filter({ hasText: /^Connected: .*123456789012/ }).waitFor();

    // Disable, then delete (confirmed by a button named by its action).
    await renamed.getByRole('button', { name: 'Disable Production EU' }).click();
    await p.getByRole('status').filter({ hasText: 'Disabled “Production EU”' }).waitFor();
    await expect.poll(() => renamed.locator('.badge').last().textContent(), POLL).toBe('disabled');
    await renamed.getByRole('button', { name: 'Delete Production EU' }).click();
    const confirm = p.getByRole('dialog', { name: 'Delete cloud account “Production EU”?' });
    await confirm.getByRole('button', { name: 'Delete account' }).click();
    await confirm.waitFor({ state: 'detached' });
    await p.getByRole('status').filter({ hasText: 'Deleted “Production EU”; the hosts only it listed are marked gone (they keep their history).' }).waitFor();
    await empty.waitFor();
    expect(await db.selectFrom('cloud_accounts').select('id').where('organisation_id', '=', o).execute()).toEqual([]);
    const left = await sql<{ present: number; gone: number }>`select count(*) filter (where gone_at is null)::int as present, count(*) filter (where gone_at is not null)::int as gone from hosts where organisation_id = ${o}`.execute(db);
    expect(left.rows[0]).toEqual({ present: 0, gone: 40 });
  }, 120_000);

  it('tells an editor who manages cloud accounts, with no form and no refused call', async () => {
    const editor = 'eddie@example.com';
    await createUser(c.server.database.db, { type: 'cli' }, { org: c.org.organisationId, email: editor, role: 'editor', password: PASSWORD });
    await sql`update users set must_change_password = false where email = ${editor}`.execute(c.server.database.db);
    const p = await c.page({ viewport: { width: 1440, height: 900 } });
    const refused: string[] = [];
    p.on('response', (r) => void (r.url().includes('/api/') && r.status() === 403 && refused.push(new URL(r.url()).pathname)));
    await signIn(p, editor, PASSWORD);
    await heading(p, 'Overview');
    expect(await p.getByRole('navigation').getByRole('link', { name: 'Cloud accounts' }).count()).toBe(0);
    await p.goto('/settings/cloud');
    await heading(p, 'Cloud accounts');
    await p.getByText('Cloud accounts are managed by admins and owners of the organisation. You are editor.').waitFor();
    expect(await p.getByRole('button', { name: /^Add / }).count()).toBe(0);
    expect(refused).toEqual([]);
  });
});
