import type { TopologyEdge, TopologyNode, TopologyView } from '@surveyor/contract';

export interface ExportableGraph {
  topology: TopologyView;
  nodes: TopologyNode[];
  edges: TopologyEdge[];
  nodeSize: { width: number; height: number };
}

/** Characters XML 1.0 cannot carry at all (control characters other than tab, LF, CR; lone surrogates). */
// eslint-disable-next-line no-control-regex
const NOT_XML = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;
const xmlAttr = (s: string) =>
  s.replace(NOT_XML, '\ufffd').replace(/[&<>"'\n\r\t]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;', '\n': '&#10;', '\r': '&#13;', '\t': '&#9;' })[c]!);

/**
 * Mermaid text inside a quoted label: `"` and the entity introducer `#` become mermaid entity
 * codes (`#quot;`, `#35;`), as do the characters HTML labels would read (`<`, `>`, `&`) and the
 * backtick (a markdown string); line breaks become spaces.
 */
const mermaidText = (s: string) =>
  s.replace(/[\r\n\t]+/g, ' ').replace(/[#"<>&`]/g, (c) => ({ '#': '#35;', '"': '#quot;', '<': '#lt;', '>': '#gt;', '&': '#amp;', '`': '#96;' })[c]!);

const SHAPES: Record<TopologyNode['kind'], [string, string]> = { host: ['[', ']'], device: ['([', '])'], network: ['{{', '}}'] };

/**
 * `flowchart LR`: a node per view node (ids n1, n2, … in the order of the stable ids; a comment
 * names each stable id), an edge per view edge: `-->` for a dependency (caller → service) or a
 * route, `---` for a link or an address in a network; labels quoted and escaped.
 */
export function toMermaid(g: ExportableGraph): string {
  const ids = new Map(g.nodes.map((n, i) => [n.id, `n${i + 1}`]));
  const lines = ['flowchart LR', `%% ${mermaidText(g.topology.name).replace(/%/g, '')} (${g.topology.kind}, ${g.topology.status}); exported by Surveyor`];
  for (const n of g.nodes) {
    const [open, close] = SHAPES[n.kind];
    lines.push(`  %% ${n.id.replace(/[\r\n]/g, ' ')}`);
    lines.push(`  ${ids.get(n.id)}${open}"${mermaidText(n.label)}"${close}`);
  }
  for (const e of g.edges) {
    const arrow = e.kind === 'dependency' || e.kind === 'route' ? '-->' : '---';
    const label = e.label ? `|"${mermaidText(e.label)}"|` : '';
    lines.push(`  ${ids.get(e.source)} ${arrow}${label} ${ids.get(e.target)}`);
  }
  return `${lines.join('\n')}\n`;
}

const VERTEX_STYLE: Record<TopologyNode['kind'], string> = {
  host: 'rounded=1;whiteSpace=wrap;html=0;fillColor=#e8f0fe;strokeColor=#2f6fde;',
  device: 'shape=hexagon;perimeter=hexagonPerimeter2;whiteSpace=wrap;html=0;fillColor=#f5f7fa;strokeColor=#7b8794;',
  network: 'ellipse;whiteSpace=wrap;html=0;fillColor=#eef7ee;strokeColor=#3f9142;',
};

/**
 * draw.io `mxfile`: one diagram, a vertex per node whose geometry is the node's saved position
 * (top-left) and box size, an edge per view edge; cell ids are the view's stable ids.
 */
export function toDrawio(g: ExportableGraph, modified: Date = new Date()): string {
  const { width, height } = g.nodeSize;
  const cells = [
    '        <mxCell id="0"/>',
    '        <mxCell id="1" parent="0"/>',
    ...g.nodes.map(
      (n) =>
        `        <mxCell id="${xmlAttr(n.id)}" value="${xmlAttr(n.label)}" style="${VERTEX_STYLE[n.kind]}" vertex="1" parent="1">\n` +
        `          <mxGeometry x="${n.x}" y="${n.y}" width="${width}" height="${height}" as="geometry"/>\n` +
        '        </mxCell>',
    ),
    ...g.edges.map(
      (e) =>
        `        <mxCell id="${xmlAttr(e.id)}" value="${xmlAttr(e.label)}" style="html=0;rounded=0;${e.kind === 'dependency' || e.kind === 'route' ? 'endArrow=classic;' : 'endArrow=none;'}" edge="1" parent="1" source="${xmlAttr(e.source)}" target="${xmlAttr(e.target)}">\n` +
        '          <mxGeometry relative="1" as="geometry"/>\n' +
        '        </mxCell>',
    ),
  ];
  return `<?xml version="1.0" encoding="UTF-8"?>
<mxfile host="Surveyor" modified="${modified.toISOString()}" type="device">
  <diagram id="${xmlAttr(g.topology.id)}" name="${xmlAttr(g.topology.name)}">
    <mxGraphModel grid="1" gridSize="10" guides="1" tooltips="1" connect="1" arrows="1" fold="1" page="0" pageScale="1" math="0" shadow="0">
      <root>
${cells.join('\n')}
      </root>
    </mxGraphModel>
  </diagram>
</mxfile>
`;
}

/** File name of an export: the view's name, reduced to safe characters. */
export function exportFileName(t: TopologyView, ext: string): string {
  const base = t.name.normalize('NFKD').replace(/[^A-Za-z0-9._-]+/g, '-').replace(/^-+|-+$/g, '').slice(0, 80) || 'topology';
  return `${base}.${ext}`;
}
