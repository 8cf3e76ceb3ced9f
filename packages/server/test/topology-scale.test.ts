import { XMLParser } from 'fast-xml-parser';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_GROUP_MEMBERS } from '@surveyor/contract';
import type { Graph, GraphNode } from '../src/topology/graph.js';
import { blockOf, groupGraph, MAX_TOP_GROUPS } from '../src/topology/groups.js';
import { addService } from './fixtures.js';
import { type SeededOrg, type TestApp, buildTestApp, login, seedOrg } from './helpers.js';
import type { Json } from './scanning.js';

// Topology views at the size of a real site (issue 24): a 2,001-host site (one more than the old
// ceiling that failed the build) is built in groups, opened on request, folded edges, names from
// the current rows, grouping choices, filters, search and grouped exports; on PostgreSQL and PGlite.

const HOSTS = 2001;
const OUTSIDE = ['192.168.7.10', '192.168.7.11', '192.168.7.12'];

describe('topology views at scale (issue 24)', () => {
  let t: TestApp;
  let org: SeededOrg;
  let owner: Record<string, string>;
  let siteId: string;
  let networkId: string;
  let netView: string;
  let appView: string;
  const hostIds = new Map<string, string>(); // hostname → id

  const req = (method: 'GET' | 'POST' | 'PATCH' | 'PUT', url: string, payload?: unknown) =>
    t.app.inject({ method, url, headers: owner, ...(payload !== undefined ? { payload: payload as object } : {}) });
  const graph = async (id: string, query = '') => {
    const res = await req('GET', `/api/v1/topology/${id}/graph${query}`);
    expect(res.statusCode, res.body).toBe(200);
    return res.json() as Json;
  };
  const block = (i: number) => `group:subnet:net:${networkId}:10.50.${i}.0/24`;

  beforeAll(async () => {
    t = await buildTestApp();
    org = await seedOrg(t.database);
    const x = await login(t.app, org.ownerEmail);
    owner = { cookie: x.cookie, 'x-csrf-token': x.csrfToken };
    const db = t.database.db;
    siteId = (await sql<{ id: string }>`insert into sites (organisation_id, code, name) values (${org.organisationId}, 'dc9', 'Datacentre 9') returning id`.execute(db)).rows[0]!.id;
    networkId = (await sql<{ id: string }>`insert into networks (organisation_id, site_id, name, cidr) values (${org.organisationId}, ${siteId}, 'servers', '10.50.0.0/20') returning id`.execute(db)).rows[0]!.id;
    // srv-1 … srv-2001 at 10.50.0.1 … 10.50.7.209 (a /20 cut into eight /24 blocks); three hosts outside every network.
    const rows = await sql<{ id: string; hostname: string }>`
      with h as (
        insert into hosts (organisation_id, fingerprint, hostname, site_id)
        select ${org.organisationId}, 'fp-srv-' || g, 'srv-' || g, ${siteId}::uuid from generate_series(1, ${HOSTS}) g
        returning id, hostname
      ), a as (
        insert into host_addresses (organisation_id, host_id, address) select ${org.organisationId}, id, '10.50.0.0'::inet + substr(hostname, 5)::int from h
      )
      select id, hostname from h`.execute(db);
    for (const r of rows.rows) hostIds.set(r.hostname, r.id);
    for (const [i, address] of OUTSIDE.entries()) {
      const id = (await sql<{ id: string }>`insert into hosts (organisation_id, fingerprint, hostname, site_id) values (${org.organisationId}, ${`fp-lab-${i}`}, ${`lab-${i}`}, ${siteId}) returning id`.execute(db)).rows[0]!.id;
      await sql`insert into host_addresses (organisation_id, host_id, address) values (${org.organisationId}, ${id}, ${address}::inet)`.execute(db);
      hostIds.set(`lab-${i}`, id);
    }
    // srv-1 is the core switch: LLDP to srv-256, srv-512, … (one per other block), VLAN 100 "prod" on those ports.
    const ports: string[] = [];
    for (let b = 1; b <= 7; b++) {
      const port = `xe-${b}`;
      ports.push(port);
      await sql`insert into host_neighbors (organisation_id, host_id, local_interface, remote_chassis_id, remote_port_id, remote_system_name, management_address, protocol)
        values (${org.organisationId}, ${hostIds.get('srv-1')!}, ${port}, ${`02:00:00:00:00:0${b}`}, 'eth0', ${`srv-${b * 256}`}, ${`10.50.${b}.0`}::inet, 'lldp')`.execute(db);
    }
    await sql`insert into host_vlans (organisation_id, host_id, vlan_id, name, tagged, untagged) values (${org.organisationId}, ${hostIds.get('srv-1')!}, 100, 'prod', ${ports}::text[], '{}')`.execute(db);
    // Build once (this creates the application view), then give it dependencies.
    const first = await req('POST', '/api/v1/topology/regenerate');
    expect(first.statusCode, first.body).toBe(200);
    const views = first.json().data as Json[];
    netView = views.find((v) => v.kind === 'network' && v.siteId === siteId)!.id;
    appView = views.find((v) => v.kind === 'application' && v.siteId === siteId)!.id;
    // 10 web servers (https) and 2 databases (postgresql) in block 7; 300 callers from blocks 0-2 call two of them.
    const web = await Promise.all(Array.from({ length: 10 }, (_, i) => addService(db, org.organisationId, hostIds.get(`srv-${1800 + i}`)!, { port: 443, name: 'https' })));
    const pg = await Promise.all([0, 1].map((i) => addService(db, org.organisationId, hostIds.get(`srv-${1900 + i}`)!, { port: 5432, name: 'postgresql' })));
    await sql`
      insert into dependency_edges (organisation_id, site_id, src_host_id, dst_host_id, dst_service_id, bytes, packets, flows, last_seen_at)
      select ${org.organisationId}, ${siteId}::uuid, src.id, s.host_id, s.id, 1000 * g, 10, 5, now()
      from generate_series(2, 301) g
      join hosts src on src.organisation_id = ${org.organisationId} and src.hostname = 'srv-' || g
      join services s on s.organisation_id = ${org.organisationId} and (s.id = ${web[0]!}::uuid or s.id = case when g % 2 = 0 then ${pg[0]!}::uuid else ${pg[1]!}::uuid end)`.execute(db);
    const built = await req('POST', `/api/v1/topology/${appView}/regenerate`);
    expect(built.statusCode, built.body).toBe(200);
    expect(built.json()).toMatchObject({ id: appView, status: 'ready', nodeCount: 303, edgeCount: 600 });
  });
  afterAll(() => t.close());

  it('a 2,001-host site builds a network view (no ceiling): hosts in groups of their network\'s /24 blocks, the first screen its groups with folded edges', async () => {
    const g = await graph(netView);
    expect(g.topology).toMatchObject({ status: 'ready', nodeCount: HOSTS + OUTSIDE.length + 1, edgeCount: HOSTS + 7, groupBy: 'subnet', groupCount: 9, failureReason: null });
    // Large: every group closed, members not sent.
    expect(g.groups).toEqual({ total: 9, expanded: [], notExpanded: [] });
    const groups = (g.nodes as Json[]).filter((n) => n.kind === 'group');
    expect(groups.map((n) => n.id).sort()).toEqual([...Array.from({ length: 8 }, (_, i) => block(i)), 'group:subnet:addr:192.168.7.0/24'].sort());
    expect(groups.reduce((s, n) => s + n.members, 0)).toBe(HOSTS + OUTSIDE.length);
    expect(groups.find((n) => n.id === block(0))).toMatchObject({ label: 'servers 10.50.0.0/20 · 10.50.0.0/24', members: 255, expanded: false, group: null, width: 240, height: 56 });
    expect(groups.find((n) => n.id === 'group:subnet:addr:192.168.7.0/24')).toMatchObject({ label: '192.168.7.0/24 (no network)', members: 3 });
    expect((g.nodes as Json[]).filter((n) => n.kind !== 'group').map((n) => n.id)).toEqual([`network:${networkId}`]);
    // Each block's addresses fold into one edge to the network; the core's links into one edge per block, with their VLAN.
    const subnet = (g.edges as Json[]).filter((e) => e.kind === 'subnet');
    expect(subnet.map((e) => [e.source, e.target, e.edges]).sort()).toEqual(Array.from({ length: 8 }, (_, i) => [block(i), `network:${networkId}`, i === 0 ? 255 : i === 7 ? 210 : 256]).sort());
    expect(subnet.find((e) => e.source === block(1))).toMatchObject({ id: `agg:subnet:${block(1)}|network:${networkId}`, label: '256 addresses' });
    const links = (g.edges as Json[]).filter((e) => e.kind === 'link');
    // (A link has no direction: its ends in either order.)
    expect(links.map((e) => [e.source, e.target].sort()).sort()).toEqual(Array.from({ length: 7 }, (_, i) => [block(0), block(i + 1)].sort()).sort());
    for (const e of links) expect(e).toMatchObject({ edges: 1, data: expect.objectContaining({ vlans: [100] }) });
    // The first screen is small whatever the site's size.
    expect(JSON.stringify(g).length).toBeLessThan(20_000);
  });

  it('opens the groups asked for: their members inside the frame, edges to closed groups drawn at the group; `all`, none, and the node budget', async () => {
    const g = await graph(netView, `?expand=${encodeURIComponent(`${block(0)},group:subnet:nope`)}`);
    expect(g.groups).toEqual({ total: 9, expanded: [block(0)], notExpanded: [] });
    const frame = (g.nodes as Json[]).find((n) => n.id === block(0))!;
    const members = (g.nodes as Json[]).filter((n) => n.group === block(0));
    expect(members).toHaveLength(255);
    expect(frame).toMatchObject({ expanded: true, members: 255 });
    for (const m of members) expect(m.x >= frame.x && m.y >= frame.y && m.x + m.width <= frame.x + frame.width && m.y + m.height <= frame.y + frame.height, m.id).toBe(true);
    // The core switch's links now start at the core itself and end at the closed groups.
    const core = `host:${hostIds.get('srv-1')}`;
    expect((g.edges as Json[]).filter((e) => e.kind === 'link').map((e) => [e.source, e.target].sort()).sort()).toEqual(Array.from({ length: 7 }, (_, i) => [core, block(i + 1)].sort()).sort());
    // An address's edge to its network stays at the group (the frame says where its members are).
    expect((g.edges as Json[]).filter((e) => e.kind === 'subnet' && e.source === block(0))).toHaveLength(1);
    const all = await graph(netView, '?expand=all');
    expect(all.groups.expanded).toHaveLength(9);
    expect((all.nodes as Json[]).filter((n) => n.kind === 'host')).toHaveLength(HOSTS + OUTSIDE.length);
    expect((all.edges as Json[]).filter((e) => e.kind === 'link').every((e) => e.edges === 1 && (e.source === core || e.target === core))).toBe(true);
    const none = await graph(netView, '?expand=');
    expect(none.groups.expanded).toEqual([]);
  });

  it('names come from the current rows: a renamed site, host and network show in the view, the collection, exports and the share page without a rebuild', async () => {
    const db = t.database.db;
    const before = await graph(netView, `?expand=${encodeURIComponent(block(0))}`);
    await sql`update sites set name = 'Datacentre Nine' where organisation_id = ${org.organisationId} and id = ${siteId}`.execute(db);
    await sql`update hosts set hostname = 'core-sw' where organisation_id = ${org.organisationId} and id = ${hostIds.get('srv-1')!}`.execute(db);
    await sql`update networks set name = 'prod servers' where organisation_id = ${org.organisationId} and id = ${networkId}`.execute(db);
    const g = await graph(netView, `?expand=${encodeURIComponent(block(0))}`);
    expect(g.topology.builtAt).toBe(before.topology.builtAt);
    expect(g.topology.name).toBe('Network (Datacentre Nine)');
    expect((g.nodes as Json[]).find((n) => n.id === `host:${hostIds.get('srv-1')}`)!.label).toBe('core-sw');
    expect((g.nodes as Json[]).find((n) => n.id === block(0))!.label).toBe('prod servers 10.50.0.0/20 · 10.50.0.0/24');
    expect((g.nodes as Json[]).find((n) => n.id === `network:${networkId}`)!.label).toBe('prod servers 10.50.0.0/20');
    const listed = await t.app.inject({ method: 'GET', url: `/api/v1/topologies?siteId=${siteId}`, headers: owner });
    expect(listed.statusCode, listed.body).toBe(200);
    expect((listed.json().data as Json[]).map((v) => v.name).sort()).toEqual(['Application dependencies (Datacentre Nine)', 'Network (Datacentre Nine)']);
    const mermaid = await req('GET', `/api/v1/topology/${netView}/export/mermaid?expand=${encodeURIComponent(block(0))}`);
    expect(mermaid.body).toContain('"core-sw"');
    expect(mermaid.body).toContain('Network (Datacentre Nine)');
    const share = await req('POST', `/api/v1/topology/${netView}/share`, { enabled: true });
    const page = await t.app.inject({ method: 'GET', url: new URL(share.json().url).pathname });
    expect(page.body).toContain('Network (Datacentre Nine)');
    expect(page.body).toContain('prod servers 10.50.0.0/20 · 10.50.0.0/24');
  });

  it('exports of a grouped view parse back as drawn: closed groups as one node with their count, an open group a subgraph / a container holding its members', async () => {
    const expand = `?expand=${encodeURIComponent(block(1))}`;
    const g = await graph(netView, expand);
    const res = await req('GET', `/api/v1/topology/${netView}/export/drawio${expand}`);
    expect(res.statusCode, res.body).toBe(200);
    const cells = new XMLParser({ ignoreAttributes: false, attributeNamePrefix: '', isArray: (name) => name === 'mxCell' }).parse(res.body).mxfile.diagram.mxGraphModel.root.mxCell as Json[];
    const vertices = new Map(cells.filter((c) => c.vertex === '1').map((c) => [c.id, c]));
    expect(vertices.size).toBe((g.nodes as Json[]).length);
    expect(vertices.get(block(2))).toMatchObject({ value: `${(g.nodes as Json[]).find((n) => n.id === block(2))!.label} (256)`, parent: '1' });
    expect(vertices.get(block(1))!.style).toMatch(/^swimlane;container=1;/);
    const children = [...vertices.values()].filter((v) => v.parent === block(1));
    expect(children).toHaveLength(256);
    // A child's geometry is relative to its container and inside it.
    const frame = vertices.get(block(1))!.mxGeometry;
    for (const c of children) {
      const [x, y] = [Number(c.mxGeometry.x), Number(c.mxGeometry.y)];
      expect(x >= 0 && y >= 0 && x + Number(c.mxGeometry.width) <= Number(frame.width) && y + Number(c.mxGeometry.height) <= Number(frame.height), c.id).toBe(true);
    }
    // Every edge joins two cells of the file.
    for (const e of cells.filter((c) => c.edge === '1')) expect(vertices.has(e.source) && vertices.has(e.target), e.id).toBe(true);

    const { Window } = await import('happy-dom');
    const win = new Window();
    Object.assign(globalThis, { window: win, document: win.document });
    const { default: mermaid } = await import('mermaid');
    mermaid.initialize({ startOnLoad: false, maxEdges: 100_000 });
    const text = (await req('GET', `/api/v1/topology/${netView}/export/mermaid${expand}`)).body;
    const db = (await mermaid.mermaidAPI.getDiagramFromText(text)).db as unknown as { getVertices(): Map<string, { text: string }>; getSubGraphs(): { id: string; title: string; nodes: string[] }[]; getEdges(): unknown[] };
    const subgraphs = db.getSubGraphs();
    expect(subgraphs).toHaveLength(1);
    expect(subgraphs[0]!.nodes).toHaveLength(256);
    // An edge may end at the open group (its addresses' network): mermaid draws it at the subgraph.
    expect([...db.getVertices().keys()].filter((id) => id !== subgraphs[0]!.id)).toHaveLength((g.nodes as Json[]).length - 1);
    expect(db.getEdges()).toHaveLength((g.edges as Json[]).length);
  });

  it('searches a view by name, address prefix and service, in closed groups too, naming the group to open', async () => {
    const search = async (q: string) => {
      const res = await req('GET', `/api/v1/topology/${netView}/search?q=${encodeURIComponent(q)}`);
      expect(res.statusCode, res.body).toBe(200);
      return res.json().data as Json[];
    };
    expect(await search('srv-1999')).toEqual([{ nodeId: `host:${hostIds.get('srv-1999')}`, kind: 'host', label: 'srv-1999', group: block(7), addresses: ['10.50.7.207'], matched: 'name' }]);
    expect((await search('10.50.3.1')).map((r) => [r.label, r.matched])).toEqual(expect.arrayContaining([['srv-769', 'address'], ['srv-778', 'address']]));
    expect((await search('postgres')).map((r) => r.label).sort()).toEqual(['srv-1900', 'srv-1901']);
    expect(await search('srv-1000')).toHaveLength(1);
    expect((await search('srv-1')).length).toBe(20);
    expect(await search('%')).toEqual([]);
  });

  it('groups by VLAN or by service when asked (recorded in the view, audited), and filters by VLAN and service', async () => {
    const patched = await req('PATCH', `/api/v1/topology/${netView}`, { groupBy: 'vlan' });
    expect(patched.statusCode, patched.body).toBe(200);
    expect(patched.json()).toMatchObject({ id: netView, groupBy: 'vlan', status: 'ready' });
    const g = await graph(netView);
    // The core and the seven hosts at the other end of its VLAN 100 links are the VLAN's group; the rest by subnet.
    expect((g.nodes as Json[]).find((n) => n.id === 'group:vlan:vlan:100')).toMatchObject({ label: 'VLAN 100 · prod', members: 8 });
    expect(g.groups.total).toBe(10);
    const audit = await sql<{ action: string; changes: Json }>`select action, changes from audit_log where organisation_id = ${org.organisationId} and target_id = ${netView} and action = 'topology.updated'`.execute(t.database.db);
    expect(audit.rows).toEqual([{ action: 'topology.updated', changes: { groupBy: ['subnet', 'vlan'] } }]);
    // The VLAN filter keeps the links carrying it and what they join.
    const f = await graph(netView, '?vlan=100&expand=all');
    expect(f.filter).toEqual({ vlan: 100, service: null });
    expect((f.edges as Json[]).map((e) => e.kind)).toEqual(Array(7).fill('link'));
    expect((f.nodes as Json[]).map((n) => n.id).sort()).toEqual(['group:vlan:vlan:100', ...[1, 256, 512, 768, 1024, 1280, 1536, 1792].map((i) => `host:${hostIds.get(`srv-${i}`)}`)].sort());
    expect((await graph(netView, '?vlan=200')).nodes).toEqual([]);
    // By role: the device type a scan found, else a network device (VLANs, or 3 LLDP links or more), else a server, else by subnet.
    await sql`update hosts set device_type = 'printer' where organisation_id = ${org.organisationId} and id = ${hostIds.get('srv-2000')!}`.execute(t.database.db);
    expect((await req('PATCH', `/api/v1/topology/${netView}`, { groupBy: 'role' })).json()).toMatchObject({ groupBy: 'role', status: 'ready' });
    const roles = (await graph(netView)).nodes as Json[];
    expect(roles.filter((n) => n.id.startsWith('group:role:role:')).map((n) => [n.id, n.label, n.members]).sort()).toEqual([
      ['group:role:role:printer', 'Printer', 1],
      ['group:role:role:~network', 'Network devices (LLDP/CDP, VLANs, LAGs)', 1],
      ['group:role:role:~server', 'Servers (offer a service)', 12],
    ]);
    expect(roles.filter((n) => n.kind === 'group').reduce((s, n) => s + n.members, 0)).toBe(HOSTS + OUTSIDE.length);
    expect((await req('PATCH', `/api/v1/topology/${netView}`, { groupBy: 'subnet' })).statusCode).toBe(200);

    const app = await req('PATCH', `/api/v1/topology/${appView}`, { groupBy: 'service' });
    expect(app.statusCode, app.body).toBe(200);
    const a = await graph(appView);
    expect(a.facets.services).toEqual(['https', 'postgresql']);
    const groups = (a.nodes as Json[]).filter((n) => n.kind === 'group');
    expect(groups.find((n) => n.id === 'group:service:service:https')).toMatchObject({ label: 'https', members: 1 });
    expect(groups.find((n) => n.id === 'group:service:service:postgresql')).toMatchObject({ members: 2 });
    // 300 callers offering nothing: by subnet (blocks 0 and 1).
    expect(groups.filter((n) => n.id.startsWith('group:service:net:')).reduce((s, n) => s + n.members, 0)).toBe(300);
    const calls = (a.edges as Json[]).filter((e) => e.target === 'group:service:service:postgresql');
    expect(calls.reduce((s, e) => s + e.edges, 0)).toBe(300);
    expect(calls[0]).toMatchObject({ kind: 'dependency', data: expect.objectContaining({ ports: [5432] }) });
    const onlyPg = await graph(appView, '?service=postgresql');
    expect((onlyPg.edges as Json[]).every((e) => e.target === 'group:service:service:postgresql')).toBe(true);
    expect((onlyPg.nodes as Json[]).some((n) => n.id === 'group:service:service:https')).toBe(false);
  });
});

describe('grouping hosts (pure)', () => {
  const host = (i: number): GraphNode => ({ id: `host:h${i}`, kind: 'host', label: `h${i}`, refId: `h${i}`, data: { hostId: `h${i}`, vlans: [] } });
  const place = (address: string | null, net?: { id: string; cidr: string }) => ({ address, networkId: net?.id ?? null, networkName: net ? 'n' : null, cidr: net?.cidr ?? null });

  it('cuts a group above MAX_GROUP_MEMBERS into parts of at most that many, in address order', () => {
    const n = MAX_GROUP_MEMBERS * 2 + 5;
    const nodes = Array.from({ length: n }, (_, i) => host(i));
    const places = new Map(nodes.map((x, i) => [x.refId!, place(`10.9.${Math.floor(i / 250)}.${(i % 250) + 1}`, { id: 'N', cidr: '10.9.0.0/24' })]));
    // /24 network: not cut into blocks, but too many members (the addresses are made up): parts.
    const g = groupGraph({ nodes, edges: [] } as Graph, 'subnet', places, new Map());
    expect(g.groups.map((x) => [x.id, x.data.members, x.label])).toEqual([
      ['group:subnet:net:N#1', MAX_GROUP_MEMBERS, 'n 10.9.0.0/24 (part 1 of 3)'],
      ['group:subnet:net:N#2', MAX_GROUP_MEMBERS, 'n 10.9.0.0/24 (part 2 of 3)'],
      ['group:subnet:net:N#3', 5, 'n 10.9.0.0/24 (part 3 of 3)'],
    ]);
    // Address order, numerically: 10.9.0.2 before 10.9.0.10.
    expect(g.members.get('group:subnet:net:N#1')!.slice(0, 3)).toEqual(['host:h0', 'host:h1', 'host:h2']);
    expect(g.members.get('group:subnet:net:N#3')).toEqual(nodes.slice(-5).map((x) => x.id));
  });

  it('hosts outside every network go in /24 blocks, /16 when those would be too many, then one group; no address is a group of its own', () => {
    const nodes = Array.from({ length: MAX_TOP_GROUPS + 10 }, (_, i) => host(i));
    const spread = new Map(nodes.map((x, i) => [x.refId!, place(`172.${16 + (i % 4)}.${Math.floor(i / 4)}.1`)]));
    const coarse = groupGraph({ nodes, edges: [] } as Graph, 'subnet', spread, new Map());
    expect(coarse.groups.map((x) => x.id)).toEqual(['group:subnet:addr:172.16.0.0/16', 'group:subnet:addr:172.17.0.0/16', 'group:subnet:addr:172.18.0.0/16', 'group:subnet:addr:172.19.0.0/16']);
    const wide = new Map(nodes.map((x, i) => [x.refId!, place(`${10 + Math.floor(i / 200)}.${i % 200}.0.1`)]));
    expect(groupGraph({ nodes, edges: [] } as Graph, 'subnet', wide, new Map()).groups.map((x) => x.label)).toEqual(['Outside known networks']);
    const none = groupGraph({ nodes: [host(1)], edges: [] } as Graph, 'subnet', new Map([['h1', place(null)]]), new Map());
    expect(none.groups.map((x) => [x.id, x.label])).toEqual([['group:subnet:none', 'No address']]);
  });

  it('blocks of IPv6 addresses are /64 in canonical form', () => {
    expect(blockOf('2001:db8:0:12:a::1', 24, 64)).toBe('2001:db8:0:12::/64');
    expect(blockOf('10.1.2.3', 24, 64)).toBe('10.1.2.0/24');
    expect(blockOf('10.1.2.3', 16, 48)).toBe('10.1.0.0/16');
    expect(blockOf('not an address', 24, 64)).toBeNull();
  });
});
