import { execFileSync } from 'node:child_process';
import { X509Certificate, randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import fc from 'fast-check';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { daemonHeaders } from './daemon-client.js';
import { type TestApp, bearer, buildTestApp } from './helpers.js';
import { type Json, type Scanning, createNetwork, getScan, ingest, observe, onlineDaemon, postBatch, scanningOrg, siteIdOf, startSession } from './scanning.js';

// Observation ingest (spec 4.4, 4.5; decisions.md "Observation elements", "Scan sessions"), driven
// only through HTTP the way a daemon and an operator would: register, heartbeat, scan, poll, post
// batches, read the inventory back. Tables the API does not expose are read with SQL.

type Inject = TestApp['app'];
// ---------------------------------------------------------------------------------------------
// Reading the inventory back.

/** Every item of a collection, walking the pages. */
async function list(t: TestApp, s: Scanning, collection: 'hosts' | 'services' | 'certificates', query = ''): Promise<Json[]> {
  const out: Json[] = [];
  let cursor: string | null = null;
  do {
    const res: Awaited<ReturnType<Inject['inject']>> = await t.app.inject({ method: 'GET', url: `/api/v1/${collection}?limit=500${query}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, headers: bearer(s.api) });
    expect(res.statusCode, res.body).toBe(200);
    out.push(...res.json().data);
    cursor = res.json().nextCursor;
  } while (cursor);
  return out;
}

const hostByName = (hosts: Json[], hostname: string) => {
  const h = hosts.find((x) => x.hostname === hostname);
  expect(h, `host ${hostname}`).toBeDefined();
  return h!;
};

async function count(t: TestApp, table: string, organisationId: string) {
  return (await sql<{ n: number }>`select count(*)::int as n from ${sql.table(table)} where organisation_id = ${organisationId}`.execute(t.database.db)).rows[0]!.n;
}

async function fingerprintsOf(t: TestApp, organisationId: string): Promise<Map<string, string[]>> {
  const rows = (await sql<{ host_id: string; fingerprint: string }>`select host_id, fingerprint from host_fingerprints where organisation_id = ${organisationId} order by fingerprint`.execute(t.database.db)).rows;
  const out = new Map<string, string[]>();
  for (const r of rows) (out.get(r.host_id) ?? out.set(r.host_id, []).get(r.host_id)!).push(r.fingerprint);
  return out;
}

const byKey = <T>(items: T[], key: (t: T) => string) => [...items].sort((a, b) => key(a).localeCompare(key(b)));

/**
 * The organisation's inventory in a canonical form: hosts keyed by the fingerprints that name them
 * (daemon data, not generated ids), with their addresses, MACs, facts, services, certificates and
 * layer-2/3 rows; no ids, no timestamps (only whether a service is gone).
 */
async function canonicalInventory(t: TestApp, s: Scanning) {
  const org = s.org.organisationId;
  const fps = await fingerprintsOf(t, org);
  const keyOf = (hostId: string | null) => (hostId === null ? null : (fps.get(hostId) ?? [`?${hostId}`]).join('+'));
  const hosts = await list(t, s, 'hosts');
  const services = await list(t, s, 'services');
  const certificates = await list(t, s, 'certificates');
  const q = async <T>(query: ReturnType<typeof sql<T>>) => (await query.execute(t.database.db)).rows;
  const interfaces = await q(sql<Json>`select host_id, name, mac::text as mac from host_interfaces where organisation_id = ${org}`);
  const addressMacs = await q(sql<Json>`select host_id, host(address) as address, mac::text as mac from host_addresses where organisation_id = ${org}`);
  const neighbors = await q(sql<Json>`select host_id, local_interface, remote_chassis_id, remote_port_id, remote_system_name, host(management_address) as management_address, protocol from host_neighbors where organisation_id = ${org}`);
  const vlans = await q(sql<Json>`select host_id, vlan_id, name, tagged, untagged from host_vlans where organisation_id = ${org}`);
  const routes = await q(sql<Json>`select host_id, destination::text as destination, host(next_hop) as next_hop, interface, metric from host_routes where organisation_id = ${org}`);
  const lags = await q(sql<Json>`select host_id, name, protocol, members from host_lag_groups where organisation_id = ${org}`);
  const strip = ({ host_id: _h, ...rest }: Json) => rest;
  const of = (rows: Json[], hostId: string, key: (r: Json) => string) => byKey(rows.filter((r) => r.host_id === hostId).map(strip), key);
  return byKey(
    hosts.map((h) => ({
      key: keyOf(h.id),
      hostname: h.hostname,
      fqdn: h.fqdn,
      vendor: h.vendor,
      os: h.os,
      deviceType: h.deviceType,
      parent: keyOf(h.parentHostId),
      addresses: h.addresses,
      macs: h.macs,
      addressMacs: of(addressMacs, h.id, (r) => r.address),
      openPortCount: h.openPortCount,
      services: byKey(
        services
          .filter((x) => x.hostId === h.id)
          .map((x) => ({
            protocol: x.protocol, port: x.port, address: x.address, state: x.state, banner: x.banner, name: x.name, product: x.product, vendor: x.vendor,
            version: x.version, cpe: x.cpe, signatureId: x.signatureId, signatureSource: x.signatureSource, confidence: x.confidence, gone: x.goneAt !== null,
          })),
        (x) => `${x.protocol}/${String(x.port).padStart(5, '0')}`,
      ),
      certificates: byKey(
        certificates.filter((c) => c.hostId === h.id).map((c) => ({ address: c.address, port: c.port, subject: c.subject, issuer: c.issuer, notBefore: c.notBefore, notAfter: c.notAfter, fingerprint: c.fingerprint, trustStatus: c.trustStatus })),
        (c) => `${c.port}|${c.fingerprint}`,
      ),
      interfaces: of(interfaces, h.id, (r) => r.name),
      neighbors: of(neighbors, h.id, (r) => `${r.local_interface}|${r.remote_chassis_id}`),
      vlans: of(vlans, h.id, (r) => String(r.vlan_id)),
      routes: of(routes, h.id, (r) => `${r.destination}|${r.interface}`),
      lagGroups: of(lags, h.id, (r) => r.name),
    })),
    (h) => h.key ?? '',
  );
}

/** The raw API view (ids and timestamps included): equal before and after only if nothing was written. */
async function rawInventory(t: TestApp, s: Scanning) {
  const org = s.org.organisationId;
  const q = async (query: ReturnType<typeof sql<Json>>) => (await query.execute(t.database.db)).rows;
  return {
    hosts: await list(t, s, 'hosts'),
    services: await list(t, s, 'services'),
    certificates: await list(t, s, 'certificates'),
    addresses: await q(sql<Json>`select host_id, host(address) as a, mac::text as mac, last_seen_at from host_addresses where organisation_id = ${org} order by host_id, address`),
    interfaces: await q(sql<Json>`select host_id, name, mac::text as mac, last_seen_at from host_interfaces where organisation_id = ${org} order by host_id, name`),
    neighbors: await q(sql<Json>`select * from host_neighbors where organisation_id = ${org} order by host_id, local_interface, remote_chassis_id`),
    vlans: await q(sql<Json>`select * from host_vlans where organisation_id = ${org} order by host_id, vlan_id`),
    routes: await q(sql<Json>`select host_id, destination::text as d, host(next_hop) as nh, interface, metric, last_seen_at from host_routes where organisation_id = ${org} order by host_id, destination, interface`),
    lagGroups: await q(sql<Json>`select * from host_lag_groups where organisation_id = ${org} order by host_id, name`),
    fingerprints: await q(sql<Json>`select fingerprint, host_id from host_fingerprints where organisation_id = ${org} order by fingerprint`),
    changeLog: await q(sql<Json>`select entity_type, entity_id, action from change_log where organisation_id = ${org} order by id`),
  };
}

const rowsOf = (b: Json) =>
  ['hosts', 'ips', 'ports', 'services', 'neighbors', 'vlans', 'routes', 'lagGroups', 'tls'].reduce((n, k) => n + ((b[k] as unknown[] | undefined)?.length ?? 0), 0);

const DAY = 86_400_000;
const hex64 = () => randomBytes(32).toString('hex');

// A router and a web server on 10.1.0.0/24, every element kind of spec 4.5 (flows aside).
function fullBatch(sessionId: string, tlsSha: string): Json {
  return {
    sessionId,
    hosts: [
      {
        fingerprint: 'fp-router', hostname: 'core-rtr-1', fqdn: 'core-rtr-1.example.net', vendor: 'Juniper', os: 'JunOS 23.2', deviceType: 'router',
        interfaces: [
          { name: 'ge-0/0/0', mac: '00:16:3e:00:00:01', addresses: ['10.1.0.1'] },
          { name: 'ge-0/0/1', mac: '00-16-3E-00-00-02' },
          { name: 'ge-0/0/2', mac: '00163e000003' },
        ],
      },
      { fingerprint: 'fp-web', hostname: 'web-1', fqdn: 'web-1.example.net', os: 'Ubuntu 24.04', deviceType: 'server', parentFingerprint: 'fp-router' },
    ],
    ips: [
      { hostFingerprint: 'fp-web', address: '10.1.0.20', family: 4, mac: '00:16:3E:00:00:20' },
      { hostFingerprint: 'fp-web', address: '10.1.0.21', family: 4 },
    ],
    ports: [
      { fingerprint: 'fp-web', address: '10.1.0.20', protocol: 'tcp', number: 22, state: 'open', banner: 'SSH-2.0-OpenSSH_9.6p1 Ubuntu-3ubuntu13' },
      { fingerprint: 'fp-web', address: '10.1.0.20', protocol: 'tcp', number: 443, state: 'open' },
      { fingerprint: 'fp-web', address: '10.1.0.21', protocol: 'udp', number: 161, state: 'filtered' },
    ],
    services: [
      {
        fingerprint: 'fp-web', address: '10.1.0.20', protocol: 'tcp', port: 22, signatureId: 'core/ssh', signatureSource: 'core', name: 'ssh', product: 'OpenSSH', vendor: 'OpenBSD',
        version: '9.6p1', cpe: 'cpe:2.3:a:openbsd:openssh:9.6:p1:*:*:*:*:*:*', confidence: 95, evidence: 'banner',
      },
      { fingerprint: 'fp-web', address: '10.1.0.20', protocol: 'tcp', port: 443, name: 'https', product: 'nginx', version: '1.24.0', cpe: 'cpe:2.3:a:f5:nginx:1.24.0:*:*:*:*:*:*:*', signatureSource: 'nmap', confidence: 80 },
    ],
    neighbors: [{ fingerprint: 'fp-router', localInterface: 'ge-0/0/0', remoteChassisId: '00:16:3e:aa:bb:cc', remotePortId: 'Gi1/0/1', remoteSystemName: 'access-sw-1', managementAddress: '10.1.0.2', protocol: 'lldp' }],
    vlans: [{ fingerprint: 'fp-router', vlanId: 10, name: 'users', tagged: ['ge-0/0/2', 'ge-0/0/1'], untagged: ['ge-0/0/0'] }],
    routes: [{ fingerprint: 'fp-router', destination: '0.0.0.0/0', nextHop: '10.1.0.254', interface: 'ge-0/0/0', metric: 10 }],
    lagGroups: [{ fingerprint: 'fp-router', name: 'ae0', protocol: 'lacp', members: ['ge-0/0/2', 'ge-0/0/1'] }],
    tls: [
      {
        fingerprint: 'fp-web', address: '10.1.0.20', port: 443, subject: 'CN=web-1.example.net', issuer: 'CN=Example Issuing CA',
        notBefore: new Date(Date.now() - 10 * DAY).toISOString(), notAfter: new Date(Date.now() + 90 * DAY).toISOString(), sha256: tlsSha,
      },
    ],
    stats: { hostsTotal: 4, hostsScanned: 1, portsScanned: 3, durationMs: 1200 },
  };
}

const ENV = { SERVICE_RATE_LIMIT_DAEMON_PER_MINUTE: '1000000', SERVICE_RATE_LIMIT_KEY_PER_MINUTE: '1000000' };

// =============================================================================================

describe('a batch of observations builds the inventory (spec 4.5; decisions.md "Observation elements")', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await buildTestApp({ env: ENV });
  });
  afterAll(() => t.close());

  it('creates hosts, addresses, MACs, services, certificates and layer-2/3 facts linked to the right host, and moves the session to running then completed', async () => {
    const s = await scanningOrg(t);
    const net = await createNetwork(t, s, '10.1.0.0/24');
    const sessionId = await startSession(t, s, net);
    expect(await getScan(t, s, sessionId)).toMatchObject({ state: 'dispatched', startedAt: null, progress: { hostsTotal: null, percent: null, batches: 0 } });

    const sha = hex64();
    const batch = fullBatch(sessionId, sha);
    expect(await ingest(t, s.daemon, batch)).toEqual({ accepted: rowsOf(batch), dedupHits: 0, outOfWindow: 0 });

    const running = await getScan(t, s, sessionId);
    expect(running).toMatchObject({ state: 'running', startedAt: expect.any(String), finishedAt: null, progress: { hostsTotal: 4, hostsScanned: 1, portsScanned: 3, batches: 1, percent: 25 } });

    const hosts = await list(t, s, 'hosts');
    expect(hosts).toHaveLength(2);
    const router = hostByName(hosts, 'core-rtr-1');
    const web = hostByName(hosts, 'web-1');
    expect(router).toMatchObject({
      fqdn: 'core-rtr-1.example.net', vendor: 'Juniper', os: 'JunOS 23.2', deviceType: 'router', parentHostId: null, siteId: null,
      addresses: ['10.1.0.1'], macs: ['00:16:3e:00:00:01', '00:16:3e:00:00:02', '00:16:3e:00:00:03'], openPortCount: 0,
    });
    expect(web).toMatchObject({
      fqdn: 'web-1.example.net', os: 'Ubuntu 24.04', deviceType: 'server', vendor: null, parentHostId: router.id,
      addresses: ['10.1.0.20', '10.1.0.21'], macs: ['00:16:3e:00:00:20'], openPortCount: 2,
    });

    const services = await list(t, s, 'services');
    expect(services).toHaveLength(3);
    expect(services.every((x) => x.hostId === web.id && x.goneAt === null)).toBe(true);
    const svc = (protocol: string, port: number) => services.find((x) => x.protocol === protocol && x.port === port);
    expect(svc('tcp', 22)).toMatchObject({
      address: '10.1.0.20', state: 'open', name: 'ssh', product: 'OpenSSH', vendor: 'OpenBSD', version: '9.6p1', cpe: 'cpe:2.3:a:openbsd:openssh:9.6:p1:*:*:*:*:*:*',
      banner: 'SSH-2.0-OpenSSH_9.6p1 Ubuntu-3ubuntu13', signatureId: 'core/ssh', signatureSource: 'core', confidence: 95,
    });
    expect(svc('tcp', 443)).toMatchObject({ address: '10.1.0.20', state: 'open', name: 'https', product: 'nginx', version: '1.24.0', cpe: 'cpe:2.3:a:f5:nginx:1.24.0:*:*:*:*:*:*:*', banner: null, signatureSource: 'nmap' });
    expect(svc('udp', 161)).toMatchObject({ address: '10.1.0.21', state: 'filtered', name: null, product: null });

    const certs = await list(t, s, 'certificates');
    expect(certs).toEqual([
      expect.objectContaining({ hostId: web.id, address: '10.1.0.20', port: 443, subject: 'CN=web-1.example.net', issuer: 'CN=Example Issuing CA', fingerprint: sha, trustStatus: 'untrusted' }),
    ]);

    const org = s.org.organisationId;
    const q = async (query: ReturnType<typeof sql<Json>>) => (await query.execute(t.database.db)).rows;
    expect(await q(sql<Json>`select host_id, local_interface, remote_chassis_id, remote_port_id, remote_system_name, host(management_address) as mgmt, protocol from host_neighbors where organisation_id = ${org}`)).toEqual([
      { host_id: router.id, local_interface: 'ge-0/0/0', remote_chassis_id: '00:16:3e:aa:bb:cc', remote_port_id: 'Gi1/0/1', remote_system_name: 'access-sw-1', mgmt: '10.1.0.2', protocol: 'lldp' },
    ]);
    expect(await q(sql<Json>`select host_id, vlan_id, name, tagged, untagged from host_vlans where organisation_id = ${org}`)).toEqual([
      { host_id: router.id, vlan_id: 10, name: 'users', tagged: ['ge-0/0/1', 'ge-0/0/2'], untagged: ['ge-0/0/0'] },
    ]);
    expect(await q(sql<Json>`select host_id, destination::text as destination, host(next_hop) as next_hop, interface, metric from host_routes where organisation_id = ${org}`)).toEqual([
      { host_id: router.id, destination: '0.0.0.0/0', next_hop: '10.1.0.254', interface: 'ge-0/0/0', metric: 10 },
    ]);
    expect(await q(sql<Json>`select host_id, name, protocol, members from host_lag_groups where organisation_id = ${org}`)).toEqual([
      { host_id: router.id, name: 'ae0', protocol: 'lacp', members: ['ge-0/0/1', 'ge-0/0/2'] },
    ]);
    expect(await q(sql<Json>`select host_id, name, mac::text as mac from host_interfaces where organisation_id = ${org} order by name`)).toEqual([
      { host_id: router.id, name: 'ge-0/0/0', mac: '00:16:3e:00:00:01' },
      { host_id: router.id, name: 'ge-0/0/1', mac: '00:16:3e:00:00:02' },
      { host_id: router.id, name: 'ge-0/0/2', mac: '00:16:3e:00:00:03' },
    ]);
    expect(await q(sql<Json>`select fingerprint, host_id from host_fingerprints where organisation_id = ${org} order by fingerprint`)).toEqual([
      { fingerprint: 'fp-router', host_id: router.id },
      { fingerprint: 'fp-web', host_id: web.id },
    ]);

    // The final batch completes the session.
    expect(await ingest(t, s.daemon, { sessionId, final: true, stats: { hostsTotal: 4, hostsScanned: 4, portsScanned: 12 } })).toEqual({ accepted: 0, dedupHits: 0, outOfWindow: 0 });
    const done = await getScan(t, s, sessionId);
    expect(done).toMatchObject({ state: 'completed', finishedAt: expect.any(String), progress: { hostsTotal: 4, hostsScanned: 4, portsScanned: 12, batches: 2, percent: 100 } });
    expect(Date.parse(done.finishedAt)).toBeGreaterThanOrEqual(Date.parse(done.startedAt));
  });

  it('answers dedupHits 0 for a first delivery into an empty inventory, also when ports and their services come as separate rows', async () => {
    const s = await scanningOrg(t);
    const sessionId = await startSession(t, s, await createNetwork(t, s, '10.2.0.0/24'));
    const ports = [22, 80, 443, 8443];
    const batch = {
      sessionId,
      ports: ports.map((number) => ({ fingerprint: 'fp-a', address: '10.2.0.5', protocol: 'tcp', number })),
      services: ports.map((port) => ({ fingerprint: 'fp-a', address: '10.2.0.5', protocol: 'tcp', port, name: `svc-${port}` })),
    };
    expect(await ingest(t, s.daemon, batch)).toEqual({ accepted: 8, dedupHits: 0, outOfWindow: 0 });
    expect((await list(t, s, 'services')).map((x) => x.name).sort()).toEqual(['svc-22', 'svc-443', 'svc-80', 'svc-8443']);
  });

  it('answers dedupHits equal to accepted for a replayed batch, and the replay changes nothing at all', async () => {
    const s = await scanningOrg(t);
    const sessionId = await startSession(t, s, await createNetwork(t, s, '10.1.0.0/24'));
    const batch = fullBatch(sessionId, hex64());
    expect((await ingest(t, s.daemon, batch)).dedupHits).toBe(0);
    const canonical = await canonicalInventory(t, s);
    const raw = await rawInventory(t, s);

    for (let i = 0; i < 2; i++) expect(await ingest(t, s.daemon, batch)).toEqual({ accepted: rowsOf(batch), dedupHits: rowsOf(batch), outOfWindow: 0 });
    expect(await canonicalInventory(t, s)).toEqual(canonical);
    expect(await rawInventory(t, s)).toEqual(raw);

    // Also once the session is completed: a repeated batch is accepted and all of it counted as hits.
    // The session's own completion and progress are the only changes (scan.updated on the live stream).
    expect(await ingest(t, s.daemon, { sessionId, final: true })).toEqual({ accepted: 0, dedupHits: 0, outOfWindow: 0 });
    expect(await ingest(t, s.daemon, { ...batch, final: true })).toEqual({ accepted: rowsOf(batch), dedupHits: rowsOf(batch), outOfWindow: 0 });
    const after = await rawInventory(t, s);
    expect(after.changeLog.slice(0, raw.changeLog.length)).toEqual(raw.changeLog);
    expect(new Set(after.changeLog.slice(raw.changeLog.length).map((c) => `${c.entity_type}.${c.action} ${c.entity_id}`))).toEqual(new Set([`scan.updated ${sessionId}`]));
    expect({ ...after, changeLog: raw.changeLog }).toEqual(raw);
    expect((await getScan(t, s, sessionId)).state).toBe('completed');
  });

  it('accepts a gzip-compressed batch like a plain one, and refuses an unsupported content-encoding with 415', async () => {
    const s = await scanningOrg(t);
    const sessionId = await startSession(t, s, await createNetwork(t, s, '10.1.0.0/24'));
    const batch = fullBatch(sessionId, hex64());
    const gz = await t.app.inject({
      method: 'POST',
      url: '/api/v1/daemon/observations',
      headers: { ...daemonHeaders(s.daemon.token, s.daemon.id), 'content-type': 'application/json', 'content-encoding': 'gzip' },
      payload: gzipSync(Buffer.from(JSON.stringify(batch))),
    });
    expect(gz.statusCode, gz.body).toBe(200);
    expect(gz.json()).toEqual({ accepted: rowsOf(batch), dedupHits: 0, outOfWindow: 0 });
    expect((await list(t, s, 'hosts')).map((h) => h.hostname).sort()).toEqual(['core-rtr-1', 'web-1']);
    expect(await list(t, s, 'services')).toHaveLength(3);

    const br = await t.app.inject({
      method: 'POST',
      url: '/api/v1/daemon/observations',
      headers: { ...daemonHeaders(s.daemon.token, s.daemon.id), 'content-type': 'application/json', 'content-encoding': 'br' },
      payload: Buffer.from(JSON.stringify({ sessionId, hosts: [{ fingerprint: 'fp-brotli', hostname: 'not-stored' }] })),
    });
    expect(br.statusCode).toBe(415);
    expect(br.json().code).toBe('unsupported_media_type');
    expect((await list(t, s, 'hosts')).some((h) => h.hostname === 'not-stored')).toBe(false);
  });

  it('writes change_log rows "created" for each new host and service of the organisation, and none for a replay', async () => {
    const s = await scanningOrg(t);
    const sessionId = await startSession(t, s, await createNetwork(t, s, '10.1.0.0/24'));
    const batch = fullBatch(sessionId, hex64());
    await ingest(t, s.daemon, batch);
    const hosts = await list(t, s, 'hosts');
    const services = await list(t, s, 'services');
    const log = async () => (await sql<Json>`select entity_type, entity_id, action from change_log where organisation_id = ${s.org.organisationId} order by id`.execute(t.database.db)).rows;
    const rows = await log();
    const ids = (type: string, action: string) => rows.filter((r) => r.entity_type === type && r.action === action).map((r) => r.entity_id).sort();
    expect(ids('host', 'created')).toEqual(hosts.map((h) => h.id).sort());
    expect(ids('service', 'created')).toEqual(services.map((x) => x.id).sort());
    await ingest(t, s.daemon, batch);
    expect(await log()).toEqual(rows);
    // Another organisation's log has no host or service (only its own daemon registering).
    const other = await scanningOrg(t);
    expect((await sql<Json>`select entity_type, action from change_log where organisation_id = ${other.org.organisationId} order by id`.execute(t.database.db)).rows).toEqual([
      { entity_type: 'daemon', action: 'created' },
      { entity_type: 'daemon', action: 'updated' },
    ]);
  });
});

// =============================================================================================

describe('which sessions may take a batch (decisions.md "Scan sessions")', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await buildTestApp({ env: ENV });
  });
  afterAll(() => t.close());

  const small = (sessionId: string, extra: Json = {}) => ({
    sessionId,
    hosts: [{ fingerprint: 'fp-x', hostname: 'x-1' }],
    ips: [{ hostFingerprint: 'fp-x', address: '10.3.0.9' }],
    ports: [{ fingerprint: 'fp-x', address: '10.3.0.9', protocol: 'tcp', number: 22 }],
    ...extra,
  });

  it('accepts a batch for a stalled session and moves it back to running', async () => {
    const sc = await scanningOrg(t);
    const sessionId = await startSession(t, sc, await createNetwork(t, sc, '10.3.0.0/16'));
    await ingest(t, sc.daemon, small(sessionId));
    // The scan.stall job (a later issue) sets this state; the rule under test is what a batch does to it.
    await sql`update scan_sessions set state = 'stalled' where id = ${sessionId}`.execute(t.database.db);
    expect((await getScan(t, sc, sessionId)).state).toBe('stalled');
    await ingest(t, sc.daemon, small(sessionId, { hosts: [{ fingerprint: 'fp-x', hostname: 'x-2' }] }));
    expect((await getScan(t, sc, sessionId)).state).toBe('running');
  });

  it('answers an identical batch of the same session at once as all dedupHits, but applies one that differs in any field', async () => {
    const sc = await scanningOrg(t);
    const sessionId = await startSession(t, sc, await createNetwork(t, sc, '10.3.0.0/16'));
    expect(await ingest(t, sc.daemon, small(sessionId))).toEqual({ accepted: 3, dedupHits: 0, outOfWindow: 0 });
    expect(await ingest(t, sc.daemon, small(sessionId))).toEqual({ accepted: 3, dedupHits: 3, outOfWindow: 0 });
    const renamed = small(sessionId, { hosts: [{ fingerprint: 'fp-x', hostname: 'x-renamed' }] });
    expect(await ingest(t, sc.daemon, renamed)).toEqual({ accepted: 3, dedupHits: 2, outOfWindow: 0 });
    const hosts = await t.database.db.selectFrom('hosts').select('hostname').where('organisation_id', '=', sc.org.organisationId).execute();
    expect(hosts.map((h) => h.hostname)).toEqual(['x-renamed']);
    expect(await count(t, 'scan_batches', sc.org.organisationId)).toBe(2);
  });

  it('stores the flows of a batch through the flow path, resolved against the hosts of the same batch, once', async () => {
    const sc = await scanningOrg(t);
    const sessionId = await startSession(t, sc, await createNetwork(t, sc, '10.3.0.0/16'));
    const flows = [{ bucketStart: new Date(Date.now() - 60_000).toISOString(), srcIp: '10.3.0.50', dstIp: '10.3.0.9', dstPort: 22, protocol: 'tcp', packets: 3, bytes: 300, source: 'ebpf' }];
    const first = await ingest(t, sc.daemon, small(sessionId, { flows }));
    expect(first).toEqual({ accepted: 4, dedupHits: 0, outOfWindow: 0 });
    expect(await ingest(t, sc.daemon, small(sessionId, { flows }))).toEqual({ accepted: 4, dedupHits: 4, outOfWindow: 0 });
    const stored = (await sql<{ dst_host_id: string | null; dst_service_id: string | null }>`select dst_host_id, dst_service_id from flows_resolved where organisation_id = ${sc.org.organisationId}`.execute(t.database.db)).rows;
    expect(stored).toHaveLength(1);
    expect(stored[0]!.dst_host_id).not.toBeNull();
    expect(stored[0]!.dst_service_id).not.toBeNull();
  });

  it('takes a batch carrying flows as one transaction: when the database refuses its flows, nothing of the batch stays, hosts included', async () => {
    const sc = await scanningOrg(t);
    const org = sc.org.organisationId;
    const sessionId = await startSession(t, sc, await createNetwork(t, sc, '10.3.0.0/16'));
    const flow = (bucketStart: string) => ({ bucketStart, srcIp: '10.3.0.50', dstIp: '10.3.0.9', dstPort: 22, protocol: 'tcp', packets: 3, bytes: 300, source: 'ebpf' });
    // A day inside the 30-day window that no other test writes flows for.
    const day = new Date(Date.now() - 20 * 86_400_000).toISOString().slice(0, 10);
    const next = new Date(Date.parse(`${day}T00:00:00Z`) + 86_400_000).toISOString().slice(0, 10);
    const partition = `flows_${day.replace(/-/g, '')}`;
    // A day the daemon already delivered flows for, whose partition an operator then detached to
    // archive it: the partition exists, so ingest does not create it again, and the flows table
    // has no partition left for that day's rows. A real refusal by the database, mid-batch.
    const delivered = await t.app.inject({ method: 'POST', url: '/api/v1/daemon/flows', headers: daemonHeaders(sc.daemon.token, sc.daemon.id), payload: { flows: [flow(`${day}T09:00:00Z`)] } });
    expect(delivered.statusCode, delivered.body).toBe(200);
    await sql.raw(`alter table flows detach partition ${partition}`).execute(t.database.db);
    const events = await count(t, 'events', org);
    const changes = await count(t, 'change_log', org); // the daemon's, the network's and the session's so far

    const batch = small(sessionId, { flows: [flow(`${day}T10:00:00Z`)] });
    const res = await observe(t, sc.daemon, batch);
    expect(res.statusCode, res.body).toBe(500);
    expect(res.json().code).toBe('internal_error');
    for (const table of ['hosts', 'host_addresses', 'services', 'scan_batches']) expect(await count(t, table, org), table).toBe(0);
    expect(await count(t, 'change_log', org)).toBe(changes);
    expect(await count(t, 'flow_batches', org)).toBe(1); // the earlier delivery's only
    expect(await count(t, 'events', org)).toBe(events);
    expect(await getScan(t, sc, sessionId)).toMatchObject({ state: 'dispatched', startedAt: null, progress: { batches: 0 } });

    // Once the day is back, the same batch is taken whole: the failed attempt left no digest that would make it a replay.
    await sql.raw(`alter table flows attach partition ${partition} for values from ('${day}T00:00:00Z') to ('${next}T00:00:00Z')`).execute(t.database.db);
    expect(await ingest(t, sc.daemon, batch)).toEqual({ accepted: 4, dedupHits: 0, outOfWindow: 0 });
    expect(await count(t, 'hosts', org)).toBe(1);
    expect(await count(t, 'flow_batches', org)).toBe(2);
  });

  it('refuses a batch for a cancelled session with 409 session_cancelled and stores nothing of it', async () => {
    const s = await scanningOrg(t);
    const sessionId = await startSession(t, s, await createNetwork(t, s, '10.3.0.0/24'));
    await ingest(t, s.daemon, { sessionId, stats: { hostsTotal: 1 } });
    const cancel = await t.app.inject({ method: 'POST', url: `/api/v1/scans/${sessionId}/cancel`, headers: bearer(s.api) });
    expect(cancel.statusCode, cancel.body).toBe(200);
    const res = await observe(t, s.daemon, small(sessionId, { final: true }));
    expect(res.statusCode).toBe(409);
    expect(res.json().code).toBe('session_cancelled');
    expect(await list(t, s, 'hosts')).toEqual([]);
    expect((await getScan(t, s, sessionId)).state).toBe('cancelled');
  });

  it('answers 404 not_found for an unknown session id', async () => {
    const s = await scanningOrg(t);
    const res = await observe(t, s.daemon, small(randomUUID()));
    expect(res.statusCode).toBe(404);
    expect(res.json().code).toBe('not_found');
    expect(await count(t, 'hosts', s.org.organisationId)).toBe(0);
  });

  it('answers 404 for a session of another daemon of the same organisation, registered with another key', async () => {
    const s = await scanningOrg(t);
    const sessionId = await startSession(t, s, await createNetwork(t, s, '10.3.0.0/24'));
    const other = await onlineDaemon(t, s.org, { networkCidrs: ['192.168.0.0/16'] });
    const res = await observe(t, other, small(sessionId));
    expect(res.statusCode).toBe(404);
    expect(res.json().code).toBe('not_found');
    expect(await count(t, 'hosts', s.org.organisationId)).toBe(0);
    expect((await getScan(t, s, sessionId)).state).toBe('dispatched');
    // The owner's daemon is still welcome.
    expect((await ingest(t, s.daemon, small(sessionId))).accepted).toBe(3);
  });

  it('accepts a repeated final batch for a completed session and counts all of it in dedupHits, leaving the session completed', async () => {
    const s = await scanningOrg(t);
    const sessionId = await startSession(t, s, await createNetwork(t, s, '10.3.0.0/24'));
    const batch = small(sessionId, { final: true, stats: { hostsTotal: 1, hostsScanned: 1 } });
    expect(await ingest(t, s.daemon, batch)).toEqual({ accepted: 3, dedupHits: 0, outOfWindow: 0 });
    const done = await getScan(t, s, sessionId);
    expect(done.state).toBe('completed');
    expect(await ingest(t, s.daemon, batch)).toEqual({ accepted: 3, dedupHits: 3, outOfWindow: 0 });
    const again = await getScan(t, s, sessionId);
    expect(again).toMatchObject({ state: 'completed', finishedAt: done.finishedAt, progress: { percent: 100 } });
  });

  it('refuses a batch whose stats.hostsTotal is missing or not an integer ≥ 0 with 400 validation_failed naming it (spec 4.4: sent from the first batch on), storing nothing', async () => {
    const s = await scanningOrg(t);
    const sessionId = await startSession(t, s, await createNetwork(t, s, '10.3.0.0/24'));
    for (const stats of [{}, { hostsScanned: 3, portsScanned: 30, durationMs: 900 }, { hostsTotal: 2.5 }, { hostsTotal: '4' }, { hostsTotal: null }, { hostsTotal: -1 }]) {
      const res = await postBatch(t, s.daemon, small(sessionId, { stats }));
      expect(res.statusCode, JSON.stringify(stats)).toBe(400);
      expect(res.json().code).toBe('validation_failed');
      expect(res.json().issues.map((i: { path: string }) => i.path)).toEqual(['body.stats.hostsTotal']);
    }
    // Without stats at all, the issue names the object that must carry it.
    const bare = await postBatch(t, s.daemon, small(sessionId));
    expect(bare.statusCode).toBe(400);
    expect(bare.json()).toMatchObject({ code: 'validation_failed', issues: [{ path: 'body.stats', message: expect.stringContaining('hostsTotal') }] });
    expect(await count(t, 'hosts', s.org.organisationId)).toBe(0);
    expect(await getScan(t, s, sessionId)).toMatchObject({ state: 'dispatched', progress: { hostsTotal: null, batches: 0 } });
    // Zero is a count like any other (a sweep that found nothing).
    expect(await ingest(t, s.daemon, small(sessionId, { stats: { hostsTotal: 0 } }))).toEqual({ accepted: 3, dedupHits: 0, outOfWindow: 0 });
    expect((await getScan(t, s, sessionId)).progress).toMatchObject({ hostsTotal: 0, batches: 1 });
  });

  it('refuses a malformed batch with 400 validation_failed naming the paths, and logs only its shape, never its values', async () => {
    const s = await scanningOrg(t);
    const sessionId = await startSession(t, s, await createNetwork(t, s, '10.3.0.0/24'));
    const secretHost = 'very-secret-hostname-xyz';
    const secretBanner = 'SSH-2.0-TopSecretBanner-q9z7';
    const res = await observe(t, s.daemon, {
      sessionId,
      hosts: [{ hostname: secretHost, os: 'SecretOS-77' }, { fingerprint: 'fp-ok', hostname: secretHost }],
      ports: [{ fingerprint: 'fp-ok', address: '10.3.0.77', protocol: 'tcp', number: 70000, banner: secretBanner }],
    });
    expect(res.statusCode).toBe(400);
    expect(res.json().code).toBe('validation_failed');
    const paths = res.json().issues.map((i: { path: string }) => i.path);
    expect(paths).toEqual(expect.arrayContaining(['body.ports.0.number', 'body.hosts.0.fingerprint']));
    expect(res.body).not.toContain(secretHost);
    expect(res.body).not.toContain(secretBanner);

    const log = t.logs.join('');
    const line = t.logs.findLast((l) => l.includes('request failed validation') && l.includes('ports')); // this request's: earlier tests log theirs too
    expect(line, 'a log line with the shape of the failed batch').toBeDefined();
    const shape = JSON.parse(line!).shape;
    expect(shape.ports).toEqual({ length: 1, fields: ['address', 'banner', 'fingerprint', 'number', 'protocol'] });
    expect(shape.hosts).toMatchObject({ length: 2 });
    expect(log).not.toContain(secretHost);
    expect(log).not.toContain(secretBanner);
    expect(log).not.toContain('SecretOS-77');
    expect(log).not.toContain('10.3.0.77');
    expect(await count(t, 'hosts', s.org.organisationId)).toBe(0);
    expect((await getScan(t, s, sessionId)).state).toBe('dispatched');
  });
});

// =============================================================================================

describe('absence: only a completed session marks things gone, inside its CIDR (decisions.md "Scan sessions")', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await buildTestApp({ env: ENV });
  });
  afterAll(() => t.close());

  const seen = (sessionId: string, ports: number[], extra: Json = {}) => ({
    sessionId,
    hosts: [{ fingerprint: 'fp-srv', hostname: 'srv-1' }],
    ips: [{ hostFingerprint: 'fp-srv', address: '10.4.0.10', mac: '00:16:3e:04:00:10' }],
    ports: ports.map((number) => ({ fingerprint: 'fp-srv', address: '10.4.0.10', protocol: 'tcp', number })),
    ...extra,
  });

  /** An organisation whose network 10.4.0.0/24 had one completed session seeing ports 22, 80 and 443 of srv-1. */
  async function afterFirstScan() {
    const s = await scanningOrg(t);
    const net = await createNetwork(t, s, '10.4.0.0/24');
    const first = await startSession(t, s, net);
    await ingest(t, s.daemon, seen(first, [22, 80, 443], { final: true }));
    expect((await getScan(t, s, first)).state).toBe('completed');
    const srv = hostByName(await list(t, s, 'hosts'), 'srv-1');
    expect(srv.openPortCount).toBe(3);
    return { s, net, srv };
  }
  const goneByPort = async (s: Scanning) => Object.fromEntries((await list(t, s, 'services')).map((x) => [x.port, x.goneAt !== null]));

  it('marks a service seen by the first completed session but not by the second completed one as gone, and its host\'s open port count drops', async () => {
    const { s, net } = await afterFirstScan();
    const second = await startSession(t, s, net);
    await ingest(t, s.daemon, seen(second, [22]));
    expect(await goneByPort(s)).toEqual({ 22: false, 80: false, 443: false });
    await ingest(t, s.daemon, { sessionId: second, final: true });
    expect(await goneByPort(s)).toEqual({ 22: false, 80: true, 443: true });
    const services = await list(t, s, 'services');
    for (const x of services.filter((x) => x.port !== 22)) expect(Date.parse(x.goneAt)).toBeGreaterThanOrEqual(Date.parse(x.lastSeenAt));
    expect(hostByName(await list(t, s, 'hosts'), 'srv-1').openPortCount).toBe(1);

    // Seen again by a third session: back, not gone.
    const third = await startSession(t, s, net);
    await ingest(t, s.daemon, seen(third, [22, 80], { final: true }));
    expect(await goneByPort(s)).toEqual({ 22: false, 80: false, 443: true });
    expect(hostByName(await list(t, s, 'hosts'), 'srv-1').openPortCount).toBe(2);
  });

  it('logs a service as updated in change_log when it goes, and not when a later session merely sees it again unchanged', async () => {
    const { s, net } = await afterFirstScan();
    const second = await startSession(t, s, net);
    await ingest(t, s.daemon, seen(second, [22], { final: true }));
    const services = await list(t, s, 'services');
    const updated = (await sql<Json>`select entity_id from change_log where organisation_id = ${s.org.organisationId} and entity_type = 'service' and action = 'updated'`.execute(t.database.db)).rows.map((r) => r.entity_id).sort();
    expect(updated).toEqual(services.filter((x) => x.goneAt !== null).map((x) => x.id).sort());
    expect(updated).toHaveLength(2);
  });

  it('writes no change row and no event of a host or service for a rescan that finds everything unchanged, yet moves every host\'s and service\'s lastSeenAt on (issue 30)', async () => {
    const { s, net } = await afterFirstScan();
    const org = s.org.organisationId;
    const written = async () => (await sql<Json>`
      select (select count(*)::int from change_log where organisation_id = ${org} and entity_type in ('host', 'service')) as changes,
             (select count(*)::int from events where organisation_id = ${org} and kind <> 'scan.completed') as events`.execute(t.database.db)).rows[0];
    const before = { written: await written(), hosts: await list(t, s, 'hosts'), services: await list(t, s, 'services') };
    const second = await startSession(t, s, net);
    const batch = seen(second, [22, 80, 443], { final: true });
    const answer = await ingest(t, s.daemon, batch);
    expect(answer.dedupHits).toBe(answer.accepted);
    expect(await written()).toEqual(before.written);
    const hosts = await list(t, s, 'hosts');
    const services = await list(t, s, 'services');
    for (const [after, was] of [[hosts, before.hosts], [services, before.services]] as const) {
      expect(after.map((x) => x.id).sort()).toEqual(was.map((x) => x.id).sort());
      for (const x of after) {
        const old = was.find((y) => y.id === x.id)!;
        expect(Date.parse(x.lastSeenAt)).toBeGreaterThan(Date.parse(old.lastSeenAt));
        expect({ ...x, lastSeenAt: old.lastSeenAt }).toEqual(old);
      }
    }
    expect((await getScan(t, s, second)).state).toBe('completed');
  });

  it('never marks anything gone for a second session that is cancelled, even when its daemon then sends a final batch', async () => {
    const { s, net } = await afterFirstScan();
    const second = await startSession(t, s, net);
    await ingest(t, s.daemon, seen(second, [22]));
    const cancel = await t.app.inject({ method: 'POST', url: `/api/v1/scans/${second}/cancel`, headers: bearer(s.api) });
    expect(cancel.statusCode, cancel.body).toBe(200);
    expect((await observe(t, s.daemon, { sessionId: second, final: true })).statusCode).toBe(409);
    expect(await goneByPort(s)).toEqual({ 22: false, 80: false, 443: false });
    expect(hostByName(await list(t, s, 'hosts'), 'srv-1').openPortCount).toBe(3);
  });

  it('never marks anything gone for a second session left running', async () => {
    const { s, net } = await afterFirstScan();
    const second = await startSession(t, s, net);
    await ingest(t, s.daemon, seen(second, [22], { stats: { hostsTotal: 10, hostsScanned: 9 } }));
    await ingest(t, s.daemon, { sessionId: second, stats: { hostsTotal: 10, hostsScanned: 10 } });
    expect((await getScan(t, s, second)).state).toBe('running');
    expect(await goneByPort(s)).toEqual({ 22: false, 80: false, 443: false });
    expect(hostByName(await list(t, s, 'hosts'), 'srv-1').openPortCount).toBe(3);
  });

  it('never marks services of hosts outside the session\'s CIDR, nor inside its excluded ranges', async () => {
    const s = await scanningOrg(t);
    const inside = await createNetwork(t, s, '10.4.0.0/24', { excludeCidrs: ['10.4.0.128/25'] });
    const outside = await createNetwork(t, s, '10.5.0.0/24');
    const o = await startSession(t, s, outside);
    await ingest(t, s.daemon, {
      sessionId: o,
      final: true,
      ips: [{ hostFingerprint: 'fp-far', address: '10.5.0.7' }],
      ports: [{ fingerprint: 'fp-far', address: '10.5.0.7', protocol: 'tcp', number: 3306 }],
    });
    const first = await startSession(t, s, inside);
    await ingest(t, s.daemon, {
      sessionId: first,
      final: true,
      ips: [{ hostFingerprint: 'fp-srv', address: '10.4.0.10' }, { hostFingerprint: 'fp-excluded', address: '10.4.0.200' }],
      ports: [
        { fingerprint: 'fp-srv', address: '10.4.0.10', protocol: 'tcp', number: 22 },
        { fingerprint: 'fp-srv', address: '10.4.0.10', protocol: 'tcp', number: 80 },
        { fingerprint: 'fp-excluded', address: '10.4.0.200', protocol: 'tcp', number: 5432 },
      ],
    });
    const second = await startSession(t, s, inside);
    await ingest(t, s.daemon, { sessionId: second, final: true, ports: [{ fingerprint: 'fp-srv', address: '10.4.0.10', protocol: 'tcp', number: 22 }] });
    expect((await getScan(t, s, second)).state).toBe('completed');
    expect(await goneByPort(s)).toEqual({ 22: false, 80: true, 3306: false, 5432: false });
  });

  it('never marks services of another site\'s hosts whose addresses fall in the CIDR (overlapping private ranges)', async () => {
    const s = await scanningOrg(t, { siteCode: 'ams-1', networkCidrs: [] });
    const amsNet = await createNetwork(t, s, '10.7.0.0/24');
    const fra = await onlineDaemon(t, s.org, { siteCode: 'fra-1' });
    const fraSite = await siteIdOf(t, s.org, 'fra-1');
    const fraNet = await createNetwork(t, { ...s, siteId: fraSite }, '10.7.0.0/23');
    const onFra = await startSession(t, s, fraNet, fra);
    await ingest(t, fra, { sessionId: onFra, final: true, hosts: [{ fingerprint: 'fp-fra', hostname: 'fra-web' }], ports: [{ fingerprint: 'fp-fra', address: '10.7.0.40', protocol: 'tcp', number: 443 }] });
    const onAms = await startSession(t, s, amsNet);
    await ingest(t, s.daemon, { sessionId: onAms, final: true, hosts: [{ fingerprint: 'fp-ams', hostname: 'ams-ssh' }], ports: [{ fingerprint: 'fp-ams', address: '10.7.0.10', protocol: 'tcp', number: 22 }] });
    expect((await getScan(t, s, onAms)).state).toBe('completed');
    const hosts = await list(t, s, 'hosts');
    expect(hostByName(hosts, 'fra-web').siteId).toBe(fraSite);
    // The Amsterdam daemon never saw Frankfurt's 10.7.0.40: its scan may not declare it gone.
    expect(await goneByPort(s)).toEqual({ 22: false, 443: false });
    expect(hostByName(hosts, 'fra-web').openPortCount).toBe(1);
  });

  it('never marks a service bound to an address outside the session\'s CIDR, even on a host that also has an address inside', async () => {
    const s = await scanningOrg(t);
    const lan = await createNetwork(t, s, '10.4.0.0/24');
    const dmz = await createNetwork(t, s, '10.5.0.0/24');
    const onDmz = await startSession(t, s, dmz);
    await ingest(t, s.daemon, {
      sessionId: onDmz,
      final: true,
      ips: [{ hostFingerprint: 'fp-multi', address: '10.4.0.10', mac: '00:16:3e:04:00:10' }, { hostFingerprint: 'fp-multi', address: '10.5.0.10', mac: '00:16:3e:05:00:10' }],
      ports: [{ fingerprint: 'fp-multi', address: '10.5.0.10', protocol: 'tcp', number: 8080 }],
    });
    const onLan = await startSession(t, s, lan);
    await ingest(t, s.daemon, { sessionId: onLan, final: true, ports: [{ fingerprint: 'fp-multi', address: '10.4.0.10', protocol: 'tcp', number: 22 }] });
    expect((await getScan(t, s, onLan)).state).toBe('completed');
    // The LAN scan could not have seen 10.5.0.10:8080, so it may not declare it gone.
    expect(await goneByPort(s)).toEqual({ 22: false, 8080: false });
  });
});

// =============================================================================================

describe('host identity (fingerprint, then MAC, then address, within the site) and absent fields that never erase (issue 4 "Reconciliation rules")', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await buildTestApp({ env: ENV });
  });
  afterAll(() => t.close());

  /** An organisation whose daemon is bound to site `code`, with network 10.7.0.0/24 of that site and a dispatched session. */
  async function siteSession(code = 'ams-1') {
    const s = await scanningOrg(t, { siteCode: code, networkCidrs: [] });
    expect(s.siteId).not.toBeNull();
    const net = await createNetwork(t, s, '10.7.0.0/24');
    const sessionId = await startSession(t, s, net);
    return { s, net, sessionId };
  }
  const hostIds = async (s: Scanning) => (await list(t, s, 'hosts')).map((h) => h.id);

  it('joins a new fingerprint whose address carries the MAC of a known host to that host, which keeps both fingerprints and all addresses', async () => {
    const { s, sessionId } = await siteSession();
    await ingest(t, s.daemon, { sessionId, hosts: [{ fingerprint: 'fp-a', hostname: 'alpha' }], ips: [{ hostFingerprint: 'fp-a', address: '10.7.0.10', mac: '00:16:3e:12:34:56' }] });
    const [alpha] = await list(t, s, 'hosts');
    expect(alpha).toMatchObject({ hostname: 'alpha', siteId: s.siteId });
    await ingest(t, s.daemon, { sessionId, hosts: [{ fingerprint: 'fp-a2', os: 'Debian 12' }], ips: [{ hostFingerprint: 'fp-a2', address: '10.7.0.11', mac: '00-16-3E-12-34-56' }] });
    const hosts = await list(t, s, 'hosts');
    expect(hosts).toHaveLength(1);
    expect(hosts[0]).toMatchObject({ id: alpha!.id, hostname: 'alpha', os: 'Debian 12', addresses: ['10.7.0.10', '10.7.0.11'], macs: ['00:16:3e:12:34:56'] });
    expect((await fingerprintsOf(t, s.org.organisationId)).get(alpha!.id)).toEqual(['fp-a', 'fp-a2']);
    // A later batch under the second fingerprint lands on the same host too.
    await ingest(t, s.daemon, { sessionId, ports: [{ fingerprint: 'fp-a2', address: '10.7.0.11', protocol: 'tcp', number: 22 }] });
    expect((await list(t, s, 'services')).map((x) => x.hostId)).toEqual([alpha!.id]);
  });

  it('joins by a MAC learned from a host\'s interface list too', async () => {
    const { s, sessionId } = await siteSession();
    await ingest(t, s.daemon, { sessionId, hosts: [{ fingerprint: 'fp-sw', hostname: 'switch-1', interfaces: [{ name: 'mgmt0', mac: '00:16:3e:77:00:01' }] }] });
    await ingest(t, s.daemon, { sessionId, ips: [{ hostFingerprint: 'fp-sw-arp', address: '10.7.0.2', mac: '00:16:3e:77:00:01' }] });
    const hosts = await list(t, s, 'hosts');
    expect(hosts).toHaveLength(1);
    expect(hosts[0]).toMatchObject({ hostname: 'switch-1', addresses: ['10.7.0.2'] });
  });

  it('never merges on a VRRP, HSRP or locally administered MAC: each new fingerprint becomes a new host', async () => {
    const { s, sessionId } = await siteSession();
    const shared = ['00:00:5e:00:01:0a', '00:00:0c:07:ac:01', '02:16:3e:00:00:99'];
    await ingest(t, s.daemon, {
      sessionId,
      hosts: [{ fingerprint: 'fp-r1', hostname: 'rtr-1' }],
      ips: shared.map((mac, i) => ({ hostFingerprint: 'fp-r1', address: `10.7.0.${i + 1}`, mac })),
    });
    expect(await hostIds(s)).toHaveLength(1);
    for (const [i, mac] of shared.entries()) {
      await ingest(t, s.daemon, { sessionId, hosts: [{ fingerprint: `fp-other-${i}`, hostname: `other-${i}` }], ips: [{ hostFingerprint: `fp-other-${i}`, address: `10.7.0.${50 + i}`, mac }] });
      expect(await hostIds(s)).toHaveLength(2 + i);
    }
    const hosts = await list(t, s, 'hosts');
    expect(hostByName(hosts, 'rtr-1').addresses).toEqual(['10.7.0.1', '10.7.0.2', '10.7.0.3']);
    for (const [i, mac] of shared.entries()) expect(hostByName(hosts, `other-${i}`)).toMatchObject({ addresses: [`10.7.0.${50 + i}`], macs: [mac] });
  });

  it('makes one host of two new fingerprints of one batch that share an identifying MAC, as two batches would', async () => {
    const { s, sessionId } = await siteSession();
    // Two batches: the second fingerprint joins the first's host.
    await ingest(t, s.daemon, { sessionId, ips: [{ hostFingerprint: 'fp-arp-1', address: '10.7.0.80', mac: '00:16:3e:66:66:66' }] });
    await ingest(t, s.daemon, { sessionId, ips: [{ hostFingerprint: 'fp-snmp-1', address: '10.7.0.81', mac: '00:16:3e:66:66:66' }] });
    expect(await hostIds(s)).toHaveLength(1);
    // One batch with the same shape must end the same way.
    await ingest(t, s.daemon, {
      sessionId,
      ips: [
        { hostFingerprint: 'fp-arp-2', address: '10.7.0.90', mac: '00:16:3e:77:77:77' },
        { hostFingerprint: 'fp-snmp-2', address: '10.7.0.91', mac: '00:16:3e:77:77:77' },
      ],
    });
    const hosts = await list(t, s, 'hosts');
    expect(hosts.map((h) => h.addresses).sort()).toEqual([['10.7.0.80', '10.7.0.81'], ['10.7.0.90', '10.7.0.91']]);
  });

  it('merges by address when no MAC matches, and prefers a MAC match to an address match', async () => {
    const { s, sessionId } = await siteSession();
    await ingest(t, s.daemon, {
      sessionId,
      hosts: [{ fingerprint: 'fp-p', hostname: 'printer' }, { fingerprint: 'fp-q', hostname: 'nas' }],
      ips: [{ hostFingerprint: 'fp-p', address: '10.7.0.30' }, { hostFingerprint: 'fp-q', address: '10.7.0.31', mac: '00:16:3e:31:31:31' }],
    });
    const before = await list(t, s, 'hosts');
    // No MAC: the address names the printer.
    await ingest(t, s.daemon, { sessionId, ips: [{ hostFingerprint: 'fp-p-snmp', address: '10.7.0.30' }], hosts: [{ fingerprint: 'fp-p-snmp', vendor: 'HP' }] });
    // The NAS's MAC with the printer's address: the MAC wins.
    await ingest(t, s.daemon, { sessionId, ips: [{ hostFingerprint: 'fp-q-dhcp', address: '10.7.0.30', mac: '00:16:3e:31:31:31' }] });
    const hosts = await list(t, s, 'hosts');
    expect(hosts.map((h) => h.id).sort()).toEqual(before.map((h) => h.id).sort());
    expect(hostByName(hosts, 'printer')).toMatchObject({ vendor: 'HP', addresses: ['10.7.0.30'] });
    expect(hostByName(hosts, 'nas')).toMatchObject({ addresses: ['10.7.0.30', '10.7.0.31'], macs: ['00:16:3e:31:31:31'] });
    const fps = await fingerprintsOf(t, s.org.organisationId);
    expect(fps.get(hostByName(hosts, 'printer').id)).toEqual(['fp-p', 'fp-p-snmp']);
    expect(fps.get(hostByName(hosts, 'nas').id)).toEqual(['fp-q', 'fp-q-dhcp']);
  });

  it('matches MACs and addresses only within the daemon\'s site: the same MAC or address in another site makes a new host', async () => {
    const { s, sessionId } = await siteSession('ams-1');
    await ingest(t, s.daemon, { sessionId, hosts: [{ fingerprint: 'fp-ams', hostname: 'ams-host' }], ips: [{ hostFingerprint: 'fp-ams', address: '10.7.0.40', mac: '00:16:3e:40:40:40' }] });
    const fra = await onlineDaemon(t, s.org, { siteCode: 'fra-1' });
    const fraSite = await siteIdOf(t, s.org, 'fra-1');
    const fraNet = await createNetwork(t, { ...s, siteId: fraSite }, '10.8.0.0/24');
    const fraSession = await startSession(t, s, fraNet, fra);
    await ingest(t, fra, { sessionId: fraSession, hosts: [{ fingerprint: 'fp-fra', hostname: 'fra-host' }], ips: [{ hostFingerprint: 'fp-fra', address: '10.7.0.40', mac: '00:16:3e:40:40:40' }] });
    const hosts = await list(t, s, 'hosts');
    expect(hosts).toHaveLength(2);
    expect(hostByName(hosts, 'ams-host').siteId).toBe(s.siteId);
    expect(hostByName(hosts, 'fra-host').siteId).toBe(fraSite);
  });

  it('never erases a known fact with an absent one: a later batch without hostname, os or MAC keeps them', async () => {
    const { s, sessionId } = await siteSession();
    await ingest(t, s.daemon, {
      sessionId,
      hosts: [{ fingerprint: 'fp-k', hostname: 'keeper', fqdn: 'keeper.example.net', os: 'FreeBSD 14', vendor: 'Supermicro', deviceType: 'server', interfaces: [{ name: 'em0', mac: '00:16:3e:0b:0b:0b' }] }],
      ips: [{ hostFingerprint: 'fp-k', address: '10.7.0.60', mac: '00:16:3e:0b:0b:0b' }],
      ports: [{ fingerprint: 'fp-k', address: '10.7.0.60', protocol: 'tcp', number: 22, banner: 'SSH-2.0-OpenSSH_9.7 FreeBSD' }],
      services: [{ fingerprint: 'fp-k', address: '10.7.0.60', protocol: 'tcp', port: 22, name: 'ssh', product: 'OpenSSH', version: '9.7', cpe: 'cpe:2.3:a:openbsd:openssh:9.7:*:*:*:*:*:*:*' }],
      neighbors: [{ fingerprint: 'fp-k', localInterface: 'em0', remoteChassisId: 'sw-chassis-1', remotePortId: 'ge-1/0/3', remoteSystemName: 'access-2', protocol: 'cdp' }],
      routes: [{ fingerprint: 'fp-k', destination: '10.0.0.0/8', nextHop: '10.7.0.1', interface: 'em0', metric: 5 }],
    });
    const before = await canonicalInventory(t, s);
    // A second session of the same network sees the same things with fewer details.
    await ingest(t, s.daemon, { sessionId, final: true });
    const second = await startSession(t, s, (await getScan(t, s, sessionId)).networkId);
    await ingest(t, s.daemon, {
      sessionId: second,
      hosts: [{ fingerprint: 'fp-k', interfaces: [{ name: 'em0' }] }],
      ips: [{ hostFingerprint: 'fp-k', address: '10.7.0.60' }],
      ports: [{ fingerprint: 'fp-k', address: '10.7.0.60', protocol: 'tcp', number: 22 }],
      services: [{ fingerprint: 'fp-k', address: '10.7.0.60', protocol: 'tcp', port: 22 }],
      neighbors: [{ fingerprint: 'fp-k', localInterface: 'em0', remoteChassisId: 'sw-chassis-1', protocol: 'cdp' }],
      routes: [{ fingerprint: 'fp-k', destination: '10.0.0.0/8', interface: 'em0' }],
      final: true,
    });
    expect(await canonicalInventory(t, s)).toEqual(before);
    expect(hostByName(await list(t, s, 'hosts'), 'keeper')).toMatchObject({ fqdn: 'keeper.example.net', os: 'FreeBSD 14', macs: ['00:16:3e:0b:0b:0b'] });
  });

  /** fp-sw on 10.7.0.70 with a filtered SNMP port, VLAN 20 and LAG ae1 with their member lists; the same session goes on. */
  async function switchSeen() {
    const { s, sessionId } = await siteSession();
    await ingest(t, s.daemon, {
      sessionId,
      ports: [{ fingerprint: 'fp-sw', address: '10.7.0.70', protocol: 'udp', number: 161, state: 'filtered' }],
      vlans: [{ fingerprint: 'fp-sw', vlanId: 20, name: 'voice', tagged: ['ge-0/0/1'], untagged: ['ge-0/0/9'] }],
      lagGroups: [{ fingerprint: 'fp-sw', name: 'ae1', protocol: 'lacp', members: ['ge-0/0/4', 'ge-0/0/5'] }],
    });
    const [sw] = await canonicalInventory(t, s);
    expect(sw!.services).toEqual([expect.objectContaining({ port: 161, state: 'filtered' })]);
    return { s, sessionId, sw: sw! };
  }

  it('never erases a VLAN\'s tagged and untagged lists with a later VLAN observation that leaves them out', async () => {
    const { s, sessionId, sw } = await switchSeen();
    await ingest(t, s.daemon, { sessionId, vlans: [{ fingerprint: 'fp-sw', vlanId: 20 }] });
    expect((await canonicalInventory(t, s))[0]!.vlans).toEqual(sw.vlans);
  });

  it('never erases a LAG group\'s members with a later LAG observation that leaves them out', async () => {
    const { s, sessionId, sw } = await switchSeen();
    await ingest(t, s.daemon, { sessionId, lagGroups: [{ fingerprint: 'fp-sw', name: 'ae1' }] });
    expect((await canonicalInventory(t, s))[0]!.lagGroups).toEqual(sw.lagGroups);
  });

  it('keeps a port\'s observed state when a later service identification of that port carries none', async () => {
    const { s, sessionId } = await switchSeen();
    await ingest(t, s.daemon, { sessionId, services: [{ fingerprint: 'fp-sw', address: '10.7.0.70', protocol: 'udp', port: 161, name: 'snmp' }] });
    expect((await list(t, s, 'services')).map((x) => ({ port: x.port, state: x.state, name: x.name }))).toEqual([{ port: 161, state: 'filtered', name: 'snmp' }]);
  });
});

// =============================================================================================

describe('unusual values in a batch: refused with 400 naming the field, or stored, never a 500', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await buildTestApp({ env: ENV });
  });
  afterAll(() => t.close());

  async function session(cidr = '10.10.0.0/24', networkCidrs = ['10.0.0.0/8']) {
    const s = await scanningOrg(t, { networkCidrs });
    return { s, sessionId: await startSession(t, s, await createNetwork(t, s, cidr)) };
  }

  it('takes one IPv6 address written compressed and in full within one batch as one address of the host', async () => {
    const { s, sessionId } = await session('2001:db8:0:1::/64', ['2001:db8::/32']);
    const res = await observe(t, s.daemon, {
      sessionId,
      hosts: [{ fingerprint: 'fp-v6', hostname: 'v6-host' }],
      ips: [{ hostFingerprint: 'fp-v6', address: '2001:db8:0:1::10', family: 6, mac: '00:16:3e:06:00:10' }],
      ports: [{ fingerprint: 'fp-v6', address: '2001:DB8:0:1:0:0:0:10', protocol: 'tcp', number: 22 }],
    });
    expect(res.statusCode, res.body).toBe(200);
    const host = hostByName(await list(t, s, 'hosts'), 'v6-host');
    expect(host).toMatchObject({ addresses: ['2001:db8:0:1::10'], macs: ['00:16:3e:06:00:10'], openPortCount: 1 });
  });

  it('refuses a route whose destination is not a CIDR, and a metric beyond 32 bits, with 400 naming them', async () => {
    const { s, sessionId } = await session();
    const res = await observe(t, s.daemon, {
      sessionId,
      hosts: [{ fingerprint: 'fp-r', hostname: 'rtr' }],
      routes: [{ fingerprint: 'fp-r', destination: 'default', nextHop: '10.10.0.1' }, { fingerprint: 'fp-r', destination: '10.0.0.0/8', metric: 3_000_000_000 }],
    });
    expect(res.statusCode, res.body).toBe(400);
    expect(res.json().code).toBe('validation_failed');
    expect(res.json().issues.map((i: { path: string }) => i.path)).toEqual(expect.arrayContaining(['body.routes.0.destination', 'body.routes.1.metric']));
    expect(await count(t, 'hosts', s.org.organisationId)).toBe(0);
  });

  it('refuses a tls sha256 that is not 64 hex digits with 400 naming it', async () => {
    const { s, sessionId } = await session();
    const res = await observe(t, s.daemon, {
      sessionId,
      tls: [{ fingerprint: 'fp-t', address: '10.10.0.5', port: 443, notBefore: '2025-01-01T00:00:00Z', notAfter: '2035-01-01T00:00:00Z', sha256: 'ab'.repeat(35) }],
    });
    expect(res.statusCode, res.body).toBe(400);
    expect(res.json().code).toBe('validation_failed');
    expect(res.json().issues.map((i: { path: string }) => i.path)).toContain('body.tls.0.sha256');
  });

  it('does not lose a batch to a 500 when its stats count more ports than a 32-bit integer holds (a /8 sweep)', async () => {
    const { s, sessionId } = await session();
    const res = await observe(t, s.daemon, {
      sessionId,
      hosts: [{ fingerprint: 'fp-big', hostname: 'big-sweep' }],
      stats: { hostsTotal: 16_777_214, hostsScanned: 16_777_214, portsScanned: 16_777_214_000 },
    });
    expect(res.statusCode, res.body).toBeLessThan(500);
  });
});

// =============================================================================================

describe('certificates from tls observations (trustStatus of decisions.md)', () => {
  let t: TestApp;
  let dir: string;
  let pem: string;
  let sha: string;
  beforeAll(async () => {
    t = await buildTestApp({ env: ENV });
    dir = mkdtempSync(join(tmpdir(), 'surveyor-tls-'));
    const key = join(dir, 'key.pem');
    const cert = join(dir, 'cert.pem');
    execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', cert, '-days', '30', '-subj', '/CN=test.example'], { stdio: 'ignore' });
    pem = readFileSync(cert, 'utf8');
    sha = new X509Certificate(pem).fingerprint256.replace(/:/g, '').toLowerCase();
  });
  afterAll(async () => {
    rmSync(dir, { recursive: true, force: true });
    await t.close();
  });

  it('stores a self-signed chain as self_signed with the subject and validity read from the certificate', async () => {
    const s = await scanningOrg(t);
    const sessionId = await startSession(t, s, await createNetwork(t, s, '10.6.0.0/24'));
    await ingest(t, s.daemon, {
      sessionId,
      hosts: [{ fingerprint: 'fp-tls', hostname: 'tls-1' }],
      tls: [{ fingerprint: 'fp-tls', address: '10.6.0.5', port: 8443, chainPem: [pem], sha256: sha.toUpperCase().replace(/(..)(?!$)/g, '$1:') }],
    });
    const host = hostByName(await list(t, s, 'hosts'), 'tls-1');
    const certs = await list(t, s, 'certificates');
    expect(certs).toHaveLength(1);
    const c = certs[0]!;
    expect(c).toMatchObject({ hostId: host.id, address: '10.6.0.5', port: 8443, fingerprint: sha, trustStatus: 'self_signed' });
    expect(c.subject).toContain('CN=test.example');
    expect(c.issuer).toContain('CN=test.example');
    expect(Math.abs(Date.parse(c.notAfter) - (Date.now() + 30 * DAY))).toBeLessThan(DAY);
    expect(Math.abs(Date.parse(c.notBefore) - Date.now())).toBeLessThan(DAY);
    const stored = (await sql<{ chain_pem: string[] }>`select chain_pem from certificates where organisation_id = ${s.org.organisationId}`.execute(t.database.db)).rows;
    expect(stored).toHaveLength(1);
    expect(stored[0]!.chain_pem).toHaveLength(1);
    expect(stored[0]!.chain_pem[0]!.trim()).toBe(pem.trim());
    expect(host.addresses).toEqual(['10.6.0.5']);
  });

  it('marks a certificate without a chain whose notAfter has passed as expired, taking subject and issuer from the observation', async () => {
    const s = await scanningOrg(t);
    const sessionId = await startSession(t, s, await createNetwork(t, s, '10.6.0.0/24'));
    const old = hex64();
    await ingest(t, s.daemon, {
      sessionId,
      tls: [{ fingerprint: 'fp-old', address: '10.6.0.9', port: 443, subject: 'CN=old.example', issuer: 'CN=Old CA', notBefore: '2020-01-01T00:00:00Z', notAfter: '2021-01-01T00:00:00Z', sha256: old }],
    });
    const certs = await list(t, s, 'certificates');
    expect(certs).toEqual([expect.objectContaining({ fingerprint: old, trustStatus: 'expired', subject: 'CN=old.example', issuer: 'CN=Old CA', notAfter: '2021-01-01T00:00:00.000Z', port: 443 })]);
    expect((await list(t, s, 'certificates', '&trustStatus=expired')).map((c) => c.fingerprint)).toEqual([old]);
  });
});

// =============================================================================================
// Property: a replayed, reordered, split or duplicated delivery converges on one clean delivery.

interface GenPort {
  protocol: 'tcp' | 'udp';
  number: number;
  state: 'open' | 'closed' | 'filtered';
  banner: string | undefined;
  service: { name: string | undefined; product: string | undefined; version: string | undefined; cpe: string | undefined } | null;
  /** A second, bare service row for the same port (only the key fields): absent must not erase. */
  bareService: boolean;
}
interface GenHost {
  hostname: string | undefined;
  os: string | undefined;
  vendor: string | undefined;
  parent: number | null;
  addresses: { octet: number; mac: boolean }[];
  iface: boolean;
  bareHost: boolean;
  ports: GenPort[];
}

const opt = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: undefined });

const portArb: fc.Arbitrary<GenPort> = fc.record({
  protocol: fc.constantFrom('tcp' as const, 'udp' as const),
  number: fc.integer({ min: 1, max: 65535 }),
  state: fc.constantFrom('open' as const, 'open' as const, 'closed' as const, 'filtered' as const),
  banner: opt(fc.constantFrom('SSH-2.0-OpenSSH_9.6', 'HTTP/1.1 200 OK', '220 mail ESMTP')),
  service: fc.option(
    fc.record({
      name: opt(fc.constantFrom('ssh', 'http', 'smtp', 'snmp')),
      product: opt(fc.constantFrom('OpenSSH', 'nginx', 'Postfix')),
      version: opt(fc.constantFrom('1.0', '9.6p1', '2.4.58')),
      cpe: opt(fc.constantFrom('cpe:2.3:a:openbsd:openssh:9.6:*:*:*:*:*:*:*', 'cpe:2.3:a:f5:nginx:1.24.0:*:*:*:*:*:*:*')),
    }),
    { nil: null },
  ),
  bareService: fc.boolean(),
});

const hostArb = (i: number): fc.Arbitrary<GenHost> =>
  fc.record({
    hostname: opt(fc.constant(`host-${i}`)),
    os: opt(fc.constantFrom('Linux 6.8', 'Windows Server 2022', 'JunOS 23.2')),
    vendor: opt(fc.constantFrom('Dell', 'Juniper', 'Cisco')),
    parent: i === 0 ? fc.constant(null) : fc.option(fc.integer({ min: 0, max: i - 1 }), { nil: null }),
    addresses: fc.uniqueArray(fc.record({ octet: fc.integer({ min: 1, max: 254 }), mac: fc.boolean() }), { minLength: 1, maxLength: 3, selector: (a) => a.octet }),
    iface: fc.boolean(),
    bareHost: fc.boolean(),
    ports: fc.uniqueArray(portArb, { maxLength: 4, selector: (p) => `${p.protocol}/${p.number}` }),
  });

const scanArb = fc.integer({ min: 1, max: 4 }).chain((n) => fc.tuple(...Array.from({ length: n }, (_, i) => hostArb(i))));

type Element = { kind: 'hosts' | 'ips' | 'ports' | 'services'; row: Json };

/** The scan as single rows: every host, address, port and service observation, in a natural order. */
function elementsOf(scan: GenHost[], run: string): Element[] {
  const fp = (i: number) => `fp-${run}-${i}`;
  const hex = (n: number) => n.toString(16).padStart(2, '0');
  const address = (i: number, octet: number) => `10.9.${i}.${octet}`;
  const mac = (i: number, octet: number) => `00:16:3e:${hex(i)}:${hex(octet)}:01`;
  const out: Element[] = [];
  scan.forEach((h, i) => {
    const first = h.addresses[0]!;
    out.push({
      kind: 'hosts',
      row: {
        fingerprint: fp(i),
        ...(h.hostname !== undefined ? { hostname: h.hostname } : {}),
        ...(h.os !== undefined ? { os: h.os } : {}),
        ...(h.vendor !== undefined ? { vendor: h.vendor } : {}),
        ...(h.parent !== null ? { parentFingerprint: fp(h.parent) } : {}),
        ...(h.iface ? { interfaces: [{ name: 'eth0', ...(first.mac ? { mac: mac(i, first.octet) } : {}), addresses: [address(i, first.octet)] }] } : {}),
      },
    });
    if (h.bareHost) out.push({ kind: 'hosts', row: { fingerprint: fp(i) } });
    for (const a of h.addresses) out.push({ kind: 'ips', row: { hostFingerprint: fp(i), address: address(i, a.octet), family: 4, ...(a.mac ? { mac: mac(i, a.octet) } : {}) } });
    for (const p of h.ports) {
      const key = { fingerprint: fp(i), address: address(i, first.octet), protocol: p.protocol };
      out.push({ kind: 'ports', row: { ...key, number: p.number, state: p.state, ...(p.banner !== undefined ? { banner: p.banner } : {}) } });
      if (p.service) {
        const sv = Object.fromEntries(Object.entries(p.service).filter(([, v]) => v !== undefined));
        out.push({ kind: 'services', row: { ...key, port: p.number, ...sv } });
      }
      if (p.bareService) out.push({ kind: 'services', row: { ...key, port: p.number } });
    }
  });
  return out;
}

function batchOf(sessionId: string, elements: Element[], extra: Json = {}): Json {
  const b: Json = { sessionId, hosts: [], ips: [], ports: [], services: [], ...extra };
  for (const e of elements) b[e.kind].push(e.row);
  return b;
}

/** How a messy delivery handles the elements: duplicated, shuffled, cut into batches, batches resent. */
const deliveryArb = (n: number) =>
  fc.record({
    duplicate: fc.array(fc.boolean(), { minLength: n, maxLength: n }),
    order: fc.array(fc.integer(), { minLength: 2 * n, maxLength: 2 * n }),
    cuts: fc.uniqueArray(fc.integer({ min: 1, max: Math.max(1, 2 * n) }), { maxLength: 6 }),
    resend: fc.array(fc.record({ batch: fc.nat(), at: fc.nat() }), { maxLength: 3 }),
    late: fc.nat(),
  });

function messyBatches(elements: Element[], d: { duplicate: boolean[]; order: number[]; cuts: number[]; resend: { batch: number; at: number }[] }): Element[][] {
  const all = [...elements, ...elements.filter((_, i) => d.duplicate[i])];
  const shuffled = all.map((e, i) => ({ e, k: d.order[i] ?? 0, i })).sort((a, b) => a.k - b.k || a.i - b.i).map((x) => x.e);
  const cuts = [...new Set(d.cuts.filter((c) => c < shuffled.length))].sort((a, b) => a - b);
  const batches: Element[][] = [];
  let from = 0;
  for (const c of [...cuts, shuffled.length]) {
    batches.push(shuffled.slice(from, c));
    from = c;
  }
  for (const r of d.resend) batches.splice(r.at % (batches.length + 1), 0, batches[r.batch % batches.length]!);
  return batches;
}

describe('replayed, reordered, split and duplicated deliveries converge (property test)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await buildTestApp({ env: ENV });
  });
  afterAll(() => t.close());

  async function freshSession() {
    const s = await scanningOrg(t, { networkCidrs: ['10.9.0.0/16'] });
    const sessionId = await startSession(t, s, await createNetwork(t, s, '10.9.0.0/16'));
    return { s, sessionId };
  }

  it('leaves the inventory exactly as one clean delivery of the same scan would', { timeout: 180_000 }, async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(
        scanArb.chain((scan) => {
          const n = elementsOf(scan, 'x').length;
          return fc.tuple(fc.constant(scan), deliveryArb(n));
        }),
        async ([scan, delivery]) => {
          run++;
          const elements = elementsOf(scan, 'p');

          const clean = await freshSession();
          expect(await ingest(t, clean.s.daemon, batchOf(clean.sessionId, elements, { final: true }))).toMatchObject({ accepted: elements.length });
          expect((await getScan(t, clean.s, clean.sessionId)).state).toBe('completed');

          const messy = await freshSession();
          const batches = messyBatches(elements, delivery);
          for (const b of batches) await ingest(t, messy.s.daemon, batchOf(messy.sessionId, b));
          await ingest(t, messy.s.daemon, { sessionId: messy.sessionId, final: true });
          // A late duplicate after completion (a daemon retrying its final batch) changes nothing either.
          await ingest(t, messy.s.daemon, batchOf(messy.sessionId, batches[delivery.late % batches.length]!, { final: true }));
          expect((await getScan(t, messy.s, messy.sessionId)).state).toBe('completed');

          const expected = await canonicalInventory(t, clean.s);
          expect(expected).toHaveLength(scan.length);
          expect(await canonicalInventory(t, messy.s)).toEqual(expected);
        },
      ),
      { numRuns: 15, endOnFailure: true },
    );
    expect(run).toBeGreaterThanOrEqual(15);
  });
});

describe('text with the NUL character, which PostgreSQL cannot store (issue 4; spec 7)', () => {
  let t: TestApp;
  let s: Scanning;
  let sessionId: string;
  beforeAll(async () => {
    t = await buildTestApp({ env: ENV });
    s = await scanningOrg(t);
    sessionId = await startSession(t, s, await createNetwork(t, s, '10.0.0.0/24'));
  });
  afterAll(() => t.close());

  it('refuses an observation batch holding one with 400 validation_failed naming the field, and stores nothing of the batch', async () => {
    const res = await observe(t, s.daemon, { sessionId, hosts: [{ fingerprint: 'fp-ok', hostname: 'fine' }, { fingerprint: 'fp-nul', hostname: 'a\u0000b' }] });
    expect(res.statusCode, res.body).toBe(400);
    expect(res.json()).toMatchObject({ code: 'validation_failed', issues: [{ path: 'body.hosts.1.hostname', message: expect.stringContaining('NUL') }] });
    const hosts = await sql<{ n: number }>`select count(*)::int as n from hosts where organisation_id = ${s.org.organisationId}`.execute(t.database.db);
    expect(hosts.rows[0]!.n).toBe(0);
    // The same batch without it is taken.
    expect(await ingest(t, s.daemon, { sessionId, hosts: [{ fingerprint: 'fp-ok', hostname: 'fine' }, { fingerprint: 'fp-nul', hostname: 'ab' }] })).toEqual({ accepted: 2, dedupHits: 0, outOfWindow: 0 });
  });

  it('does not mistake an escaped backslash before "u0000" for a NUL', async () => {
    const res = await observe(t, s.daemon, { sessionId, hosts: [{ fingerprint: 'fp-bs', hostname: 'x\\u0000y' }] });
    expect(res.statusCode, res.body).toBe(200);
  });

  it('finds one at the bottom of a deeply nested body: a 400 naming it, not a stack overflow', async () => {
    const depth = 100_000;
    const res = await t.app.inject({
      method: 'POST', url: '/api/v1/networks', headers: { ...bearer(s.api), 'content-type': 'application/json' },
      payload: `{"name":${'['.repeat(depth)}"a\\u0000b"${']'.repeat(depth)},"cidr":"10.30.0.0/24"}`,
    });
    expect(res.statusCode, res.body).toBe(400);
    expect(res.json()).toMatchObject({ code: 'validation_failed', issues: [{ path: `body.name${'.0'.repeat(depth)}`, message: expect.stringContaining('NUL') }] });
  });

  it('refuses one in a query parameter or another route\'s body the same way', async () => {
    const q = await t.app.inject({ method: 'GET', url: '/api/v1/hosts?search=ab%00cd', headers: bearer(s.api) });
    expect(q.statusCode, q.body).toBe(400);
    expect(q.json()).toMatchObject({ code: 'validation_failed', issues: [{ path: 'query.search' }] });
    const n = await t.app.inject({ method: 'POST', url: '/api/v1/networks', headers: bearer(s.api), payload: { name: 'n\u0000', cidr: '10.20.0.0/24' } });
    expect(n.statusCode, n.body).toBe(400);
    expect(n.json()).toMatchObject({ code: 'validation_failed', issues: [{ path: 'body.name' }] });
  });
});
