import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as admin from '../src/admin/admin.service.js';
import { rollupFlows } from '../src/ingest/flow-rollups.js';
import { FLOW_RETENTION_DAYS, pruneFlows } from '../src/ingest/flows.js';
import { addHost } from './fixtures.js';
import { type TestApp, bearer, buildTestApp, seedMemberWithKey, seedOrg } from './helpers.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

// Spec 2.4: `sources.flows` is false when no flow record exists. Since issue 30 the answer is read
// from the rollups and the records since the last rollup: once retention has dropped every record
// and every rollup of an organisation that once had flows, it must say false again (its rollup
// marks remain).
describe('host topology sources after retention (spec 2.4, issue 30)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await buildTestApp();
  });
  afterAll(() => t.close());

  it('says flows: false once every record and rollup of the organisation was pruned, true while one is kept', async () => {
    const org = await seedOrg(t.database);
    const token = (await seedMemberWithKey(t.database, org, 'viewer', ['inventory:read'])).token;
    const key = (await admin.createDaemonKey(t.database.db, { type: 'cli' }, { org: org.organisationId })).token;
    const daemonId = (await t.app.inject({ method: 'POST', url: '/api/v1/daemon/register', headers: bearer(key), payload: { name: 'flowd', bootId: randomUUID() } })).json().daemonId;
    const web = await addHost(t.database.db, org.organisationId, { hostname: 'web', addresses: ['10.8.0.10'] });
    const now = Date.now();
    const flows = [3, 30].map((h) => ({ bucketStart: new Date(now - h * HOUR).toISOString(), srcIp: '10.8.0.20', dstIp: '10.8.0.10', dstPort: 443, protocol: 'tcp', packets: 1, bytes: 100, source: 'softflowd' }));
    const delivered = await t.app.inject({ method: 'POST', url: '/api/v1/daemon/flows', headers: { ...bearer(key), 'x-daemon-id': daemonId }, payload: { flows } });
    expect(delivered.json()).toMatchObject({ accepted: 2 });
    const sources = async () => {
      const res = await t.app.inject({ method: 'GET', url: `/api/v1/hosts/${web}/topology?windowHours=720`, headers: bearer(token) });
      expect(res.statusCode, res.body).toBe(200);
      return res.json().sources.flows as boolean;
    };
    expect(await sources()).toBe(true);

    // Rolled up (hours and the closed day), the records since the marks being none: still true, from the rollups.
    await rollupFlows(t.database.db, new Date(now));
    const marks = (await sql<{ n: number }>`select count(*)::int as n from flow_rollups where organisation_id = ${org.organisationId}`.execute(t.database.db)).rows[0]!.n;
    expect(marks).toBe(1);
    expect(await sources()).toBe(true);

    // Retention run a retention period later: every partition of records and rollups dropped.
    const pruned = await pruneFlows(t.database.db, new Date(now + (FLOW_RETENTION_DAYS + 2) * DAY));
    expect(pruned.partitions.length).toBeGreaterThan(0);
    const left = (await sql<{ n: number }>`
      select (select count(*) from flows where organisation_id = ${org.organisationId}) + (select count(*) from flow_hours where organisation_id = ${org.organisationId})
           + (select count(*) from flow_days where organisation_id = ${org.organisationId})::int as n`.execute(t.database.db)).rows[0]!;
    expect(Number(left.n)).toBe(0);
    expect(await sources()).toBe(false);
  });
});
