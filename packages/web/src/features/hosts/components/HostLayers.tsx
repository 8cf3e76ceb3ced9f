import type { ColumnDef } from '@tanstack/react-table';
import type { HostDetail } from '@surveyor/contract';
import { Link } from 'react-router';
import { DataTable } from '../../../components/DataTable';
import { ErrorAlert } from '../../../components/ErrorAlert';
import { ago, dateTime } from '../../../lib/format';
import { useHostDetail } from '../api';
import { HostStatus } from './HostStatus';

type Interface = HostDetail['interfaces'][number];
type Vlan = HostDetail['vlans'][number];
type Lag = HostDetail['lagGroups'][number];
type Route = HostDetail['routes'][number];
type PortLink = HostDetail['portMap'][number];

const Seen = ({ at }: { at: string }) => <time className="nowrap" dateTime={at} title={dateTime(at)}>{ago(at)}</time>;
const Members = ({ names }: { names: string[] }) => (names.length ? <span className="mono">{names.join(', ')}</span> : <span className="muted">—</span>);
const num = (n: number | null) => <span className="num">{n ?? '—'}</span>;
const numHead = (label: string) => () => <span className="num-head">{label}</span>;

const interfaceColumns: ColumnDef<Interface>[] = [
  { header: 'Interface', accessorKey: 'name', cell: ({ row }) => <span className="mono">{row.original.name}</span> },
  { header: 'MAC', accessorKey: 'mac', cell: ({ row }) => <span className="mono">{row.original.mac ?? '—'}</span> },
  { header: 'Addresses', id: 'addresses', cell: ({ row }) => <Members names={row.original.addresses} /> },
  { header: 'Last seen', accessorKey: 'lastSeenAt', cell: ({ row }) => <Seen at={row.original.lastSeenAt} /> },
];

const vlanColumns: ColumnDef<Vlan>[] = [
  { id: 'vlanId', accessorKey: 'vlanId', header: numHead('VLAN'), cell: ({ row }) => num(row.original.vlanId) },
  { header: 'Name', accessorKey: 'name', cell: ({ row }) => row.original.name ?? <span className="muted">unnamed</span> },
  { header: 'Untagged', id: 'untagged', cell: ({ row }) => <Members names={row.original.untagged} /> },
  { header: 'Tagged', id: 'tagged', cell: ({ row }) => <Members names={row.original.tagged} /> },
  { header: 'Last seen', accessorKey: 'lastSeenAt', cell: ({ row }) => <Seen at={row.original.lastSeenAt} /> },
];

const lagColumns: ColumnDef<Lag>[] = [
  { header: 'Group', accessorKey: 'name', cell: ({ row }) => <span className="mono">{row.original.name}</span> },
  { header: 'Protocol', accessorKey: 'protocol', cell: ({ row }) => (row.original.protocol ? row.original.protocol.toUpperCase() : '—') },
  { header: 'Members', id: 'members', cell: ({ row }) => <Members names={row.original.members} /> },
  { header: 'Last seen', accessorKey: 'lastSeenAt', cell: ({ row }) => <Seen at={row.original.lastSeenAt} /> },
];

const routeColumns: ColumnDef<Route>[] = [
  { header: 'Destination', accessorKey: 'destination', cell: ({ row }) => <span className="mono">{row.original.destination}</span> },
  {
    header: 'Next hop',
    accessorKey: 'nextHop',
    cell: ({ row }) => {
      const r = row.original;
      if (!r.nextHop) return <span className="muted">direct</span>;
      return r.nextHopHostId ? <Link className="mono" to={`/hosts/${r.nextHopHostId}`}>{r.nextHop}</Link> : <span className="mono">{r.nextHop}</span>;
    },
  },
  { header: 'Interface', accessorKey: 'interface', cell: ({ row }) => <span className="mono">{row.original.interface ?? '—'}</span> },
  { id: 'metric', accessorKey: 'metric', header: numHead('Metric'), cell: ({ row }) => num(row.original.metric) },
  { header: 'Last seen', accessorKey: 'lastSeenAt', cell: ({ row }) => <Seen at={row.original.lastSeenAt} /> },
];

const portColumns: ColumnDef<PortLink>[] = [
  { header: 'Port', accessorKey: 'port', enableSorting: false, cell: ({ row }) => <span className="mono">{row.original.port ?? '—'}</span> },
  {
    header: 'Host',
    id: 'host',
    enableSorting: false,
    cell: ({ row }) => {
      const p = row.original;
      return <Link className="nowrap" to={`/hosts/${p.hostId}`}>{p.hostname ?? p.fqdn ?? p.address ?? p.hostId}</Link>;
    },
  },
  { header: 'Address', accessorKey: 'address', enableSorting: false, cell: ({ row }) => <span className="mono">{row.original.address ?? '—'}</span> },
  { header: 'Its interface', accessorKey: 'localInterface', enableSorting: false, cell: ({ row }) => <span className="mono">{row.original.localInterface}</span> },
  { header: 'Protocol', accessorKey: 'protocol', enableSorting: false, cell: ({ row }) => row.original.protocol.toUpperCase() },
  { header: 'Last seen', accessorKey: 'lastSeenAt', enableSorting: false, cell: ({ row }) => <Seen at={row.original.lastSeenAt} /> },
  { header: 'Status', id: 'status', enableSorting: false, cell: ({ row }) => <HostStatus goneAt={row.original.goneAt} /> },
];

function Section<T>({ id, title, caption, rows, columns, rowKey, rowClassName, empty }: {
  id: string; title: string; caption: string; rows: T[] | undefined; columns: ColumnDef<T>[]; rowKey: (r: T) => string; rowClassName?: (r: T) => string | undefined; empty: string;
}) {
  return (
    <section aria-labelledby={id}>
      <h2 id={id}>
        {title}
        {rows && rows.length > 0 && <span className="muted"> ({rows.length})</span>}
      </h2>
      {rows && rows.length === 0 && <p className="empty">{empty}</p>}
      {rows && rows.length > 0 && <DataTable caption={caption} data={rows} columns={columns} rowKey={rowKey} rowClassName={rowClassName} />}
    </section>
  );
}

/**
 * What the daemons reported of the host's layer 2/3 (interfaces, VLANs, LAG groups, routes) and,
 * for a switch, the hosts that report being on its ports (their LLDP/CDP neighbour is this host).
 */
export function HostLayers({ hostId }: { hostId: string }) {
  const detail = useHostDetail(hostId);
  const d = detail.data;
  return (
    <>
      <ErrorAlert error={detail.error} />
      {detail.isPending && <p className="loading">Loading interfaces…</p>}
      <Section id="host-interfaces" title="Interfaces" caption="Interfaces of this host" rows={d?.interfaces} columns={interfaceColumns} rowKey={(i) => i.name}
        empty="No interface reported for this host." />
      <Section id="host-ports" title="Port map" caption="Hosts on this host's ports" rows={d?.portMap} columns={portColumns} rowKey={(p) => `${p.hostId}|${p.localInterface}|${p.port ?? ''}`}
        rowClassName={(p) => (p.goneAt ? 'gone' : undefined)}
        empty="No host reports this one as its LLDP or CDP neighbour." />
      <Section id="host-vlans" title="VLANs" caption="VLANs of this host" rows={d?.vlans} columns={vlanColumns} rowKey={(v) => String(v.vlanId)} empty="No VLAN reported for this host." />
      <Section id="host-lags" title="LAG groups" caption="Link aggregation groups of this host" rows={d?.lagGroups} columns={lagColumns} rowKey={(l) => l.name} empty="No link aggregation group reported for this host." />
      <Section id="host-routes" title="Routes" caption="Routes of this host" rows={d?.routes} columns={routeColumns} rowKey={(r) => `${r.destination}|${r.interface ?? ''}`} empty="No route reported for this host." />
    </>
  );
}
