import { useMutation, useQueryClient } from '@tanstack/react-query';
import { DEFAULT_SHARE_HOURS, MAX_SHARE_HOURS, roleAtLeast, toBoxBorder, type TopologyEdge, type TopologyGraph, type TopologyNode, type TopologyView } from '@surveyor/contract';
import { type PointerEvent as ReactPointerEvent, useEffect, useId, useMemo, useRef, useState } from 'react';
import { useSearchParams } from 'react-router';
import { topologyKeys } from '../../lib/keys';
import { exportHref, regenerateViews, saveNodePosition, shareView, useViewGraph, viewKeys } from './api';
import { CopyField } from '../../components/Copy';
import { Dialog } from '../../components/Dialog';
import { ErrorAlert } from '../../components/ErrorAlert';
import { ago, dateTime } from '../../lib/format';
import { useMe, usePage } from '../../lib/queries';
import { usePageTitle } from '../../lib/usePageTitle';

type Point = { x: number; y: number };
const COLORS: Record<TopologyNode['kind'], [string, string]> = { host: ['#e8f0fe', '#2f6fde'], device: ['#f5f7fa', '#7b8794'], network: ['#eef7ee', '#3f9142'] };
const clip = (s: string, n: number) => (s.length > n ? `${s.slice(0, n - 1)}…` : s);
const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;
const directed = (e: TopologyEdge) => e.kind === 'dependency' || e.kind === 'route';

/** VLANs of an edge or node (network view), services of an edge (application view). */
const vlansOf = (x: { data: Record<string, unknown> }) => (Array.isArray(x.data.vlans) ? (x.data.vlans as number[]) : []);
const serviceOf = (e: TopologyEdge) => (typeof e.data.service === 'string' ? e.data.service : null);

function ShareDialog({ view, active, onDone }: { view: TopologyView; active: string | null; onDone: () => void }) {
  const client = useQueryClient();
  const id = useId();
  const [hours, setHours] = useState(String(DEFAULT_SHARE_HOURS));
  const [link, setLink] = useState<{ url: string; expiresAt: string } | null>(null);
  const n = Number(hours);
  const valid = Number.isInteger(n) && n >= 1 && n <= MAX_SHARE_HOURS;
  const share = useMutation({
    mutationFn: (body: Parameters<typeof shareView>[1]) => shareView(view.id, body),
    onSuccess: (r) => {
      void client.invalidateQueries({ queryKey: viewKeys.graph(view.id) });
      if (r.enabled && r.url && r.expiresAt) setLink({ url: r.url, expiresAt: r.expiresAt });
      else onDone();
    },
  });
  return (
    <Dialog title={`Share ${view.name}`} confirmLabel={link ? 'Done' : 'Create link'} busy={share.isPending || (!link && !valid)} onConfirm={() => (link ? onDone() : share.mutate({ enabled: true, expiresInHours: n }))} onCancel={onDone}>
      <p className="hint">Anyone with the link sees this one view, read-only, without signing in, until it expires. A new link replaces the previous one.</p>
      {active && !link && <p className="notice">A link is active until {dateTime(active)}.</p>}
      {!link && (
        <div className="field">
          <label htmlFor={id}>Expires in (hours)</label>
          <input id={id} type="number" min={1} max={MAX_SHARE_HOURS} value={hours} onChange={(e) => setHours(e.target.value)} {...(valid ? {} : { 'aria-invalid': true, 'aria-describedby': `${id}-issue` })} />
          {!valid && <span id={`${id}-issue`} className="field-issue error-text">A whole number of hours from 1 to {MAX_SHARE_HOURS}.</span>}
        </div>
      )}
      {link && (
        <div className="field">
          <div className="copy-row">
            <CopyField label="Share link" value={link.url} copyLabel="Copy link" />
          </div>
          <span className="hint">Shown only now. Valid until {dateTime(link.expiresAt)}.</span>
        </div>
      )}
      {active && !link && (
        <button type="button" onClick={() => share.mutate({ enabled: false })} disabled={share.isPending}>Revoke link</button>
      )}
      <ErrorAlert error={share.error} />
    </Dialog>
  );
}

function Canvas({ graph, admin, vlan, service }: { graph: TopologyGraph; admin: boolean; vlan: number | null; service: string | null }) {
  const client = useQueryClient();
  const svg = useRef<SVGSVGElement>(null);
  const [moved, setMoved] = useState<Record<string, Point>>({});
  const [zoom, setZoom] = useState(1);
  const [drag, setDrag] = useState<{ id: string; offset: Point } | null>(null);
  const [saved, setSaved] = useState<string | null>(null);
  const { width: w, height: h } = graph.nodeSize;
  useEffect(() => setMoved({}), [graph]);

  const save = useMutation({
    mutationFn: (p: { nodeId: string; x: number; y: number }) => saveNodePosition(graph.topology.id, p),
    onSuccess: (_r, p) => {
      setSaved(graph.nodes.find((n) => n.id === p.nodeId)?.label ?? p.nodeId);
      void client.invalidateQueries({ queryKey: viewKeys.graph(graph.topology.id) });
    },
  });

  const pos = (n: TopologyNode): Point => moved[n.id] ?? { x: n.x, y: n.y };
  // The filter keeps the edges of the VLAN or service and the nodes they touch (and, for a VLAN, the nodes carrying it).
  const edges = graph.edges.filter((e) => (vlan === null || vlansOf(e).includes(vlan)) && (service === null || serviceOf(e) === service));
  const touched = new Set(edges.flatMap((e) => [e.source, e.target]));
  const nodes = vlan === null && service === null ? graph.nodes : graph.nodes.filter((n) => touched.has(n.id) || (vlan !== null && vlansOf(n).includes(vlan)));
  const byId = new Map(nodes.map((n) => [n.id, n]));

  const xs = graph.nodes.flatMap((n) => [pos(n).x, pos(n).x + w]);
  const ys = graph.nodes.flatMap((n) => [pos(n).y, pos(n).y + h]);
  // The drawing's extent, at least 1000 × 520 so that a small view is not blown up.
  const fit = graph.nodes.length ? { x: Math.min(...xs) - 30, y: Math.min(...ys) - 30, w: Math.max(...xs) - Math.min(...xs) + 60, h: Math.max(...ys) - Math.min(...ys) + 60 } : { x: 0, y: 0, w: 600, h: 200 };
  const box = { w: Math.max(fit.w, 1000), h: Math.max(fit.h, 520), x: 0, y: 0 };
  box.x = fit.x - (box.w - fit.w) / 2;
  box.y = fit.y - (box.h - fit.h) / 2;
  const view = { w: box.w / zoom, h: box.h / zoom };
  const viewBox = `${box.x + (box.w - view.w) / 2} ${box.y + (box.h - view.h) / 2} ${view.w} ${view.h}`;

  // An edge from border to border of its node boxes (the arrow head shows; the label sits between them).
  const segment = (e: TopologyEdge) => {
    const a = byId.get(e.source);
    const b = byId.get(e.target);
    if (!a || !b) return null;
    const [p, q] = [pos(a), pos(b)];
    const [ca, cb] = [{ x: p.x + w / 2, y: p.y + h / 2 }, { x: q.x + w / 2, y: q.y + h / 2 }];
    const [s1, s2] = [toBoxBorder(cb, ca, w / 2, h / 2), toBoxBorder(ca, cb, w / 2, h / 2)];
    return { x1: s1.x, y1: s1.y, x2: s2.x, y2: s2.y };
  };

  const toSvg = (e: ReactPointerEvent): Point => {
    const m = svg.current?.getScreenCTM();
    if (!m) return { x: 0, y: 0 };
    const p = new DOMPoint(e.clientX, e.clientY).matrixTransform(m.inverse());
    return { x: p.x, y: p.y };
  };
  const down = (n: TopologyNode) => (e: ReactPointerEvent<SVGGElement>) => {
    if (!admin) return;
    e.currentTarget.setPointerCapture(e.pointerId);
    const p = toSvg(e);
    setDrag({ id: n.id, offset: { x: p.x - pos(n).x, y: p.y - pos(n).y } });
    setSaved(null);
  };
  const move = (e: ReactPointerEvent<SVGGElement>) => {
    if (!drag) return;
    const p = toSvg(e);
    setMoved((m) => ({ ...m, [drag.id]: { x: Math.round(p.x - drag.offset.x), y: Math.round(p.y - drag.offset.y) } }));
  };
  const up = () => {
    if (!drag) return;
    const p = moved[drag.id];
    setDrag(null);
    if (p) save.mutate({ nodeId: drag.id, ...p });
  };

  return (
    <>
      <div className="toolbar topo-zoom" role="group" aria-label="Zoom">
        <button type="button" className="small" onClick={() => setZoom((z) => Math.min(z * 1.25, 8))}>Zoom in</button>
        <button type="button" className="small" onClick={() => setZoom((z) => Math.max(z / 1.25, 0.25))}>Zoom out</button>
        <button type="button" className="small" onClick={() => setZoom(1)}>Fit</button>
        <span className="hint">{Math.round(zoom * 100)} %{admin ? ' · drag a node to move it; its place is saved' : ''}</span>
        {save.isPending && <span className="hint">Saving…</span>}
        {saved && !save.isPending && <span role="status" className="hint">Position of {saved} saved.</span>}
      </div>
      <ErrorAlert error={save.error} />
      <svg
        ref={svg}
        className="topo-canvas"
        role="img"
        aria-label={`${graph.topology.name}: ${plural(nodes.length, 'node')}, ${plural(edges.length, 'edge')} shown`}
        viewBox={viewBox}
        onWheel={(e) => setZoom((z) => Math.min(Math.max(z * (e.deltaY < 0 ? 1.1 : 1 / 1.1), 0.25), 8))}
      >
        <defs>
          <marker id="topo-arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#7b8794" /></marker>
        </defs>
        {edges.map((e) => {
          const seg = segment(e);
          if (!seg) return null;
          return (
            <g key={e.id} className={`topo-edge topo-edge-${e.kind}`}>
              <title>{e.label}</title>
              <line x1={seg.x1} y1={seg.y1} x2={seg.x2} y2={seg.y2} {...(directed(e) ? { markerEnd: 'url(#topo-arrow)' } : {})} />
            </g>
          );
        })}
        {nodes.map((n) => {
          const p = pos(n);
          const [fill, stroke] = COLORS[n.kind];
          return (
            <g key={n.id} className={`topo-node${admin ? ' movable' : ''}`} data-node-id={n.id} onPointerDown={down(n)} onPointerMove={move} onPointerUp={up} aria-label={n.label}>
              <title>{`${n.label} (${n.kind})`}</title>
              <rect x={p.x} y={p.y} width={w} height={h} rx={6} fill={fill} stroke={stroke} />
              <text x={p.x + w / 2} y={p.y + h / 2 + 4} textAnchor="middle">{clip(n.label, 24)}</text>
            </g>
          );
        })}
        {edges.map((e) => {
          const seg = segment(e);
          if (!seg || !e.label) return null;
          return <text key={`label-${e.id}`} className="topo-edge-label" x={(seg.x1 + seg.x2) / 2} y={(seg.y1 + seg.y2) / 2 - 4} textAnchor="middle">{clip(e.label, 36)}</text>;
        })}
      </svg>
    </>
  );
}

export function TopologyPage() {
  usePageTitle('Topology');
  const client = useQueryClient();
  const me = useMe();
  const admin = me.data ? roleAtLeast(me.data.role, 'admin') : false;
  const [params, setParams] = useSearchParams();
  const views = usePage('topologies', { limit: 500 });
  const list = views.data?.data ?? [];
  const selected = params.get('view') ?? list.find((v) => v.nodeCount > 0)?.id ?? list[0]?.id ?? null;
  const [vlan, setVlan] = useState<number | null>(null);
  const [service, setService] = useState<string | null>(null);
  const [sharing, setSharing] = useState(false);
  const ids = { view: useId(), vlan: useId(), service: useId() };

  const graph = useViewGraph(selected);
  const regenerate = useMutation({
    mutationFn: regenerateViews,
    onSuccess: () => {
      void client.invalidateQueries({ queryKey: topologyKeys.all });
      void client.invalidateQueries({ queryKey: viewKeys.all });
    },
  });

  const g = graph.data;
  const vlans = useMemo(() => [...new Set((g?.edges ?? []).flatMap(vlansOf).concat((g?.nodes ?? []).flatMap(vlansOf)))].sort((a, b) => a - b), [g]);
  const services = useMemo(() => [...new Set((g?.edges ?? []).map(serviceOf).filter((s): s is string => !!s))].sort(), [g]);
  const pick = (id: string) => {
    setVlan(null);
    setService(null);
    setParams({ view: id });
  };

  return (
    <>
      <h1>Topology</h1>
      <ErrorAlert error={views.error} />
      {views.isPending && !views.error && <p className="loading">Loading…</p>}
      <div className="toolbar">
        {list.length > 0 && (
          <div className="field">
            <label htmlFor={ids.view}>View</label>
            <select id={ids.view} value={selected ?? ''} onChange={(e) => pick(e.target.value)}>
              {list.map((v) => (
                <option key={v.id} value={v.id}>{`${v.name} · ${plural(v.nodeCount, 'node')} · ${v.status}`}</option>
              ))}
            </select>
          </div>
        )}
        {g?.topology.kind === 'network' && (
          <div className="field">
            <label htmlFor={ids.vlan}>VLAN</label>
            <select id={ids.vlan} value={vlan ?? ''} onChange={(e) => setVlan(e.target.value === '' ? null : Number(e.target.value))} disabled={!vlans.length}>
              <option value="">All</option>
              {vlans.map((v) => <option key={v} value={v}>{v}</option>)}
            </select>
          </div>
        )}
        {g?.topology.kind === 'application' && (
          <div className="field">
            <label htmlFor={ids.service}>Service</label>
            <select id={ids.service} value={service ?? ''} onChange={(e) => setService(e.target.value || null)} disabled={!services.length}>
              <option value="">All</option>
              {services.map((s) => <option key={s} value={s}>{s}</option>)}
            </select>
          </div>
        )}
        {admin && (
          <>
            <button type="button" onClick={() => regenerate.mutate()} disabled={regenerate.isPending}>{regenerate.isPending ? 'Regenerating…' : 'Regenerate views'}</button>
            {g && <button type="button" onClick={() => setSharing(true)}>Share…</button>}
            {g && <a className="button" href={exportHref(g.topology.id, 'mermaid')} download>Export Mermaid</a>}
            {g && <a className="button" href={exportHref(g.topology.id, 'drawio')} download>Export draw.io</a>}
          </>
        )}
      </div>
      <ErrorAlert error={regenerate.error} />
      {regenerate.isSuccess && <p role="status" className="notice">Views rebuilt: {regenerate.data.data.filter((v) => v.status === 'ready').length} ready, {regenerate.data.data.filter((v) => v.status === 'failed').length} failed.</p>}
      {views.data && list.length === 0 && <p className="empty">No topology views yet{admin ? ': regenerate them to build one per site.' : '. An administrator can build them.'}</p>}
      <ErrorAlert error={graph.error} />
      {g && (
        <>
          <p className="sub">
            {g.topology.kind === 'network' ? 'Layer 2/3: LLDP/CDP links (LAGs as one), VLANs, routes, addresses in networks' : 'Service dependencies seen in flows (last 24 h)'}
            {' · '}{plural(g.nodes.length, 'node')} · {plural(g.edges.length, 'edge')} · {g.topology.builtAt ? <>built <time dateTime={g.topology.builtAt} title={dateTime(g.topology.builtAt)}>{ago(g.topology.builtAt)}</time></> : 'not built yet'}
            {g.share && <> · shared until {dateTime(g.share.expiresAt)}</>}
          </p>
          {g.topology.status === 'stale' && <p className="warning">The inventory changed since this view was built; regenerate to update it.</p>}
          {g.topology.status === 'failed' && <p role="alert" className="alert">The last build failed: {g.topology.failureReason}</p>}
          {g.nodes.length === 0 ? (
            <p className="empty">{g.topology.kind === 'network' ? 'Nothing to draw: no host of this site reports neighbours, addresses in a known network or routes yet.' : 'Nothing to draw: no flows between known hosts and services in the last 24 hours.'}</p>
          ) : (
            <Canvas graph={g} admin={admin} vlan={vlan} service={service} />
          )}
        </>
      )}
      {sharing && g && <ShareDialog view={g.topology} active={g.share?.expiresAt ?? null} onDone={() => setSharing(false)} />}
    </>
  );
}
