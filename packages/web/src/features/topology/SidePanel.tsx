import type { HostTopology, TopologyGraph, TopologyNode } from '@surveyor/contract';
import { type ReactNode, useEffect, useId, useMemo, useRef } from 'react';
import { Link } from 'react-router';
import { ErrorAlert } from '../../components/ErrorAlert';
import { ago, bytes, dateTime, plural, product } from '../../lib/format';
import { useHostFlows, useHostRow, useHostServices, useServiceFindings } from './api';

// The details of the node selected on the canvas: a host's addresses, services, findings and
// flows (from the routes the host page reads) and a link to that page; a group's size and members;
// a network's or a device's facts. Escape or "Close details" closes it.

const strings = (v: unknown) => (Array.isArray(v) ? v.filter((x): x is string | number => typeof x === 'string' || typeof x === 'number').map(String) : []);
const text = (v: unknown) => (typeof v === 'string' || typeof v === 'number' ? String(v) : null);
const SEVERITIES = ['critical', 'high', 'medium', 'low', 'none'] as const;

function Fields({ children }: { children: ReactNode }) {
  return <dl className="fields topo-fields">{children}</dl>;
}
function Field({ name, children }: { name: string; children: ReactNode }) {
  return (
    <>
      <dt>{name}</dt>
      <dd>{children}</dd>
    </>
  );
}

type Peer = HostTopology['inbound'][number];
function TopPeers({ title, peers }: { title: string; peers: Peer[] }) {
  const top = [...peers].sort((a, b) => b.bytes - a.bytes).slice(0, 3);
  return (
    <div>
      <h4>{title}: {peers.length}</h4>
      {top.length > 0 && (
        <ul className="topo-peers">
          {top.map((p) => (
            <li key={`${p.address}`}>
              {p.hostId ? <Link to={`/hosts/${p.hostId}`}>{p.hostname ?? p.address}</Link> : <span className="mono">{p.hostname ?? p.address}</span>}
              <span className="hint"> · {bytes(p.bytes)} · {p.ports.slice(0, 3).join(', ')}</span>
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}

function HostDetails({ node, hostId }: { node: TopologyNode; hostId: string }) {
  const host = useHostRow(hostId);
  const services = useHostServices(hostId);
  const list = services.data?.data ?? [];
  const findings = useServiceFindings(list.map((s) => s.id));
  const flows = useHostFlows(hostId);
  const h = host.data;
  const open = useMemo(() => findings.flatMap((q) => q.data?.data ?? []).filter((v) => v.state === 'open' || v.state === 'acknowledged').sort((a, b) => (b.score ?? 0) - (a.score ?? 0)), [findings]);
  const addresses = h?.addresses ?? strings(node.data.addresses);
  const f = flows.data;
  return (
    <>
      {node.data.outsideScope === true && <p className="hint">Outside this view's site: drawn because a host of it talks to it.</p>}
      <Fields>
        <Field name="Addresses">{addresses.length ? <span className="mono">{addresses.join(', ')}</span> : '—'}</Field>
        {h && <Field name="OS">{h.os ?? '—'}</Field>}
        {h && <Field name="Vendor">{h.vendor ?? '—'}</Field>}
        {h && <Field name="Last seen"><time dateTime={h.lastSeenAt} title={dateTime(h.lastSeenAt)}>{ago(h.lastSeenAt)}</time>{h.goneAt ? ' (gone)' : ''}</Field>}
        {strings(node.data.vlans).length > 0 && <Field name="VLANs">{strings(node.data.vlans).join(', ')}</Field>}
      </Fields>
      <ErrorAlert error={host.error} />
      {host.data === null && <p className="empty">This host is no longer in the inventory.</p>}
      <p><Link to={`/hosts/${hostId}`}>Open the host page</Link></p>

      <h3>Services</h3>
      <ErrorAlert error={services.error} />
      {services.isPending && <p className="loading">Loading…</p>}
      {services.data && list.length === 0 && <p className="empty">No service seen on this host.</p>}
      {list.length > 0 && (
        <ul className="topo-list">
          {list.slice(0, 8).map((s) => (
            <li key={s.id}>
              <span className="mono">{s.port}/{s.protocol}</span> {s.name ?? ''} {product(s) !== '—' && <span className="hint">{product(s)}</span>}
            </li>
          ))}
          {list.length > 8 && <li className="hint">and {list.length - 8}{services.data?.hasMore ? '+' : ''} more</li>}
        </ul>
      )}

      <h3>Findings</h3>
      <ErrorAlert error={findings.find((q) => q.error)?.error} />
      {services.data && findings.every((q) => q.data) && open.length === 0 && <p className="empty">No open finding on its services.</p>}
      {open.length > 0 && (
        <>
          <p className="topo-severities">
            {SEVERITIES.map((s) => {
              const n = open.filter((v) => v.severity === s).length;
              return n ? <span key={s} className={`badge sev-${s}`}>{n} {s}</span> : null;
            })}
          </p>
          <ul className="topo-list">
            {open.slice(0, 5).map((v) => (
              <li key={v.id}><span className="mono">{v.cveId}</span> <span className={`sev-${v.severity}`}>{v.severity}{v.score !== null ? ` ${v.score}` : ''}</span></li>
            ))}
          </ul>
        </>
      )}

      <h3>Flows (24 h)</h3>
      <ErrorAlert error={flows.error} />
      {f && !f.sources.flows && <p className="empty">No flow records in this organisation yet.</p>}
      {f?.sources.flows && (
        <div className="topo-flows">
          <TopPeers title="Callers" peers={f.inbound} />
          <TopPeers title="Destinations" peers={f.outbound} />
        </div>
      )}
    </>
  );
}

function GroupDetails({ node, graph, onToggle, onSelect }: { node: TopologyNode; graph: TopologyGraph; onToggle: (id: string) => void; onSelect: (id: string) => void }) {
  const members = useMemo(() => (node.expanded ? graph.nodes.filter((n) => n.group === node.id).sort((a, b) => a.label.localeCompare(b.label, undefined, { numeric: true })) : []), [graph, node]);
  const count = node.members ?? Number(node.data.members ?? 0);
  const hosts = node.data.hosts;
  return (
    <>
      <Fields>
        <Field name="Members">{plural(count, 'host')}</Field>
        {typeof hosts === 'number' && hosts !== count && <Field name="Hosts">{hosts}</Field>}
        {text(node.data.cidr) && <Field name="Network"><span className="mono">{text(node.data.cidr)}</span></Field>}
        {text(node.data.block) && <Field name="Block"><span className="mono">{text(node.data.block)}</span></Field>}
        {text(node.data.vlan) && <Field name="VLAN">{text(node.data.vlan)}</Field>}
        {text(node.data.service) && <Field name="Service">{text(node.data.service)}</Field>}
        {text(node.data.role) && <Field name="Role">{text(node.data.role)}</Field>}
        {text(node.data.part) && <Field name="Part">{text(node.data.part)} of {text(node.data.parts)}</Field>}
      </Fields>
      <p>
        <button type="button" onClick={() => onToggle(node.id)}>{node.expanded ? 'Close group' : 'Open group'}</button>
      </p>
      {Array.isArray(hosts) && !node.expanded && (
        <ul className="topo-list">
          {strings(hosts).slice(0, 20).map((h) => <li key={h}>{h}</li>)}
          {hosts.length > 20 && <li className="hint">and {hosts.length - 20} more</li>}
        </ul>
      )}
      {members.length > 0 && (
        <>
          <h3>Hosts</h3>
          <ul className="topo-list topo-members">
            {members.slice(0, 50).map((m) => (
              <li key={m.id}><button type="button" className="link" onClick={() => onSelect(m.id)}>{m.label}</button> <span className="hint mono">{strings(m.data.addresses)[0] ?? ''}</span></li>
            ))}
            {members.length > 50 && <li className="hint">and {members.length - 50} more: search the view to find one</li>}
          </ul>
        </>
      )}
    </>
  );
}

/** What `data` says, for a network or a device: each plain field, named by its key. */
function DataDetails({ node }: { node: TopologyNode }) {
  const names: Record<string, string> = { cidr: 'CIDR', vlans: 'VLANs', chassisId: 'Chassis id', systemName: 'System name', managementAddress: 'Management address' };
  const rows = Object.entries(node.data).flatMap(([k, v]) => {
    if (k === 'networkId' || k === 'hostId') return [];
    const value = Array.isArray(v) ? strings(v).join(', ') : text(v);
    return value ? [[names[k] ?? k, value] as const] : [];
  });
  const networkId = text(node.data.networkId);
  return (
    <>
      <Fields>
        {rows.map(([k, v]) => <Field key={k} name={k}><span className={/address|cidr|chassis/i.test(k) ? 'mono' : undefined}>{v}</span></Field>)}
      </Fields>
      {rows.length === 0 && <p className="empty">Nothing more is known of it.</p>}
      {node.kind === 'network' && networkId && <p><Link to={`/networks/${networkId}`}>Open the network page</Link></p>}
    </>
  );
}

export function SidePanel({ node, graph, onClose, onToggle, onSelect }: { node: TopologyNode; graph: TopologyGraph; onClose: () => void; onToggle: (id: string) => void; onSelect: (id: string) => void }) {
  const headingId = useId();
  const heading = useRef<HTMLHeadingElement>(null);
  const hostId = node.kind === 'host' ? text(node.data.hostId) : null;
  const edges = useMemo(() => graph.edges.filter((e) => e.source === node.id || e.target === node.id), [graph, node.id]);
  const kind = node.kind === 'group' ? 'Group' : node.kind === 'host' ? 'Host' : node.kind === 'network' ? 'Network' : 'Device (LLDP/CDP)';
  useEffect(() => {
    // Braced: Chromium's scrollIntoView returns a promise, and an effect may return only its cleanup.
    heading.current?.scrollIntoView({ block: 'nearest' });
  }, [node.id]);
  return (
    <aside className="topo-panel" aria-labelledby={headingId}>
      <div className="topo-panel-head">
        <h2 id={headingId} ref={heading}>{node.label}</h2>
        <button type="button" className="small" onClick={onClose} aria-label="Close details" title="Close details (Esc)">×</button>
      </div>
      <p className="sub">{kind}{edges.length > 0 ? ` · ${plural(edges.reduce((n, e) => n + e.edges, 0), 'connection')} drawn` : ''}</p>
      {node.kind === 'host' && hostId ? <HostDetails key={hostId} node={node} hostId={hostId} /> : node.kind === 'group' ? <GroupDetails node={node} graph={graph} onToggle={onToggle} onSelect={onSelect} /> : <DataDetails node={node} />}
    </aside>
  );
}
