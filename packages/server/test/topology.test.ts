import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as admin from '../src/admin/admin.service.js';
import { MAX_DRAWN } from '../src/topology/svg.js';
import { type SeededOrg, type TestApp, bearer, buildTestApp, seedMemberWithKey, seedOrg } from './helpers.js';
import { addHost, addService } from './fixtures.js';

describe('host topology (spec 2.4, 4.2)', () => {
  let t: TestApp;
  let org: SeededOrg;
  let token: string;
  let daemonHeaders: Record<string, string>;
  let web: string;
  let db1: string;
  let client: string;
  const hoursAgo = (h: number) => new Date(Date.now() - h * 3_600_000).toISOString();
  const get = (url: string, tok = token) => t.app.inject({ method: 'GET', url, headers: bearer(tok) });

  beforeAll(async () => {
    t = await buildTestApp();
    org = await seedOrg(t.database);
    token = (await seedMemberWithKey(t.database, org, 'viewer', ['inventory:read'])).token;
    const dk = (await admin.createDaemonKey(t.database.db, { type: 'cli' }, { org: org.organisationId })).token;
    const daemonId = (await t.app.inject({ method: 'POST', url: '/api/v1/daemon/register', headers: bearer(dk), payload: { name: 'topo', bootId: randomUUID() } })).json().daemonId;
    daemonHeaders = { ...bearer(dk), 'x-daemon-id': daemonId };
    web = await addHost(t.database.db, org.organisationId, { hostname: 'web', addresses: ['10.0.0.10'] });
    await addService(t.database.db, org.organisationId, web, { port: 443, name: 'https', product: 'nginx' });
    db1 = await addHost(t.database.db, org.organisationId, { hostname: 'db', addresses: ['10.0.0.30'] });
    await addService(t.database.db, org.organisationId, db1, { port: 5432, name: 'postgresql' });
    client = await addHost(t.database.db, org.organisationId, { hostname: 'client', addresses: ['10.0.0.20'] });
  });
  afterAll(() => t.close());

  it('says sources.flows is false, with empty peers, while the organisation has no flow record at all', async () => {
    const res = await get(`/api/v1/hosts/${web}/topology`);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ hostId: web, inbound: [], outbound: [], sources: { flows: false, neighbours: false }, window: { hours: 24 } });
    expect(res.json().ports).toEqual([expect.objectContaining({ port: 443, protocol: 'tcp', name: 'https', product: 'nginx' })]);
  });

  it('lists callers and destinations from flows in the window, unknown peers kept with a null hostId', async () => {
    const flows = [
      { bucketStart: hoursAgo(1), srcIp: '10.0.0.20', dstIp: '10.0.0.10', dstPort: 443, protocol: 'tcp', packets: 10, bytes: 9000, source: 'ebpf' },
      { bucketStart: hoursAgo(2), srcIp: '10.0.0.20', dstIp: '10.0.0.10', dstPort: 443, protocol: 'tcp', packets: 5, bytes: 1000, source: 'ebpf' },
      { bucketStart: hoursAgo(1), srcIp: '203.0.113.7', dstIp: '10.0.0.10', dstPort: 443, protocol: 'tcp', packets: 1, bytes: 60, source: 'ebpf' },
      { bucketStart: hoursAgo(1), srcIp: '10.0.0.10', dstIp: '10.0.0.30', dstPort: 5432, protocol: 'tcp', packets: 50, bytes: 80000, source: 'ebpf' },
      { bucketStart: hoursAgo(100), srcIp: '10.0.0.10', dstIp: '198.51.100.9', dstPort: 53, protocol: 'udp', packets: 2, bytes: 200, source: 'ebpf' },
    ];
    expect((await t.app.inject({ method: 'POST', url: '/api/v1/daemon/flows', headers: daemonHeaders, payload: { flows } })).json()).toEqual({ accepted: 5, outOfWindow: 0 });

    const day = (await get(`/api/v1/hosts/${web}/topology`)).json();
    expect(day.sources.flows).toBe(true);
    expect(day.inbound).toEqual([
      expect.objectContaining({ hostId: client, address: '10.0.0.20', hostname: 'client', ports: [443], bytes: 10000, packets: 15, flows: 2 }),
      expect.objectContaining({ hostId: null, address: '203.0.113.7', hostname: null, bytes: 60 }),
    ]);
    expect(day.outbound).toEqual([expect.objectContaining({ hostId: db1, address: '10.0.0.30', ports: [5432], bytes: 80000 })]);

    const week = (await get(`/api/v1/hosts/${web}/topology?windowHours=168`)).json();
    expect(week.window.hours).toBe(168);
    expect(week.outbound.map((p: { address: string }) => p.address)).toEqual(['10.0.0.30', '198.51.100.9']);
    expect(Date.parse(week.window.to) - Date.parse(week.window.from)).toBe(168 * 3_600_000);
  });

  it('lists LLDP/CDP neighbours, resolved to a host by management address', async () => {
    await sql`insert into host_neighbors (organisation_id, host_id, local_interface, remote_chassis_id, remote_port_id, remote_system_name, management_address, protocol)
      values (${org.organisationId}, ${web}, 'eth0', 'aa:bb:cc:00:00:01', 'Gi1/0/7', 'switch-1', '10.0.0.30', 'lldp')`.execute(t.database.db);
    const res = (await get(`/api/v1/hosts/${web}/topology`)).json();
    expect(res.sources.neighbours).toBe(true);
    expect(res.neighbours).toEqual([{ localInterface: 'eth0', remoteChassisId: 'aa:bb:cc:00:00:01', remotePortId: 'Gi1/0/7', remoteSystemName: 'switch-1', managementAddress: '10.0.0.30', protocol: 'lldp', hostId: db1 }]);
  });

  it('refuses windowHours outside 1..720 with 400 validation_failed', async () => {
    for (const w of ['0', '721', 'abc', '1.5']) {
      const res = await get(`/api/v1/hosts/${web}/topology?windowHours=${w}`);
      expect(res.statusCode, w).toBe(400);
      expect(res.json().code).toBe('validation_failed');
    }
    expect((await get(`/api/v1/hosts/${web}/topology?windowHours=720`)).statusCode).toBe(200);
    expect((await get(`/api/v1/hosts/${web}/topology.svg?windowHours=721`)).statusCode).toBe(400);
  });

  it('answers another organisation\'s host, and an unknown one, with 404', async () => {
    const other = await seedOrg(t.database);
    const theirs = (await seedMemberWithKey(t.database, other, 'viewer', ['inventory:read'])).token;
    for (const url of [`/api/v1/hosts/${web}/topology`, `/api/v1/hosts/${web}/topology.svg`]) {
      const res = await get(url, theirs);
      expect(res.statusCode).toBe(404);
      expect(res.json().code).toBe('not_found');
    }
    expect((await get(`/api/v1/hosts/${randomUUID()}/topology`)).statusCode).toBe(404);
  });

  it('draws SVG: well-formed, no script, callers left and destinations right, the window and the omitted peers stated', async () => {
    const many = Array.from({ length: MAX_DRAWN + 7 }, (_, i) => ({ bucketStart: hoursAgo(1), srcIp: `192.0.2.${i + 1}`, dstIp: '10.0.0.10', dstPort: 443, protocol: 'tcp', packets: 1, bytes: 100 + i, source: 'ebpf' }));
    many.push({ bucketStart: hoursAgo(1), srcIp: '10.0.0.99', dstIp: '10.0.0.10', dstPort: 443, protocol: 'tcp', packets: 1, bytes: 1, source: '<script>alert(1)</script>' });
    await t.app.inject({ method: 'POST', url: '/api/v1/daemon/flows', headers: daemonHeaders, payload: { flows: many } });
    await sql`update hosts set hostname = ${'web <&> "x"'} where id = ${web}`.execute(t.database.db);
    const res = await get(`/api/v1/hosts/${web}/topology.svg`);
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^image\/svg\+xml/);
    const svg = res.body;
    expect(svg).toMatch(/^<\?xml version="1.0" encoding="UTF-8"\?>\s*<svg xmlns="http:\/\/www.w3.org\/2000\/svg"/);
    expect(svg).not.toMatch(/<script|javascript:|on[a-z]+=/i);
    expect(svg).toContain('web &lt;&amp;&gt; &quot;x&quot;');
    expect(svg).toContain('Window: last 24 h');
    const callers = (await get(`/api/v1/hosts/${web}/topology`)).json().inbound.length;
    expect(svg).toContain(`Callers: ${callers} (drawn ${MAX_DRAWN}, ${callers - MAX_DRAWN} omitted)`);
    // Callers are drawn left of the host, destinations right of it.
    const xOf = (text: string) => Number(new RegExp(`<text x="(\\d+(?:\\.\\d+)?)"[^>]*>${text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`).exec(svg)?.[1]);
    expect(xOf('client')).toBeLessThan(550);
    expect(xOf('db')).toBeGreaterThan(550);
    // Well-formed: every element closed, nothing unescaped.
    const stripped = svg.replace(/<\?xml[^>]*\?>/, '').replace(/<(\w+)[^>]*\/>/g, '');
    const opens = (stripped.match(/<(\w+)[\s>]/g) ?? []).length;
    const closes = (stripped.match(/<\/(\w+)>/g) ?? []).length;
    expect(opens).toBe(closes);
    expect(svg.replace(/&(amp|lt|gt|quot|apos);/g, '')).not.toMatch(/&/);
  });
});
