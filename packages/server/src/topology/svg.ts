import { type HostTopology, formatBytes } from '@surveyor/contract';

/** Peers drawn on each side; the rest are counted in the legend. */
export const MAX_DRAWN = 15;

/** Text escaped for SVG and HTML (attributes included). */
export const esc = (s: string) => s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' })[c]!);
const label = (p: HostTopology['inbound'][number]) => `${p.hostname ?? p.address}${p.hostId ? '' : ' (unknown)'}`;

/**
 * Draws a host topology: callers on the left, the host in the centre, destinations on the right.
 * Static SVG (no script), every text escaped; the legend names the window and what was omitted.
 */
export function topologySvg(t: HostTopology, hostLabel: string): string {
  const inbound = t.inbound.slice(0, MAX_DRAWN);
  const outbound = t.outbound.slice(0, MAX_DRAWN);
  const rowH = 34;
  const rows = Math.max(inbound.length, outbound.length, 3);
  const width = 1100;
  const top = 70;
  const height = top + rows * rowH + 110;
  const cx = width / 2;
  const cy = top + (rows * rowH) / 2;
  const side = (peers: typeof inbound, x: number, anchor: 'start' | 'end', edgeX: number) =>
    peers
      .map((p, i) => {
        const y = top + i * rowH + rowH / 2;
        const text = `${label(p)} · ${p.ports.slice(0, 4).join(',')}${p.ports.length > 4 ? '…' : ''} · ${formatBytes(p.bytes)}`;
        return `<line x1="${edgeX}" y1="${y}" x2="${anchor === 'end' ? cx - 110 : cx + 110}" y2="${cy}" stroke="#9aa5b1" stroke-width="1.2"/>` +
          `<circle cx="${edgeX}" cy="${y}" r="5" fill="${p.hostId ? '#2f6fde' : '#b0b7c3'}"/>` +
          `<text x="${x}" y="${y + 4}" text-anchor="${anchor}">${esc(text)}</text>`;
      })
      .join('\n');
  const omittedIn = t.inbound.length - inbound.length;
  const omittedOut = t.outbound.length - outbound.length;
  const noFlows = t.sources.flows ? '' : ' · no flow record exists in this organisation, so no peers can be shown';
  const legend = [
    `Window: last ${t.window.hours} h (${t.window.from.slice(0, 16).replace('T', ' ')} to ${t.window.to.slice(0, 16).replace('T', ' ')} UTC)${noFlows}`,
    `Callers: ${t.inbound.length} (drawn ${inbound.length}${omittedIn ? `, ${omittedIn} omitted` : ''}) · Destinations: ${t.outbound.length} (drawn ${outbound.length}${omittedOut ? `, ${omittedOut} omitted` : ''}) · Open ports: ${t.ports.filter((p) => p.state === 'open').length}`,
    'Blue: hosts in the inventory · grey: addresses unknown to the inventory',
  ];
  return `<?xml version="1.0" encoding="UTF-8"?>
<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="system-ui, -apple-system, Segoe UI, sans-serif" font-size="13" fill="#1f2933">
<title>${esc(`Topology of ${hostLabel}`)}</title>
<rect width="100%" height="100%" fill="#ffffff"/>
<text x="20" y="28" font-size="16" font-weight="600">${esc(`Callers`)}</text>
<text x="${width - 20}" y="28" font-size="16" font-weight="600" text-anchor="end">Destinations</text>
${side(inbound, 290, 'end', 300)}
${side(outbound, width - 290, 'start', width - 300)}
<rect x="${cx - 110}" y="${cy - 28}" width="220" height="56" rx="8" fill="#e8f0fe" stroke="#2f6fde" stroke-width="1.5"/>
<text x="${cx}" y="${cy - 4}" text-anchor="middle" font-weight="600">${esc(hostLabel.slice(0, 30))}</text>
<text x="${cx}" y="${cy + 14}" text-anchor="middle" font-size="11">${esc(t.ports.filter((p) => p.state === 'open').slice(0, 8).map((p) => `${p.port}/${p.protocol}`).join(' ') || 'no open ports known')}</text>
${legend.map((l, i) => `<text x="20" y="${height - 70 + i * 20}" font-size="12" fill="#52606d">${esc(l)}</text>`).join('\n')}
</svg>
`;
}
