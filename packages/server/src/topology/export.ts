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

const SHAPES: Record<TopologyNode['kind'], [string, string]> = { host: ['[', ']'], device: ['([', '])'], network: ['{{', '}}'], group: ['[[', ']]'] };

/** A node's text: a closed group says how many it holds. */
const nodeText = (n: TopologyNode) => (n.kind === 'group' && !n.expanded ? `${n.label} (${n.members ?? 0})` : n.label);

/**
 * `flowchart LR`: a node per view node (ids n1, n2, … in the order of the stable ids; a comment
 * names each stable id), an edge per view edge: `-->` for a dependency (caller → service) or a
 * route, `---` for a link or an address in a network; labels quoted and escaped.
 */
export function toMermaid(g: ExportableGraph): string {
  const ids = new Map(g.nodes.map((n, i) => [n.id, `n${i + 1}`]));
  const lines = ['flowchart LR', `%% ${mermaidText(g.topology.name).replace(/%/g, '')} (${g.topology.kind}, ${g.topology.status}); exported by Surveyor`];
  const inside = new Map<string, TopologyNode[]>();
  for (const n of g.nodes) if (n.group) inside.set(n.group, [...(inside.get(n.group) ?? []), n]);
  const node = (n: TopologyNode, indent: string) => {
    const [open, close] = SHAPES[n.kind];
    lines.push(`${indent}%% ${n.id.replace(/[\r\n]/g, ' ')}`);
    lines.push(`${indent}${ids.get(n.id)}${open}"${mermaidText(nodeText(n))}"${close}`);
  };
  for (const n of g.nodes) {
    if (n.group) continue;
    if (n.kind === 'group' && n.expanded) {
      // An open group is a subgraph holding its members (edges may end at it: an address in a network).
      lines.push(`  %% ${n.id.replace(/[\r\n]/g, ' ')}`);
      lines.push(`  subgraph ${ids.get(n.id)}["${mermaidText(n.label)}"]`);
      for (const m of inside.get(n.id) ?? []) node(m, '    ');
      lines.push('  end');
    } else node(n, '  ');
  }
  for (const e of g.edges) {
    if (!ids.has(e.source) || !ids.has(e.target)) continue;
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
  group: 'rounded=1;whiteSpace=wrap;html=0;dashed=1;fillColor=#fdf6e3;strokeColor=#b58900;fontStyle=1;',
};
/** An open group: a container (swimlane) whose children are its members, placed relative to it. */
const CONTAINER_STYLE = 'swimlane;container=1;collapsible=1;startSize=36;html=0;rounded=1;dashed=1;fillColor=#fdf6e3;strokeColor=#b58900;fontStyle=1;';

/**
 * draw.io `mxfile`: one diagram, a vertex per node whose geometry is the node's saved position
 * (top-left) and box size, an edge per view edge; cell ids are the view's stable ids.
 */
export function toDrawio(g: ExportableGraph, modified: Date = new Date()): string {
  const at = new Map(g.nodes.map((n) => [n.id, n]));
  const vertex = (n: TopologyNode) => {
    const parent = n.group && at.has(n.group) ? at.get(n.group)! : null;
    const [x, y] = parent ? [n.x - parent.x, n.y - parent.y] : [n.x, n.y];
    const style = n.kind === 'group' && n.expanded ? CONTAINER_STYLE : VERTEX_STYLE[n.kind];
    return (
      `        <mxCell id="${xmlAttr(n.id)}" value="${xmlAttr(nodeText(n))}" style="${style}" vertex="1" parent="${xmlAttr(parent?.id ?? '1')}">\n` +
      `          <mxGeometry x="${x}" y="${y}" width="${n.width}" height="${n.height}" as="geometry"/>\n` +
      '        </mxCell>'
    );
  };
  // Containers before their children (draw.io reads a child's parent first).
  const ordered = [...g.nodes.filter((n) => !n.group), ...g.nodes.filter((n) => n.group)];
  const cells = [
    '        <mxCell id="0"/>',
    '        <mxCell id="1" parent="0"/>',
    ...ordered.map(vertex),
    ...g.edges.filter((e) => at.has(e.source) && at.has(e.target)).map(
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
