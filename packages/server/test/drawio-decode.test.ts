import { deflateRawSync } from 'node:zlib';
import type { TopologyEdge, TopologyNode, TopologyView } from '@surveyor/contract';
import { describe, expect, it } from 'vitest';
import { toDrawio } from '../src/topology/export.js';
import { decodeDrawio } from './drawio-decode.js';

/** A draw.io document as draw.io writes it: a swimlane container with two children (geometry relative to it) and an edge between them. */
const cells = (extra = '', edge = 'source="a" target="b"', childParent = 'g') => `
      <root>
        <mxCell id="0"/>
        <mxCell id="1" parent="0"/>
        <mxCell id="g" value="10.0.1.0/24 &amp; co" style="swimlane;container=1;collapsible=0;" vertex="1" parent="1">
          <mxGeometry x="100" y="50" width="420" height="160" as="geometry"/>
        </mxCell>
        <mxCell id="a" value="web-1" style="rounded=1;" vertex="1" parent="${childParent}">
          <mxGeometry x="16" y="36" width="180" height="44" as="geometry"/>
        </mxCell>
        <mxCell id="b" value="db-1" style="rounded=1;" vertex="1" parent="g">
          <mxGeometry x="212" y="36" width="180" height="44" as="geometry"/>
        </mxCell>
        <mxCell id="e" value="postgresql 5432/tcp" style="endArrow=classic;" edge="1" parent="1" ${edge}>
          <mxGeometry relative="1" as="geometry"/>
        </mxCell>${extra}
      </root>`;
const model = (root: string) => `<mxGraphModel grid="1" gridSize="10">${root}</mxGraphModel>`;
const file = (diagram: string) => `<?xml version="1.0" encoding="UTF-8"?>
<mxfile host="Surveyor">
  <diagram id="d1" name="Page-1">${diagram}</diagram>
</mxfile>`;

describe('decodeDrawio (maxGraph Codec over happy-dom)', () => {
  it('decodes a container holding two children with relative geometry, and an edge between them', async () => {
    const { vertices, edges } = await decodeDrawio(file(model(cells())));
    expect(vertices).toEqual([
      { id: 'g', value: '10.0.1.0/24 & co', parent: '1', geometry: { x: 100, y: 50, width: 420, height: 160 }, style: 'swimlane;container=1;collapsible=0;' },
      { id: 'a', value: 'web-1', parent: 'g', geometry: { x: 16, y: 36, width: 180, height: 44 }, style: 'rounded=1;' },
      { id: 'b', value: 'db-1', parent: 'g', geometry: { x: 212, y: 36, width: 180, height: 44 }, style: 'rounded=1;' },
    ]);
    expect(edges).toEqual([{ id: 'e', value: 'postgresql 5432/tcp', source: 'a', target: 'b', parent: '1' }]);
  });

  it('inflates a diagram saved compressed (base64 of raw deflate of the URI-encoded model), as draw.io saves by default', async () => {
    const packed = deflateRawSync(Buffer.from(encodeURIComponent(model(cells())), 'utf8')).toString('base64');
    const { vertices, edges } = await decodeDrawio(file(packed));
    expect(vertices.map((v) => [v.id, v.parent, v.geometry.x])).toEqual([['g', '1', 100], ['a', 'g', 16], ['b', 'g', 212]]);
    expect(edges.map((e) => [e.source, e.target])).toEqual([['a', 'b']]);
  });

  it('rejects an edge whose source names no cell', async () => {
    await expect(decodeDrawio(file(model(cells('', 'source="nope" target="b"'))))).rejects.toThrow(/edge e names a source nope that does not exist/);
  });

  it('rejects an edge whose target names no cell', async () => {
    await expect(decodeDrawio(file(model(cells('', 'source="a" target="gone"'))))).rejects.toThrow(/edge e names a target gone that does not exist/);
  });

  it('rejects a cell whose parent names no cell', async () => {
    await expect(decodeDrawio(file(model(cells('', undefined, 'missing'))))).rejects.toThrow(/cell a names a parent missing that does not exist/);
  });

  it('rejects two cells with one id, and a file that is not XML', async () => {
    const twice = `
        <mxCell id="b" value="again" vertex="1" parent="1"><mxGeometry x="0" y="0" width="10" height="10" as="geometry"/></mxCell>`;
    // maxGraph's Codec itself rejects the second cell ("b: Duplicate ID").
    await expect(decodeDrawio(file(model(cells(twice))))).rejects.toThrow(/Duplicate ID|two cells have id b/);
    await expect(decodeDrawio('<mxfile><diagram>')).rejects.toThrow();
  });

  it("decodes the server's own export: an open group as a container, its members relative to it, an edge between members", async () => {
    const topology: TopologyView = {
      id: '00000000-0000-4000-8000-000000000024', siteId: null, kind: 'network', status: 'ready', name: 'Network (dc <1> & "co")',
      nodeCount: 3, edgeCount: 1, builtAt: null, failureReason: null, groupBy: 'subnet', groupCount: 1,
    };
    const node = (n: Partial<TopologyNode> & Pick<TopologyNode, 'id' | 'kind' | 'label' | 'x' | 'y'>): TopologyNode =>
      ({ data: {}, group: null, width: 180, height: 44, ...n }) as TopologyNode;
    const nodes = [
      node({ id: 'group:subnet:net:x', kind: 'group', label: 'dc-1 10.0.1.0/24', x: 300, y: 200, width: 412, height: 96, group: null, members: 2, expanded: true }),
      node({ id: 'host:a', kind: 'host', label: 'web <1>', x: 316, y: 236, group: 'group:subnet:net:x' }),
      node({ id: 'host:b', kind: 'host', label: 'db & co', x: 512, y: 236, group: 'group:subnet:net:x' }),
    ];
    const edges = [{ id: 'link:host:a#eth0|host:b#eth0', source: 'host:a', target: 'host:b', kind: 'link', label: 'eth0 – eth0', data: {}, edges: 1 }] as TopologyEdge[];
    const { vertices, edges: decoded } = await decodeDrawio(toDrawio({ topology, nodes, edges, nodeSize: { width: 180, height: 44 } }));
    expect(vertices.map(({ id, value, parent, geometry }) => ({ id, value, parent, geometry }))).toEqual([
      { id: 'group:subnet:net:x', value: 'dc-1 10.0.1.0/24', parent: '1', geometry: { x: 300, y: 200, width: 412, height: 96 } },
      { id: 'host:a', value: 'web <1>', parent: 'group:subnet:net:x', geometry: { x: 16, y: 36, width: 180, height: 44 } },
      { id: 'host:b', value: 'db & co', parent: 'group:subnet:net:x', geometry: { x: 212, y: 36, width: 180, height: 44 } },
    ]);
    expect(vertices[0]!.style).toMatch(/(^|;)swimlane;.*container=1;/);
    expect(decoded).toEqual([{ id: 'link:host:a#eth0|host:b#eth0', value: 'eth0 – eth0', source: 'host:a', target: 'host:b', parent: '1' }]);
  });
});
