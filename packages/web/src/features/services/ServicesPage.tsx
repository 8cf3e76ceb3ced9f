import type { ColumnDef } from '@tanstack/react-table';
import { useId, useMemo } from 'react';
import { useSearchParams } from 'react-router';
import { DataTable } from '../../components/DataTable';
import { ErrorAlert } from '../../components/ErrorAlert';
import { ago, dateTime } from '../../lib/format';
import { useCollection, useHostNames, usePage } from '../../lib/queries';
import type { Host, Service } from '../../lib/types';
import { HostLink, hostLabel } from '../../components/hostLabel';
import { usePageTitle } from '../../lib/usePageTitle';

function serviceColumns(hosts: Map<string, Host>): ColumnDef<Service>[] {
  return [
    { header: 'Host', accessorKey: 'hostId', enableSorting: false, cell: ({ row }) => <HostLink id={row.original.hostId} hosts={hosts} /> },
    { header: 'Address', accessorKey: 'address', cell: ({ row }) => <span className="mono">{row.original.address ?? '—'}</span> },
    { header: 'Port', accessorKey: 'port', cell: ({ row }) => <span className="mono nowrap">{row.original.port}/{row.original.protocol}</span> },
    { header: 'State', accessorKey: 'state', cell: ({ row }) => <span className={`svc-${row.original.state}`}>{row.original.state}</span> },
    { header: 'Name', accessorKey: 'name', cell: ({ row }) => row.original.name ?? '—' },
    { header: 'Product', accessorKey: 'product', cell: ({ row }) => row.original.product ?? '—' },
    { header: 'Version', accessorKey: 'version', cell: ({ row }) => row.original.version ?? '—' },
    { header: 'CPE', accessorKey: 'cpe', cell: ({ row }) => <span className="mono cpe" title={row.original.cpe ?? undefined}>{row.original.cpe ?? '—'}</span> },
    {
      header: 'Last seen',
      accessorKey: 'lastSeenAt',
      cell: ({ row }) => <time dateTime={row.original.lastSeenAt} title={dateTime(row.original.lastSeenAt)}>{ago(row.original.lastSeenAt)}</time>,
    },
  ];
}

export function ServicesPage() {
  usePageTitle('Services');
  const [params, setParams] = useSearchParams();
  const hostId = params.get('hostId') ?? undefined;
  const selectId = useId();
  const services = useCollection('services', { limit: 100, hostId });
  const rows = useMemo(() => services.data?.pages.flatMap((p) => p.data) ?? [], [services.data]);
  const hosts = useHostNames([...(hostId ? [hostId] : []), ...rows.map((s) => s.hostId)]);
  const choices = usePage('hosts', { limit: 500 }); // the picker offers the first 500; the names of the rows are looked up
  const columns = useMemo(() => serviceColumns(hosts), [hosts]);
  const hostList = useMemo(() => [...(choices.data?.data ?? [])].sort((a, b) => (a.hostname ?? a.addresses[0] ?? '').localeCompare(b.hostname ?? b.addresses[0] ?? '')), [choices.data]);

  return (
    <>
      <h1>Services</h1>
      <div className="toolbar">
        <div className="field">
          <label htmlFor={selectId}>Host</label>
          <select id={selectId} value={hostId ?? ''} onChange={(e) => setParams(e.target.value ? { hostId: e.target.value } : {}, { replace: true })}>
            <option value="">Every host</option>
            {hostId && !hostList.some((h) => h.id === hostId) && <option value={hostId}>{hostLabel(hosts.get(hostId)) ?? hostId}</option>}
            {hostList.map((h) => (
              <option key={h.id} value={h.id}>{hostLabel(h)}</option>
            ))}
          </select>
        </div>
        {rows.length > 0 && <span className="hint">{rows.length}{services.hasNextPage ? '+' : ''} services</span>}
      </div>
      <ErrorAlert error={services.error} />
      {services.isPending && !services.error && <p className="loading">Loading…</p>}
      {services.data && rows.length === 0 && (
        <p className="empty">{hostId ? 'This host has no services recorded: scan its network to find its open ports.' : 'No services yet: enrol a daemon and scan a network to find open ports.'}</p>
      )}
      {rows.length > 0 && <DataTable caption="Services" partial={services.hasNextPage} data={rows} columns={columns} rowKey={(s) => s.id} rowClassName={(s) => (s.goneAt ? 'gone' : undefined)} />}
      {services.hasNextPage && (
        <button type="button" className="more" onClick={() => void services.fetchNextPage()} disabled={services.isFetchingNextPage}>
          {services.isFetchingNextPage ? 'Loading…' : 'Load more'}
        </button>
      )}
    </>
  );
}
