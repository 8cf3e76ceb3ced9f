import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as admin from '../../server/src/admin/admin.service.js';
import { verifyAttestation } from '../../server/src/attestation/attestation.service.js';
import { parsePublicKey, storedPublicKey } from '../../server/src/attestation/signing-key.js';
import { createSnapshot } from '../../server/src/snapshots/snapshots.service.js';
import { type Console, haveChromium, heading, nav, ownerPage, ownerWithPassword, PASSWORD, shot, signIn, startConsole } from './harness.js';

// The snapshot attestation from the console (issue 15): an owner downloads the signed PDF of a
// snapshot from its row, and it verifies; an editor sees the snapshots without the link.

describe.skipIf(!haveChromium)('the attestation link on the snapshots page', () => {
  let c: Console;
  let snapshotId: string;
  const editor = 'editor@attest.test';

  beforeAll(async () => {
    c = await startConsole();
    await ownerWithPassword(c);
    await admin.createUser(c.server.database.db, { type: 'cli' }, { org: c.org.organisationId, email: editor, role: 'editor', password: PASSWORD });
    snapshotId = (await createSnapshot(c.server.database.db, { type: 'cli', organisationId: c.org.organisationId }, { reason: 'post_change' })).id;
  });
  afterAll(() => c?.close());

  it('gives an owner an "Attestation (PDF)" download per snapshot, a PDF that verifies with the service\'s key', async () => {
    const p = await ownerPage(c);
    await nav(p, 'Snapshots').click();
    await heading(p, 'Snapshots');
    const link = p.getByRole('row').filter({ hasText: 'After a change' }).getByRole('link', { name: 'Attestation (PDF)' });
    await link.waitFor();
    expect(await link.getAttribute('href')).toBe(`/api/v1/snapshots/${snapshotId}/attestation.pdf`);
    const [download] = await Promise.all([p.waitForEvent('download'), link.click()]);
    expect(download.suggestedFilename()).toBe(`snapshot-${snapshotId}-attestation.pdf`);
    const pdf = readFileSync((await download.path())!);
    const key = parsePublicKey((await storedPublicKey(c.server.database.db))!.publicKeyPem);
    expect(await verifyAttestation(pdf, key)).toMatchObject({ valid: true, payload: { snapshotId, organisationId: c.org.organisationId, reason: 'post_change' } });
    expect(await p.locator('html').evaluate((el) => (el as unknown as { scrollWidth: number }).scrollWidth)).toBeLessThanOrEqual(1280);
    await shot(p, 'snapshots-attestation');
  });

  it('shows an editor the snapshots without the link (admins and owners only)', async () => {
    const e = await c.page();
    await signIn(e, editor, PASSWORD);
    await heading(e, 'Overview');
    await nav(e, 'Snapshots').click();
    await heading(e, 'Snapshots');
    await e.getByRole('row').filter({ hasText: 'After a change' }).waitFor();
    expect(await e.getByRole('link', { name: 'Attestation (PDF)' }).count()).toBe(0);
    expect(await e.getByRole('columnheader', { name: 'Evidence' }).count()).toBe(0);
  });
});
