import { sql } from 'kysely';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createUser } from '../../server/src/admin/admin.service.js';
import { lowContrast, unnamedControls } from './a11y.js';
import { type Console, fieldError, haveChromium, heading, nav, ownerPage, ownerWithPassword, PASSWORD, POLL, shot, signIn, startConsole } from './harness.js';

// Settings → SCIM (spec 5): the owner mints a token and sees it once beside the base URL; the test
// then plays the identity provider with Node's fetch (SCIM 2.0 as Okta sends it: users, a group
// with members, a deactivation); the owner maps the group to editor and Settings → Members follows:
// the member is marked SCIM with the role the group gives, then Deactivated. Revoking the token
// refuses the provider's next request (401). An admin sees the mapping read-only.

const USER = 'urn:ietf:params:scim:schemas:core:2.0:User';
const GROUP = 'urn:ietf:params:scim:schemas:core:2.0:Group';
const PATCH = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';

/** The people and groups the identity provider pushes besides alice, so the screens show a real directory. */
const PEOPLE = [
  ['bruno.costa', 'Bruno', 'Costa'],
  ['chen.wei', 'Chen', 'Wei'],
  ['dara.okafor', 'Dara', 'Okafor'],
  ['emil.lund', 'Emil', 'Lund'],
  ['farah.haddad', 'Farah', 'Haddad'],
  ['gus.moreau', 'Gus', 'Moreau'],
  ['hana.sato', 'Hana', 'Sato'],
] as const;
const GROUPS: { displayName: string; externalId?: string; members: string[] }[] = [
  { displayName: 'NOC Engineers', externalId: '00g8k2nocx1Fq3Zt5d7', members: ['chen.wei', 'dara.okafor', 'emil.lund', 'farah.haddad'] },
  { displayName: 'Auditors', externalId: '00g8k2audt9Lm4Qw2x6', members: ['gus.moreau', 'hana.sato'] },
  { displayName: 'Contractors', members: ['bruno.costa'] },
];

/** The identity provider: a SCIM request with the token, as JSON in SCIM's media type. */
function idp(base: string, token: string) {
  return (method: string, path: string, body?: unknown) =>
    fetch(`${base}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, accept: 'application/scim+json', ...(body !== undefined ? { 'content-type': 'application/scim+json' } : {}) },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
}

/** A user as Okta pushes one. */
const person = (userName: string, givenName: string, familyName: string) => ({
  schemas: [USER],
  userName,
  name: { givenName, familyName },
  emails: [{ value: userName, type: 'work', primary: true }],
  active: true,
});

/** What a screen's text contrast and control names get wrong (a11y.ts). */
async function readable(p: Page, name: string): Promise<string[]> {
  return [...(await lowContrast(p)).map((l) => `${name}: "${l.text}" ${l.ratio}:1`), ...(await unnamedControls(p)).map((r) => `${name}: a ${r} without a name`)];
}

describe.skipIf(!haveChromium)('SCIM provisioning in Chromium', () => {
  let c: Console;

  beforeAll(async () => {
    c = await startConsole();
    await ownerWithPassword(c);
  });
  afterAll(() => c?.close());

  it('an owner connects an identity provider, maps its group to editor, and members follow: provisioned, mapped, deactivated, then the token revoked', async () => {
    const db = c.server.database.db;
    const p = await ownerPage(c, { viewport: { width: 1440, height: 900 } });
    await nav(p, 'SCIM').click();
    await heading(p, 'SCIM provisioning');
    // Nothing yet: what to do first, and that no group has come.
    await p.getByText("No tokens yet. Mint a token, then paste the base URL and token into your identity provider's SCIM app.").waitFor();
    await p.getByText('No groups pushed yet.').waitFor();
    await p.getByText('SCIM never changes roles').first().waitFor();
    await shot(p, 'scim-01-empty');

    // Mint: the token once, with the base URL beside it.
    await p.getByLabel('Token name').fill('Okta');
    await p.getByRole('button', { name: 'Mint token' }).click();
    const minted = p.getByRole('region', { name: 'Token “Okta” minted' });
    await minted.waitFor();
    await minted.getByText('it is shown only once').waitFor();
    const token = await minted.getByLabel('Token').inputValue();
    const baseUrl = await minted.getByLabel('Base URL').inputValue();
    expect(token).toMatch(/^svs_/);
    expect(baseUrl).toMatch(/^https?:\/\/.+\/api\/scim\/v2$/);
    expect(await p.getByLabel('SCIM base URL').inputValue()).toBe(baseUrl);
    await minted.getByRole('button', { name: 'Copy token' }).waitFor();
    await minted.getByRole('button', { name: 'Copy URL' }).waitFor();
    const tokens = p.getByRole('table', { name: 'SCIM tokens' });
    const tokenRow = tokens.getByRole('row').filter({ hasText: 'Okta' });
    await tokenRow.waitFor();
    expect(await tokenRow.textContent()).toContain(c.owner.email);
    await shot(p, 'scim-02-minted');
    await minted.getByRole('button', { name: 'Done' }).click();
    await minted.waitFor({ state: 'detached' });
    await p.reload();
    await tokenRow.waitFor();
    expect(await p.content()).not.toContain(token);

    // The identity provider, at the base URL the screen gave. This server listens on a port of its
    // own choosing (SERVICE_PORT=0), which its configured base URL cannot know: the path is the screen's.
    const scimBase = new URL(new URL(baseUrl).pathname, c.server.url).toString();
    const scim = idp(scimBase, token);
    const created = await scim('POST', '/Users', {
      schemas: [USER],
      userName: 'alice@example.com',
      name: { givenName: 'Alice', familyName: 'Ng' },
      emails: [{ value: 'alice@example.com', type: 'work', primary: true }],
      active: true,
    });
    expect(created.status, await created.clone().text()).toBe(201);
    expect(created.headers.get('content-type')).toMatch(/^application\/scim\+json/);
    const alice = (await created.json()) as { id: string; userName: string; active: boolean };
    expect(alice).toMatchObject({ userName: 'alice@example.com', active: true });
    const group = await scim('POST', '/Groups', { schemas: [GROUP], displayName: 'Network Admins', members: [{ value: alice.id }] });
    expect(group.status, await group.clone().text()).toBe(201);
    // The rest of the directory.
    const ids = new Map<string, string>();
    for (const [local, given, family] of PEOPLE) {
      const r = await scim('POST', '/Users', person(`${local}@example.com`, given, family));
      expect(r.status, await r.clone().text()).toBe(201);
      ids.set(local, ((await r.json()) as { id: string }).id);
    }
    for (const g of GROUPS) {
      const r = await scim('POST', '/Groups', { schemas: [GROUP], displayName: g.displayName, ...(g.externalId ? { externalId: g.externalId } : {}), members: g.members.map((m) => ({ value: ids.get(m) })) });
      expect(r.status, await r.clone().text()).toBe(201);
    }

    // The owner sees what came: the groups with their members, no role yet; the counts.
    await p.reload();
    await heading(p, 'SCIM provisioning');
    const groups = p.getByRole('table', { name: 'SCIM groups' });
    const admins = groups.getByRole('row').filter({ hasText: 'Network Admins' });
    await admins.waitFor();
    expect(await admins.getByRole('cell').allTextContents()).toEqual(['Network Admins', '—', '1', '—', expect.stringMatching(/s ago|just now/)]);
    expect(await groups.getByRole('row').filter({ hasText: 'NOC Engineers' }).getByRole('cell').nth(1).textContent()).toBe('00g8k2nocx1Fq3Zt5d7');
    const figures = p.getByRole('list', { name: 'Provisioning' });
    expect(await figures.getByRole('listitem').allTextContents()).toEqual(['8managed members', '0deactivated', expect.stringMatching(/^(\d+ s ago|just now)last change$/)]);

    // Map Network Admins to editor and Auditors to viewer: the group name is suggested from what was pushed.
    expect(await p.locator('datalist option').evaluateAll((o) => o.map((x) => (x as unknown as { value: string }).value))).toEqual(expect.arrayContaining(['Network Admins', 'NOC Engineers', 'Auditors', 'Contractors']));
    await p.getByRole('button', { name: 'Add mapping' }).click();
    await p.getByLabel('Group 1').fill('Network Admins');
    await p.getByLabel('Role 1').selectOption('editor');
    await p.getByRole('button', { name: 'Add mapping' }).click();
    await p.getByLabel('Group 2').fill('Auditors');
    await p.getByLabel('Role 2').selectOption('viewer');
    await shot(p, 'scim-03-mapping');
    await p.getByRole('button', { name: 'Save mapping' }).click();
    await p.getByRole('status').filter({ hasText: 'Saved 2 mappings: the roles of provisioned members follow at once.' }).waitFor();
    await expect.poll(() => admins.getByRole('cell').nth(3).textContent(), POLL).toBe('editor');
    expect(await groups.getByRole('row').filter({ hasText: 'Auditors' }).getByRole('cell').nth(3).textContent()).toBe('viewer');

    // The same group twice (another case): the server's 400 lands on the row that repeats it; nothing changes.
    await p.getByRole('button', { name: 'Add mapping' }).click();
    await p.getByLabel('Group 3').fill('network admins');
    await p.getByLabel('Role 3').selectOption('admin');
    await p.getByRole('button', { name: 'Save mapping' }).click();
    await expect.poll(() => fieldError(p.getByLabel('Group 3')), POLL).toBeTruthy();
    expect(await fieldError(p.getByLabel('Group 1'))).toBeNull();
    await p.getByRole('alert').first().waitFor();
    await shot(p, 'scim-04-mapped-twice');
    await p.getByRole('button', { name: 'Discard changes' }).click();
    await expect.poll(() => p.getByLabel('Group 3').count(), POLL).toBe(0);
    await p.reload();
    await heading(p, 'SCIM provisioning');
    // As saved (the server orders the mapping by group; each name as the pushed group spells it).
    const rows = async () => Promise.all([1, 2].map(async (i) => [await p.getByLabel(`Group ${i}`).inputValue(), await p.getByLabel(`Role ${i}`).inputValue()]));
    expect(await rows()).toEqual([['Auditors', 'viewer'], ['Network Admins', 'editor']]);
    expect(await p.getByLabel('Group 3').count()).toBe(0);
    await shot(p, 'scim-05-mapped');

    // Settings → Members: alice, managed by the provider, an editor through her group.
    await nav(p, 'Members').click();
    await heading(p, 'Members');
    const aliceRow = p.getByRole('row').filter({ hasText: 'alice@example.com' });
    await aliceRow.waitFor();
    const badge = aliceRow.locator('.badge', { hasText: 'SCIM' });
    await badge.waitFor();
    expect(await badge.getAttribute('title')).toContain('identity provider');
    expect(await aliceRow.getByLabel('Role of alice@example.com').inputValue()).toBe('editor');
    expect(await aliceRow.getByText('Deactivated').count()).toBe(0);
    // The owner, added by hand, is not marked.
    expect(await p.getByRole('row').filter({ hasText: c.owner.email }).locator('.badge').count()).toBe(0);
    expect(await p.getByRole('row').filter({ hasText: 'gus.moreau@example.com' }).getByLabel('Role of gus.moreau@example.com').inputValue()).toBe('viewer');
    await shot(p, 'scim-06-members');

    // The provider deactivates alice (Okta's replace with a value object): Members says so, her row muted.
    const deactivated = await scim('PATCH', `/Users/${alice.id}`, { schemas: [PATCH], Operations: [{ op: 'replace', value: { active: false } }] });
    expect(deactivated.status, await deactivated.clone().text()).toBe(200);
    expect(((await deactivated.json()) as { active: boolean }).active).toBe(false);
    await p.reload();
    await heading(p, 'Members');
    await aliceRow.getByText('Deactivated').waitFor();
    expect(await aliceRow.getAttribute('class')).toContain('deactivated');
    // Muted: her row's text is not the colour of the owner's.
    const colour = (row: typeof aliceRow) => row.getByRole('cell').first().evaluate((e) => (globalThis as unknown as { getComputedStyle: (e: unknown) => { color: string } }).getComputedStyle(e).color);
    expect(await colour(aliceRow)).not.toBe(await colour(p.getByRole('row').filter({ hasText: c.owner.email })));
    await shot(p, 'scim-07-members-deactivated');

    // Back on Settings → SCIM: one deactivated.
    await nav(p, 'SCIM').click();
    await heading(p, 'SCIM provisioning');
    await expect.poll(() => figures.getByRole('listitem').nth(1).textContent(), POLL).toBe('1deactivated');

    // At a phone's width, and in the dark, with the directory in it (and readable).
    const problems: string[] = [];
    const phone = await ownerPage(c, { viewport: { width: 390, height: 844 } });
    await phone.goto('/settings/scim');
    await heading(phone, 'SCIM provisioning');
    await phone.getByRole('table', { name: 'SCIM groups' }).waitFor();
    await shot(phone, 'scim-08-phone');
    const dark = await ownerPage(c, { viewport: { width: 1440, height: 900 }, colorScheme: 'dark' });
    await dark.goto('/settings/scim');
    await dark.getByRole('table', { name: 'SCIM groups' }).waitFor();
    await shot(dark, 'scim-09-dark');
    problems.push(...(await readable(dark, 'scim dark')));
    await dark.goto('/settings/members');
    await dark.getByRole('row').filter({ hasText: 'alice@example.com' }).getByText('Deactivated').waitFor();
    await shot(dark, 'scim-10-members-dark');
    problems.push(...(await readable(dark, 'members dark')));
    problems.push(...(await readable(p, 'scim light')));
    expect(problems).toEqual([]);

    // Revoke the token: confirmed (the dialog opens on Cancel), then the provider's next request is 401.
    await tokenRow.getByRole('button', { name: 'Revoke Okta' }).click();
    const confirm = p.getByRole('dialog', { name: 'Revoke token “Okta”?' });
    await confirm.waitFor();
    await expect.poll(() => confirm.getByRole('button', { name: 'Cancel' }).evaluate((b) => b === (globalThis as unknown as { document: { activeElement: unknown } }).document.activeElement), POLL).toBe(true);
    await shot(p, 'scim-11-revoke');
    await confirm.getByRole('button', { name: 'Revoke token' }).click();
    await confirm.waitFor({ state: 'detached' });
    await p.getByRole('status').filter({ hasText: 'Revoked “Okta”' }).waitFor();
    await expect.poll(() => tokenRow.textContent(), POLL).toContain('revoked');
    const refused = await scim('GET', '/Users');
    expect(refused.status).toBe(401);
    const revoked = await sql<{ n: number }>`select count(*)::int as n from keys where kind = 'scim' and revoked_at is not null`.execute(db);
    expect(revoked.rows[0]!.n).toBe(1);
  }, 120_000);

  it('shows an admin the mapping read-only, with who may change it, and no refused call', async () => {
    const email = 'ada.admin@example.com';
    await createUser(c.server.database.db, { type: 'cli' }, { org: c.org.organisationId, email, role: 'admin', password: PASSWORD });
    await sql`update users set must_change_password = false where email = ${email}`.execute(c.server.database.db);
    const p = await c.page({ viewport: { width: 1440, height: 900 } });
    const refused: string[] = [];
    p.on('response', (r) => void (r.url().includes('/api/') && r.status() === 403 && refused.push(new URL(r.url()).pathname)));
    await signIn(p, email, PASSWORD);
    await heading(p, 'Overview');
    await nav(p, 'SCIM').click();
    await heading(p, 'SCIM provisioning');
    await p.getByText('Only an owner can change the mapping. You are admin.').waitFor();
    const mapping = p.getByRole('table', { name: 'Group-to-role mapping' });
    await mapping.waitFor();
    expect(await mapping.getByRole('row').filter({ hasText: 'Network Admins' }).textContent()).toContain('editor');
    expect(await p.getByRole('button', { name: 'Save mapping' }).count()).toBe(0);
    expect(await p.getByRole('button', { name: 'Add mapping' }).count()).toBe(0);
    expect(await p.getByRole('textbox', { name: /^Group / }).count()).toBe(0);
    // Tokens are an admin's to mint.
    await p.getByRole('button', { name: 'Mint token' }).waitFor();
    await shot(p, 'scim-12-admin');
    expect(refused).toEqual([]);
  });
});
