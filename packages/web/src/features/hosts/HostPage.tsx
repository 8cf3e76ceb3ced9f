import type { ColumnDef } from '@tanstack/react-table';
import { useMemo } from 'react';
import { Link, useParams } from 'react-router';
import { DataTable } from '../../components/DataTable';
import { ErrorAlert } from '../../components/ErrorAlert';
import { Exposure } from '../../components/Exposure';
import { HostCloud } from './components/HostCloud';
import { HostLayers } from './components/HostLayers';
import { HostStatus } from './components/HostStatus';
import { HostTopology } from './components/HostTopology';
import { VulnerabilityTable } from '../../components/VulnerabilityTable';
import { ago, dateTime, product } from '../../lib/format';
import { usePage, useSiteNames } from '../../lib/queries';
import { useHost, useHostTopology, useServiceFindings } from './api';
import type { Certificate, HostTopology as Topology, Service } from '../../lib/types';
import { DaysLeft, trustLabels } from '../../components/certificates';
import { hostLabel } from '../../components/hostLabel';
import { usePageTitle } from '../../lib/usePageTitle';

const serviceColumns: ColumnDef<Service>[] = [
  { header: 'Port', id: 'port', cell: ({ row }) => <span className="mono">{row.original.port}/{row.original.protocol}</span> },
  { header: 'Address', accessorKey: 'address', cell: ({ row }) => <span className="mono">{row.original.address ?? '—'}</span> },
  { header: 'State', accessorKey: 'state', cell: ({ row }) => (row.original.goneAt ? `gone ${ago(row.original.goneAt)}` : row.original.state) },
  { header: 'Internet', id: 'exposedVia', cell: ({ row }) => <Exposure via={row.original.exposedVia} /> },
  { header: 'Name', accessorKey: 'name', cell: ({ row }) => row.original.name ?? '—' },
  {
    header: 'Product',
    id: 'product',
    cell: ({ row }) => product(row.original),
  },
  { header: 'CPE', accessorKey: 'cpe', cell: ({ row }) => <span className="mono">{row.original.cpe ?? '—'}</span> },
  { header: 'Last seen', accessorKey: 'lastSeenAt', cell: ({ row }) => <time dateTime={row.original.lastSeenAt} title={dateTime(row.original.lastSeenAt)}>{ago(row.original.lastSeenAt)}</time> },
];

const certificateColumns: ColumnDef<Certificate>[] = [
  { header: 'Subject', accessorKey: 'subject', cell: ({ row }) => <span className="dn" title={row.original.fingerprint}>{row.original.subject}</span> },
  { header: 'Port', accessorKey: 'port', cell: ({ row }) => <span className="mono">{row.original.port ?? '—'}</span> },
  { header: 'Not after', accessorKey: 'notAfter', cell: ({ row }) => <time className="nowrap" dateTime={row.original.notAfter}>{dateTime(row.original.notAfter)}</time> },
  { id: 'daysLeft', header: () => <span className="num-head">Days left</span>, cell: ({ row }) => <DaysLeft notAfter={row.original.notAfter} /> },
  { header: 'Trust', accessorKey: 'trustStatus', cell: ({ row }) => <span className={`badge trust-${row.original.trustStatus}`}>{trustLabels[row.original.trustStatus]}</span> },
];

type Neighbour = Topology['neighbours'][number];

const neighbourColumns: ColumnDef<Neighbour>[] = [
  { header: 'Local interface', accessorKey: 'localInterface', cell: ({ row }) => <span className="mono">{row.original.localInterface}</span> },
  {
    header: 'Neighbour',
    id: 'neighbour',
    cell: ({ row }) => {
      const n = row.original;
      const name = n.remoteSystemName ?? n.remoteChassisId;
      return n.hostId ? <Link to={`/hosts/${n.hostId}`}>{name}</Link> : name;
    },
  },
  { header: 'Remote port', accessorKey: 'remotePortId', cell: ({ row }) => <span className="mono">{row.original.remotePortId ?? '—'}</span> },
  { header: 'Chassis id', accessorKey: 'remoteChassisId', cell: ({ row }) => <span className="mono">{row.original.remoteChassisId}</span> },
  { header: 'Management address', accessorKey: 'managementAddress', cell: ({ row }) => <span className="mono">{row.original.managementAddress ?? '—'}</span> },
  { header: 'Protocol', accessorKey: 'protocol', cell: ({ row }) => row.original.protocol.toUpperCase() },
];

function HostCertificates({ hostId }: { hostId: string }) {
  const certs = usePage('certificates', { hostId, limit: 500 });
  const list = certs.data?.data ?? [];
  return (
    <section aria-labelledby="host-certs">
      <h2 id="host-certs">Certificates</h2>
      <ErrorAlert error={certs.error} />
      {certs.data && list.length === 0 && <p className="empty">No TLS certificate seen on this host.</p>}
      {list.length > 0 && <DataTable caption="Certificates of this host" data={list} columns={certificateColumns} rowKey={(c) => c.id} />}
    </section>
  );
}

function HostNeighbours({ hostId }: { hostId: string }) {
  const topology = useHostTopology(hostId);
  const t = topology.data;
  return (
    <section aria-labelledby="host-neighbours">
      <h2 id="host-neighbours">Neighbours (LLDP/CDP)</h2>
      <ErrorAlert error={topology.error} />
      {t && t.neighbours.length === 0 && (
        <p className="empty">{t.sources.neighbours ? 'No LLDP or CDP neighbour reported for this host.' : 'No LLDP or CDP records yet: a daemon reporting neighbours sends them with its observations.'}</p>
      )}
      {t && t.neighbours.length > 0 && (
        <DataTable caption="Neighbours of this host" data={t.neighbours} columns={neighbourColumns} rowKey={(n) => `${n.localInterface}|${n.remoteChassisId}|${n.remotePortId ?? ''}`} />
      )}
    </section>
  );
}

function Field({ name, children }: { name: string; children: React.ReactNode }) {
  return (
    <>
      <dt>{name}</dt>
      <dd>{children}</dd>
    </>
  );
}

export function HostPage() {
  const { id = '' } = useParams();
  const host = useHost(id);
  const services = usePage('services', { hostId: id, limit: 500 }, host.data != null);
  const serviceList = services.data?.data ?? [];
  const findings = useServiceFindings(serviceList.map((s) => s.id));
  const vulns = useMemo(() => findings.flatMap((q) => q.data?.data ?? []), [findings]);
  const findingsError = findings.find((q) => q.error)?.error;
  const h = host.data;
  const sites = useSiteNames([h?.siteId ?? null]);
  const title = hostLabel(h ?? undefined) ?? 'Host';
  usePageTitle(title);

  return (
    <>
      <p className="crumbs"><Link to="/hosts">Hosts</Link> /</p>
      <h1>{title}</h1>
      <ErrorAlert error={host.error} />
      {host.isPending && <p className="loading">Loading…</p>}
      {host.data === null && <p className="empty">No such host in this organisation. <Link to="/hosts">Back to the hosts</Link>.</p>}
      {h && (
        <>
          {h.goneAt && (
            <p className="notice">
              Gone since <time dateTime={h.goneAt} title={dateTime(h.goneAt)}>{ago(h.goneAt)}</time>: a completed scan covering all its addresses no longer found it. It is back as soon as a daemon reports it again.
            </p>
          )}
          <dl className="fields">
            <Field name="Hostname">{h.hostname ?? '—'}</Field>
            <Field name="FQDN">{h.fqdn ?? '—'}</Field>
            <Field name="Addresses"><span className="mono">{h.addresses.join(', ') || '—'}</span></Field>
            <Field name="MACs"><span className="mono">{h.macs.join(', ') || '—'}</span></Field>
            <Field name="Vendor">{h.vendor ?? '—'}</Field>
            <Field name="OS">{h.os ?? '—'}</Field>
            <Field name="Device type">{h.deviceType ?? '—'}</Field>
            <Field name="Site">{h.siteId ? (sites.get(h.siteId)?.name ?? h.siteId) : '—'}</Field>
            <Field name="Status"><HostStatus goneAt={h.goneAt} /></Field>
            <Field name="Open ports">{h.openPortCount}</Field>
            <Field name="First seen">{dateTime(h.firstSeenAt)}</Field>
            <Field name="Last seen">{dateTime(h.lastSeenAt)} ({ago(h.lastSeenAt)})</Field>
            <Field name="Id"><span className="mono">{h.id}</span></Field>
          </dl>

          <section aria-labelledby="host-services">
            <h2 id="host-services">Services</h2>
            <ErrorAlert error={services.error} />
            {services.data && serviceList.length === 0 && <p className="empty">No services seen on this host yet.</p>}
            {serviceList.length > 0 && <DataTable caption="Services" data={serviceList} columns={serviceColumns} rowKey={(s) => s.id} />}
            {services.data?.hasMore && <p className="hint">Showing the first 500 services.</p>}
          </section>

          <HostCloud hostId={h.id} />

          <HostCertificates hostId={h.id} />

          <HostTopology hostId={h.id} hostName={title} />

          <HostNeighbours hostId={h.id} />

          <HostLayers hostId={h.id} />

          <section aria-labelledby="host-vulns">
            <h2 id="host-vulns">Vulnerabilities</h2>
            <ErrorAlert error={findingsError} />
            {services.data && findings.every((q) => q.data) && vulns.length === 0 && <p className="empty">No findings on this host's services.</p>}
            {vulns.length > 0 && <VulnerabilityTable data={vulns} showHost={false} caption="Vulnerabilities of this host" />}
          </section>
        </>
      )}
    </>
  );
}
