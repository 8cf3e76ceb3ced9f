import { type TrustStatus, trustStatuses } from '@surveyor/contract';
import type { ColumnDef } from '@tanstack/react-table';
import { useId, useMemo } from 'react';
import { useSearchParams } from 'react-router';
import type { z } from 'zod';
import { DataTable } from '../components/DataTable';
import { ErrorAlert } from '../components/ErrorAlert';
import { dateTime, daysLeft } from '../format';
import { useCollection, useHostNames } from '../queries';
import type { Certificate, Host } from '../types';
import { HostLink } from './hostLabel';
import { usePageTitle } from './usePageTitle';

type Trust = z.infer<typeof TrustStatus>;

export const trustLabels: Record<Trust, string> = {
  trusted: 'Trusted',
  expired: 'Expired',
  not_yet_valid: 'Not yet valid',
  self_signed: 'Self-signed',
  untrusted: 'Untrusted',
};

/** Days left until notAfter: negative (expired) in red, 30 days or fewer in amber. */
export function DaysLeft({ notAfter }: { notAfter: string }) {
  const d = daysLeft(notAfter);
  const tone = d < 0 ? 'days-expired' : d <= 30 ? 'days-soon' : undefined;
  return <span className={`num ${tone ?? ''}`} title={d < 0 ? `expired ${-d} days ago` : undefined}>{d}</span>;
}

function certificateColumns(hosts: Map<string, Host>): ColumnDef<Certificate>[] {
  return [
    { header: 'Subject', accessorKey: 'subject', cell: ({ row }) => <span className="dn" title={row.original.fingerprint}>{row.original.subject}</span> },
    { header: 'Issuer', accessorKey: 'issuer', cell: ({ row }) => <span className="dn">{row.original.issuer}</span> },
    { header: 'Host', accessorKey: 'hostId', cell: ({ row }) => <HostLink id={row.original.hostId} hosts={hosts} /> },
    { header: 'Port', accessorKey: 'port', cell: ({ row }) => <span className="mono">{row.original.port ?? '—'}</span> },
    { header: 'Not after', accessorKey: 'notAfter', cell: ({ row }) => <time className="nowrap" dateTime={row.original.notAfter}>{dateTime(row.original.notAfter)}</time> },
    { id: 'daysLeft', header: () => <span className="num-head">Days left</span>, cell: ({ row }) => <DaysLeft notAfter={row.original.notAfter} /> },
    {
      header: 'Trust',
      accessorKey: 'trustStatus',
      cell: ({ row }) => <span className={`badge trust-${row.original.trustStatus}`}>{trustLabels[row.original.trustStatus]}</span>,
    },
  ];
}

export function CertificatesPage() {
  usePageTitle('Certificates');
  const [params, setParams] = useSearchParams();
  const raw = params.get('trustStatus');
  const trustStatus = raw && (trustStatuses as readonly string[]).includes(raw) ? (raw as Trust) : undefined;
  const hosts = useHostNames();
  const selectId = useId();
  const certs = useCollection('certificates', { limit: 100, trustStatus });
  const rows = useMemo(() => certs.data?.pages.flatMap((p) => p.data) ?? [], [certs.data]);
  const columns = useMemo(() => certificateColumns(hosts), [hosts]);

  return (
    <>
      <h1>Certificates</h1>
      <div className="toolbar">
        <div className="field">
          <label htmlFor={selectId}>Trust status</label>
          <select id={selectId} value={trustStatus ?? ''} onChange={(e) => setParams(e.target.value ? { trustStatus: e.target.value } : {}, { replace: true })}>
            <option value="">Any</option>
            {trustStatuses.map((s) => (
              <option key={s} value={s}>{trustLabels[s]}</option>
            ))}
          </select>
        </div>
        <span className="hint">Days left is negative once a certificate has expired.</span>
      </div>
      <ErrorAlert error={certs.error} />
      {certs.isPending && !certs.error && <p className="loading">Loading…</p>}
      {certs.data && rows.length === 0 && (
        <p className="empty">
          {trustStatus ? `No certificate is ${trustLabels[trustStatus].toLowerCase()}.` : 'No certificates yet: scanning a network records the TLS certificates its hosts present.'}
        </p>
      )}
      {rows.length > 0 && (
        <DataTable caption="Certificates" data={rows} columns={columns} rowKey={(c) => c.id} rowClassName={(c) => (daysLeft(c.notAfter) < 0 ? 'cert-expired' : undefined)} />
      )}
      {certs.hasNextPage && (
        <button type="button" className="more" onClick={() => void certs.fetchNextPage()} disabled={certs.isFetchingNextPage}>
          {certs.isFetchingNextPage ? 'Loading…' : 'Load more'}
        </button>
      )}
    </>
  );
}
