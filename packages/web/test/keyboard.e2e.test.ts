import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { unnamedControls } from './a11y.js';
import { type Console, haveChromium, heading, ownerWithPassword, POLL, shot, startConsole } from './harness.js';

// The console with the keyboard only: sign in, the skip link, the Tab order of the frame, moving
// between pages, a key minted (its reveal-once panel takes focus, Escape closes it) and revoked
// through its confirmation dialog (focus moves in, Tab stays inside, Escape cancels and focus goes
// back to the Revoke button). No mouse event is sent; where focus is comes from document.activeElement.

interface Focused {
  tag: string;
  /** What a user hears: aria-label, else the text, else the label's text, else the id. */
  name: string;
  inDialog: boolean;
  /** Whether a focus ring is drawn (outline not none and not 0 wide). */
  ring: boolean;
}

// biome-ignore lint: in-page global (the test program is typed without the DOM library)
declare const document: any;
// biome-ignore lint: in-page global
declare const getComputedStyle: (e: unknown) => any;

const focused = (p: Page): Promise<Focused> =>
  p.evaluate(() => {
    const el = document.activeElement;
    const label = el?.labels?.[0]?.textContent ?? '';
    const style = getComputedStyle(el);
    return {
      tag: String(el?.tagName ?? '').toLowerCase(),
      name: (el?.getAttribute('aria-label') || el?.textContent?.trim() || label.trim() || el?.id || '').replace(/\s+/g, ' '),
      inDialog: Boolean(el?.closest('dialog[open]')),
      ring: style.outlineStyle !== 'none' && Number.parseFloat(style.outlineWidth) > 0,
    };
  });

/** Presses Tab (Shift+Tab with `back`) until the focused element is `name`; fails after `max` presses. Returns the stops passed. */
async function tabTo(p: Page, name: string | RegExp, { max = 60, back = false } = {}): Promise<Focused[]> {
  const passed: Focused[] = [];
  for (let i = 0; i < max; i++) {
    await p.keyboard.press(back ? 'Shift+Tab' : 'Tab');
    const f = await focused(p);
    passed.push(f);
    if (typeof name === 'string' ? f.name === name : name.test(f.name)) return passed;
  }
  throw new Error(`"${name}" not reached with ${max} Tab presses; passed ${passed.map((f) => f.name).join(' → ')}`);
}

describe.skipIf(!haveChromium)('the console with the keyboard only', () => {
  let c: Console;

  beforeAll(async () => {
    c = await startConsole();
    await ownerWithPassword(c);
  });
  afterAll(() => c?.close());

  it('signs in, skips to the content, moves between pages, and opens and closes a panel and a dialog', async () => {
    const p = await c.page();
    await p.goto('/');
    await heading(p, 'Sign in');
    // The email field has focus on arrival.
    expect((await focused(p)).name).toBe('Email');
    await p.keyboard.type(c.owner.email);
    await p.keyboard.press('Tab');
    expect((await focused(p)).name).toBe('Password');
    await p.keyboard.type(c.owner.password);
    await p.keyboard.press('Enter');
    await heading(p, 'Overview');

    // From the top: the skip link (shown once focused), the search box, the assistant, the account, then the navigation in reading order, each with a ring.
    await tabTo(p, 'Skip to content', { max: 1 });
    const skip = await p.getByRole('link', { name: 'Skip to content' }).boundingBox();
    expect(skip && skip.x >= 0 && skip.y >= 0).toBe(true);
    await shot(p, 'keyboard-01-skip-link');
    const order = await tabTo(p, 'Networks', { max: 10 });
    expect(['Skip to content', ...order.map((f) => f.name)]).toEqual(['Skip to content', 'Find a host, service, CVE or network', 'Assistant', 'Sign out', 'Overview', 'Hosts', 'Networks']);
    expect(order.every((f) => f.ring)).toBe(true);
    await p.keyboard.press('Enter');
    await heading(p, 'Networks');
    // Focus moves to the new page's content, not left on the link.
    await expect.poll(() => p.evaluate(() => document.activeElement?.id), POLL).toBe('main');

    // The skip link moves focus to the main region: the next Tab is in the page, past the navigation.
    await p.reload();
    await heading(p, 'Networks');
    await tabTo(p, 'Skip to content', { max: 1 });
    expect((await focused(p)).ring).toBe(true);
    await p.keyboard.press('Enter');
    await expect.poll(() => p.evaluate(() => document.activeElement?.id), POLL).toBe('main');
    await p.keyboard.press('Tab');
    expect(await p.evaluate(() => Boolean(document.activeElement?.closest('main')))).toBe(true);
    await shot(p, 'keyboard-02-networks');

    // Settings → API keys, all by Tab.
    await tabTo(p, 'API keys', { back: true });
    await p.keyboard.press('Enter');
    await heading(p, 'API keys');
    await expect.poll(() => p.evaluate(() => document.activeElement?.id), POLL).toBe('main');
    expect(await unnamedControls(p)).toEqual([]);

    // Mint a key: type its name, Enter submits; the reveal-once panel takes focus.
    await tabTo(p, 'Name');
    await p.keyboard.type('keyboard-only');
    await p.keyboard.press('Enter');
    const panel = p.getByRole('region', { name: 'Key “keyboard-only” minted' });
    await panel.waitFor();
    await expect.poll(() => panel.evaluate((el) => el === (el as unknown as { ownerDocument: { activeElement: unknown } }).ownerDocument.activeElement), POLL).toBe(true);
    // Tab reaches the token, then Copy and Done.
    await p.keyboard.press('Tab');
    expect((await focused(p)).name).toBe('Token');
    await shot(p, 'keyboard-03-key-minted');
    // Escape closes the panel; focus is not lost to the page's body.
    await p.keyboard.press('Escape');
    await panel.waitFor({ state: 'detached' });
    expect(await p.evaluate(() => document.activeElement !== document.body)).toBe(true);

    // Revoke it: the dialog takes focus, Tab goes round inside it, Escape cancels, focus returns.
    const revoke = 'Revoke keyboard-only';
    await tabTo(p, revoke);
    await p.keyboard.press('Enter');
    const dialog = p.getByRole('dialog', { name: 'Revoke key “keyboard-only”?' });
    await dialog.waitFor();
    await expect.poll(async () => (await focused(p)).inDialog, POLL).toBe(true);
    // A destructive dialog starts on Cancel: Enter pressed by habit revokes nothing.
    expect((await focused(p)).name).toBe('Cancel');
    const inside: Focused[] = [];
    for (let i = 0; i < 5; i++) {
      await p.keyboard.press('Tab');
      inside.push(await focused(p));
    }
    expect(inside.every((f) => f.inDialog && f.ring)).toBe(true);
    expect(new Set(inside.map((f) => f.name))).toEqual(new Set(['Revoke key', 'Cancel']));
    await p.keyboard.press('Shift+Tab');
    expect((await focused(p)).inDialog).toBe(true);
    await shot(p, 'keyboard-04-revoke-dialog');
    await p.keyboard.press('Escape');
    await dialog.waitFor({ state: 'detached' });
    await expect.poll(async () => (await focused(p)).name, POLL).toBe(revoke);

    // Again, confirming with Enter on Revoke key: the key is revoked; focus goes to the main region (its button is gone).
    await p.keyboard.press('Enter');
    await dialog.waitFor();
    await expect.poll(async () => (await focused(p)).inDialog, POLL).toBe(true);
    await tabTo(p, 'Revoke key', { max: 3 });
    await p.keyboard.press('Enter');
    await dialog.waitFor({ state: 'detached' });
    await p.getByRole('row').filter({ hasText: 'keyboard-only' }).getByText(/revoked/).waitFor();
    await expect.poll(() => p.evaluate(() => document.activeElement?.id), POLL).toBe('main');
    expect(await p.getByRole('button', { name: revoke }).count()).toBe(0);
  });
});
