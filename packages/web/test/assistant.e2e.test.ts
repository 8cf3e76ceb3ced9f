import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ChatRequest, type FakeOpenAI, type Turn, startFakeOpenAI } from '../../server/test/fakes/openai.js';
import { addHost, addService } from '../../server/test/fixtures.js';
import { lowContrast, unnamedControls } from './a11y.js';
import { type Console, haveChromium, heading, ownerPage, ownerWithPassword, POLL, shot, startConsole } from './harness.js';

// The inventory assistant's panel (issue 27) against the real server, whose provider is a local
// fake of the chat-completions wire protocol scripted as a model acts: it asks for a tool, reads
// the tool's result (the hosts with their ids) and answers from it, in pieces. An owner asks which
// hosts run OpenSSH, reads the streamed answer, the tool it ran and the host it names, and follows
// the link; on a host page the panel offers that host as the question's context; a provider's 429
// is shown by its detail; without a provider the panel names the variables to set.

const MODEL = 'fake-model';

/** The hosts the tool result lists, as the model reads them. */
function toolHosts(r: ChatRequest): { id: string; hostname: string; addresses: string[] }[] {
  const result = r.messages.find((m) => m.role === 'tool');
  return result ? ((JSON.parse(result.content ?? '{}') as { rows?: { id: string; hostname: string; addresses: string[] }[] }).rows ?? []) : [];
}

/** A model that looks the host up, then answers naming it, a few words at a time. */
const lookingUp =
  (name: string) =>
  (r: ChatRequest): Turn => {
    const found = toolHosts(r);
    if (!r.messages.some((m) => m.role === 'tool')) return { tools: [{ name: 'search_hosts', arguments: { search: name } }], split: 4 };
    const h = found[0];
    if (!h) return { text: `No host named ${name} was found.` };
    return {
      text: `One host runs OpenSSH:\n- ${h.hostname} (${h.addresses[0]}): OpenSSH 8.9p1 on port 22, older than 9.3.\n\nUpgrade it to 9.3 or later.`,
      pieces: ['One host runs ', 'OpenSSH:\n- ', `${h.hostname} `, `(${h.addresses[0]}): `, 'OpenSSH 8.9p1 on port 22, ', 'older than 9.3.\n\n', 'Upgrade it to 9.3 or later.'],
    };
  };

const panel = (p: Page) => p.getByRole('complementary', { name: 'Assistant' });

async function openPanel(p: Page) {
  await p.getByRole('button', { name: 'Assistant', exact: true }).click();
  await panel(p).waitFor();
}

async function ask(p: Page, question: string) {
  const box = panel(p).getByLabel('Question', { exact: true });
  await box.fill(question);
  await panel(p).getByRole('button', { name: 'Ask', exact: true }).click();
}

describe.skipIf(!haveChromium)('the assistant in Chromium', () => {
  let c: Console;
  let fake: FakeOpenAI;
  let script: (r: ChatRequest, n: number) => Turn = () => ({ text: 'nothing scripted' });
  const ids: Record<string, string> = {};

  beforeAll(async () => {
    fake = await startFakeOpenAI((r, n) => script(r, n));
    c = await startConsole({ SERVICE_AI_BASE_URL: fake.baseUrl, SERVICE_AI_API_KEY: fake.apiKey, SERVICE_AI_MODEL: MODEL });
    await ownerWithPassword(c);
    const db = c.server.database.db;
    const o = c.org.organisationId;
    ids.gw = await addHost(db, o, { hostname: 'edge-gw-01', addresses: ['10.20.0.1'], os: 'Debian 12' });
    await addService(db, o, ids.gw, { port: 22, name: 'ssh', product: 'OpenSSH', version: '8.9p1' });
    ids.web = await addHost(db, o, { hostname: 'web-01', addresses: ['10.20.0.10'] });
    await addService(db, o, ids.web, { port: 443, name: 'https', product: 'nginx', version: '1.24.0' });
  });
  afterAll(async () => {
    await c?.close();
    await fake?.close();
  });

  it('answers "which hosts run OpenSSH?" from a tool round: streamed text, the tool listed, the host linked to its page', async () => {
    script = lookingUp('edge-gw-01');
    const before = fake.requests.length;
    const p = await ownerPage(c, { viewport: { width: 1440, height: 900 } });
    await p.goto('/hosts');
    await heading(p, 'Hosts');
    await openPanel(p);
    // Focus is in the question box, ready to type.
    expect(await p.evaluate(() => (globalThis as unknown as { document: { activeElement: { getAttribute(n: string): string | null } } }).document.activeElement.getAttribute('placeholder'))).toBe('Ask about hosts, services, findings…');
    await panel(p).getByText('Answers come from fake-model').waitFor();
    await shot(p, 'assistant-01-open', { fullPage: false });

    await ask(p, 'which hosts run OpenSSH?');
    const answer = panel(p).locator('.answer-text');
    await expect.poll(() => answer.textContent(), POLL).toBe('One host runs OpenSSH:edge-gw-01 (10.20.0.1): OpenSSH 8.9p1 on port 22, older than 9.3.Upgrade it to 9.3 or later.');
    expect(await answer.locator('li').allTextContents()).toEqual(['edge-gw-01 (10.20.0.1): OpenSSH 8.9p1 on port 22, older than 9.3.']);
    await panel(p).getByRole('status').filter({ hasText: 'Answer complete.' }).waitFor({ state: 'attached' });

    // The provider saw the question, then the tool's result listing the host with its id.
    const mine = fake.requests.slice(before);
    expect(mine).toHaveLength(2);
    expect(mine[0]!.model).toBe(MODEL);
    expect(mine[0]!.messages.at(-1)).toMatchObject({ role: 'user', content: 'which hosts run OpenSSH?' });
    expect(toolHosts(mine[1]!).map((h) => h.id)).toEqual([ids.gw]);

    // The tool, folded under the answer.
    const tools = panel(p).locator('details.assistant-tools');
    expect(await tools.locator('summary').textContent()).toBe('Tools used (1)');
    await tools.locator('summary').click();
    expect(await tools.locator('li').textContent()).toBe('search_hosts search: "edge-gw-01"1 row: hosts matching "edge-gw-01": 1 found');
    expect(await panel(p).locator('.assistant-foot .hint').textContent()).toMatch(/^[\d,]+ tokens$/);
    await shot(p, 'assistant-02-answer', { fullPage: false });

    // The record it used opens the host's page; the conversation stays in the panel.
    const link = panel(p).getByRole('link', { name: 'edge-gw-01' });
    expect(await link.getAttribute('href')).toBe(`/hosts/${ids.gw}`);
    await link.click();
    await heading(p, 'edge-gw-01');
    expect(new URL(p.url()).pathname).toBe(`/hosts/${ids.gw}`);
    expect(await answer.textContent()).toContain('edge-gw-01 (10.20.0.1)');
    await shot(p, 'assistant-03-followed', { fullPage: false });

    // Closing with Escape gives focus back to the header's button; opening again shows the same conversation.
    await panel(p).getByLabel('Question', { exact: true }).focus();
    await p.keyboard.press('Escape');
    await panel(p).waitFor({ state: 'hidden' });
    expect(await p.evaluate(() => (globalThis as unknown as { document: { activeElement: { textContent: string } } }).document.activeElement.textContent)).toBe('Assistant');
    await openPanel(p);
    expect(await answer.count()).toBe(1);

    // New conversation clears it.
    await panel(p).getByRole('button', { name: 'New conversation' }).click();
    expect(await answer.count()).toBe(0);
    await panel(p).getByText('Which hosts run OpenSSH older than 9.3?').waitFor();
  });

  it('offers the host on its page as the starting point, and sends it as the context', async () => {
    script = (r) => (r.messages.some((m) => m.role === 'tool') ? { text: 'edge-gw-01 runs OpenSSH 8.9p1 on port 22; no findings are open.' } : { tools: [{ name: 'host_detail', arguments: { hostId: ids.gw } }] });
    const before = fake.requests.length;
    const p = await ownerPage(c, { viewport: { width: 1440, height: 900 } });
    await p.goto(`/hosts/${ids.gw}`);
    await heading(p, 'edge-gw-01');
    await openPanel(p);
    await panel(p).getByRole('button', { name: 'Ask about edge-gw-01' }).click();
    expect(await panel(p).getByLabel('Question', { exact: true }).inputValue()).toBe('What do we know about edge-gw-01: its services, open findings and certificates?');
    expect(await panel(p).locator('.assistant-context').textContent()).toContain('About host edge-gw-01');
    await shot(p, 'assistant-04-context', { fullPage: false });
    await panel(p).getByRole('button', { name: 'Ask', exact: true }).click();
    await panel(p).getByText('edge-gw-01 runs OpenSSH 8.9p1 on port 22; no findings are open.').waitFor();
    // The server told the model what the user is looking at.
    const system = fake.requests[before]!.messages.find((m) => m.role === 'system')?.content ?? '';
    expect(system).toContain(`The user is looking at host ${ids.gw} (edge-gw-01)`);
    expect(await panel(p).locator('.assistant-about').textContent()).toBe('About host edge-gw-01');
    // Another page offers its own record; the attached one stays until removed.
    await p.goto('/vulnerabilities?search=CVE-2024-6387');
    await heading(p, 'Vulnerabilities');
    await openPanel(p);
    await panel(p).getByRole('button', { name: 'Ask about CVE-2024-6387' }).waitFor();
  });

  it("shows the provider's 429 by its detail, and answers when asked again", async () => {
    let limited = true;
    script = () => (limited ? { status: 429, headers: { 'retry-after': '7' }, body: { error: { message: 'Rate limit reached for requests', type: 'requests', code: 'rate_limit_exceeded' } } } : { text: 'Two hosts: edge-gw-01 and web-01.' });
    const p = await ownerPage(c, { viewport: { width: 1440, height: 900 } });
    await openPanel(p);
    await ask(p, 'how many hosts are there?');
    const alert = panel(p).getByRole('alert');
    await alert.waitFor();
    expect(await alert.textContent()).toBe("The assistant's provider is rate limiting requests; retry in 7 s.");
    await shot(p, 'assistant-05-rate-limited', { fullPage: false });
    limited = false;
    await panel(p).getByRole('button', { name: 'Ask again' }).click();
    await panel(p).getByText('Two hosts: edge-gw-01 and web-01.').waitFor();
    expect(await alert.count()).toBe(0);
  });

  it('stops a question the provider is slow with', async () => {
    script = () => ({ hang: true });
    const p = await ownerPage(c, { viewport: { width: 1440, height: 900 } });
    await openPanel(p);
    await ask(p, 'which daemons went quiet this week?');
    await panel(p).getByText('Thinking…').waitFor();
    await panel(p).getByRole('button', { name: 'Stop' }).click();
    await panel(p).getByText('Stopped before an answer.').waitFor();
    await panel(p).getByRole('button', { name: 'Ask', exact: true }).waitFor();
  });

  it('reads well at phone width and in dark, with every control named', async () => {
    script = lookingUp('edge-gw-01');
    const p = await ownerPage(c, { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true, colorScheme: 'dark' });
    await openPanel(p);
    await ask(p, 'which hosts run OpenSSH?');
    await panel(p).getByRole('link', { name: 'edge-gw-01' }).waitFor();
    await panel(p).locator('details.assistant-tools summary').click();
    await shot(p, 'assistant-06-phone-dark', { fullPage: false });
    expect(await lowContrast(p)).toEqual([]);
    expect(await unnamedControls(p)).toEqual([]);
    // The panel covers the page at this width: following a link closes it, and the page shows.
    await panel(p).getByRole('link', { name: 'edge-gw-01' }).click();
    await heading(p, 'edge-gw-01');
    await panel(p).waitFor({ state: 'hidden' });
    await shot(p, 'assistant-07-phone-followed', { fullPage: false });
  });
});

describe.skipIf(!haveChromium)('the assistant without a provider', () => {
  let c: Console;
  beforeAll(async () => {
    c = await startConsole();
    await ownerWithPassword(c);
  });
  afterAll(() => c?.close());

  it('explains the three variables to set instead of offering a question box', async () => {
    const p = await ownerPage(c, { viewport: { width: 1440, height: 900 } });
    await openPanel(p);
    await panel(p).getByText('The assistant is not set up on this server.').waitFor();
    expect(await panel(p).locator('code').allTextContents()).toEqual(['SERVICE_AI_BASE_URL', 'SERVICE_AI_API_KEY', 'SERVICE_AI_MODEL']);
    expect(await panel(p).getByLabel('Question', { exact: true }).count()).toBe(0);
    expect(await lowContrast(p)).toEqual([]);
    await shot(p, 'assistant-08-not-configured', { fullPage: false });
  });
});
