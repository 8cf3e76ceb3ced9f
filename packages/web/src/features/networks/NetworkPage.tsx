import { useMutation, useQueryClient } from '@tanstack/react-query';
import type { ColumnDef } from '@tanstack/react-table';
import { roleAtLeast } from '@surveyor/contract';
import { useMemo, useState } from 'react';
import { Link, useParams } from 'react-router';
import { DataTable } from '../../components/DataTable';
import { Dialog } from '../../components/Dialog';
import { ErrorAlert } from '../../components/ErrorAlert';
import { ScanButton } from './components/ScanButton';
import { ago, dateTime } from '../../lib/format';
import { overviewKeys, scanKeys } from '../../lib/keys';
import { useMe, useSiteNames } from '../../lib/queries';
import { cancelScan, useNetwork, useNetworkScans } from './api';
import type { ScanSession } from '../../lib/types';
import { intervalText, scheduleText } from './NetworksPage';
import { usePageTitle } from '../../lib/usePageTitle';

const ACTIVE: ScanSession['state'][] = ['queued', 'dispatched', 'running', 'stalled'];

export function ScanState({ state }: { state: ScanSession['state'] }) {
  return <span className={`badge scan-${state}`}>{state}</span>;
}

const percentText = (s: ScanSession) => (s.progress.percent === null ? '—' : `${s.progress.percent} %`);
const hostsText = (s: ScanSession) => `${s.progress.hostsScanned} / ${s.progress.hostsTotal ?? '?'}`;

/**
 * The session in progress: its state, hosts scanned of the total, percent, batches (refreshed by
 * scan.* live events), and "Cancel scan" for those who may (`onCancel`). Once cancelled here it
 * stays, showing its final state.
 */
function LiveSession({ session, onCancel }: { session: ScanSession; onCancel?: (() => void) | undefined }) {
  const active = ACTIVE.includes(session.state);
  return (
    <section aria-labelledby="live-title" className="live-scan">
      <h2 id="live-title">{active ? 'Scan in progress' : `Scan ${session.state}`}</h2>
      <dl className="fields" aria-live="polite">
        <dt>State</dt>
        <dd><ScanState state={session.state} /></dd>
        <dt>Hosts scanned</dt>
        <dd data-testid="live-hosts">{hostsText(session)}</dd>
        <dt>Progress</dt>
        <dd data-testid="live-percent">
          {session.progress.percent !== null && <progress max={100} value={session.progress.percent} aria-label="Scan progress" />} {percentText(session)}
        </dd>
        <dt>Batches</dt>
        <dd data-testid="live-batches">{session.progress.batches}</dd>
        <dt>Started</dt>
        <dd>{session.startedAt ? <span title={dateTime(session.startedAt)}>{ago(session.startedAt)}</span> : `not yet (queued ${ago(session.createdAt)})`}</dd>
        {session.finishedAt && (
          <>
            <dt>Finished</dt>
            <dd><span title={dateTime(session.finishedAt)}>{ago(session.finishedAt)}</span></dd>
          </>
        )}
      </dl>
      {active && onCancel && <p className="row-actions"><button type="button" className="small danger" onClick={onCancel}>Cancel scan</button></p>}
    </section>
  );
}

export function NetworkPage() {
  const { id = '' } = useParams();
  const me = useMe();
  const canScan = me.data ? roleAtLeast(me.data.role, 'editor') : false;
  const network = useNetwork(id);
  const scans = useNetworkScans(id);
  const n = network.data;
  const sites = useSiteNames([n?.siteId ?? null]);
  usePageTitle(n ? `Network ${n.name}` : 'Network');

  const sessions = scans.data?.data ?? [];
  const client = useQueryClient();
  // The session whose cancellation is being confirmed: kept here, so the dialog stays (and can
  // show a refusal) even when a live event ends the session meanwhile.
  const [confirming, setConfirming] = useState<ScanSession | null>(null);
  const cancel = useMutation({
    mutationFn: cancelScan,
    onSuccess: () => {
      setConfirming(null);
      void client.invalidateQueries({ queryKey: scanKeys.all });
      void client.invalidateQueries({ queryKey: overviewKeys.all });
    },
  });
  const cancelled = cancel.data;
  const live = sessions.find((s) => ACTIVE.includes(s.state)) ?? (cancelled ? (sessions.find((s) => s.sessionId === cancelled.sessionId) ?? cancelled) : undefined);

  const columns = useMemo<ColumnDef<ScanSession>[]>(
    () => [
      { header: 'Queued', accessorKey: 'createdAt', cell: ({ row }) => <time dateTime={row.original.createdAt} title={dateTime(row.original.createdAt)}>{ago(row.original.createdAt)}</time> },
      { header: 'State', accessorKey: 'state', cell: ({ row }) => <ScanState state={row.original.state} /> },
      { header: 'Hosts', id: 'hosts', cell: ({ row }) => hostsText(row.original) },
      { header: 'Progress', id: 'percent', cell: ({ row }) => percentText(row.original) },
      { header: 'Ports', id: 'ports', cell: ({ row }) => row.original.progress.portsScanned },
      { header: 'Batches', id: 'batches', cell: ({ row }) => row.original.progress.batches },
      { header: 'nmap', id: 'nmap', cell: ({ row }) => (row.original.nmap.enabled ? row.original.nmap.scripts.join(', ') || 'on' : 'off') },
      { header: 'Finished', accessorKey: 'finishedAt', cell: ({ row }) => (row.original.finishedAt ? <span title={dateTime(row.original.finishedAt)}>{ago(row.original.finishedAt)}</span> : '—') },
    ],
    [],
  );

  return (
    <>
      <p className="crumbs"><Link to="/networks">Networks</Link> /</p>
      <h1>{n ? n.name : 'Network'}</h1>
      <ErrorAlert error={network.error} />
      {network.isPending && !network.error && <p className="loading">Loading…</p>}
      {n === null && <p className="empty">No network {id} in this organisation.</p>}
      {n && (
        <>
          <dl className="fields">
            <dt>CIDR</dt>
            <dd className="mono">{n.cidr}</dd>
            {n.excludeCidrs.length > 0 && (
              <>
                <dt>Excluded</dt>
                <dd className="mono">{n.excludeCidrs.join(', ')}</dd>
              </>
            )}
            <dt>Site</dt>
            <dd>{n.siteId ? (sites.get(n.siteId)?.name ?? '…') : '—'}</dd>
            <dt>Schedule</dt>
            <dd>{intervalText(n.scanIntervalMinutes)}</dd>
            <dt>Scheduler</dt>
            <dd>{scheduleText(n)}{n.schedule && <span className="muted"> (checked {ago(n.schedule.checkedAt)})</span>}</dd>
            <dt>Ports</dt>
            <dd>{[n.topPortsTcp ? `top ${n.topPortsTcp} TCP` : 'no TCP', n.topPortsUdp ? `top ${n.topPortsUdp} UDP` : 'no UDP'].join(', ')}</dd>
            <dt>nmap</dt>
            <dd>{n.nmap.enabled ? `on (${n.nmap.scripts.join(', ') || 'no scripts'})` : 'off'}</dd>
            <dt>Last scan</dt>
            <dd>{n.lastScanAt ? <span title={dateTime(n.lastScanAt)}>{ago(n.lastScanAt)}</span> : 'never'}</dd>
          </dl>
          {canScan && <p className="row-actions"><ScanButton networkId={n.id} quiet /></p>}
          {live && <LiveSession session={live} onCancel={canScan ? () => { cancel.reset(); setConfirming(live); } : undefined} />}
          {confirming && (
            <Dialog
              title="Cancel this scan?"
              danger
              confirmLabel={cancel.isPending ? 'Cancelling…' : 'Cancel scan'}
              cancelLabel={cancel.error ? 'Close' : 'Keep scanning'}
              busy={cancel.isPending}
              onConfirm={() => cancel.mutate(confirming.sessionId)}
              onCancel={() => { setConfirming(null); cancel.reset(); }}
            >
              <p>
                The session queued {ago(confirming.createdAt)} stops{confirming.state === 'queued' ? ' before it starts' : ': its daemon is told to stop'}. What it found so far stays in the inventory.
              </p>
              <ErrorAlert error={cancel.error} />
            </Dialog>
          )}
          <section aria-labelledby="history-title">
            <h2 id="history-title">Scan history</h2>
            <ErrorAlert error={scans.error} />
            {scans.data && sessions.length === 0 && <p className="empty">Never scanned.</p>}
            {sessions.length > 0 && <DataTable caption="Scan history" data={sessions} columns={columns} rowKey={(s) => s.sessionId} />}
          </section>
        </>
      )}
    </>
  );
}
