import { type SharedTopologyGraph, toBoxBorder } from '@surveyor/contract';
import { esc } from './svg.js';

const FILL: Record<string, [string, string]> = { host: ['#e8f0fe', '#2f6fde'], device: ['#f5f7fa', '#7b8794'], network: ['#eef7ee', '#3f9142'], group: ['#fdf6e3', '#b58900'] };
const clip = (s: string, n: number) => (s.length > n ? `${s.slice(0, n - 1)}…` : s);

/**
 * The read-only page a share link opens: the one view drawn as inline SVG at its saved positions,
 * its name, build time and the link's expiry. No script, nothing else of the organisation.
 */
export function sharedTopologyPage(g: SharedTopologyGraph): string {
  const pos = new Map(g.nodes.map((n) => [n.id, n]));
  const [minX, maxX, minY, maxY] = g.nodes.length
    ? g.nodes.reduce(([a, b, c, d], n) => [Math.min(a, n.x - 20), Math.max(b, n.x + n.width + 20), Math.min(c, n.y - 20), Math.max(d, n.y + n.height + 20)], [Infinity, -Infinity, Infinity, -Infinity])
    : [0, 400, 0, 120];
  // Edges border to border (arrow heads show); their labels drawn over the nodes.
  const segments = g.edges.flatMap((e) => {
    const a = pos.get(e.source);
    const b = pos.get(e.target);
    if (!a || !b) return [];
    const [ca, cb] = [{ x: a.x + a.width / 2, y: a.y + a.height / 2 }, { x: b.x + b.width / 2, y: b.y + b.height / 2 }];
    const [s1, s2] = [toBoxBorder(cb, ca, a.width / 2, a.height / 2), toBoxBorder(ca, cb, b.width / 2, b.height / 2)];
    return [{ e, x1: s1.x, y1: s1.y, x2: s2.x, y2: s2.y }];
  });
  const edges = segments
    .map(({ e, x1, y1, x2, y2 }) => `<g><title>${esc(e.label)}</title><line x1="${x1}" y1="${y1}" x2="${x2}" y2="${y2}" stroke="#9aa5b1" stroke-width="1.4"${e.kind === 'dependency' || e.kind === 'route' ? ' marker-end="url(#arrow)"' : ''}/></g>`)
    .join('\n');
  const labels = segments
    .filter(({ e }) => e.label)
    .map(({ e, x1, y1, x2, y2 }) => `<text class="edge" x="${(x1 + x2) / 2}" y="${(y1 + y2) / 2 - 4}" text-anchor="middle" font-size="11" fill="#52606d">${esc(clip(e.label, 40))}</text>`)
    .join('\n');
  // Groups first (an open one is a frame its members are drawn on), then the other nodes.
  const nodes = [...g.nodes.filter((n) => n.kind === 'group'), ...g.nodes.filter((n) => n.kind !== 'group')]
    .map((n) => {
      const [fill, stroke] = FILL[n.kind] ?? FILL.host!;
      const text = n.kind === 'group' && n.expanded
        ? `<text x="${n.x + 12}" y="${n.y + 22}" font-weight="600">${esc(clip(n.label, 60))} · ${n.members ?? 0}</text>`
        : n.kind === 'group'
          ? `<text x="${n.x + n.width / 2}" y="${n.y + n.height / 2 - 2}" text-anchor="middle" font-weight="600">${esc(clip(n.label, 30))}</text><text x="${n.x + n.width / 2}" y="${n.y + n.height / 2 + 14}" text-anchor="middle" font-size="11" fill="#52606d">${n.members ?? 0} hosts</text>`
          : `<text x="${n.x + n.width / 2}" y="${n.y + n.height / 2 + 4}" text-anchor="middle">${esc(clip(n.label, 26))}</text>`;
      return `<g><title>${esc(n.label)}</title><rect x="${n.x}" y="${n.y}" width="${n.width}" height="${n.height}" rx="6" fill="${fill}" stroke="${stroke}"${n.kind === 'group' ? ' stroke-dasharray="5 3"' : ''}/>${text}</g>`;
    })
    .join('\n');
  const empty = g.nodes.length ? '' : `<text x="200" y="60" text-anchor="middle" fill="#52606d">This view has no nodes yet.</text>`;
  const built = g.topology.builtAt ? `built ${g.topology.builtAt.slice(0, 16).replace('T', ' ')} UTC` : 'not built yet';
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<title>${esc(g.topology.name)} · shared topology</title>
<style>
body { margin: 0; font: 14px system-ui, -apple-system, Segoe UI, sans-serif; color: #1f2933; background: #f5f7fa; }
header { padding: 12px 20px; background: #fff; border-bottom: 1px solid #e4e7eb; }
h1 { font-size: 18px; margin: 0 0 4px; }
p { margin: 0; color: #52606d; }
main { padding: 12px; overflow: auto; }
svg text.edge { paint-order: stroke; stroke: #fff; stroke-width: 3px; }
svg { background: #fff; border: 1px solid #e4e7eb; max-width: 100%; height: auto; }
</style>
</head>
<body>
<header>
<h1>${esc(g.topology.name)}</h1>
<p>${esc(`${g.topology.kind} view · ${g.topology.nodeCount} nodes · ${g.topology.edgeCount} edges · ${g.topology.status}, ${built} · read-only link, valid until ${g.expiresAt.slice(0, 16).replace('T', ' ')} UTC`)}</p>
</header>
<main>
<svg xmlns="http://www.w3.org/2000/svg" role="img" aria-label="${esc(g.topology.name)}" width="${maxX - minX}" height="${maxY - minY}" viewBox="${minX} ${minY} ${maxX - minX} ${maxY - minY}" font-size="12">
<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#9aa5b1"/></marker></defs>
${edges}
${nodes}
${labels}
${empty}
</svg>
</main>
</body>
</html>
`;
}
