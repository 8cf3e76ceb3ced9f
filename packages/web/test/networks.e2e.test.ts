import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { poll } from '../../server/test/daemon-client.js';
import { ingest, onlineDaemon } from '../../server/test/scanning.js';
import { type Console, POLL, fieldError, haveChromium, heading, nav, ownerPage, ownerWithPassword, shot, startConsole } from './harness.js';

// Networks and scans in the console, end to end: a network added through the form (the contract's
// own validation shown as the user types), "Scan now" refused without a daemon then queued with
// one, and the daemon's batches showing on the network's page live, then in its history.

describe.skipIf(!haveChromium)('networks and scans in Chromium', () => {
  let c: Console;

  beforeAll(async () => {
    c = await startConsole();
    await ownerWithPassword(c);
  });
  afterAll(() => c?.close());

  it('adds a network, scans it through a daemon and shows the progress live, then the history', async () => {
    const p = await ownerPage(c);
    await nav(p, 'Networks').click();
    await heading(p, 'Networks');
    await p.getByText('No networks yet').waitFor();

    // A CIDR with host bits set: the contract's message under the field, submit disabled.
    const submit = p.getByRole('button', { name: 'Add network' });
    await p.getByLabel('Name').fill('lab');
    await p.getByLabel('CIDR').fill('10.30.0.1/24');
    await p.getByText('host bits are set below the /24 prefix').waitFor();
    expect(await submit.isDisabled()).toBe(true);
    expect(await fieldError(p.getByLabel('CIDR'))).toContain('host bits are set below the /24 prefix');
    await shot(p, 'networks-01-bad-cidr');

    // Fixed, the message and the invalid mark go.
    await p.getByLabel('CIDR').fill('10.30.0.0/24');
    await expect.poll(() => fieldError(p.getByLabel('CIDR')), POLL).toBeNull();
    expect(await p.getByText('host bits are set').count()).toBe(0);
    await p.getByLabel('Scan every (minutes)').fill('5');
    await p.getByText('between 15 and 10080 minutes').waitFor();
    expect(await fieldError(p.getByLabel('Scan every (minutes)'))).toContain('between 15 and 10080 minutes');
    expect(await submit.isDisabled()).toBe(true);
    await p.getByLabel('Scan every (minutes)').fill('60');
    await expect.poll(() => fieldError(p.getByLabel('Scan every (minutes)')), POLL).toBeNull();
    expect(await submit.isDisabled()).toBe(false);
    await submit.click();
    await p.getByRole('status').filter({ hasText: 'added' }).waitFor();
    const row = p.getByRole('row').filter({ hasText: '10.30.0.0/24' });
    await row.waitFor();
    expect(await row.textContent()).toContain('every 1 h');

    // The same CIDR again: the API's 409 duplicate, its detail shown.
    await p.getByLabel('Name').fill('lab again');
    await p.getByLabel('CIDR').fill('10.30.0.0/24');
    await submit.click();
    await p.getByRole('alert').filter({ hasText: /10\.30\.0\.0\/24|already/ }).waitFor();
    await p.getByLabel('Name').fill('');
    await p.getByLabel('CIDR').fill('');
    // Emptied fields disable submit without an error under them.
    expect(await submit.isDisabled()).toBe(true);
    expect(await p.locator('.field-error').count()).toBe(0);

    // No daemon online: the refusal's detail beside the row, nothing queued.
    await row.getByRole('button', { name: 'Scan lab now' }).click();
    const refusal = row.getByRole('alert');
    await refusal.waitFor();
    expect(await refusal.textContent()).toContain('No online daemon reports a network containing 10.30.0.0/24');
    await shot(p, 'networks-02-no-daemon');

    // A daemon registers and heartbeats for that network: "Scan now" queues the scan.
    const daemon = await onlineDaemon(c.t, c.org, { networkCidrs: ['10.30.0.0/24'] });
    await row.getByRole('button', { name: 'Scan lab now' }).click();
    await row.getByRole('status').filter({ hasText: 'Scan queued' }).waitFor();
    expect(await row.getByRole('alert').count()).toBe(0);

    await row.getByRole('link', { name: 'lab' }).click();
    await heading(p, 'lab');
    const live = p.getByRole('region', { name: 'Scan in progress' });
    await live.getByText('queued', { exact: true }).waitFor();

    // The daemon takes the job and reports a first batch: the page follows without a reload.
    const job = await poll(c.t.app, daemon.token, daemon.id);
    expect(job.statusCode, job.body).toBe(200);
    const sessionId = job.json().sessionId as string;
    await ingest(c.t, daemon, {
      sessionId,
      hosts: [{ fingerprint: 'fp-lab-01', hostname: 'lab-01', os: 'Debian 12' }],
      ips: [{ hostFingerprint: 'fp-lab-01', address: '10.30.0.11' }],
      stats: { hostsTotal: 4, hostsScanned: 1, portsScanned: 10 },
    });
    await live.getByText('running', { exact: true }).waitFor();
    await live.getByText('1 / 4').waitFor();
    expect(await p.getByTestId('live-percent').textContent()).toContain('25 %');
    expect(await p.getByTestId('live-batches').textContent()).toBe('1');
    await shot(p, 'networks-03-live-progress');

    // The host is in the inventory.
    await nav(p, 'Hosts').click();
    await heading(p, 'Hosts');
    await p.getByRole('link', { name: 'lab-01' }).waitFor();

    // The final batch completes the session: the history lists it completed.
    await p.goBack();
    await heading(p, 'lab');
    await ingest(c.t, daemon, { sessionId, final: true, stats: { hostsTotal: 4, hostsScanned: 4, portsScanned: 40 } });
    const history = p.getByRole('table', { name: 'Scan history' });
    await history.getByRole('row').filter({ hasText: 'completed' }).waitFor();
    expect(await history.getByRole('row').filter({ hasText: 'completed' }).textContent()).toContain('4 / 4');
    await live.waitFor({ state: 'detached' });
    await shot(p, 'networks-04-history');

    await nav(p, 'Networks').click();
    await heading(p, 'Networks');
    await p.getByRole('row').filter({ hasText: '10.30.0.0/24' }).getByText(/s ago|min ago/).waitFor();
    await shot(p, 'networks-05-list');
  });
});
