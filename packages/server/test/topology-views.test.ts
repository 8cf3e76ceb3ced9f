import { createHash } from 'node:crypto';
import { XMLParser, XMLValidator } from 'fast-xml-parser';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { VIEW_NODE_HEIGHT } from '@surveyor/contract';
import { networkGraph } from '../src/topology/graph.js';
import { layeredLayout, placeNodes } from '../src/topology/layout.js';
import { JobRunner } from '../src/jobs/runner.js';
import { createLogger } from '../src/logger.js';
import { buildWebApp, jobDefinitions } from '../src/main.js';
import { addHost } from './fixtures.js';
import { type SeededOrg, type TestApp, bearer, buildTestApp, login, seedMemberWithKey, seedOrg } from './helpers.js';
import { type Json, type Scanning, createNetwork, ingest, scanningOrg, startSession } from './scanning.js';
import { daemonHeaders } from './daemon-client.js';
import { decodeDrawio } from './drawio-decode.js';

// Topology views (issue #15): built from what daemons report (LLDP/CDP, VLANs, LAGs, routes,
// addresses; flows), through the real endpoints and the job runner, on PostgreSQL and PGlite.

const ENV = { SERVICE_RATE_LIMIT_DAEMON_PER_MINUTE: '1000000', SERVICE_RATE_LIMIT_KEY_PER_MINUTE: '1000000', SERVICE_RATE_LIMIT_ANON_PER_MINUTE: '1000000' };
const WEB_NAME = 'web "prod" <1> & #2;';
const AP_NAME = 'ap-7 [lobby] |x|';

function networkBatch(sessionId: string): Json {
  return {
    sessionId,
    final: false,
    hosts: [
      { fingerprint: 'fp-sw1', hostname: 'sw1', interfaces: [{ name: 'xe-1', mac: '02:00:00:00:01:01' }, { name: 'xe-2', mac: '02:00:00:00:01:02' }, { name: 'ge-5', mac: '02:00:00:00:01:05' }] },
      { fingerprint: 'fp-sw2', hostname: 'sw2', interfaces: [{ name: 'xe-1', mac: '02:00:00:00:02:01' }, { name: 'xe-2', mac: '02:00:00:00:02:02' }] },
      { fingerprint: 'fp-rtr', hostname: 'rtr', interfaces: [{ name: 'ge-0', mac: '02:00:00:00:03:01', addresses: ['10.1.0.1'] }] },
      { fingerprint: 'fp-web', hostname: WEB_NAME },
      { fingerprint: 'fp-client', hostname: 'client' },
    ],
    ips: [
      { hostFingerprint: 'fp-sw1', address: '10.1.0.2', family: 4 },
      { hostFingerprint: 'fp-sw2', address: '10.1.0.3', family: 4 },
      { hostFingerprint: 'fp-web', address: '10.1.0.20', family: 4 },
      { hostFingerprint: 'fp-client', address: '10.1.0.30', family: 4 },
    ],
    ports: [{ fingerprint: 'fp-web', address: '10.1.0.20', protocol: 'tcp', number: 443, state: 'open' }],
    services: [{ fingerprint: 'fp-web', address: '10.1.0.20', protocol: 'tcp', port: 443, name: 'https', signatureSource: 'core', confidence: 90 }],
    neighbors: [
      // sw1 and sw2 see each other on both members of their LAGs: one edge.
      { fingerprint: 'fp-sw1', localInterface: 'xe-1', remoteChassisId: '02:00:00:00:02:01', remotePortId: 'xe-1', remoteSystemName: 'sw2', managementAddress: '10.1.0.3', protocol: 'lldp' },
      { fingerprint: 'fp-sw1', localInterface: 'xe-2', remoteChassisId: '02:00:00:00:02:01', remotePortId: 'xe-2', remoteSystemName: 'sw2', managementAddress: '10.1.0.3', protocol: 'lldp' },
      { fingerprint: 'fp-sw2', localInterface: 'xe-1', remoteChassisId: '02:00:00:00:01:01', remotePortId: 'xe-1', remoteSystemName: 'sw1', protocol: 'lldp' },
      { fingerprint: 'fp-sw2', localInterface: 'xe-2', remoteChassisId: '02:00:00:00:01:01', remotePortId: 'xe-2', remoteSystemName: 'sw1', protocol: 'cdp' },
      // A neighbour the inventory does not hold: a device node by chassis id.
      { fingerprint: 'fp-sw1', localInterface: 'ge-5', remoteChassisId: 'aa:bb:cc:dd:ee:ff', remotePortId: 'eth0', remoteSystemName: AP_NAME, protocol: 'lldp' },
    ],
    vlans: [
      { fingerprint: 'fp-sw1', vlanId: 10, name: 'users', tagged: ['ae0'], untagged: [] },
      { fingerprint: 'fp-sw1', vlanId: 20, name: 'voice', tagged: ['xe-1', 'xe-2'], untagged: [] },
      { fingerprint: 'fp-sw1', vlanId: 30, name: 'ap', tagged: [], untagged: ['ge-5'] },
      { fingerprint: 'fp-sw2', vlanId: 10, name: 'users', tagged: ['ae0'], untagged: [] },
    ],
    lagGroups: [
      { fingerprint: 'fp-sw1', name: 'ae0', protocol: 'lacp', members: ['xe-1', 'xe-2'] },
      { fingerprint: 'fp-sw2', name: 'ae0', protocol: 'lacp', members: ['xe-1', 'xe-2'] },
    ],
    routes: [
      { fingerprint: 'fp-rtr', destination: '10.2.0.0/24', nextHop: '10.1.0.3', interface: 'ge-0', metric: 1 },
      { fingerprint: 'fp-rtr', destination: '0.0.0.0/0', nextHop: '10.1.0.2', interface: 'ge-0', metric: 10 },
    ],
  };
}

describe('topology views: build, positions, share links, exports (issue #15; spec 4.6)', () => {
  let t: TestApp;
  let s: Scanning;
  let org: SeededOrg;
  let other: SeededOrg;
  let owner: Record<string, string>;
  let viewer: Record<string, string>;
  let apiKey: string;
  let net1: string;
  let net2: string;
  let ids: Record<string, string>;
  let networkView: string;
  let appView: string;
  let otherView: string;
  let sessionId: string;

  const req = (method: 'GET' | 'POST' | 'PUT' | 'PATCH', url: string, headers: Record<string, string> = {}, payload?: unknown) =>
    t.app.inject({ method, url, headers, ...(payload !== undefined ? { payload: payload as object } : {}) });
  const session = async (email: string) => {
    const x = await login(t.app, email);
    return { cookie: x.cookie, 'x-csrf-token': x.csrfToken };
  };
  const expectProblem = (res: Awaited<ReturnType<typeof req>>, status: number, code: string, what = '') => {
    expect(res.statusCode, `${what}: ${res.body}`).toBe(status);
    expect(res.json().code, what).toBe(code);
    return res.json();
  };
  const hostId = async (hostname: string) =>
    (await t.database.db.selectFrom('hosts').select('id').where('organisation_id', '=', org.organisationId).where('hostname', '=', hostname).executeTakeFirstOrThrow()).id;
  const graph = async (id: string) => {
    const res = await req('GET', `/api/v1/topology/${id}/graph`, owner);
    expect(res.statusCode, res.body).toBe(200);
    return res.json() as Json;
  };
  const lastChange = async () =>
    Number((await sql<{ id: string | null }>`select max(id)::text as id from change_log where organisation_id = ${org.organisationId}`.execute(t.database.db)).rows[0]?.id ?? 0);
  const regenerate = async () => {
    const res = await req('POST', '/api/v1/topology/regenerate', owner);
    expect(res.statusCode, res.body).toBe(200);
    return res.json().data as Json[];
  };

  beforeAll(async () => {
    t = await buildTestApp({ env: ENV });
    s = await scanningOrg(t, { siteCode: 'dc1', networkCidrs: ['10.0.0.0/8'] });
    org = s.org;
    net1 = await createNetwork(t, s, '10.1.0.0/24');
    net2 = await createNetwork(t, s, '10.2.0.0/24');
    sessionId = await startSession(t, s, net1);
    await ingest(t, s.daemon, networkBatch(sessionId));
    const flows = [{ bucketStart: new Date(Date.now() - 3_600_000).toISOString(), srcIp: '10.1.0.30', dstIp: '10.1.0.20', dstPort: 443, protocol: 'tcp', packets: 4, bytes: 400, source: 'ebpf' }];
    const f = await req('POST', '/api/v1/daemon/flows', daemonHeaders(s.daemon.token, s.daemon.id), { flows, dropped: 0 });
    expect(f.statusCode, f.body).toBe(200);
    ids = Object.fromEntries(await Promise.all(['sw1', 'sw2', 'rtr', WEB_NAME, 'client'].map(async (h) => [h, await hostId(h)])));
    owner = await session(org.ownerEmail);
    viewer = await session((await seedMemberWithKey(t.database, org, 'viewer', ['inventory:read'])).email);
    apiKey = (await seedMemberWithKey(t.database, org, 'admin', ['inventory:read'])).token;
    other = await seedOrg(t.database);
    await addHost(t.database.db, other.organisationId, { hostname: 'secret-host', addresses: ['10.1.0.20'] });
    const o = await req('POST', '/api/v1/topology/regenerate', await session(other.ownerEmail));
    expect(o.statusCode, o.body).toBe(200);
    otherView = (o.json().data as Json[]).find((v) => v.kind === 'network' && v.nodeCount > 0)!.id;
  });
  afterAll(() => t.close());

  it('POST /api/v1/topology/regenerate builds the network and application views of each site through the job runner', async () => {
    const before = await lastChange();
    const views = await regenerate();
    // The live stream hears of each rebuilt view once (topology.updated), not once per step of the build.
    const logged = await sql<{ entity_id: string; n: number }>`
      select entity_id, count(*)::int as n from change_log
      where organisation_id = ${org.organisationId} and entity_type = 'topology' and action = 'updated' and id > ${before}
      group by entity_id`.execute(t.database.db);
    expect(logged.rows.map((r) => r.n)).toEqual(views.map(() => 1));
    expect(logged.rows.map((r) => r.entity_id).sort()).toEqual(views.map((v) => v.id).sort());
    const net = views.find((v) => v.kind === 'network' && v.siteId === s.siteId)!;
    const app = views.find((v) => v.kind === 'application' && v.siteId === s.siteId)!;
    // 5 hosts, the LLDP device and the network a route leads to (10.1.0.0/24 is the hosts' group,
    // not a node as well); 2 links and 2 routes (the addresses are the group).
    expect(net).toMatchObject({ status: 'ready', nodeCount: 7, edgeCount: 4, failureReason: null, builtAt: expect.any(String), groupBy: 'subnet', groupCount: 1 });
    expect(app).toMatchObject({ status: 'ready', nodeCount: 2, edgeCount: 1, failureReason: null, groupBy: 'subnet', groupCount: 1 });
    // The hosts without a site have their (empty) views too.
    expect(views.filter((v) => v.siteId === null).map((v) => v.kind).sort()).toEqual(['application', 'network']);
    networkView = net.id;
    appView = app.id;
    // The job's status records the admin run, with the views.
    const jobs = (await req('GET', '/api/v1/admin/jobs', owner)).json().data as Json[];
    expect(jobs).toContainEqual(expect.objectContaining({ job: 'topology.dependencies', organisationId: org.organisationId, outcome: 'ok', detail: expect.objectContaining({ views: views.length, failedViews: 0, trigger: 'admin' }) }));
    // The public collection counts what the view holds (spec 2.3).
    const pub = (await req('GET', `/api/v1/topologies?siteId=${s.siteId}&kind=network`, bearer(apiKey))).json().data as Json[];
    expect(pub).toEqual([expect.objectContaining({ id: networkView, nodeCount: 7, edgeCount: 4, status: 'ready' })]);
    expect(Object.keys(pub[0]!)).not.toContain('nodes');
  });

  it('the network view groups hosts by their network, links hosts by LLDP/CDP (one edge per LAG, with its VLANs), devices by chassis id, routes', async () => {
    const g = await graph(networkView);
    const [sw1, sw2, rtr, web, client] = ['sw1', 'sw2', 'rtr', WEB_NAME, 'client'].map((h) => `host:${ids[h]}`);
    const group = `group:subnet:net:${net1}`;
    expect(g.nodes.map((n: Json) => n.id).sort()).toEqual([group, sw1, sw2, rtr, web, client, 'device:aa:bb:cc:dd:ee:ff', `network:${net2}`].sort());
    for (const n of g.nodes) expect(Number.isFinite(n.x) && Number.isFinite(n.y), n.id).toBe(true);
    // A small view opens with its groups open: the members inside the group's frame.
    expect(g.groups).toEqual({ total: 1, expanded: [group], notExpanded: [] });
    const frame = g.nodes.find((n: Json) => n.id === group);
    expect(frame).toMatchObject({ kind: 'group', label: 'net 10.1.0.0/24', members: 5, expanded: true, group: null });
    for (const id of [sw1, sw2, rtr, web, client]) {
      const m = g.nodes.find((n: Json) => n.id === id);
      expect(m.group, id).toBe(group);
      expect(m.x >= frame.x && m.y >= frame.y && m.x + m.width <= frame.x + frame.width && m.y + m.height <= frame.y + frame.height, id).toBe(true);
    }
    expect(g.facets).toEqual({ vlans: [{ id: 10, name: 'users' }, { id: 20, name: 'voice' }, { id: 30, name: 'ap' }], services: [] });
    const lagId = `link:${[`${sw1}#ae0`, `${sw2}#ae0`].sort().join('|')}`;
    const lag = g.edges.find((e: Json) => e.id === lagId);
    expect(lag).toMatchObject({ kind: 'link', data: { lag: 'ae0', members: ['xe-1', 'xe-2'], vlans: [10, 20], protocols: ['cdp', 'lldp'] } });
    expect(g.edges.filter((e: Json) => e.kind === 'link')).toHaveLength(2);
    expect(g.edges.find((e: Json) => e.target === 'device:aa:bb:cc:dd:ee:ff' || e.source === 'device:aa:bb:cc:dd:ee:ff')).toMatchObject({ data: { vlans: [30] } });
    expect(g.nodes.find((n: Json) => n.id === 'device:aa:bb:cc:dd:ee:ff')).toMatchObject({ kind: 'device', label: AP_NAME });
    expect(g.edges.filter((e: Json) => e.kind === 'subnet')).toEqual([]);
    for (const e of g.edges) expect(e.edges, e.id).toBe(1);
    expect(g.edges.filter((e: Json) => e.kind === 'route').map((e: Json) => [e.source, e.target]).sort()).toEqual([[rtr, sw1], [rtr, `network:${net2}`]].sort());
    expect(g.nodes.find((n: Json) => n.id === sw1).data.vlans).toEqual([10, 20, 30]);
  });

  it('the application view has the hosts of the dependency edges and one edge per (caller, service)', async () => {
    const g = await graph(appView);
    const svc = (await t.database.db.selectFrom('services').select('id').where('organisation_id', '=', org.organisationId).where('port', '=', 443).executeTakeFirstOrThrow()).id;
    expect(g.nodes.map((n: Json) => n.id).sort()).toEqual([`group:subnet:net:${net1}`, `host:${ids.client}`, `host:${ids[WEB_NAME]}`].sort());
    expect(g.edges).toEqual([expect.objectContaining({ id: `dep:${ids.client}|${svc}`, source: `host:${ids.client}`, target: `host:${ids[WEB_NAME]}`, kind: 'dependency', label: 'https 443/tcp', edges: 1, data: expect.objectContaining({ service: 'https', port: 443 }) })]);
    expect(g.facets).toEqual({ vlans: [], services: ['https'] });
    expect(g.nodes.find((n: Json) => n.id === `host:${ids[WEB_NAME]}`).data.services).toEqual(['https']);
  });

  it('keeps saved positions across a regeneration, places new nodes with the layout, drops removed ones, keeps ids stable', async () => {
    const before = await graph(networkView);
    const web = `host:${ids[WEB_NAME]}`;
    const sw1 = `host:${ids.sw1}`;
    const res = await req('PUT', `/api/v1/topology/${networkView}/positions`, owner, { positions: [{ nodeId: web, x: 1234.5, y: -50 }, { nodeId: sw1, x: 10, y: 20 }] });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({ saved: 2 });
    // A member's position is kept relative to its group: moving the group moves it.
    const group = `group:subnet:net:${net1}`;
    const frame = before.nodes.find((n: Json) => n.id === group);
    const stored = async (id: string) => (await sql<{ x: number; y: number }>`select x, y from topology_nodes where topology_id = ${networkView} and node_id = ${id}`.execute(t.database.db)).rows[0];
    expect(await stored(web)).toEqual({ x: 1234.5 - frame.x, y: -50 - frame.y });
    expect((await req('PUT', `/api/v1/topology/${networkView}/positions`, owner, { positions: [{ nodeId: group, x: frame.x + 100, y: frame.y + 7 }] })).statusCode).toBe(200);
    const shifted = await graph(networkView);
    expect(shifted.nodes.find((n: Json) => n.id === web)).toMatchObject({ x: 1334.5, y: -43 });
    expect(shifted.nodes.find((n: Json) => n.id === sw1)).toMatchObject({ x: 110, y: 27 });
    expect((await req('PUT', `/api/v1/topology/${networkView}/positions`, owner, { positions: [{ nodeId: group, x: frame.x, y: frame.y }] })).statusCode).toBe(200);
    // The inventory changes: the route to 10.2.0.0/24 goes (its network node with it), a host appears.
    await sql`delete from host_routes where organisation_id = ${org.organisationId} and destination = '10.2.0.0/24'`.execute(t.database.db);
    const fresh = await addHost(t.database.db, org.organisationId, { hostname: 'printer', addresses: ['10.1.0.40'], siteId: s.siteId! });
    await regenerate();
    const after = await graph(networkView);
    const byId = new Map<string, Json>(after.nodes.map((n: Json) => [n.id, n]));
    expect(byId.get(web)).toMatchObject({ x: 1234.5, y: -50 });
    expect(byId.get(sw1)).toMatchObject({ x: 10, y: 20 });
    expect(byId.has(`network:${net2}`)).toBe(false);
    const printer = byId.get(`host:${fresh}`)!;
    expect(Number.isFinite(printer.x) && Number.isFinite(printer.y)).toBe(true);
    // Every node that stayed keeps its id and its position.
    for (const n of before.nodes as Json[]) {
      if (n.id === `network:${net2}` || n.id === web || n.id === sw1) continue;
      expect(byId.get(n.id), n.id).toMatchObject({ x: n.x, y: n.y });
    }
    const gone = await sql<{ n: number }>`select count(*)::int as n from topology_nodes where organisation_id = ${org.organisationId} and topology_id = ${networkView} and node_id = ${`network:${net2}`}`.execute(t.database.db);
    expect(gone.rows[0]!.n).toBe(0);
    expect(printer.group).toBe(group);
    // An audit row records who saved positions.
    const audit = await sql<{ action: string }>`select action from audit_log where organisation_id = ${org.organisationId} and target_id = ${networkView}`.execute(t.database.db);
    expect(audit.rows.map((r) => r.action)).toContain('topology.positions_saved');
  });

  it('refuses positions for unknown nodes, twice the same node, non-finite or out-of-range numbers and too many: 400 validation_failed naming the path', async () => {
    const g = await graph(networkView);
    const known = g.nodes[0].id as string;
    const bad = async (payload: unknown, path: string) => {
      const res = await t.app.inject({ method: 'PUT', url: `/api/v1/topology/${networkView}/positions`, headers: { ...owner, 'content-type': 'application/json' }, payload: typeof payload === 'string' ? payload : JSON.stringify(payload) });
      const body = expectProblem(res, 400, 'validation_failed', path);
      expect(body.issues.map((i: Json) => i.path), path).toContain(path);
    };
    await bad({ positions: [{ nodeId: known, x: 1, y: 1 }, { nodeId: 'host:00000000-0000-0000-0000-000000000000', x: 1, y: 2 }] }, 'body.positions.1.nodeId');
    await bad({ positions: [{ nodeId: known, x: 1, y: 1 }, { nodeId: known, x: 3, y: 2 }] }, 'body.positions.1.nodeId');
    await bad(`{"positions":[{"nodeId":${JSON.stringify(known)},"x":1e999,"y":0}]}`, 'body.positions.0.x');
    await bad({ positions: [{ nodeId: known, x: 0, y: 2_000_000 }] }, 'body.positions.0.y');
    await bad({ positions: [{ nodeId: known, x: 'a', y: 0 }] }, 'body.positions.0.x');
    await bad({ positions: Array.from({ length: 5001 }, () => ({ nodeId: known, x: 0, y: 0 })) }, 'body.positions');
    await bad({ positions: [{ nodeId: known, x: 0, y: 0 }], extra: 1 }, 'body');
    // Nothing was saved by any of them.
    expect((await graph(networkView)).nodes.find((n: Json) => n.id === known)).toMatchObject({ x: g.nodes[0].x, y: g.nodes[0].y });
  });

  it('a view becomes stale when a batch changes its inventory, and ready again when regenerated', async () => {
    await ingest(t, s.daemon, { sessionId, final: false, hosts: [{ fingerprint: 'fp-web', hostname: WEB_NAME, os: 'Linux 6.8' }] });
    expect((await graph(networkView)).topology.status).toBe('stale');
    await regenerate();
    expect((await graph(networkView)).topology).toMatchObject({ status: 'ready', failureReason: null });
  });

  it('a view whose build fails (the database refuses it) is failed with the reason, the others still built, the previous graph kept; the next good build clears it', async () => {
    const before = await graph(networkView);
    // A real refusal by the database, for this one view's nodes only.
    await sql.raw(`create function topology_test_refuse() returns trigger language plpgsql as $$ begin
      if new.topology_id = '${networkView}' then raise exception 'disk quota exceeded (test)'; end if; return new; end $$`).execute(t.database.db);
    await sql`create trigger topology_test_refuse before insert or update on topology_nodes for each row execute function topology_test_refuse()`.execute(t.database.db);
    try {
      expectProblem(await req('POST', '/api/v1/topology/regenerate', owner), 500, 'internal_error', 'regenerate with a failing view');
      const failed = await graph(networkView);
      expect(failed.topology).toMatchObject({ status: 'failed', failureReason: expect.stringMatching(/^The build failed: .*disk quota exceeded \(test\)/) });
      expect(failed.nodes.map((n: Json) => n.id).sort()).toEqual(before.nodes.map((n: Json) => n.id).sort());
      expect((await graph(appView)).topology).toMatchObject({ status: 'ready', failureReason: null });
      expectProblem(await req('POST', `/api/v1/topology/${networkView}/regenerate`, owner), 500, 'internal_error', 'one view');
    } finally {
      await sql`drop trigger topology_test_refuse on topology_nodes`.execute(t.database.db);
      await sql`drop function topology_test_refuse()`.execute(t.database.db);
    }
    const again = await regenerate();
    expect(again.find((v) => v.id === networkView)).toMatchObject({ status: 'ready', failureReason: null, nodeCount: 7 });
  });

  it('refuses the session endpoints to a viewer (403 forbidden), without CSRF (403 csrf_failed), with an API key or nothing (401), and another organisation\'s view (404)', async () => {
    const calls: [string, 'GET' | 'POST' | 'PUT' | 'PATCH', string, unknown?][] = [
      ['regenerate', 'POST', '/api/v1/topology/regenerate'],
      ['regenerate one', 'POST', `/api/v1/topology/${networkView}/regenerate`],
      ['group by', 'PATCH', `/api/v1/topology/${networkView}`, { groupBy: 'vlan' }],
      ['positions', 'PUT', `/api/v1/topology/${networkView}/positions`, { positions: [{ nodeId: `host:${ids.sw1}`, x: 0, y: 0 }] }],
      ['share', 'POST', `/api/v1/topology/${networkView}/share`, { enabled: true }],
      ['mermaid', 'GET', `/api/v1/topology/${networkView}/export/mermaid`],
      ['drawio', 'GET', `/api/v1/topology/${networkView}/export/drawio`],
    ];
    for (const [what, method, url, body] of calls) {
      expectProblem(await req(method, url, viewer, body), 403, 'forbidden', `viewer ${what}`);
      expectProblem(await req(method, url, bearer(apiKey), body), 401, 'unauthorized', `API key ${what}`);
      expectProblem(await req(method, url, {}, body), 401, 'unauthorized', `nothing ${what}`);
      if (method !== 'GET') expectProblem(await req(method, url, { cookie: owner.cookie! }, body), 403, 'csrf_failed', `no CSRF ${what}`);
    }
    // A viewer may look at a view (the console's page), not change it.
    expect((await req('GET', `/api/v1/topology/${networkView}/graph`, viewer)).statusCode).toBe(200);
    expect((await req('GET', `/api/v1/topology/${networkView}/search?q=sw`, viewer)).statusCode).toBe(200);
    expectProblem(await req('GET', `/api/v1/topology/${networkView}/graph`, bearer(apiKey)), 401, 'unauthorized', 'API key graph');
    const foreign: [string, 'GET' | 'POST' | 'PUT' | 'PATCH', string, unknown?][] = [
      ['graph', 'GET', `/api/v1/topology/${otherView}/graph`],
      ['search', 'GET', `/api/v1/topology/${otherView}/search?q=secret`],
      ['regenerate one', 'POST', `/api/v1/topology/${otherView}/regenerate`],
      ['group by', 'PATCH', `/api/v1/topology/${otherView}`, { groupBy: 'vlan' }],
      ['positions', 'PUT', `/api/v1/topology/${otherView}/positions`, { positions: [{ nodeId: 'host:x', x: 0, y: 0 }] }],
      ['share', 'POST', `/api/v1/topology/${otherView}/share`, { enabled: true }],
      ['revoke', 'POST', `/api/v1/topology/${otherView}/share`, { enabled: false }],
      ['mermaid', 'GET', `/api/v1/topology/${otherView}/export/mermaid`],
      ['drawio', 'GET', `/api/v1/topology/${otherView}/export/drawio`],
      ['unknown id', 'GET', '/api/v1/topology/00000000-0000-4000-8000-000000000000/graph'],
    ];
    for (const [what, method, url, body] of foreign) expectProblem(await req(method, url, owner, body), 404, 'not_found', `foreign ${what}`);
    expect((await t.database.db.selectFrom('topology_shares').select('topology_id').where('topology_id', '=', otherView).execute())).toEqual([]);
    expectProblem(await req('GET', `/api/v1/topology/${networkView}/export/png`, owner), 400, 'validation_failed', 'format');
    expectProblem(await req('GET', '/api/v1/topology/not-a-uuid/graph', owner), 400, 'validation_failed', 'id');
    expectProblem(await req('GET', `/api/v1/topology/${networkView}/graph?vlan=5000`, owner), 400, 'validation_failed', 'vlan');
    expectProblem(await req('GET', `/api/v1/topology/${networkView}/graph?zoom=2`, owner), 400, 'validation_failed', 'unknown parameter');
    expectProblem(await req('GET', `/api/v1/topology/${networkView}/search`, owner), 400, 'validation_failed', 'no q');
    expectProblem(await req('PATCH', `/api/v1/topology/${networkView}`, owner, { groupBy: 'service' }), 400, 'validation_failed', 'service grouping of a network view');
    expectProblem(await req('PATCH', `/api/v1/topology/${appView}`, owner, { groupBy: 'vlan' }), 400, 'validation_failed', 'vlan grouping of an application view');
    expectProblem(await req('PATCH', `/api/v1/topology/${networkView}`, owner, { groupBy: 'rack' }), 400, 'validation_failed', 'unknown grouping');
    expect((await graph(networkView)).topology.groupBy).toBe('subnet');
  });

  describe('share links (decisions.md "Other")', () => {
    const pathOf = (url: string) => new URL(url).pathname;
    const share = async (body: unknown, view = networkView) => {
      const res = await req('POST', `/api/v1/topology/${view}/share`, owner, body);
      expect(res.statusCode, res.body).toBe(200);
      return res.json() as { enabled: boolean; url: string | null; expiresAt: string | null };
    };

    it('{enabled:true} gives a URL that opens that one view read-only without a session, its token stored hashed and never logged', async () => {
      const before = Date.now();
      const link = await share({ enabled: true });
      expect(link.url).toMatch(/^http:\/\/surveyor\.test\/share\/topology\/svt_[A-Za-z0-9_-]{43}$/);
      const expires = Date.parse(link.expiresAt!);
      expect(expires).toBeGreaterThanOrEqual(before + 168 * 3_600_000 - 1000);
      expect(expires).toBeLessThanOrEqual(Date.now() + 168 * 3_600_000 + 1000);
      const token = pathOf(link.url!).split('/').pop()!;
      const rows = await t.database.db.selectFrom('topology_shares').selectAll().where('topology_id', '=', networkView).execute();
      expect(rows).toHaveLength(1);
      expect(rows[0]!.token_hash).toBe(createHash('sha256').update(token).digest('hex'));
      expect(JSON.stringify(rows)).not.toContain(token);

      const page = await req('GET', pathOf(link.url!));
      expect(page.statusCode, page.body).toBe(200);
      expect(page.headers['content-type']).toMatch(/^text\/html/);
      expect(page.headers['cache-control']).toBe('no-store');
      expect(page.headers['content-security-policy']).toContain("default-src 'none'");
      expect(page.body).not.toContain('<script');
      expect(page.body).toContain('>sw1<');
      expect(page.body).toContain('web &quot;prod&quot; &lt;1&gt; &amp; #2;');
      // Nothing else of the organisation, nor of another: no application edge, no other tenant's host.
      expect(page.body).not.toContain('443/tcp');
      expect(page.body).not.toContain('secret-host');
      expect(page.body).not.toContain(org.organisationId);

      const data = await req('GET', `/api/v1/topology/shared/${token}`);
      expect(data.statusCode, data.body).toBe(200);
      const body = data.json();
      expect(body.topology).toEqual(expect.objectContaining({ kind: 'network', status: 'ready', nodeCount: 7 }));
      expect(body.topology.id).toBeUndefined();
      expect(body.nodes.map((n: Json) => n.id).sort()).toEqual((await graph(networkView)).nodes.map((n: Json) => n.id).sort());
      expect(data.body).not.toContain(org.organisationId);
      expect((await graph(networkView)).share).toEqual({ expiresAt: link.expiresAt });
      expect(t.logs.join('\n')).not.toContain(token);
    });

    it('expiresInHours sets the expiry; a new link replaces the old one; {enabled:false} revokes at once; expired links are 404', async () => {
      const first = await share({ enabled: true });
      const second = await share({ enabled: true, expiresInHours: 2 });
      expect(Math.abs(Date.parse(second.expiresAt!) - (Date.now() + 2 * 3_600_000))).toBeLessThan(60_000);
      expectProblem(await req('GET', pathOf(first.url!)), 404, 'not_found', 'replaced link');
      expect((await req('GET', pathOf(second.url!))).statusCode).toBe(200);

      expect(await share({ enabled: false })).toEqual({ enabled: false, url: null, expiresAt: null });
      const token = pathOf(second.url!).split('/').pop()!;
      expectProblem(await req('GET', pathOf(second.url!)), 404, 'not_found', 'revoked page');
      expectProblem(await req('GET', `/api/v1/topology/shared/${token}`), 404, 'not_found', 'revoked data');
      expect((await graph(networkView)).share).toBeNull();

      const third = await share({ enabled: true, expiresInHours: 1 });
      await sql`update topology_shares set expires_at = now() - interval '1 second' where topology_id = ${networkView}`.execute(t.database.db);
      expectProblem(await req('GET', pathOf(third.url!)), 404, 'not_found', 'expired page');
      expectProblem(await req('GET', `/api/v1/topology/shared/${pathOf(third.url!).split('/').pop()}`), 404, 'not_found', 'expired data');
      expectProblem(await req('GET', '/share/topology/svt_unknown'), 404, 'not_found', 'unknown');
      expectProblem(await req('GET', '/api/v1/topology/shared/not-a-token'), 404, 'not_found', 'garbage');
    });

    it('refuses a bad share body with 400 validation_failed', async () => {
      for (const body of [{ enabled: true, expiresInHours: 0 }, { enabled: true, expiresInHours: 721 }, { enabled: true, expiresInHours: 1.5 }, { enabled: 'yes' }, { enabled: false, expiresInHours: 3 }, {}, { enabled: true, organisationId: other.organisationId }]) {
        expectProblem(await req('POST', `/api/v1/topology/${networkView}/share`, owner, body), 400, 'validation_failed', JSON.stringify(body));
      }
    });
  });

  describe('exports (decisions.md "Other")', () => {
    /**
     * Exports a view as draw.io, reads it with a real XML parser (the file's frame) and decodes its
     * model with a real decoder of the format (maxGraph's Codec, drawio-decode.ts), then checks it
     * cell by cell against the view's graph.
     */
    const drawio = async (view: string, fileName: RegExp) => {
      const g = await graph(view);
      const res = await req('GET', `/api/v1/topology/${view}/export/drawio`, owner);
      expect(res.statusCode, res.body).toBe(200);
      expect(res.headers['content-type']).toMatch(/^application\/xml/);
      expect(res.headers['content-disposition']).toMatch(fileName);
      expect(XMLValidator.validate(res.body)).toBe(true);
      const doc = new XMLParser({ ignoreAttributes: false, attributeNamePrefix: '', isArray: (name) => name === 'mxCell' }).parse(res.body);
      expect(doc.mxfile.diagram).toMatchObject({ id: view, name: g.topology.name });
      const { vertices, edges } = await decodeDrawio(res.body);
      expect(vertices.map((v) => v.id).sort()).toEqual(g.nodes.map((n: Json) => n.id).sort());
      expect(edges.map((e) => e.id).sort()).toEqual(g.edges.map((e: Json) => e.id).sort());
      const byId = new Map<string, Json>(g.nodes.map((n: Json) => [n.id, n]));
      for (const n of g.nodes as Json[]) {
        const v = vertices.find((c) => c.id === n.id)!;
        expect(v.value, n.id).toBe(n.kind === 'group' && !n.expanded ? `${n.label} (${n.members})` : n.label);
        // A member is a child of its group's container, placed relative to it.
        const parent = n.group ? byId.get(n.group) : undefined;
        expect(v.parent).toBe(parent?.id ?? '1');
        if (n.kind === 'group' && n.expanded) expect(v.style).toMatch(/^swimlane;container=1;/);
        expect(v.geometry, n.id).toEqual({ x: n.x - (parent?.x ?? 0), y: n.y - (parent?.y ?? 0), width: n.width, height: n.height });
      }
      for (const e of g.edges as Json[]) expect(edges.find((c) => c.id === e.id), e.id).toMatchObject({ source: e.source, target: e.target, value: e.label });
      return { vertices, edges };
    };

    it('drawio: an mxfile that maxGraph\'s decoder reads, one vertex per node at its saved position, one edge per edge, stable ids', async () => {
      const { vertices } = await drawio(networkView, /^attachment; filename="Network-dc1\.drawio"$/);
      // The saved position of the earlier test is what the file carries (relative to the group holding it).
      const frame = (await graph(networkView)).nodes.find((n: Json) => n.id === `group:subnet:net:${net1}`);
      expect(vertices.find((v) => v.id === `host:${ids[WEB_NAME]}`)!.geometry).toMatchObject({ x: 1234.5 - frame.x, y: -50 - frame.y });
    });

    it('drawio of an application view: its hosts as vertices, one dependency edge per (caller, service), the label escaped and read back', async () => {
      const { vertices, edges } = await drawio(appView, /^attachment; filename="[^"/\\]+\.drawio"$/);
      expect(vertices.map((v) => v.id).sort()).toEqual([`group:subnet:net:${net1}`, `host:${ids.client}`, `host:${ids[WEB_NAME]}`].sort());
      // The host name full of XML metacharacters comes back as it is.
      expect(vertices.find((v) => v.id === `host:${ids[WEB_NAME]}`)!.value).toBe(WEB_NAME);
      expect(edges).toEqual([expect.objectContaining({ source: `host:${ids.client}`, target: `host:${ids[WEB_NAME]}` })]);
    });

    it('mermaid: a flowchart LR the real mermaid parser accepts, names escaped, one vertex per node and one edge per edge', async () => {
      const { Window } = await import('happy-dom');
      const win = new Window();
      Object.assign(globalThis, { window: win, document: win.document });
      const { default: mermaid } = await import('mermaid');
      mermaid.initialize({ startOnLoad: false });
      for (const view of [networkView, appView]) {
        const g = await graph(view);
        const res = await req('GET', `/api/v1/topology/${view}/export/mermaid`, owner);
        expect(res.statusCode, res.body).toBe(200);
        expect(res.headers['content-type']).toMatch(/^text\/vnd\.mermaid/);
        expect(res.body.split('\n')[0]).toBe('flowchart LR');
        expect(await mermaid.parse(res.body)).toMatchObject({ diagramType: 'flowchart-v2' });
        const db = (await mermaid.mermaidAPI.getDiagramFromText(res.body)).db as unknown as {
          getVertices(): Map<string, { id: string; text: string }>;
          getEdges(): { start: string; end: string; text: string }[];
          getSubGraphs(): { id: string; title: string; nodes: string[] }[];
        };
        const vertices = [...db.getVertices().values()];
        // Mermaid's parser keeps entity codes (#quot; #35; …) as placeholders that its renderer turns
        // into HTML entities (ﬂ°° → &#, ﬂ° → &, ¶ß → ;), which the DOM then decodes: do the same.
        const el = win.document.createElement('div');
        const decode = (x: string) => {
          el.innerHTML = x.replace(/ﬂ°°/g, '&#').replace(/ﬂ°/g, '&').replace(/¶ß/g, ';');
          return el.textContent ?? '';
        };
        // Open groups are subgraphs holding their members; every other node a vertex.
        const open = (g.nodes as Json[]).filter((n) => n.kind === 'group' && n.expanded);
        expect(vertices.map((v) => decode(v.text)).sort()).toEqual((g.nodes as Json[]).filter((n) => !open.includes(n)).map((n) => n.label).sort());
        const idOfLabel = new Map(vertices.map((v) => [decode(v.text), v.id]));
        const subgraphs = db.getSubGraphs();
        expect(subgraphs.map((x) => decode(x.title)).sort()).toEqual(open.map((n) => n.label).sort());
        for (const sg of subgraphs) {
          const group = open.find((n) => n.label === decode(sg.title))!;
          expect(sg.nodes.map((id) => decode(vertices.find((v) => v.id === id)!.text)).sort()).toEqual((g.nodes as Json[]).filter((n) => n.group === group.id).map((n) => n.label).sort());
        }
        const labelOf = new Map<string, string>(g.nodes.map((n: Json) => [n.id, n.label]));
        expect(db.getEdges().map((e) => [e.start, e.end, decode(e.text)]).sort()).toEqual(
          g.edges.map((e: Json) => [idOfLabel.get(labelOf.get(e.source)!), idOfLabel.get(labelOf.get(e.target)!), e.label]).sort(),
        );
      }
      // A name that would break the syntax unescaped: the parser rejects it raw, accepts ours.
      await expect(mermaid.parse(`flowchart LR\n  n1["${WEB_NAME}"] --> n2["x"]\n`)).rejects.toThrow();
    });
  });

  // Last: these add networks, which changes the network view the tests above count.
  it('a new network makes stale, in its transaction, the network views of its site and of the hosts with an address in it; nothing else', async () => {
    await regenerate();
    const statuses = async (organisationId: string) =>
      Object.fromEntries((await t.database.db.selectFrom('topologies').select(['id', 'status']).where('organisation_id', '=', organisationId).execute()).map((r) => [r.id, r.status]));
    const allReady = await statuses(org.organisationId);
    expect(Object.values(allReady).every((x) => x === 'ready')).toBe(true);
    const noSiteNetworkView = (await t.database.db.selectFrom('topologies').select('id').where('organisation_id', '=', org.organisationId).where('kind', '=', 'network').where('site_id', 'is', null).executeTakeFirstOrThrow()).id;
    const addNetwork = (cidr: string, siteId?: string | null, key = s.api) =>
      req('POST', '/api/v1/networks', bearer(key), { name: `net ${cidr}`, cidr, ...(siteId ? { siteId } : {}) });

    // No site, no host in it: no view shows it.
    expect((await addNetwork('192.168.77.0/24')).statusCode).toBe(201);
    expect(await statuses(org.organisationId)).toEqual(allReady);

    // No site of its own, but dc1's switches and router have addresses in it: dc1's network view
    // is stale (those addresses move to this more specific network); its application view, the
    // "no site" views and the other organisation's views are not.
    const res = await addNetwork('10.1.0.0/28');
    expect(res.statusCode, res.body).toBe(201);
    expect(await statuses(org.organisationId)).toEqual({ ...allReady, [networkView]: 'stale' });
    expect((await statuses(other.organisationId))[otherView]).toBe('ready');
    const rebuilt = await regenerate();
    expect(rebuilt.find((v) => v.id === networkView)).toMatchObject({ status: 'ready' });
    // The hosts with an address in it are now a group of their own (the more specific network).
    const regrouped = await graph(networkView);
    expect(regrouped.nodes.filter((n: Json) => n.group === `group:subnet:net:${res.json().id}`).map((n: Json) => n.label).sort()).toEqual(['rtr', 'sw1', 'sw2']);

    // Refused (the CIDR is there already): the transaction marks nothing.
    expect((await addNetwork('10.1.0.0/28')).json().code).toBe('duplicate');
    expect(await statuses(org.organisationId)).toEqual(allReady);

    // Of site dc1, no host in it yet: the view of its site is stale all the same.
    expect((await addNetwork('172.16.9.0/24', s.siteId)).statusCode).toBe(201);
    expect(await statuses(org.organisationId)).toEqual({ ...allReady, [networkView]: 'stale' });
    expect((await statuses(org.organisationId))[noSiteNetworkView]).toBe('ready');

    // Another organisation's network over the same addresses touches only its own view.
    await regenerate();
    const theirs = (await seedMemberWithKey(t.database, other, 'editor', ['inventory:read', 'inventory:write'])).token;
    expect((await addNetwork('10.1.0.16/28', null, theirs)).statusCode).toBe(201);
    expect((await statuses(other.organisationId))[otherView]).toBe('stale');
    expect(await statuses(org.organisationId)).toEqual(allReady);
  });

  it('POST /api/v1/topology/regenerate answers 409 conflict while this organisation\'s run holds the job elsewhere, at once while another organisation\'s or the scheduled run does', async () => {
    // A second web app on the same database whose runner gives up at once on a held lock (the
    // default waits 120 s); the lock is held the way another process's run holds it.
    const logger = createLogger('warn', { write: () => undefined });
    const jobs = new JobRunner({ database: t.database, logger, jobs: jobDefinitions({ config: t.config, secretKey: t.secretKey }), lockWaitMs: 0 });
    const second = await buildWebApp({ config: t.config, database: t.database, logger, secretKey: t.secretKey, jobs });
    try {
      const release = await t.database.tryLock(`job:topology.dependencies:${org.organisationId}`);
      expect(release).not.toBeNull();
      try {
        const res = await second.inject({ method: 'POST', url: '/api/v1/topology/regenerate', headers: owner });
        const body = expectProblem(res, 409, 'conflict', 'regenerate while held');
        expect(body.detail).toMatch(/topology\.dependencies is still running elsewhere/);
      } finally {
        await release!();
      }
      // Another organisation's run, or the scheduled run over every organisation, does not hold this one back.
      for (const key of [`job:topology.dependencies:${other.organisationId}`, 'job:topology.dependencies']) {
        const held = await t.database.tryLock(key);
        expect(held, key).not.toBeNull();
        try {
          const res = await second.inject({ method: 'POST', url: '/api/v1/topology/regenerate', headers: owner });
          expect(res.statusCode, `${key}: ${res.body}`).toBe(200);
        } finally {
          await held!();
        }
      }
      const res = await second.inject({ method: 'POST', url: '/api/v1/topology/regenerate', headers: owner });
      expect(res.statusCode, res.body).toBe(200);
      expect((res.json().data as Json[]).find((v) => v.id === networkView)).toMatchObject({ status: 'ready' });
    } finally {
      await second.close();
    }
  });

  it('writes no change row for a rebuild that changes nothing, and one for each view an inventory change made stale (issue 30)', async () => {
    const logged = async (since: number) =>
      (await sql<{ entity_id: string }>`select entity_id from change_log where organisation_id = ${org.organisationId} and entity_type = 'topology' and id > ${since} order by id`.execute(t.database.db)).rows.map((r) => r.entity_id);
    let before = await lastChange();
    const views = await regenerate();
    expect(views.every((v) => v.status === 'ready')).toBe(true);
    expect(await logged(before)).toEqual([]);
    // A new host on the site's network: that site's views go stale, and their rebuild is announced.
    await ingest(t, s.daemon, { sessionId, hosts: [{ fingerprint: 'fp-new-host', hostname: 'new-host' }], ips: [{ hostFingerprint: 'fp-new-host', address: '10.1.0.99' }] });
    const stale = (await t.database.db.selectFrom('topologies').select('id').where('organisation_id', '=', org.organisationId).where('status', '=', 'stale').execute()).map((r) => r.id);
    expect(stale).toContain(networkView);
    before = await lastChange();
    await regenerate();
    expect((await logged(before)).sort()).toEqual([...stale].sort());
  });
});

describe('network graph: LLDP links and LAGs (pure)', () => {
  const host = (id: string) => ({ id, hostname: id, fqdn: null, addresses: [] });
  const nb = (hostId: string, local: string, remoteHost: string, remotePort: string) => ({
    host_id: hostId, local_interface: local, remote_chassis_id: `chassis-${remoteHost}`, remote_port_id: remotePort, remote_system_name: remoteHost,
    management_address: null, protocol: 'lldp', remote_host_id: remoteHost,
  });
  const base = { vlans: [], memberships: [], routes: [], outside: new Map() };

  it('folds the members of a LAG known on one side only into one edge, whichever side reports it', () => {
    const g = networkGraph({
      ...base,
      hosts: [host('a'), host('b')],
      lags: [{ host_id: 'a', name: 'ae0', protocol: 'lacp', members: ['xe-1', 'xe-2'] }],
      neighbours: [nb('a', 'xe-1', 'b', 'p1'), nb('a', 'xe-2', 'b', 'p2'), nb('b', 'p1', 'a', 'xe-1')],
    });
    expect(g.edges).toEqual([expect.objectContaining({ id: 'link:host:a#ae0|host:b#', kind: 'link', label: 'LAG ae0', data: expect.objectContaining({ lag: 'ae0', members: ['xe-1', 'xe-2'] }) })]);
  });

  it('keeps one edge per interface pair without LAGs, the same id from both ends', () => {
    const g = networkGraph({ ...base, hosts: [host('a'), host('b')], lags: [], neighbours: [nb('a', 'e1', 'b', 'e9'), nb('b', 'e9', 'a', 'e1'), nb('a', 'e2', 'b', 'e8')] });
    expect(g.edges.map((e) => e.id).sort()).toEqual(['link:host:a#e1|host:b#e9', 'link:host:a#e2|host:b#e8']);
  });
});

describe('placing nodes (dagre layout around saved positions)', () => {
  const n = (id: string) => ({ id, kind: 'host' as const, label: id, data: {} });
  const e = (source: string, target: string) => ({ id: `${source}>${target}`, source, target, kind: 'dependency' as const, label: '', data: {} });

  it('keeps saved positions, moves a new node with its positioned neighbour, puts unlinked new nodes below the rest', () => {
    const nodes = [n('a'), n('b'), n('c')];
    const edges = [e('a', 'b')];
    const first = layeredLayout(nodes, edges);
    expect(first.get('b')!.x).toBeGreaterThan(first.get('a')!.x); // left to right
    const kept = new Map([['a', { x: 5000, y: 7000 }], ['gone', { x: 1, y: 1 }]]);
    const placed = placeNodes(nodes, edges, kept);
    expect(placed.get('a')).toEqual({ x: 5000, y: 7000 });
    expect(placed.has('gone')).toBe(false);
    const shift = { x: 5000 - first.get('a')!.x, y: 7000 - first.get('a')!.y };
    expect(placed.get('b')).toEqual({ x: first.get('b')!.x + shift.x, y: first.get('b')!.y + shift.y });
    expect(placed.get('c')!.y).toBeGreaterThan(7000 + VIEW_NODE_HEIGHT);
    // Nothing new: the saved positions as they are, no layout.
    expect(placeNodes([n('a')], [], kept)).toEqual(new Map([['a', { x: 5000, y: 7000 }]]));
  });
});
