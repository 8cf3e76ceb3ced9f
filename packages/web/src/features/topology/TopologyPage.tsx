import { useMutation, useQueryClient } from '@tanstack/react-query';
import { GROUP_BY_CHOICES, MAX_VISIBLE_NODES, roleAtLeast, type TopologyGroupBy } from '@surveyor/contract';
import { type KeyboardEvent, useEffect, useId, useMemo, useState } from 'react';
import { useLocation, useSearchParams } from 'react-router';
import { ErrorAlert } from '../../components/ErrorAlert';
import { ago, dateTime, plural } from '../../lib/format';
import { topologyKeys } from '../../lib/keys';
import { useMe, usePage } from '../../lib/queries';
import { usePageTitle } from '../../lib/usePageTitle';
import { type GraphQuery, exportHref, groupView, regenerateView, regenerateViews, useViewGraph, viewKeys } from './api';
import { Canvas } from './Canvas';
import { ShareDialog } from './ShareDialog';
import { SidePanel } from './SidePanel';
import { type Found, ViewSearch } from './ViewSearch';

// The topology screen (issue 24): a view picked from the organisation's views, drawn on a canvas
// that pans and zooms, its hosts grouped (by subnet, VLAN or service) into boxes that open in
// place. What is on screen lives in the URL (?view=…&open=…&vlan=…&service=…), so a reload or a
// link shows the same thing; `open` absent is the server's default (every group of a small view,
// none of a large one), empty is none, `all` is all.

const GROUP_BY_LABELS: Record<TopologyGroupBy, string> = { subnet: 'Subnet', vlan: 'VLAN', service: 'Service', role: 'Role' };
const nf = new Intl.NumberFormat('en');

export function TopologyPage() {
  usePageTitle('Topology');
  const client = useQueryClient();
  const me = useMe();
  const admin = me.data ? roleAtLeast(me.data.role, 'admin') : false;
  const [params, setParams] = useSearchParams();
  const views = usePage('topologies', { limit: 500 });
  const list = views.data?.data ?? [];
  const viewId = params.get('view') ?? list.find((v) => v.nodeCount > 0)?.id ?? list[0]?.id ?? null;
  const open = params.get('open');
  const vlanParam = Number(params.get('vlan'));
  const vlan = Number.isInteger(vlanParam) && vlanParam > 0 ? vlanParam : null;
  const service = params.get('service') || null;
  const query = useMemo<GraphQuery>(() => ({ expand: open, vlan, service }), [open, vlan, service]);
  const [selected, setSelected] = useState<string | null>(null);
  const [centre, setCentre] = useState<{ nodeId: string; group: string | null; nonce: number } | null>(null);
  const [refit, setRefit] = useState(0);
  const [sharing, setSharing] = useState(false);
  const ids = { view: useId(), vlan: useId(), service: useId(), groupBy: useId() };

  const graph = useViewGraph(viewId, query);
  // The previous view's drawing is not shown while another view loads (a filter change keeps it).
  const g = graph.data && graph.data.topology.id === viewId ? graph.data : undefined;
  const fresh = !!g && !graph.isPlaceholderData;

  /**
   * Changes some search parameters, keeping the others; `null` removes one. `fit` asks for a fit
   * once the answer to the new parameters is drawn: it travels in the history entry's state, with
   * the parameters, so the fit cannot happen on the drawing of the old ones.
   */
  const update = (changes: Record<string, string | null>, fit = false) => {
    const next = new URLSearchParams(params);
    for (const [k, v] of Object.entries(changes)) {
      if (v === null) next.delete(k);
      else next.set(k, v);
    }
    setParams(next, { replace: true, ...(fit ? { state: { fit: Date.now() } } : {}) });
  };
  const setOpen = (groups: readonly string[] | 'all' | null, fit = false) => update({ open: groups === null ? null : groups === 'all' ? 'all' : groups.join(',') }, fit);
  const fitAsked = (useLocation().state as { fit?: number } | null)?.fit ?? 0;
  useEffect(() => {
    if (fitAsked) setRefit(fitAsked);
  }, [fitAsked]);
  const toggle = (groupId: string) => {
    if (!g) return;
    const now = g.groups.expanded;
    setOpen(now.includes(groupId) ? now.filter((x) => x !== groupId) : [...now, groupId]);
  };
  const pickView = (id: string) => {
    setSelected(null);
    setCentre(null);
    setParams({ view: id });
  };

  // A search result: open its group if it is closed, then centre it (the canvas does once drawn) and select it.
  const onFound = (f: Found) => {
    setSelected(f.nodeId);
    setCentre({ nodeId: f.nodeId, group: f.group, nonce: Date.now() });
    if (g && f.group && !g.groups.expanded.includes(f.group)) setOpen([...g.groups.expanded, f.group]);
  };
  // Its group left closed (opening it with the others would pass the node limit): open that one alone.
  useEffect(() => {
    if (!fresh || !g || !centre?.group || !g.groups.notExpanded.includes(centre.group)) return;
    setOpen([centre.group]);
  }, [fresh, g, centre]); // setOpen reads the current parameters: the answer alone decides
  const missing = fresh && g && centre && !g.nodes.some((n) => n.id === centre.nodeId) && (!centre.group || g.groups.expanded.includes(centre.group)) ? centre : null;

  const invalidate = () => {
    void client.invalidateQueries({ queryKey: topologyKeys.all });
    void client.invalidateQueries({ queryKey: viewKeys.all });
  };
  const regenerateAll = useMutation({ mutationFn: regenerateViews, onSuccess: invalidate });
  const regenerateOne = useMutation({ mutationFn: (id: string) => regenerateView(id), onSuccess: invalidate });
  const regroup = useMutation({
    mutationFn: (groupBy: TopologyGroupBy) => groupView(viewId!, groupBy),
    onSuccess: () => {
      setSelected(null);
      update({ open: null });
      invalidate();
    },
  });

  const selectedNode = g && selected ? g.nodes.find((n) => n.id === selected) : undefined;
  const closeDetails = () => {
    const id = selected;
    setSelected(null);
    // Focus goes back to the node whose details closed.
    if (id) requestAnimationFrame(() => document.querySelector<SVGGElement>(`.topo-canvas [data-node-id="${CSS.escape(id)}"]`)?.focus({ preventScroll: true }));
  };
  const onBodyKey = (e: KeyboardEvent<HTMLDivElement>) => {
    if (e.key !== 'Escape' || !selected) return;
    e.preventDefault();
    closeDetails();
  };

  const filtered = vlan !== null || service !== null;
  const fitKey = `${viewId}|${vlan}|${service}|${g?.topology.groupBy ?? ''}|${refit}`;
  const kind = g?.topology.kind;
  const vlanOptions = g ? [...g.facets.vlans] : [];
  if (vlan !== null && !vlanOptions.some((v) => v.id === vlan)) vlanOptions.push({ id: vlan, name: null });
  const serviceOptions = g ? [...g.facets.services] : [];
  if (service !== null && !serviceOptions.includes(service)) serviceOptions.push(service);

  return (
    <>
      <h1>Topology</h1>
      <ErrorAlert error={views.error} />
      {views.isPending && !views.error && <p className="loading">Loading…</p>}
      <div className="toolbar topo-toolbar">
        {list.length > 0 && (
          <div className="field">
            <label htmlFor={ids.view}>View</label>
            <select id={ids.view} value={viewId ?? ''} onChange={(e) => pickView(e.target.value)}>
              {list.map((v) => (
                <option key={v.id} value={v.id}>{`${v.name} · ${plural(v.nodeCount, 'node')} · ${v.status}`}</option>
              ))}
            </select>
          </div>
        )}
        {g && admin && (
          <div className="field">
            <label htmlFor={ids.groupBy}>Group by</label>
            <select id={ids.groupBy} value={g.topology.groupBy} disabled={regroup.isPending} onChange={(e) => regroup.mutate(e.target.value as TopologyGroupBy)}>
              {GROUP_BY_CHOICES[g.topology.kind].map((c) => <option key={c} value={c}>{GROUP_BY_LABELS[c]}</option>)}
            </select>
          </div>
        )}
        {kind === 'network' && (
          <div className="field">
            <label htmlFor={ids.vlan}>VLAN</label>
            <select id={ids.vlan} value={vlan ?? ''} onChange={(e) => update({ vlan: e.target.value || null })} disabled={!vlanOptions.length}>
              <option value="">All</option>
              {vlanOptions.map((v) => <option key={v.id} value={v.id}>{v.name ? `${v.id} · ${v.name}` : String(v.id)}</option>)}
            </select>
          </div>
        )}
        {kind === 'application' && (
          <div className="field">
            <label htmlFor={ids.service}>Service</label>
            <select id={ids.service} value={service ?? ''} onChange={(e) => update({ service: e.target.value || null })} disabled={!serviceOptions.length}>
              <option value="">All</option>
              {serviceOptions.map((s) => <option key={s} value={s}>{s}</option>)}
            </select>
          </div>
        )}
        {g && <ViewSearch key={g.topology.id} viewId={g.topology.id} onPick={onFound} />}
        {admin && (
          <div className="topo-actions">
            {g && <button type="button" onClick={() => regenerateOne.mutate(g.topology.id)} disabled={regenerateOne.isPending}>{regenerateOne.isPending ? 'Regenerating…' : 'Regenerate this view'}</button>}
            <button type="button" onClick={() => regenerateAll.mutate()} disabled={regenerateAll.isPending}>{regenerateAll.isPending ? 'Regenerating…' : 'Regenerate views'}</button>
            {g && <button type="button" onClick={() => setSharing(true)}>Share…</button>}
            {g && <a className="button" href={exportHref(g.topology.id, 'mermaid', query)} download>Export Mermaid</a>}
            {g && <a className="button" href={exportHref(g.topology.id, 'drawio', query)} download>Export draw.io</a>}
          </div>
        )}
      </div>
      <ErrorAlert error={regenerateAll.error ?? regenerateOne.error ?? regroup.error} />
      {regenerateAll.isSuccess && <p role="status" className="notice">Views rebuilt: {regenerateAll.data.data.filter((v) => v.status === 'ready').length} ready, {regenerateAll.data.data.filter((v) => v.status === 'failed').length} failed.</p>}
      {regenerateOne.isSuccess && <p role="status" className="notice">{regenerateOne.data.name} rebuilt: {regenerateOne.data.status}.</p>}
      {views.data && list.length === 0 && <p className="empty">No topology views yet{admin ? ': regenerate them to build one per site.' : '. An administrator can build them.'}</p>}
      <ErrorAlert error={graph.error} />
      {viewId && !g && graph.isFetching && !graph.error && <p className="loading">Loading the view…</p>}
      {g && (
        <>
          <p className="sub">
            {g.topology.kind === 'network' ? 'Layer 2/3: LLDP/CDP links (LAGs as one), VLANs, routes, addresses in networks' : 'Service dependencies seen in flows (last 24 h)'}
            {' · '}{plural(g.topology.nodeCount, 'node')} grouped by {GROUP_BY_LABELS[g.topology.groupBy].toLowerCase()} into {plural(g.groups.total, 'group')} ({g.groups.expanded.length} open)
            {' · '}{g.topology.builtAt ? <>built <time dateTime={g.topology.builtAt} title={dateTime(g.topology.builtAt)}>{ago(g.topology.builtAt)}</time></> : 'not built yet'}
            {g.share && <> · shared until {dateTime(g.share.expiresAt)}</>}
          </p>
          {g.topology.status === 'stale' && <p className="warning">The inventory changed since this view was built; regenerate to update it.</p>}
          {g.topology.status === 'failed' && <p role="alert" className="alert">The last build failed: {g.topology.failureReason}</p>}
          {g.groups.notExpanded.length > 0 && (
            <p className="notice" role="status">
              {plural(g.groups.notExpanded.length, 'group')} left closed: opening {g.groups.notExpanded.length === 1 ? 'it' : 'them'} too would draw more than {nf.format(MAX_VISIBLE_NODES)} nodes. Close other groups, or filter the view.
            </p>
          )}
          {missing && (
            <p className="notice" role="status">
              {missing.nodeId.startsWith('host:') ? 'That host' : 'That node'} is not drawn with the current filter.{' '}
              <button type="button" className="small" onClick={() => update({ vlan: null, service: null })}>Show all</button>
            </p>
          )}
          {g.nodes.length === 0 ? (
            <div className="empty">
              {filtered ? (
                <p>
                  {vlan !== null ? `Nothing in this view carries VLAN ${vlan}.` : `No call of ${service} in this view.`}{' '}
                  <button type="button" className="small" onClick={() => update({ vlan: null, service: null })}>Show all</button>
                </p>
              ) : g.topology.status === 'pending' ? (
                <p>This view has not been built yet{admin ? ': regenerate it.' : '. An administrator can build it.'}</p>
              ) : (
                <p>{g.topology.kind === 'network' ? 'Nothing to draw: no host of this site reports neighbours, addresses in a known network or routes yet.' : 'Nothing to draw: no flows between known hosts and services in the last 24 hours.'}</p>
              )}
            </div>
          ) : (
            <div className={`topo-body${selectedNode ? ' with-panel' : ''}`} onKeyDown={onBodyKey}>
              <Canvas graph={g} admin={admin} fitKey={fitKey} fresh={fresh} centre={centre} selected={selected} onSelect={setSelected} onToggle={toggle}>
                <button type="button" className="small" disabled={g.groups.total === 0 || g.groups.expanded.length === g.groups.total} onClick={() => setOpen('all', true)}>Open all</button>
                <button type="button" className="small" disabled={g.groups.expanded.length === 0} onClick={() => setOpen([], true)}>Close all</button>
                {graph.isFetching && <span className="hint">Loading…</span>}
              </Canvas>
              {selectedNode && <SidePanel node={selectedNode} graph={g} onClose={closeDetails} onToggle={toggle} onSelect={setSelected} />}
            </div>
          )}
        </>
      )}
      {sharing && g && <ShareDialog view={g.topology} active={g.share?.expiresAt ?? null} onDone={() => setSharing(false)} />}
    </>
  );
}
