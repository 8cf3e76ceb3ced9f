import { PortProtocol, serviceFilters, goneModes } from '@surveyor/contract';
import type { ColumnDef } from '@tanstack/react-table';
import { useEffect, useId, useMemo, useState } from 'react';
import { Link, useSearchParams } from 'react-router';
import { DataTable } from '../../components/DataTable';
import { Exposure } from '../../components/Exposure';
import { ErrorAlert } from '../../components/ErrorAlert';
import { HostLink, byHostLabel, hostLabel } from '../../components/hostLabel';
import { ago, dateTime, plural } from '../../lib/format';
import { collectionPages, useCollection, useHostNames, usePage } from '../../lib/queries';
import type { Host, Service } from '../../lib/types';
import { usePageTitle } from '../../lib/usePageTitle';
import { type ServiceFilters, useServiceCount } from './api';

/** The filters typed into a box: applied to the URL once typing pauses, if the contract accepts them. */
const TEXT_FILTERS = ['product', 'version', 'port', 'cpe'] as const;
type TextFilter = (typeof TEXT_FILTERS)[number];
const PLACEHOLDERS: Record<TextFilter, string> = { product: 'Apache', version: '2.4.49', port: '443', cpe: 'cpe:2.3:a:apache:http_server' };

/** The URL with one filter set (or removed), the others kept: a link that narrows the list. */
function withFilter(params: URLSearchParams, set: Record<string, string | null>): string {
  const next = new URLSearchParams(params);
  for (const [k, v] of Object.entries(set)) {
    if (v === null || v === '') next.delete(k);
    else next.set(k, v);
  }
  return `?${next.toString()}`;
}

function serviceColumns(hosts: Map<string, Host>, params: URLSearchParams): ColumnDef<Service>[] {
  return [
    { header: 'Host', accessorKey: 'hostId', enableSorting: false, cell: ({ row }) => <HostLink id={row.original.hostId} hosts={hosts} /> },
    { header: 'Address', accessorKey: 'address', cell: ({ row }) => <span className="mono">{row.original.address ?? '—'}</span> },
    { header: () => <span className="num-head">Port</span>, id: 'port', accessorKey: 'port', cell: ({ row }) => <span className="mono nowrap num">{row.original.port}/{row.original.protocol}</span> },
    {
      header: 'State',
      accessorKey: 'state',
      cell: ({ row }) =>
        row.original.goneAt ? (
          <span className="svc-gone" title={`Not found by a completed scan since ${dateTime(row.original.goneAt)}`}>gone</span>
        ) : (
          <span className={`svc-${row.original.state}`}>{row.original.state}</span>
        ),
    },
    { header: 'Internet', id: 'exposedVia', accessorKey: 'exposedVia', cell: ({ row }) => <Exposure via={row.original.exposedVia} /> },
    { header: 'Name', accessorKey: 'name', cell: ({ row }) => row.original.name ?? '—' },
    {
      header: 'Product',
      accessorKey: 'product',
      cell: ({ row }) => {
        const p = row.original.product;
        return p ? <Link className="nowrap" to={withFilter(params, { product: p, version: null })} title={`Only ${p}`}>{p}</Link> : '—';
      },
    },
    {
      header: 'Version',
      accessorKey: 'version',
      cell: ({ row }) => {
        const { product, version } = row.original;
        if (!version) return '—';
        return <Link to={withFilter(params, { product: product ?? null, version })} title={`Only ${product ?? ''} ${version}`.replace('  ', ' ')}>{version}</Link>;
      },
    },
    { header: 'CPE', accessorKey: 'cpe', cell: ({ row }) => <span className="mono cpe nowrap" title={row.original.cpe ?? undefined}>{row.original.cpe ?? '—'}</span> },
    {
      header: 'Last seen',
      accessorKey: 'lastSeenAt',
      cell: ({ row }) => <time className="nowrap" dateTime={row.original.lastSeenAt} title={dateTime(row.original.lastSeenAt)}>{ago(row.original.lastSeenAt)}</time>,
    },
  ];
}

/** Why the contract refuses a typed filter, or null when it takes it (empty: no filter). */
function problemOf(name: TextFilter, value: string): string | null {
  if (value.trim() === '') return null;
  const r = serviceFilters[name].safeParse(value);
  return r.success ? null : (r.error.issues[0]?.message ?? 'not a valid value');
}

export function ServicesPage() {
  usePageTitle('Services');
  const [params, setParams] = useSearchParams();
  const hostId = params.get('hostId') ?? undefined;
  const ids = { host: useId(), protocol: useId(), gone: useId(), exposed: useId(), product: useId(), version: useId(), port: useId(), cpe: useId() };

  const inUrl = Object.fromEntries(TEXT_FILTERS.map((k) => [k, params.get(k) ?? ''])) as Record<TextFilter, string>;
  const [typed, setTyped] = useState(inUrl);
  // A link or Back changes the URL: the boxes follow (their own edits reach the URL trimmed, so those match already).
  useEffect(() => setTyped((t) => (TEXT_FILTERS.some((k) => t[k].trim() !== inUrl[k]) ? inUrl : t)), [params]);
  const problems = Object.fromEntries(TEXT_FILTERS.map((k) => [k, problemOf(k, typed[k])])) as Record<TextFilter, string | null>;
  useEffect(() => {
    const t = setTimeout(() => {
      const changes = Object.fromEntries(TEXT_FILTERS.filter((k) => !problems[k] && typed[k].trim() !== inUrl[k]).map((k) => [k, typed[k].trim()]));
      if (Object.keys(changes).length) setParams(withFilter(params, changes), { replace: true });
    }, 400);
    return () => clearTimeout(t);
  }, [typed]);
  const set = (name: string, value: string | null) => setParams(withFilter(params, { [name]: value }), { replace: true });

  const protocolParam = params.get('protocol');
  const protocol = PortProtocol.safeParse(protocolParam).data;
  const goneParam = params.get('gone');
  const gone = (goneModes as readonly string[]).includes(goneParam ?? '') ? (goneParam as (typeof goneModes)[number]) : 'exclude';
  const exposedParam = params.get('exposed');
  const exposed = exposedParam === 'true' || exposedParam === 'false' ? exposedParam : undefined;
  const filters: ServiceFilters = {
    ...(hostId ? { hostId } : {}),
    ...(exposed ? { exposed } : {}),
    ...Object.fromEntries(TEXT_FILTERS.filter((k) => inUrl[k] !== '').map((k) => [k, inUrl[k]])),
    ...(protocol ? { protocol } : {}),
    gone,
  };
  const filtered = Object.keys(filters).length > 1 || gone !== 'exclude';

  const services = useCollection('services', { limit: 100, ...filters });
  const count = useServiceCount(filters);
  const rows = useMemo(() => services.data?.pages.flatMap((p) => p.data) ?? [], [services.data]);
  const hosts = useHostNames([...(hostId ? [hostId] : []), ...rows.map((s) => s.hostId)]);
  const choices = usePage('hosts', { limit: 500 }); // the picker offers the first 500; the names of the rows are looked up
  const columns = useMemo(() => serviceColumns(hosts, params), [hosts, params]);
  const hostList = useMemo(() => [...(choices.data?.data ?? [])].sort(byHostLabel), [choices.data]);
  const total = count.data?.total;

  return (
    <>
      <h1>Services</h1>
      <form className="toolbar service-filters" role="search" aria-label="Filter services" onSubmit={(e) => e.preventDefault()}>
        <div className="field">
          <label htmlFor={ids.host}>Host</label>
          <select id={ids.host} value={hostId ?? ''} onChange={(e) => set('hostId', e.target.value)}>
            <option value="">Every host</option>
            {hostId && !hostList.some((h) => h.id === hostId) && <option value={hostId}>{hostLabel(hosts.get(hostId)) ?? hostId}</option>}
            {hostList.map((h) => (
              <option key={h.id} value={h.id}>{hostLabel(h)}</option>
            ))}
          </select>
        </div>
        {TEXT_FILTERS.map((k) => (
          <div className={`field filter-${k}`} key={k}>
            <label htmlFor={ids[k]}>{k === 'cpe' ? 'CPE' : k[0]!.toUpperCase() + k.slice(1)}</label>
            <input
              id={ids[k]}
              type="search"
              inputMode={k === 'port' ? 'numeric' : undefined}
              value={typed[k]}
              placeholder={PLACEHOLDERS[k]}
              aria-invalid={problems[k] ? true : undefined}
              aria-describedby={problems[k] ? `${ids[k]}-error` : undefined}
              onChange={(e) => setTyped((t) => ({ ...t, [k]: e.target.value }))}
            />
            {problems[k] && <span id={`${ids[k]}-error`} className="field-error">{problems[k]}</span>}
          </div>
        ))}
        <div className="field">
          <label htmlFor={ids.protocol}>Protocol</label>
          <select id={ids.protocol} value={protocol ?? ''} onChange={(e) => set('protocol', e.target.value)}>
            <option value="">Any</option>
            {PortProtocol.options.map((p) => <option key={p} value={p}>{p}</option>)}
          </select>
        </div>
        <div className="field">
          <label htmlFor={ids.gone}>Gone services</label>
          <select id={ids.gone} value={gone} onChange={(e) => set('gone', e.target.value === 'exclude' ? null : e.target.value)}>
            <option value="exclude">Hidden</option>
            <option value="include">Shown</option>
            <option value="only">Only gone</option>
          </select>
        </div>
        <div className="field">
          <label htmlFor={ids.exposed}>Internet</label>
          <select id={ids.exposed} value={exposed ?? ''} onChange={(e) => set('exposed', e.target.value)} title="As a cloud account says: a public instance whose security group admits the port from anywhere, a Kubernetes LoadBalancer, NodePort or ingress">
            <option value="">Any</option>
            <option value="true">Exposed</option>
            <option value="false">Not exposed</option>
          </select>
        </div>
        {filtered && <Link className="clear-filters" to="?">Clear filters</Link>}
      </form>
      <p className="total" role="status">
        {total === undefined ? '…' : <><strong className="num">{total.toLocaleString()}</strong> {total === 1 ? 'service' : 'services'}{filtered ? ' match these filters' : ''}</>}
        {total !== undefined && rows.length > 0 && rows.length < total && <span className="hint"> · {plural(rows.length, 'row')} shown</span>}
      </p>
      <ErrorAlert error={services.error ?? count.error} />
      {services.isPending && !services.error && <p className="loading">Loading…</p>}
      {services.data && rows.length === 0 && (
        <p className="empty">
          {filtered
            ? 'No services match these filters. Product matches part of the name (apache), version its start (2.4 finds 2.4.49), CPE whole components.'
            : 'No services yet: enrol a daemon and scan a network to find open ports.'}
        </p>
      )}
      {rows.length > 0 && <DataTable caption="Services" partial={services.hasNextPage} data={rows} columns={columns} rowKey={(s) => s.id} rowClassName={(s) => (s.goneAt ? 'gone' : undefined)} exportRows={(signal) => collectionPages('services', filters, signal)} />}
      {services.hasNextPage && (
        <button type="button" className="more" onClick={() => void services.fetchNextPage()} disabled={services.isFetchingNextPage}>
          {services.isFetchingNextPage ? 'Loading…' : 'Load more'}
        </button>
      )}
    </>
  );
}
