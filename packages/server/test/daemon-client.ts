import { randomUUID } from 'node:crypto';
import { expect } from 'vitest';
import * as admin from '../src/admin/admin.service.js';
import { type SeededOrg, type TestApp, bearer } from './helpers.js';

// The daemon side of the protocol, through HTTP, for tests of daemons, scans and ingest.

type Inject = TestApp['app'];

export async function daemonKey(t: TestApp, org: SeededOrg) {
  return (await admin.createDaemonKey(t.database.db, { type: 'cli' }, { org: org.organisationId })).token;
}

/** Registers a daemon (a random name unless given) and returns its id. */
export async function register(app: Inject, token: string, body: Record<string, unknown> = {}) {
  const res = await app.inject({
    method: 'POST',
    url: '/api/v1/daemon/register',
    headers: bearer(token),
    payload: { name: `d-${randomUUID().slice(0, 8)}`, version: '1.0.0', os: 'linux', arch: 'amd64', capabilities: { ebpf: false, netflow: true, nmap: true }, networkCidrs: [], bootId: randomUUID(), metadata: {}, ...body },
  });
  expect(res.statusCode, res.body).toBe(200);
  return res.json().daemonId as string;
}

export const daemonHeaders = (token: string, daemonId: string) => ({ ...bearer(token), 'x-daemon-id': daemonId });

export async function heartbeat(app: Inject, token: string, daemonId: string, status = 'online', reason?: string) {
  const payload = { status, loadedSignatures: { core: 120, custom: 3 }, ...(reason === undefined ? {} : { reason }) };
  const res = await app.inject({ method: 'POST', url: '/api/v1/daemon/heartbeat', headers: daemonHeaders(token, daemonId), payload });
  expect(res.statusCode, res.body).toBe(200);
  return res.json();
}

export function poll(app: Inject, token: string, daemonId: string, waitSeconds = 0) {
  return app.inject({ method: 'POST', url: '/api/v1/daemon/jobs/poll', headers: daemonHeaders(token, daemonId), payload: { waitSeconds } });
}
