import { type CertificateExpiryWindow, certificateExpiryWindows, trustStatuses } from '@surveyor/contract';
import type { ColumnDef } from '@tanstack/react-table';
import { useId, useMemo } from 'react';
import { useSearchParams } from 'react-router';
import { DataTable } from '../../components/DataTable';
import { ErrorAlert } from '../../components/ErrorAlert';
import { dateTime, daysLeft } from '../../lib/format';
import { CertificateStateBadge, DaysLeft, type Trust, expiryLabels, trustLabels } from '../../components/certificates';
import { collectionPages, useCollection, useHostNames } from '../../lib/queries';
import type { Certificate, Host } from '../../lib/types';
import { HostLink } from '../../components/hostLabel';
import { usePageTitle } from '../../lib/usePageTitle';

type Show = 'current' | 'replaced' | 'all';
const showLabels: Record<Show, string> = { current: 'In use now', replaced: 'Replaced or gone', all: 'All seen' };
const showQuery: Record<Show, { current?: 'true' | 'false' }> = { current: { current: 'true' }, replaced: { current: 'false' }, all: {} };

function certificateColumns(hosts: Map<string, Host>): ColumnDef<Certificate>[] {
  return [
    {
      header: 'Subject',
      accessorKey: 'subject',
      cell: ({ row }) => (
        <>
          <span className="dn" title={row.original.fingerprint}>{row.original.subject}</span> <CertificateStateBadge state={row.original.state} />
        </>
      ),
    },
    { header: 'Issuer', accessorKey: 'issuer', cell: ({ row }) => <span className="dn">{row.original.issuer}</span> },
    { header: 'Host', accessorKey: 'hostId', enableSorting: false, cell: ({ row }) => <HostLink id={row.original.hostId} hosts={hosts} /> },
    { id: 'port', accessorKey: 'port', header: () => <span className="num-head">Port</span>, cell: ({ row }) => <span className="num mono">{row.original.port ?? '—'}</span> },
    { header: 'Not after', accessorKey: 'notAfter', cell: ({ row }) => <time className="nowrap" dateTime={row.original.notAfter}>{dateTime(row.original.notAfter)}</time> },
    { id: 'daysLeft', header: () => <span className="num-head">Days left</span>, meta: { csv: (c) => daysLeft(c.notAfter) }, cell: ({ row }) => <DaysLeft notAfter={row.original.notAfter} /> },
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
  const rawExpiring = params.get('expiring');
  const expiring = rawExpiring && (certificateExpiryWindows as readonly string[]).includes(rawExpiring) ? (rawExpiring as CertificateExpiryWindow) : undefined;
  // Current certificates by default (what the overview counts); replaced or gone ones behind the filter.
  const rawShow = params.get('show');
  const show: Show = rawShow === 'replaced' || rawShow === 'all' ? rawShow : 'current';
  const setFilter = (name: 'trustStatus' | 'expiring' | 'show', value: string) => {
    const next = new URLSearchParams(params);
    if (value) next.set(name, value);
    else next.delete(name);
    setParams(next, { replace: true });
  };
  const expiringId = useId();
  const selectId = useId();
  const showId = useId();
  const certFilters = { trustStatus, expiring, ...showQuery[show] };
  const certs = useCollection('certificates', { limit: 100, ...certFilters });
  const rows = useMemo(() => certs.data?.pages.flatMap((p) => p.data) ?? [], [certs.data]);
  const hosts = useHostNames(rows.map((c) => c.hostId));
  const columns = useMemo(() => certificateColumns(hosts), [hosts]);

  return (
    <>
      <h1>Certificates</h1>
      <div className="toolbar">
        <div className="field">
          <label htmlFor={showId}>Show</label>
          <select id={showId} value={show} onChange={(e) => setFilter('show', e.target.value === 'current' ? '' : e.target.value)}>
            {(Object.keys(showLabels) as Show[]).map((k) => (
              <option key={k} value={k}>{showLabels[k]}</option>
            ))}
          </select>
        </div>
        <div className="field">
          <label htmlFor={selectId}>Trust status</label>
          <select id={selectId} value={trustStatus ?? ''} onChange={(e) => setFilter('trustStatus', e.target.value)}>
            <option value="">Any</option>
            {trustStatuses.map((s) => (
              <option key={s} value={s}>{trustLabels[s]}</option>
            ))}
          </select>
        </div>
        <div className="field">
          <label htmlFor={expiringId}>Expiry</label>
          <select id={expiringId} value={expiring ?? ''} onChange={(e) => setFilter('expiring', e.target.value)}>
            <option value="">Any</option>
            {certificateExpiryWindows.map((w) => (
              <option key={w} value={w}>{expiryLabels[w]}</option>
            ))}
          </select>
        </div>
        <span className="hint">
          {show === 'current' ? 'The certificates their endpoints present now, as the overview counts them. ' : 'Replaced: a newer certificate was seen on the same address and port. Service gone: the port is no longer open. '}
          Days left is negative once a certificate has expired.
        </span>
      </div>
      <ErrorAlert error={certs.error} />
      {certs.isPending && !certs.error && <p className="loading">Loading…</p>}
      {certs.data && rows.length === 0 && show === 'replaced' && !expiring && !trustStatus && (
        <p className="empty">No certificate has been replaced or lost its service: every certificate seen is still presented.</p>
      )}
      {certs.data && rows.length === 0 && !(show === 'replaced' && !expiring && !trustStatus) && (
        <p className="empty">
          {show === 'current' ? 'In use now: ' : show === 'replaced' ? 'Replaced or gone: ' : ''}
          {expiring
            ? `No certificate ${expiring === 'expired' ? 'has expired' : `expires ${expiryLabels[expiring].toLowerCase()}`}${trustStatus ? ` and is ${trustLabels[trustStatus].toLowerCase()}` : ''}.`
            : trustStatus ? `No certificate is ${trustLabels[trustStatus].toLowerCase()}.` : 'No certificates yet: scanning a network records the TLS certificates its hosts present.'}
        </p>
      )}
      {rows.length > 0 && (
        <DataTable caption="Certificates" partial={certs.hasNextPage} data={rows} columns={columns} rowKey={(c) => c.id} rowClassName={(c) => (c.state !== 'current' ? 'cert-replaced' : daysLeft(c.notAfter) < 0 ? 'cert-expired' : undefined)} exportRows={(signal) => collectionPages('certificates', certFilters, signal)} />
      )}
      {certs.hasNextPage && (
        <button type="button" className="more" onClick={() => void certs.fetchNextPage()} disabled={certs.isFetchingNextPage}>
          {certs.isFetchingNextPage ? 'Loading…' : 'Load more'}
        </button>
      )}
    </>
  );
}
