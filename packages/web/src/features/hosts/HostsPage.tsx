import { hostSources } from '@surveyor/contract';
import type { ColumnDef } from '@tanstack/react-table';
import { useEffect, useId, useMemo, useState } from 'react';
import { Link, useNavigate, useSearchParams } from 'react-router';
import { DataTable } from '../../components/DataTable';
import { ErrorAlert } from '../../components/ErrorAlert';
import { ago, dateTime } from '../../lib/format';
import { collectionPages, useCollection, useSiteNames, useSites } from '../../lib/queries';
import type { Host, Site } from '../../lib/types';
import { useDebounced } from '../../lib/useDebounced';
import { usePageTitle } from '../../lib/usePageTitle';
import { HostStatus } from './components/HostStatus';

function hostColumns(sites: Map<string, Site>, showStatus: boolean): ColumnDef<Host>[] {
  return [
    {
      header: 'Hostname',
      accessorKey: 'hostname',
      cell: ({ row }) => <Link to={`/hosts/${row.original.id}`}>{row.original.hostname ?? row.original.fqdn ?? row.original.addresses[0] ?? row.original.id}</Link>,
    },
    { header: 'Addresses', accessorKey: 'addresses', cell: ({ row }) => <span className="mono">{row.original.addresses.join(', ') || '—'}</span> },
    {
      header: 'MAC',
      accessorKey: 'macs',
      enableSorting: false,
      cell: ({ row }) => {
        const [first, ...more] = row.original.macs;
        if (!first) return '—';
        return (
          <span className="mono nowrap" title={row.original.macs.join('\n')}>
            {first}
            {more.length > 0 && <span className="muted"> +{more.length}</span>}
          </span>
        );
      },
    },
    { header: 'Vendor', accessorKey: 'vendor', cell: ({ row }) => row.original.vendor ?? '—' },
    { header: 'OS', accessorKey: 'os', cell: ({ row }) => row.original.os ?? '—' },
    { header: 'Site', accessorKey: 'siteId', enableSorting: false, cell: ({ row }) => (row.original.siteId ? (sites.get(row.original.siteId)?.name ?? '…') : '—') },
    {
      header: 'Last seen',
      accessorKey: 'lastSeenAt',
      cell: ({ row }) => <time className="nowrap" dateTime={row.original.lastSeenAt} title={dateTime(row.original.lastSeenAt)}>{ago(row.original.lastSeenAt)}</time>,
    },
    ...(showStatus ? [{ header: 'Status', id: 'status', accessorFn: (h: Host) => h.goneAt ?? '', cell: ({ row }: { row: { original: Host } }) => <HostStatus goneAt={row.original.goneAt} /> }] : []),
  ];
}

/** What the search matches (the API's rules, HOST_SEARCH_RULES in the contract), in a line. */
export const SEARCH_HINT =
  'Matches the start of a hostname, FQDN, vendor or OS; an address, a CIDR, or the start of an address in whole octets (10.1.0); a MAC in any notation (aa:bb:cc:dd:ee:ff, AA-BB-…, aabb.ccdd.eeff) or its first bytes (aa:bb:cc); a host id.';

export function HostsPage() {
  usePageTitle('Hosts');
  const [params, setParams] = useSearchParams();
  const navigate = useNavigate();
  const [text, setText] = useState(params.get('search') ?? '');
  const debounced = useDebounced(text.trim(), 300);
  const search = debounced.length >= 2 ? debounced : undefined;
  const tooShort = text.trim().length === 1;
  const hintId = useId();

  const siteParam = params.get('siteId') ?? '';
  const siteId = siteParam || undefined;
  useEffect(() => {
    setParams(
      (prev) => {
        const next = new URLSearchParams();
        if (search) next.set('search', search);
        const s = prev.get('siteId');
        if (s) next.set('siteId', s);
        if (prev.get('gone')) next.set('gone', '1');
        const src = prev.get('source');
        if (src) next.set('source', src);
        return next;
      },
      { replace: true },
    );
  }, [search, setParams]);
  /** One filter of the URL set (or removed when empty), the others kept. */
  const setParam = (name: string, value: string) =>
    setParams(
      (prev) => {
        const next = new URLSearchParams(prev);
        if (value) next.set(name, value);
        else next.delete(name);
        return next;
      },
      { replace: true },
    );
  const setSite = (value: string) => setParam('siteId', value);

  const sourceParam = params.get('source');
  const source = (hostSources as readonly string[]).includes(sourceParam ?? '') ? (sourceParam as (typeof hostSources)[number]) : undefined;
  const setSource = (value: string) => setParam('source', value);

  const showGone = params.get('gone') === '1';
  const setShowGone = (value: boolean) => setParam('gone', value ? '1' : '');

  const sites = useSites();
  // By default only the hosts present, as the overview counts them; "Show gone hosts" lists every host.
  const hostFilters = { search, siteId, ...(source ? { source } : {}), ...(showGone ? {} : { gone: 'exclude' as const }) };
  const hosts = useCollection('hosts', { limit: 100, ...hostFilters });
  const rows = useMemo(() => hosts.data?.pages.flatMap((p) => p.data) ?? [], [hosts.data]);
  const siteNames = useSiteNames([siteParam, ...rows.map((h) => h.siteId)]);
  const columns = useMemo(() => hostColumns(siteNames, showGone), [siteNames, showGone]);

  return (
    <>
      <h1>Hosts</h1>
      <div className="toolbar" role="search">
        <label>
          Search
          <input
            type="search"
            value={text}
            onChange={(e) => setText(e.target.value)}
            placeholder="name, vendor, OS, address, 10.1.0, MAC or id"
            aria-describedby={hintId}
            maxLength={255}
          />
        </label>
        <label>
          Site
          <select value={siteParam} onChange={(e) => setSite(e.target.value)}>
            <option value="">All sites</option>
            {siteParam && !sites.has(siteParam) && <option value={siteParam}>{siteNames.get(siteParam)?.name ?? '…'}</option>}
            {[...sites.values()].map((s) => (
              <option key={s.id} value={s.id}>{s.name}</option>
            ))}
          </select>
        </label>
        <label>
          Source
          <select value={source ?? ''} onChange={(e) => setSource(e.target.value)}>
            <option value="">Any</option>
            <option value="cloud">Cloud accounts</option>
            <option value="daemon">Daemons</option>
          </select>
        </label>
        <label className="check">
          <input type="checkbox" checked={showGone} onChange={(e) => setShowGone(e.target.checked)} />
          Show gone hosts
        </label>
        <span id={hintId} className="hint">{tooShort ? 'Type at least 2 characters to search.' : SEARCH_HINT}</span>
      </div>
      <ErrorAlert error={hosts.error} />
      {hosts.isPending && !hosts.error && <p className="loading">Loading…</p>}
      {hosts.data && rows.length === 0 && (
        <p className="empty">
          {search || siteId ? `No host matches${search ? ` “${search}”` : ''}${siteId ? ' in this site' : ''}.` : showGone ? 'No hosts yet: enrol a daemon and scan a network.' : 'No host is present.'}
          {!showGone && (
            <>
              {' '}Gone hosts are hidden:{' '}
              <button type="button" className="small" onClick={() => setShowGone(true)}>Show gone hosts</button>.
            </>
          )}
        </p>
      )}
      {rows.length > 0 && (
        <DataTable
          caption={showGone ? 'Hosts, gone ones included' : 'Hosts'}
          storageKey="Hosts"
          partial={hosts.hasNextPage}
          data={rows}
          columns={columns}
          rowKey={(h) => h.id}
          rowClassName={(h) => (h.goneAt ? 'gone' : undefined)}
          onRowOpen={(h) => void navigate(`/hosts/${h.id}`)}
          exportRows={(signal) => collectionPages('hosts', hostFilters, signal)}
        />
      )}
      {hosts.hasNextPage && (
        <button type="button" className="more" onClick={() => void hosts.fetchNextPage()} disabled={hosts.isFetchingNextPage}>
          {hosts.isFetchingNextPage ? 'Loading…' : 'Load more'}
        </button>
      )}
    </>
  );
}
