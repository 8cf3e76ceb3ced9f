import type { ColumnDef } from '@tanstack/react-table';
import { useId, useState } from 'react';
import { Link } from 'react-router';
import { routePath, routes } from '@surveyor/contract';
import { ago, bytes, dateTime } from '../../../lib/format';
import { useHostTopology } from '../api';
import type { HostTopology as Topology } from '../../../lib/types';
import { DataTable } from '../../../components/DataTable';
import { ErrorAlert } from '../../../components/ErrorAlert';

type Peer = Topology['inbound'][number];

/** The flow windows offered (hours; the API takes 1 to 720). */
const windows = [
  { hours: 1, label: '1 h' },
  { hours: 24, label: '24 h' },
  { hours: 168, label: '7 days' },
  { hours: 720, label: '30 days' },
] as const;

const peerColumns: ColumnDef<Peer>[] = [
  {
    header: 'Peer',
    id: 'peer',
    cell: ({ row }) => {
      const p = row.original;
      if (p.hostId) return <Link to={`/hosts/${p.hostId}`}>{p.hostname ?? p.address}</Link>;
      return p.hostname ? <span>{p.hostname} <span className="muted">(not in the inventory)</span></span> : <span className="muted">not in the inventory</span>;
    },
  },
  { header: 'Address', accessorKey: 'address', cell: ({ row }) => <span className="mono">{row.original.address}</span> },
  { header: 'Ports', accessorKey: 'ports', cell: ({ row }) => row.original.ports.join(', ') },
  { header: 'Protocols', accessorKey: 'protocols', cell: ({ row }) => row.original.protocols.join(', ') },
  { header: 'Flows', accessorKey: 'flows' },
  { header: 'Bytes', accessorKey: 'bytes', cell: ({ row }) => bytes(row.original.bytes) },
  { header: 'Last seen', accessorKey: 'lastSeenAt', cell: ({ row }) => <span title={dateTime(row.original.lastSeenAt)}>{ago(row.original.lastSeenAt)}</span> },
];

function Peers({ title, peers, none }: { title: string; peers: Peer[]; none: string }) {
  const id = useId();
  return (
    <div className="peers">
      <h3 id={id}>{title}</h3>
      {peers.length === 0 ? <p className="empty">{none}</p> : <DataTable caption={title} data={peers} columns={peerColumns} rowKey={(p) => `${p.hostId ?? ''}|${p.address}`} />}
    </div>
  );
}

/** A host's topology: the server's SVG drawing and its flow peers, over a chosen window. */
export function HostTopology({ hostId, hostName }: { hostId: string; hostName: string }) {
  const [windowHours, setWindowHours] = useState(24);
  const topology = useHostTopology(hostId, windowHours);
  const t = topology.data;
  const svg = routePath(routes.getHostTopologySvg, { params: { id: hostId }, query: { windowHours } });
  return (
    <section aria-labelledby="host-topology">
      <h2 id="host-topology">Topology</h2>
      <label className="inline">
        Window{' '}
        <select value={windowHours} onChange={(e) => setWindowHours(Number(e.target.value))}>
          {windows.map((w) => (
            <option key={w.hours} value={w.hours}>{w.label}</option>
          ))}
        </select>
      </label>
      <ErrorAlert error={topology.error} />
      {/* The session cookie goes with the image request too (same origin). */}
      <figure className="topology">
        <img key={svg} src={svg} alt={`Topology of ${hostName} over the last ${windows.find((w) => w.hours === windowHours)?.label}: callers on the left, destinations on the right`} />
      </figure>
      {t && !t.sources.flows && <p className="empty">No flow records yet: a daemon with a flow collector reports them.</p>}
      {t?.sources.flows && (
        <div className="peer-tables">
          <Peers title="Inbound (callers)" peers={t.inbound} none="No caller in this window." />
          <Peers title="Outbound (destinations)" peers={t.outbound} none="No destination in this window." />
        </div>
      )}
    </section>
  );
}
