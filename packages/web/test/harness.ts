import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { type Browser, type BrowserContext, type BrowserContextOptions, type Locator, type Page, chromium } from 'playwright-core';
import { haveTools, onPath, skipOrFail } from '../../../test/system-tools.js';
import { bootstrapFirstOwner } from '../../server/src/admin/admin.service.js';
import { setPassword } from '../../server/src/auth/auth.repo.js';
import { hashPassword } from '../../server/src/auth/passwords.js';
import { loadConfig } from '../../server/src/config.js';
import { resolveSecretKey } from '../../server/src/crypto/secrets.js';
import { createLogger } from '../../server/src/logger.js';
import { type RunningServer, startServer } from '../../server/src/main.js';
import type { SeededOrg, TestApp } from '../../server/test/helpers.js';

// What every end-to-end file of the console shares: the real server (`startServer` on a fresh
// database: a new PostgreSQL database when TEST_DATABASE_URL is set, as in CI's PostgreSQL pass,
// else the embedded database of a fresh data folder; the built console of packages/web/dist, the jobs running as
// under `npm start`), Debian's Chromium driven by playwright-core, and a few page helpers.
// Screenshots go to test-output/console/ (look at them after a UI change).

/** Debian's Chromium (`chromium` on PATH), or the browser CHROMIUM_PATH names. */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? onPath('chromium') ?? 'chromium';
/** Whether the browser is there; when not, the files skip saying so, and fail under CI (test/system-tools.ts). */
export const haveChromium = process.env.CHROMIUM_PATH
  ? existsSync(CHROMIUM) || skipOrFail("the console's end-to-end tests", `CHROMIUM_PATH names ${CHROMIUM}, which does not exist`)
  : haveTools("the console's end-to-end tests", ['chromium']);

export const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));
const shots = path.join(repoRoot, 'test-output/console');
/** The password the first-run owner sets (console.e2e.test.ts) or is given (`signedInOwner`). */
/** For expect.poll: what the page shows after a response settles (a refetch, a list that loads after another). */
export const POLL = { timeout: 10_000, interval: 100 };
export const PASSWORD = 'a long enough new password 42';

export interface Console {
  server: RunningServer;
  /** The first-run owner; `password` is the one-time one until changed. */
  owner: { email: string; password: string };
  org: SeededOrg;
  /** The server as the scanning test helpers take it (they speak the daemon protocol through inject). */
  t: TestApp;
  /** A page in a fresh context (1280 × 800; `options` add to it, e.g. `{ colorScheme: 'dark' }`). */
  page(options?: BrowserContextOptions): Promise<Page>;
  close(): Promise<void>;
}

/** Starts the server on a fresh data folder and Chromium (`env` adds to its configuration); `close` stops both and removes the folder. */
export async function startConsole(env: Record<string, string> = {}): Promise<Console> {
  mkdirSync(shots, { recursive: true });
  const dataDir = mkdtempSync(path.join(tmpdir(), 'surveyor-console-e2e-'));
  const pgDatabase = await createPostgresDatabase();
  let told = '';
  const config = loadConfig({
    SERVICE_DATA_DIR: dataDir,
    SERVICE_PORT: '0',
    SERVICE_LOG_LEVEL: 'silent',
    ...env,
    ...(pgDatabase ? { DATABASE_URL: pgDatabase.url, SERVICE_SECRET_KEY: randomBytes(32).toString('hex') } : {}),
  });
  const server = await startServer(config, createLogger('silent'), (text) => void (told += text));
  if (pgDatabase) {
    // On PostgreSQL the server leaves the first organisation to `surveyor admin`; the same
    // function the embedded first run calls makes it here, with its one-time password.
    const first = await bootstrapFirstOwner(server.database.db);
    if (first) told = `email: ${first.email}\npassword: ${first.password}\n`;
  }
  const email = /email:\s+(\S+)/.exec(told)?.[1];
  const password = /password:\s+(\S+)/.exec(told)?.[1];
  if (!email || !password) throw new Error(`no first-run owner in ${JSON.stringify(told)}`);
  const row = await server.database.db.selectFrom('organisations').select(['id', 'name']).executeTakeFirstOrThrow();
  const user = await server.database.db.selectFrom('users').select('id').where('email', '=', email).executeTakeFirstOrThrow();
  const browser: Browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-quic'],
  });
  const opened: BrowserContext[] = [];
  return {
    server,
    owner: { email, password },
    org: { organisationId: row.id, name: row.name, ownerEmail: email, ownerId: user.id },
    t: { app: server.app, database: server.database, secretKey: resolveSecretKey(config) } as unknown as TestApp,
    async page(options = {}) {
      const context = await browser.newContext({ baseURL: server.url, viewport: { width: 1280, height: 800 }, ...options });
      opened.push(context);
      const p = await context.newPage();
      p.setDefaultTimeout(15_000);
      return p;
    },
    async close() {
      for (const c of opened) await c.close().catch(() => {});
      await browser.close();
      await server.close();
      await pgDatabase?.drop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** With TEST_DATABASE_URL, a new empty database on that server (dropped by `drop`); else null (PGlite). */
async function createPostgresDatabase(): Promise<{ url: string; drop(): Promise<void> } | null> {
  const base = process.env.TEST_DATABASE_URL;
  if (!base) return null;
  const name = `e2e_${randomBytes(6).toString('hex')}`;
  const admin = async (statement: string) => {
    const client = new pg.Client({ connectionString: base });
    await client.connect();
    try {
      await client.query(statement);
    } finally {
      await client.end();
    }
  };
  await admin(`create database ${name}`);
  const url = new URL(base);
  url.pathname = `/${name}`;
  return { url: url.toString(), drop: () => admin(`drop database if exists ${name} with (force)`) };
}

/** Gives the first-run owner PASSWORD without the browser (files that do not test the first sign-in). */
export async function ownerWithPassword(c: Console): Promise<void> {
  await setPassword(c.server.database.db, c.org.ownerId, await hashPassword(PASSWORD), false);
  c.owner.password = PASSWORD;
}

/** Saves the page as test-output/console/NAME.png: the whole page, or with `fullPage: false` the first screen of it. */
export const shot = (p: Page, name: string, { fullPage = true } = {}) => p.screenshot({ path: path.join(shots, `${name}.png`), fullPage });
export const nav = (p: Page, name: string) => p.getByRole('navigation').getByRole('link', { name, exact: true });
export const heading = (p: Page, name: string) => p.getByRole('heading', { level: 1, name }).waitFor();

export async function signIn(p: Page, email: string, password: string): Promise<void> {
  await p.goto('/');
  await heading(p, 'Sign in');
  await p.getByLabel('Email').fill(email);
  await p.getByLabel('Password').fill(password);
  await p.getByRole('button', { name: 'Sign in' }).click();
}

/** A fresh page signed in as the first-run owner (given PASSWORD by `ownerWithPassword`), on the overview. */
export async function ownerPage(c: Console, options?: BrowserContextOptions): Promise<Page> {
  const p = await c.page(options);
  await signIn(p, c.owner.email, c.owner.password);
  await heading(p, 'Overview');
  return p;
}

/**
 * What a field says is wrong with it, as assistive technology finds it: the text of what its
 * aria-describedby names, when it is aria-invalid; null while it is valid.
 */
export async function fieldError(field: Locator): Promise<string | null> {
  if ((await field.getAttribute('aria-invalid')) !== 'true') return null;
  const ids = (await field.getAttribute('aria-describedby'))?.split(' ') ?? [];
  const texts = await Promise.all(ids.map((id) => field.page().locator(`[id="${id}"].field-error`).allTextContents()));
  return texts.flat().join(' ') || null;
}
