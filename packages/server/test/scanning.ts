import { expect } from 'vitest';
import { daemonHeaders, daemonKey, heartbeat, poll, register } from './daemon-client.js';
import { type SeededOrg, type TestApp, bearer, seedMemberWithKey, seedOrg } from './helpers.js';

// A scanning organisation, driven through HTTP as an operator and a daemon would: an operator key,
// an online daemon, networks, sessions, observation batches. Shared by the ingest and job tests.

export type Json = Record<string, any>;

export interface Daemon {
  token: string;
  id: string;
}

export interface Scanning {
  org: SeededOrg;
  /** Operator key: scan:run, inventory:write, inventory:read. */
  api: string;
  daemon: Daemon;
  /** The daemon's site (registered with a siteCode), or null. */
  siteId: string | null;
}

export async function onlineDaemon(t: TestApp, org: SeededOrg, body: Record<string, unknown>): Promise<Daemon> {
  const token = await daemonKey(t, org);
  const id = await register(t.app, token, body);
  await heartbeat(t.app, token, id);
  return { token, id };
}

/** A fresh organisation with an operator and an online daemon; fresh organisations isolate tests. */
export async function scanningOrg(t: TestApp, opts: { siteCode?: string; networkCidrs?: string[]; capabilities?: Record<string, boolean> } = {}): Promise<Scanning> {
  const org = await seedOrg(t.database);
  const api = (await seedMemberWithKey(t.database, org, 'editor', ['scan:run', 'inventory:write', 'inventory:read'])).token;
  const daemon = await onlineDaemon(t, org, {
    networkCidrs: opts.networkCidrs ?? ['10.0.0.0/8'],
    ...(opts.siteCode ? { siteCode: opts.siteCode } : {}),
    ...(opts.capabilities ? { capabilities: opts.capabilities } : {}),
  });
  const siteId = opts.siteCode ? await siteIdOf(t, org, opts.siteCode) : null;
  return { org, api, daemon, siteId };
}

export async function siteIdOf(t: TestApp, org: SeededOrg, code: string) {
  return (await t.database.db.selectFrom('sites').select('id').where('organisation_id', '=', org.organisationId).where('code', '=', code).executeTakeFirstOrThrow()).id;
}

export async function createNetwork(t: TestApp, s: Scanning, cidr: string, extra: Record<string, unknown> = {}) {
  const res = await t.app.inject({ method: 'POST', url: '/api/v1/networks', headers: bearer(s.api), payload: { name: `net ${cidr}`, cidr, ...(s.siteId ? { siteId: s.siteId } : {}), ...extra } });
  expect(res.statusCode, res.body).toBe(201);
  return res.json().id as string;
}

/** Queues a scan of the network through the API (not yet handed over); returns its session id. */
export async function queueScan(t: TestApp, s: Scanning, networkId: string) {
  const res = await t.app.inject({ method: 'POST', url: '/api/v1/scans', headers: bearer(s.api), payload: { networkId } });
  expect(res.statusCode, res.body).toBe(202);
  return res.json() as { sessionId: string; daemonId: string };
}

/** Queues a scan of the network and takes the job with a poll: the session is then dispatched. */
export async function startSession(t: TestApp, s: Scanning, networkId: string, daemon = s.daemon) {
  const { sessionId, daemonId } = await queueScan(t, s, networkId);
  expect(daemonId).toBe(daemon.id);
  const job = await poll(t.app, daemon.token, daemon.id);
  expect(job.statusCode, job.body).toBe(200);
  expect(job.json()).toMatchObject({ kind: 'network', sessionId });
  return sessionId;
}

/** A fresh scanning organisation with a network and a session on it, dispatched to its daemon. */
export async function scanningSession(t: TestApp, cidr = '10.9.0.0/24'): Promise<{ s: Scanning; sessionId: string }> {
  const s = await scanningOrg(t);
  return { s, sessionId: await startSession(t, s, await createNetwork(t, s, cidr)) };
}

/**
 * Posts an observation batch. A daemon sends `stats.hostsTotal` with every batch (spec 4.4); a
 * batch of a test that states no `stats` at all is sent with `{ hostsTotal: 0 }` (progress
 * unknown: percent stays null). A test of the rule itself posts with `postBatch`.
 */
export function observe(t: TestApp, daemon: Daemon, batch: Json) {
  return postBatch(t, daemon, 'stats' in batch ? batch : { ...batch, stats: { hostsTotal: 0 } });
}

/** Posts an observation batch exactly as given. */
export function postBatch(t: TestApp, daemon: Daemon, batch: Json) {
  return t.app.inject({ method: 'POST', url: '/api/v1/daemon/observations', headers: daemonHeaders(daemon.token, daemon.id), payload: batch });
}

/** Posts a batch that must be accepted; returns `{ accepted, dedupHits }`. */
export async function ingest(t: TestApp, daemon: Daemon, batch: Json): Promise<{ accepted: number; dedupHits: number; outOfWindow: number }> {
  const res = await observe(t, daemon, batch);
  expect(res.statusCode, res.body).toBe(200);
  return res.json();
}

export async function getScan(t: TestApp, s: Scanning, sessionId: string) {
  const res = await t.app.inject({ method: 'GET', url: `/api/v1/scans/${sessionId}`, headers: bearer(s.api) });
  expect(res.statusCode, res.body).toBe(200);
  return res.json();
}
