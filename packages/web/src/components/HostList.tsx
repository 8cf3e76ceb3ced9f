import type { UseInfiniteQueryResult, InfiniteData } from '@tanstack/react-query';
import type { ColumnDef } from '@tanstack/react-table';
import { type ReactNode, useMemo } from 'react';
import { Link } from 'react-router';
import { ago, dateTime } from '../lib/format';
import type { Host, PageOf } from '../lib/types';
import { DataTable } from './DataTable';
import { ErrorAlert } from './ErrorAlert';
import { hostLabel } from './hostLabel';

const hostColumns: ColumnDef<Host>[] = [
  { header: 'Host', id: 'name', accessorFn: (h) => hostLabel(h), cell: ({ row }) => <Link className="nowrap" to={`/hosts/${row.original.id}`}>{hostLabel(row.original)}</Link> },
  { header: 'Addresses', accessorKey: 'addresses', cell: ({ row }) => <span className="mono">{row.original.addresses.join(', ')}</span> },
  { header: 'OS', accessorKey: 'os', cell: ({ row }) => row.original.os ?? '—' },
  { header: () => <span className="num-head">Open ports</span>, id: 'openPortCount', accessorKey: 'openPortCount', cell: ({ row }) => <span className="num">{row.original.openPortCount}</span> },
  { header: 'Last seen', accessorKey: 'lastSeenAt', cell: ({ row }) => <time dateTime={row.original.lastSeenAt} title={dateTime(row.original.lastSeenAt)}>{ago(row.original.lastSeenAt)}</time> },
];

/** Hosts read page by page (a `useCollection('hosts', …)`): a table of their names (links), addresses, OS, open ports, last seen, and "Load more". */
export function HostList({
  caption,
  hosts,
  empty,
  exportRows,
}: {
  caption: string;
  hosts: UseInfiniteQueryResult<InfiniteData<PageOf<Host>>>;
  empty: ReactNode;
  /** Every host of the list's filters, for Export CSV (`collectionPages('hosts', …)`). */
  exportRows: (signal: AbortSignal) => AsyncIterable<readonly Host[]>;
}) {
  const rows = useMemo(() => hosts.data?.pages.flatMap((p) => p.data) ?? [], [hosts.data]);
  return (
    <>
      <ErrorAlert error={hosts.error} />
      {hosts.data && rows.length === 0 && <p className="empty">{empty}</p>}
      {rows.length > 0 && <DataTable caption={caption} data={rows} columns={hostColumns} rowKey={(h) => h.id} partial={hosts.hasNextPage} exportRows={exportRows} />}
      {hosts.hasNextPage && (
        <p><button type="button" onClick={() => void hosts.fetchNextPage()} disabled={hosts.isFetchingNextPage}>{hosts.isFetchingNextPage ? 'Loading…' : `Load more (${rows.length} shown)`}</button></p>
      )}
    </>
  );
}
