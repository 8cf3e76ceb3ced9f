import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as admin from '../../server/src/admin/admin.service.js';
import { type Console, haveChromium, heading, nav, ownerPage, ownerWithPassword, PASSWORD, shot, signIn, startConsole } from './harness.js';

// Settings → Advisories (issue 23): the mirror's counts and feed state, and an admin's upload of an
// NVD or OSV file, plain or gzip, read in the browser and posted to the import endpoint.

const NVD = readFileSync(new URL('../../server/test/fixtures/advisories/nvd-CVE-2024-6387.json', import.meta.url));

describe.skipIf(!haveChromium)('advisories in Chromium', () => {
  let c: Console;
  let dir: string;

  beforeAll(async () => {
    c = await startConsole();
    await ownerWithPassword(c);
    dir = mkdtempSync(path.join(tmpdir(), 'surveyor-advisory-files-'));
    writeFileSync(path.join(dir, 'nvd-page.json.gz'), gzipSync(NVD));
    writeFileSync(path.join(dir, 'nvd-page.json'), NVD);
    writeFileSync(path.join(dir, 'notes.json'), 'these are not advisories');
    writeFileSync(path.join(dir, 'nothing.json'), JSON.stringify([{ hello: 'world' }]));
  });
  afterAll(async () => {
    await c?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('imports a gzip file and then the same JSON again (unchanged), says why a file cannot be read, and shows the mirror', async () => {
    const p = await ownerPage(c);
    await nav(p, 'Advisories').click();
    await heading(p, 'Advisories');
    await p.getByText('No advisories yet, so no findings').waitFor();
    await shot(p, 'advisories-01-empty');

    const file = p.getByLabel('NVD CVE API 2.0 or OSV file (JSON, or gzip)');
    await file.setInputFiles(path.join(dir, 'nvd-page.json.gz'));
    await p.getByRole('button', { name: 'Import' }).click();
    await p.getByRole('status').filter({ hasText: 'nvd-page.json.gz: 1 new, 0 updated, 0 unchanged.' }).waitFor();
    const figure = (label: string) => p.locator('li.figure').filter({ has: p.locator('.figure-label', { hasText: new RegExp(`^${label}$`) }) }).locator('.figure-value');
    await expect.poll(() => figure('Advisories').textContent()).toBe('1');
    expect(await figure('From NVD').textContent()).toBe('1');
    expect(await c.server.database.db.selectFrom('advisories').select('id').execute()).toHaveLength(1);
    await shot(p, 'advisories-02-imported');

    await file.setInputFiles(path.join(dir, 'nvd-page.json'));
    await p.getByRole('button', { name: 'Import' }).click();
    await p.getByRole('status').filter({ hasText: 'nvd-page.json: 0 new, 0 updated, 1 unchanged.' }).waitFor();

    await file.setInputFiles(path.join(dir, 'notes.json'));
    await p.getByRole('button', { name: 'Import' }).click();
    await p.getByRole('alert').filter({ hasText: 'notes.json is not JSON' }).waitFor();
    await shot(p, 'advisories-03-not-json');

    // JSON without one usable record: refused by the server with the reason, the mirror's age kept.
    await file.setInputFiles(path.join(dir, 'nothing.json'));
    await p.getByRole('button', { name: 'Import' }).click();
    await p.getByRole('alert').filter({ hasText: 'The document holds no usable advisory record (1 skipped: (no id): neither an NVD CVE record nor an OSV record)' }).waitFor();
    await shot(p, 'advisories-04-no-record');
  });

  it('shows a viewer the mirror and no upload', async () => {
    const email = `viewer-adv@${c.org.name}.test`;
    await admin.createUser(c.server.database.db, { type: 'cli' }, { org: c.org.organisationId, email, role: 'viewer', password: PASSWORD });
    const p = await c.page();
    await signIn(p, email, PASSWORD);
    await heading(p, 'Overview');
    await nav(p, 'Advisories').click();
    await heading(p, 'Advisories');
    await p.getByText('Current as of').waitFor();
    expect(await p.getByRole('button', { name: 'Import' }).count()).toBe(0);
  });
});
