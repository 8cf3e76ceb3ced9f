import { randomBytes, randomUUID } from 'node:crypto';
import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as admin from '../../server/src/admin/admin.service.js';
import { daemonKey, heartbeat, register } from '../../server/test/daemon-client.js';
import { type Scanning, createNetwork, ingest, onlineDaemon, startSession } from '../../server/test/scanning.js';
import { type Console, POLL, fieldError, haveChromium, heading, nav, ownerPage, ownerWithPassword, PASSWORD, shot, signIn, startConsole } from './harness.js';

// The console's inventory and operations screens end to end: services and certificates of a host
// a daemon reported, the daemons (online and registered-only), snapshots taken from the console,
// and notification destinations (a webhook tested against a local HTTP server, its delivery listed).

const DAY = 86_400_000;
const hex64 = () => randomBytes(32).toString('hex');

describe.skipIf(!haveChromium)('the console screens: services, certificates, daemons, snapshots, notifications', () => {
  let c: Console;
  const t = () => c.t;
  const viewer = 'viewer@screens.test';

  beforeAll(async () => {
    c = await startConsole();
    await ownerWithPassword(c);
    await admin.createUser(c.server.database.db, { type: 'cli' }, { org: c.org.organisationId, email: viewer, role: 'viewer', password: PASSWORD });
  });
  afterAll(() => c?.close());


  it('lists the services and certificates of a host a daemon reported, an expired certificate with negative days left', async () => {
    const { server, org } = c;
    const api = (await admin.createApiKey(server.database.db, { type: 'cli' }, { org: org.organisationId, userEmail: c.owner.email, scopes: ['inventory:read', 'inventory:write', 'scan:run'] })).token;
    const daemon = await onlineDaemon(t(), org, { name: 'edge-online', networkCidrs: ['10.30.0.0/24'] });
    const scanning: Scanning = { org, api, daemon, siteId: null };
    const sessionId = await startSession(t(), scanning, await createNetwork(t(), scanning, '10.30.0.0/24'));
    await ingest(t(), daemon, {
      sessionId,
      hosts: [{ fingerprint: 'fp-tls-01', hostname: 'tls-01', os: 'Debian 12' }],
      ips: [{ hostFingerprint: 'fp-tls-01', address: '10.30.0.5' }],
      services: [
        { fingerprint: 'fp-tls-01', address: '10.30.0.5', protocol: 'tcp', port: 443, name: 'https', product: 'nginx', version: '1.24.0', cpe: 'cpe:2.3:a:f5:nginx:1.24.0:*:*:*:*:*:*:*' },
        { fingerprint: 'fp-tls-01', address: '10.30.0.5', protocol: 'tcp', port: 8443, name: 'https-alt', product: 'Jetty', version: '9.4.0' },
      ],
      tls: [
        {
          fingerprint: 'fp-tls-01', address: '10.30.0.5', port: 443, subject: 'CN=tls-01.example.net', issuer: 'CN=Example Issuing CA',
          notBefore: new Date(Date.now() - 10 * DAY).toISOString(), notAfter: new Date(Date.now() + 90 * DAY + 3_600_000).toISOString(), sha256: hex64(),
        },
        { fingerprint: 'fp-tls-01', address: '10.30.0.5', port: 8443, subject: 'CN=old.example.net', issuer: 'CN=Old CA', notBefore: '2020-01-01T00:00:00Z', notAfter: '2021-01-01T00:00:00Z', sha256: hex64() },
      ],
    });

    const p = await ownerPage(c);
    await nav(p, 'Services').click();
    await heading(p, 'Services');
    const nginx = p.getByRole('row').filter({ hasText: 'nginx' });
    await nginx.waitFor();
    // The host's name comes from the hosts list, which may answer after the services.
    await nginx.getByRole('link', { name: 'tls-01' }).waitFor();
    expect(await nginx.getByRole('cell', { name: '443/tcp', exact: true }).count()).toBe(1);
    expect(await p.getByRole('row').filter({ hasText: 'Jetty' }).count()).toBe(1);
    await shot(p, 'screens-services');

    await nav(p, 'Certificates').click();
    await heading(p, 'Certificates');
    const expired = p.getByRole('row').filter({ hasText: 'CN=old.example.net' });
    await expired.waitFor();
    const days = Number(await expired.locator('td').nth(5).textContent());
    expect(days).toBeLessThan(-1000);
    expect(await expired.locator('.days-expired').count()).toBe(1);
    const valid = p.getByRole('row').filter({ hasText: 'CN=tls-01.example.net' });
    expect(await valid.locator('td').nth(5).textContent()).toBe('90');
    expect(await valid.getByText('Trusted').count() + (await valid.getByText('Untrusted').count())).toBeGreaterThan(0);
    await shot(p, 'screens-certificates');
    // The filter asks the API for the expired ones only.
    await p.getByLabel('Trust status').selectOption('expired');
    // The filtered list replaces the table (a moment of "Loading…" between): only the expired one is back.
    await expect.poll(async () => [await p.getByRole('row').filter({ hasText: 'CN=tls-01.example.net' }).count(), await expired.count()]).toEqual([0, 1]);
    expect(p.url()).toMatch(/trustStatus=expired/);
  });

  it('lists an online, a registered-only and a degraded daemon with its reason, the quietest first, and the overview links there', async () => {
    // Registered after the online daemon's heartbeat: quiet for less time, so listed second.
    await register(c.server.app, await daemonKey(t(), c.org), { name: 'edge-pending', capabilities: { nmap: false, netflow: false, ebpf: true }, networkCidrs: ['192.168.50.0/24'] });
    // Heartbeats last: the least quiet, listed third, with why it is degraded (issue #16).
    const degradedKey = await daemonKey(t(), c.org);
    const reason = 'flow collector: cannot bind 0.0.0.0:2055 (address in use)';
    await heartbeat(c.server.app, degradedKey, await register(c.server.app, degradedKey, { name: 'edge-degraded' }), 'degraded', reason);
    const p = await ownerPage(c);
    // The "Online" figure (the quietest online daemons are links too, named after the daemon).
    await p.getByRole('link', { name: /^\d+\s*online$/i }).click();
    await heading(p, 'Daemons');
    await p.getByRole('cell', { name: 'edge-pending' }).waitFor();
    await p.getByRole('cell', { name: 'edge-degraded' }).waitFor();
    const rows = p.getByRole('row');
    expect(await rows.nth(1).textContent()).toContain('edge-online');
    expect(await rows.nth(2).textContent()).toContain('edge-pending');
    expect(await rows.nth(1).textContent()).toContain('online');
    expect(await rows.nth(2).textContent()).toContain('pending');
    expect(await rows.nth(2).textContent()).toContain('192.168.50.0/24');
    const degraded = rows.nth(3).getByRole('cell').nth(1);
    expect(await degraded.textContent()).toBe(`degraded${reason}`);
    expect(await rows.nth(3).textContent()).toContain('edge-degraded');
    await shot(p, 'screens-daemons');
  });

  it('counts an online daemon quiet for more than 5 minutes as silent, on the overview and the Daemons page, its quiet time counting on', async () => {
    const key = await daemonKey(t(), c.org);
    const id = await register(c.server.app, key, { name: 'edge-silent' });
    await heartbeat(c.server.app, key, id, 'online');
    await sql`update daemons set last_heartbeat_at = now() - make_interval(secs => 400) where id = ${id}`.execute(c.server.database.db);
    const p = await ownerPage(c);
    const figure = (label: string) => p.locator('li.figure').filter({ has: p.locator('.figure-label', { hasText: new RegExp(`^${label}$`, 'i') }) });
    await expect.poll(() => figure('silent').locator('.figure-value').textContent(), POLL).toBe('1');
    expect(await figure('silent').getAttribute('class')).toContain('bad');
    await p.getByText('edge-silent').first().waitFor();
    await shot(p, 'screens-overview-silent');
    await figure('silent').getByRole('link').click();
    await heading(p, 'Daemons');
    const row = p.getByRole('row').filter({ hasText: 'edge-silent' });
    expect(await row.getByRole('cell').nth(1).textContent()).toBe('silent');
    const quiet = async () => Number(/^(\d+) min (\d+) s/.exec((await row.getByRole('cell').nth(2).textContent()) ?? '')!.slice(1).reduce((m, x, i) => (i === 0 ? Number(x) * 60 : m + Number(x)), 0));
    const first = await quiet();
    expect(first).toBeGreaterThanOrEqual(400);
    await expect.poll(quiet, POLL).toBeGreaterThan(first);
    await shot(p, 'screens-daemons-silent');
  });

  it('takes an audit snapshot listed with its stats at once; a viewer sees the list and no form', async () => {
    const p = await ownerPage(c);
    await nav(p, 'Snapshots').click();
    await heading(p, 'Snapshots');
    await p.getByRole('button', { name: 'Take snapshot' }).waitFor();
    // Never `scheduled`: that reason is the daily job's.
    const options = await p.getByLabel('Reason', { exact: true }).locator('option').allTextContents();
    expect(options).toEqual(['Manual', 'Before a change', 'After a change', 'Audit']);
    await p.getByLabel('Reason', { exact: true }).selectOption('audit');
    await p.getByRole('button', { name: 'Take snapshot' }).click();
    const row = p.getByRole('row').filter({ hasText: 'Audit' });
    await row.waitFor();
    await p.getByRole('status').filter({ hasText: /Snapshot taken \(audit, .*\): 1 host, 2 services, 2 certificates, 0 vulnerabilities/ }).waitFor();
    const taken = await c.server.database.db.selectFrom('snapshots').select(['stats']).where('organisation_id', '=', c.org.organisationId).where('reason', '=', 'audit').executeTakeFirstOrThrow();
    const cells = await row.locator('td').allTextContents();
    // Captured, reason, site, then the stats in the contract's order (topologies are built by a job meanwhile: not fixed).
    const order = ['hosts', 'addresses', 'services', 'networks', 'sites', 'certificates', 'vulnerabilities', 'topologies'];
    expect(cells.slice(3, 11).map(Number)).toEqual(order.map((k) => taken.stats[k]));
    expect(taken.stats).toMatchObject({ hosts: 1, addresses: 1, services: 2, networks: 1, certificates: 2, vulnerabilities: 0 });
    await shot(p, 'screens-snapshots');

    const v = await c.page();
    await signIn(v, viewer, PASSWORD);
    await heading(v, 'Overview');
    await nav(v, 'Snapshots').click();
    await heading(v, 'Snapshots');
    await v.getByRole('row').filter({ hasText: 'Audit' }).waitFor();
    expect(await v.getByRole('button', { name: 'Take snapshot' }).count()).toBe(0);
    expect(await v.getByRole('heading', { name: 'Take a snapshot' }).count()).toBe(0);
    expect(await nav(v, 'Notifications').count()).toBe(0);
    await shot(v, 'screens-snapshots-viewer');
  });

  it('creates a webhook destination (a bad URL refused inline first), sends a test, lists a delivery, deletes it', async () => {
    const hits: { body: string; signature: string | undefined }[] = [];
    const hook: Server = createServer((req, res) => {
      let body = '';
      req.on('data', (d: Buffer) => (body += d.toString()));
      req.on('end', () => {
        hits.push({ body, signature: req.headers['x-signature'] as string | undefined });
        res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
      });
    });
    await new Promise<void>((resolve) => hook.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(hook.address() as AddressInfo).port}/surveyor`;
    try {
      const p = await ownerPage(c);
      await nav(p, 'Notifications').click();
      await heading(p, 'Notifications');
      await p.getByText('No destinations yet').waitFor();
      await shot(p, 'screens-notifications-empty');

      // An email destination asks for the SMTP fields; each missing one is named next to its field.
      await p.getByLabel('Kind').selectOption('email');
      await p.getByLabel('Name', { exact: true }).fill('ops-mail');
      await p.getByLabel('To').fill('not-an-address');
      await p.getByRole('button', { name: 'Create destination' }).click();
      await p.getByRole('alert').waitFor();
      for (const label of ['SMTP host', 'From', 'To']) expect(await p.getByLabel(label, { exact: true }).getAttribute('aria-invalid'), label).toBe('true');
      expect(await p.getByLabel('Name', { exact: true }).getAttribute('aria-invalid')).toBeNull();
      await shot(p, 'screens-notifications-email-invalid');
      await p.getByLabel('Kind').selectOption('webhook');

      await p.getByLabel('Name', { exact: true }).fill('ops-hook');
      await p.getByLabel('URL').fill('not a url');
      await p.getByRole('button', { name: 'Create destination' }).click();
      await p.getByRole('alert').waitFor();
      expect(await p.getByLabel('URL').getAttribute('aria-invalid')).toBe('true');
      expect(await p.locator('.field-error').count()).toBe(1);
      await shot(p, 'screens-notifications-invalid');
      expect(await c.server.database.db.selectFrom('notification_destinations').select('id').execute()).toEqual([]);

      // Corrected, the field's message goes as it is typed.
      await p.getByLabel('URL').fill(url);
      await expect.poll(() => fieldError(p.getByLabel('URL')), POLL).toBeNull();
      await p.getByRole('button', { name: 'Create destination' }).click();
      const secret = p.getByLabel('Signing secret', { exact: true });
      await secret.waitFor();
      expect((await secret.inputValue()).length).toBeGreaterThanOrEqual(16);
      await p.getByRole('button', { name: 'Done' }).click();

      const row = p.getByRole('table', { name: 'Notification destinations' }).getByRole('row').filter({ hasText: 'ops-hook' });
      await row.waitFor();
      expect(await row.textContent()).toContain('enabled');
      await row.getByRole('button', { name: 'Send test' }).click();
      await row.getByText('Delivered: answered 200').waitFor();
      expect(hits).toHaveLength(1);
      expect(JSON.parse(hits[0]!.body)).toMatchObject({ kind: 'notification.test' });

      // An event the destination receives (daemon.offline is among the defaults), sent by notify.deliver.
      await sql`insert into events (organisation_id, kind, severity, subject_type, subject_id, data)
        values (${c.org.organisationId}, 'daemon.offline', 'critical', 'daemon', ${randomUUID()}, '{}'::jsonb)`.execute(c.server.database.db);
      await expect.poll(async () => {
        await c.server.jobs!.runner.tick('notify.deliver');
        return hits.length;
      }, { timeout: 15_000, interval: 500 }).toBe(2);
      await p.getByRole('button', { name: 'Refresh' }).click();
      const delivery = p.getByRole('table', { name: 'Recent deliveries' }).getByRole('row').filter({ hasText: 'daemon.offline' });
      await delivery.waitFor();
      expect(await delivery.textContent()).toContain('delivered');
      expect(await delivery.textContent()).toContain('ops-hook');
      expect(await delivery.locator('.attempts li').count()).toBe(1);

      // Disable, then enable again.
      await row.getByRole('button', { name: 'Disable' }).click();
      await row.getByRole('button', { name: 'Enable' }).waitFor();
      expect(await row.textContent()).toContain('disabled');
      await row.getByRole('button', { name: 'Enable' }).click();
      await row.getByRole('button', { name: 'Disable' }).waitFor();
      await shot(p, 'screens-notifications');

      await row.getByRole('button', { name: 'Delete' }).click();
      const dialog = p.getByRole('dialog');
      await dialog.waitFor();
      await shot(p, 'screens-notifications-delete');
      await dialog.getByRole('button', { name: 'Delete' }).click();
      await p.getByText('No destinations yet').waitFor();
      expect(await c.server.database.db.selectFrom('notification_destinations').select('id').execute()).toEqual([]);
    } finally {
      await new Promise<void>((resolve) => hook.close(() => resolve()));
    }
  });
});
