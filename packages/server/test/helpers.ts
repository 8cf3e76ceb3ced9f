import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import pg from 'pg';
import * as admin from '../src/admin/admin.service.js';
import { type Config, loadConfig } from '../src/config.js';
import { type Database, openDatabase } from '../src/db/database.js';
import { migrate } from '../src/db/migrate.js';
import { buildWebApp } from '../src/main.js';
import { createLogger } from '../src/logger.js';
import { installContractCheck } from './contract-check.js';

/**
 * Every job of this build, written out (not read from the build, which the tests check against it):
 * the nine of spec 1.1, and the retention and rollup jobs of issue 30 (events.prune, flows.rollup,
 * assistant.prune).
 */
export const JOB_NAMES = ['scan.schedule', 'scan.stall', 'notify.deliver', 'cloud.k8s', 'cve.match', 'cloud.sync', 'topology.dependencies', 'notify.certificates', 'inventory.snapshot', 'events.prune', 'flows.rollup', 'assistant.prune'];

/** PostgreSQL when TEST_DATABASE_URL is set (CI), else an in-memory PGlite. */
export const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL || undefined;

export interface TestDatabase {
  database: Database;
  /** Schema of this test file on PostgreSQL (undefined on PGlite). */
  schema?: string;
  drop(): Promise<void>;
}

/** A migrated database of its own: a fresh schema on PostgreSQL, a fresh PGlite otherwise. */
export async function createTestDatabase(opts: { migrate?: boolean; poolMax?: number; url?: string } = {}): Promise<TestDatabase> {
  const url = opts.url ?? TEST_DATABASE_URL;
  let schema: string | undefined;
  if (url) {
    schema = `t_${randomBytes(6).toString('hex')}`;
    const client = new pg.Client({ connectionString: TEST_DATABASE_URL });
    await client.connect();
    await client.query(`create schema ${schema}`);
    await client.end();
  }
  const database = await openDatabase({ url, poolMax: opts.poolMax ?? 5, searchPath: schema });
  if (opts.migrate !== false) await migrate(database);
  return {
    database,
    schema,
    async drop() {
      await database.close();
      if (schema) {
        const client = new pg.Client({ connectionString: TEST_DATABASE_URL });
        await client.connect();
        await client.query(`drop schema if exists ${schema} cascade`);
        await client.end();
      }
    },
  };
}

export interface TestApp {
  app: FastifyInstance;
  database: Database;
  config: Config;
  /** The key the app seals stored secrets with (a job that opens them needs the same). */
  secretKey: Buffer;
  /** Every log line the app wrote, as text. */
  logs: string[];
  close(): Promise<void>;
}

/** Boots the real app on a real database; `env` overrides configuration variables. */
export async function buildTestApp(opts: { env?: Record<string, string>; testDb?: TestDatabase; ready?: boolean } = {}): Promise<TestApp> {
  const testDb = opts.testDb ?? (await createTestDatabase());
  const config = loadConfig({ SERVICE_LOG_LEVEL: 'info', SERVICE_BASE_URL: 'http://surveyor.test', ...opts.env });
  const logs: string[] = [];
  const logger = createLogger(config.logLevel, { write: (line: string) => void logs.push(line) });
  const secretKey = randomBytes(32);
  const app = await buildWebApp({ config, database: testDb.database, logger, secretKey });
  installContractCheck(app);
  if (opts.ready !== false) await app.ready();
  return {
    app,
    secretKey,
    database: testDb.database,
    config,
    logs,
    async close() {
      await app.close();
      if (!opts.testDb) await testDb.drop();
    },
  };
}

export const PASSWORD = 'correct horse battery staple';

export interface SeededOrg {
  organisationId: string;
  name: string;
  ownerEmail: string;
  ownerId: string;
}

/** An organisation with an owner, through the same service the CLI uses. */
export async function seedOrg(database: Database, name = `org-${randomBytes(4).toString('hex')}`): Promise<SeededOrg> {
  const ownerEmail = `owner@${name}.test`;
  const r = await admin.createOrganisation(database.db, { type: 'cli' }, { name, ownerEmail, ownerPassword: PASSWORD });
  return { organisationId: r.organisationId, name, ownerEmail, ownerId: r.userId };
}

/** A member with `role` and an API key holding `scopes`. */
export async function seedMemberWithKey(database: Database, org: SeededOrg, role: string, scopes: string[]) {
  const email = `${role}-${randomBytes(3).toString('hex')}@${org.name}.test`;
  const { userId } = await admin.createUser(database.db, { type: 'cli' }, { org: org.organisationId, email, role, password: PASSWORD });
  const key = await admin.createApiKey(database.db, { type: 'cli' }, { org: org.organisationId, userEmail: email, scopes });
  return { email, userId, keyId: key.id, token: key.token };
}

/** Signs in through the real endpoint; returns the cookie header and CSRF token. */
export async function login(app: FastifyInstance, email: string, password = PASSWORD) {
  const res = await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email, password } });
  if (res.statusCode !== 200) throw new Error(`login failed: ${res.statusCode} ${res.body}`);
  const setCookie = String(res.headers['set-cookie']);
  const cookie = setCookie.split(';')[0]!;
  return { cookie, csrfToken: res.json().csrfToken as string, setCookie, body: res.json() };
}

export const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

/** A problem answer (RFC 9457) with its status and stable code. */
export function expectProblem(res: { statusCode: number; headers: Record<string, unknown>; json(): { code?: unknown } }, status: number, code: string) {
  if (res.statusCode !== status || res.json().code !== code) throw new Error(`expected ${status} ${code}, got ${res.statusCode} ${JSON.stringify(res.json())}`);
  if (!String(res.headers['content-type']).startsWith('application/problem+json')) throw new Error(`expected application/problem+json, got ${String(res.headers['content-type'])}`);
}
