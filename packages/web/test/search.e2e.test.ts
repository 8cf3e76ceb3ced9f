import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Console, haveChromium, heading, nav, ownerPage, ownerWithPassword, POLL, shot, startConsole } from './harness.js';

// Issue 23 at an operator's scale: "where does Apache 2.4.49 run?" answered from the services
// filters with a count, and the header's search box (`/`, arrows, Enter) over a few hundred hosts.

// biome-ignore lint: in-page global (the test program is typed without the DOM library)
declare const document: any;

const HOSTS = 300;
const HTTPD_49 = 'cpe:2.3:a:apache:http_server:2.4.49:*:*:*:*:*:*:*';
/** Hosts 7, 14, … run Apache 2.4.49 on port 80: 42 of 300. */
const APACHE_49 = Math.floor(HOSTS / 7);
/** Hosts 5, 10, … but not those of 2.4.49 run Apache 2.4.54; two of them are gone. */
const APACHE_54 = Math.floor(HOSTS / 5) - Math.floor(HOSTS / 35);
const TOMCAT = Math.floor(HOSTS / 25);
const PRESENT = HOSTS + HOSTS / 2 + APACHE_49 + APACHE_54 + TOMCAT - 2;

describe.skipIf(!haveChromium)('services filters and the search box in Chromium', () => {
  let c: Console;

  beforeAll(async () => {
    c = await startConsole();
    await ownerWithPassword(c);
    const db = c.server.database.db;
    const o = c.org.organisationId;
    const hosts = await sql<{ id: string; n: number }>`
      insert into hosts (organisation_id, fingerprint, hostname, os)
      select ${o}, 'fp-' || g, 'srv-' || lpad(g::text, 3, '0'), case when g % 3 = 0 then 'Debian 12' else 'Ubuntu 22.04' end from generate_series(1, ${HOSTS}) g
      returning id, substr(hostname, 5)::int as n`.execute(db);
    const byN = new Map(hosts.rows.map((h) => [h.n, h.id]));
    const addr = (n: number) => `10.40.${Math.floor(n / 250)}.${(n % 250) + 1}`;
    await sql`insert into host_addresses (organisation_id, host_id, address) select ${o}, h, a::inet from unnest(${[...byN.values()]}::uuid[], ${[...byN.keys()].map(addr)}::text[]) as t(h, a)`.execute(db);
    const services: [number, number, string, string, string | null][] = [];
    for (let n = 1; n <= HOSTS; n++) {
      services.push([n, 22, 'OpenSSH', n % 4 === 0 ? '9.2p1' : '8.9p1', null]);
      if (n % 2 === 0) services.push([n, 443, 'nginx', '1.25.3', 'cpe:2.3:a:f5:nginx:1.25.3:*:*:*:*:*:*:*']);
      if (n % 7 === 0) services.push([n, 80, 'Apache httpd', '2.4.49', HTTPD_49]);
      else if (n % 5 === 0) services.push([n, 80, 'Apache httpd', '2.4.54', 'cpe:2.3:a:apache:http_server:2.4.54:*:*:*:*:*:*:*']);
      if (n % 25 === 0) services.push([n, 8080, 'Apache Tomcat', '9.0.40', 'cpe:2.3:a:apache:tomcat:9.0.40:*:*:*:*:*:*:*']);
    }
    await sql`insert into services (organisation_id, host_id, protocol, port, product, version, cpe, address)
      select ${o}, h, 'tcp', p, pr, v, cp, a::inet from unnest(${services.map((s) => byN.get(s[0]))}::uuid[], ${services.map((s) => s[1])}::int[], ${services.map((s) => s[2])}::text[],
        ${services.map((s) => s[3])}::text[], ${services.map((s) => s[4])}::text[], ${services.map((s) => addr(s[0]))}::text[]) as t(h, p, pr, v, cp, a)`.execute(db);
    // Two Apache 2.4.49 services a completed scan no longer found: hidden unless asked for.
    await sql`update services set gone_at = now() - interval '2 days' where organisation_id = ${o} and port = 80 and version = '2.4.54' and host_id in (${byN.get(5)!}, ${byN.get(10)!})`.execute(db);
    await sql`insert into vulnerabilities (organisation_id, service_id, host_id, cve_id, severity, score, summary)
      select organisation_id, id, host_id, c, 'critical', 9.8, 'Path traversal and file disclosure in Apache HTTP Server 2.4.49'
      from services, unnest(array['CVE-2021-41773', 'CVE-2021-42013']) c where organisation_id = ${o} and version = '2.4.49'`.execute(db);
    await sql`insert into networks (organisation_id, name, cidr) values (${o}, 'Office LAN', '10.40.0.0/24'), (${o}, 'Office servers', '10.40.1.0/24'), (${o}, 'Guest wifi', '192.168.50.0/24')`.execute(db);
  });
  afterAll(() => c?.close());

  it('an operator finds where Apache 2.4.49 runs from the services filters, with the count, and shares the link', async () => {
    const p = await ownerPage(c);
    await p.setViewportSize({ width: 1440, height: 900 });
    await nav(p, 'Services').click();
    await heading(p, 'Services');
    const total = p.getByRole('status').filter({ hasText: 'services' });
    await total.filter({ hasText: `${PRESENT} services` }).waitFor(); // gone ones hidden
    await p.getByLabel('Product').fill('apache');
    await total.filter({ hasText: `${APACHE_49 + APACHE_54 + TOMCAT - 2} services match these filters` }).waitFor();
    // Second click: the version of a row narrows to that product and version.
    const row = p.getByRole('row').filter({ hasText: 'srv-007' });
    await row.getByRole('link', { name: '2.4.49' }).click();
    await total.filter({ hasText: `${APACHE_49} services match these filters` }).waitFor();
    await expect.poll(() => new URL(p.url()).search, POLL).toBe('?product=Apache+httpd&version=2.4.49');
    expect(await p.getByLabel('Product').inputValue()).toBe('Apache httpd');
    expect(await p.getByLabel('Version').inputValue()).toBe('2.4.49');
    // Host, Address, Port, State, Internet, Name, Product, Version.
    // The count may answer before the page of rows: wait for the rows themselves.
    const cells = p.getByRole('table', { name: 'Services' }).locator('tbody tr td:nth-child(8)');
    await expect.poll(() => cells.count(), POLL).toBe(APACHE_49);
    const versions = await cells.allTextContents();
    expect(new Set(versions)).toEqual(new Set(['2.4.49']));
    await shot(p, 'search-01-services-apache-2.4.49');

    // A refused filter says why before anything is sent, and the list stays as it was.
    await p.getByLabel('CPE').fill('apache');
    await p.getByText('expected a CPE 2.3 string or its start').waitFor();
    await p.getByLabel('CPE').fill('cpe:2.3:a:apache:http_server');
    await expect.poll(() => new URL(p.url()).searchParams.get('cpe'), POLL).toBe('cpe:2.3:a:apache:http_server');
    await total.filter({ hasText: `${APACHE_49} services` }).waitFor();

    // The link is shareable: a fresh page opens on the same answer; each row leads to its host.
    const shared = p.url();
    const q = await ownerPage(c);
    await q.setViewportSize({ width: 390, height: 844 });
    await q.goto(shared);
    await q.getByRole('status').filter({ hasText: `${APACHE_49} services match these filters` }).waitFor();
    await shot(q, 'search-02-services-390');
    await q.getByRole('row').filter({ hasText: 'srv-014' }).getByRole('link', { name: 'srv-014' }).click();
    await heading(q, 'srv-014');

    // Gone services only behind the filter.
    await p.goto('/services?port=80&version=2.4.54');
    await total.filter({ hasText: `${APACHE_54 - 2} services match these filters` }).waitFor();
    await p.getByLabel('Gone services').selectOption('only');
    await total.filter({ hasText: '2 services match these filters' }).waitFor();
    expect(await p.getByRole('table', { name: 'Services' }).getByText('gone', { exact: true }).count()).toBe(2);
  }, 120_000);

  it('an operator presses / and finds a CVE, a host and a network with the arrows and Enter', async () => {
    const p = await ownerPage(c);
    await p.setViewportSize({ width: 1440, height: 900 });
    const box = p.getByRole('combobox', { name: 'Find a host, service, CVE or network' });
    const results = p.getByRole('listbox', { name: 'Found' });

    await p.keyboard.press('/');
    await expect.poll(() => box.evaluate((el) => el === document.activeElement), POLL).toBe(true);
    await p.keyboard.type('cve-2021-4');
    await results.getByRole('option', { name: /CVE-2021-41773/ }).waitFor();
    expect(await results.getByRole('group', { name: 'CVEs' }).getByRole('option').allTextContents()).toEqual([
      `CVE-2021-41773critical · ${APACHE_49} findings on ${APACHE_49} hosts`,
      `CVE-2021-42013critical · ${APACHE_49} findings on ${APACHE_49} hosts`,
      'See all 2 CVEs',
    ]);
    await shot(p, 'search-03-box-cve');
    await p.keyboard.press('ArrowDown');
    expect(await results.getByRole('option', { selected: true }).textContent()).toContain('CVE-2021-41773');
    await p.keyboard.press('Enter');
    await heading(p, 'Vulnerabilities');
    await expect.poll(() => new URL(p.url()).searchParams.get('search'), POLL).toBe('CVE-2021-41773');
    await p.getByRole('table', { name: 'Vulnerabilities' }).getByRole('row').filter({ hasText: 'srv-007' }).waitFor();

    // A host by name: arrows wrap through the groups; Escape closes, Enter opens.
    await p.keyboard.press('/');
    await p.keyboard.type('srv-21');
    const hostOption = results.getByRole('group', { name: 'Hosts' }).getByRole('option', { name: /^srv-210/ });
    await hostOption.waitFor();
    expect(await results.getByRole('group', { name: 'Hosts' }).getByRole('option').last().textContent()).toBe('See all 10 hosts');
    await p.keyboard.press('ArrowDown');
    await p.keyboard.press('ArrowDown');
    expect(await results.getByRole('option', { selected: true }).textContent()).toMatch(/^srv-211/);
    await p.keyboard.press('ArrowUp');
    await p.keyboard.press('Escape');
    await results.waitFor({ state: 'hidden' });
    await p.keyboard.press('ArrowDown');
    await results.waitFor();
    await p.keyboard.press('ArrowUp');
    expect(await results.getByRole('option', { selected: true }).textContent()).toMatch(/^srv-210/);
    await p.keyboard.press('Enter');
    await heading(p, 'srv-210');

    // "product version" in the box: "see all" opens the services list with both filters and the count.
    await p.keyboard.press('/');
    await p.keyboard.type('apache 2.4.49');
    const seeAll = results.getByRole('option', { name: `See all ${APACHE_49} services` });
    await seeAll.waitFor();
    await seeAll.click();
    await heading(p, 'Services');
    await p.getByRole('status').filter({ hasText: `${APACHE_49} services match these filters` }).waitFor();

    // `/` typed into a field stays in that field.
    await p.getByLabel('Product').fill('');
    await p.getByLabel('Product').type('a/b');
    expect(await p.getByLabel('Product').inputValue()).toBe('a/b');
    expect(await box.evaluate((el) => el === document.activeElement)).toBe(false);

    // A network by name.
    // Out of the field, staying on the page: at the heading's start, so the pointer is not left
    // where the results open (hovering an option makes it the active one).
    await p.getByRole('heading', { level: 1, name: 'Services' }).click({ position: { x: 5, y: 5 } });
    await p.keyboard.press('/');
    await p.keyboard.type('office');
    await results.getByRole('group', { name: 'Networks' }).getByRole('option', { name: /Office servers/ }).waitFor();
    await shot(p, 'search-04-box-network');
    await p.keyboard.press('ArrowDown');
    await p.keyboard.press('ArrowDown');
    expect(await results.getByRole('option', { selected: true }).textContent()).toContain('Office servers');
    await p.keyboard.press('Enter');
    await expect.poll(() => new URL(p.url()).pathname, POLL).toMatch(/^\/networks\/[0-9a-f-]{36}$/);
  });

  it('the header keeps the search box on a 390 px phone, and its results fit the screen', async () => {
    const p = await ownerPage(c, { viewport: { width: 390, height: 844 } });
    const box = p.getByRole('combobox', { name: 'Find a host, service, CVE or network' });
    await box.click();
    await p.keyboard.type('10.40.0');
    const results = p.getByRole('listbox', { name: 'Found' });
    await results.getByRole('group', { name: 'Networks' }).waitFor();
    const r = (await results.boundingBox())!;
    expect(r.x).toBeGreaterThanOrEqual(0);
    expect(r.x + r.width).toBeLessThanOrEqual(390);
    const header = (await p.locator('header').boundingBox())!;
    expect(header.width).toBeLessThanOrEqual(390);
    expect(await p.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    await shot(p, 'search-05-box-390');
  });
});
