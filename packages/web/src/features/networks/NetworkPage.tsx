import { useMutation, useQueryClient } from '@tanstack/react-query';
import { roleAtLeast } from '@surveyor/contract';
import { useMemo, useState } from 'react';
import { Link, useNavigate, useParams, useSearchParams } from 'react-router';
import { Dialog } from '../../components/Dialog';
import { ErrorAlert } from '../../components/ErrorAlert';
import { HostList } from '../../components/HostList';
import { ACTIVE_SESSION_STATES as ACTIVE, ScanState, SessionTable, hostsText, percentText } from '../../components/SessionTable';
import { ScanButton } from './components/ScanButton';
import { DeleteNetworkDialog, EditNetworkDialog } from './components/NetworkDialogs';
import { ago, dateTime } from '../../lib/format';
import { overviewKeys, scanKeys } from '../../lib/keys';
import { collectionPages, useDaemons, useMe, useSiteNames, useSites } from '../../lib/queries';
import { cancelScan, useNetwork, useNetworkHosts, useNetworkScans } from './api';
import type { Network, ScanSession } from '../../lib/types';
import { SchedulerCell, intervalText } from './NetworksPage';
import { usePageTitle } from '../../lib/usePageTitle';

/** The hosts with an address in the network's range, 50 at a time ("Load more"). */
function NetworkHosts({ network: n }: { network: Network }) {
  const hosts = useNetworkHosts(n.cidr);
  return (
    <section aria-labelledby="hosts-title">
      <h2 id="hosts-title">Hosts in {n.cidr}</h2>
      <HostList caption={`Hosts in ${n.name}`} hosts={hosts} exportRows={(signal) => collectionPages('hosts', { search: n.cidr }, signal)} empty={`No host with an address in ${n.cidr} yet${n.lastScanAt ? '.' : ': scan the network to find them.'}`} />
    </section>
  );
}

/** "3 hosts", or "50+ hosts" while more pages exist. */
function hostCount(h: ReturnType<typeof useNetworkHosts>): string {
  const n = h.data?.pages.reduce((sum, p) => sum + p.data.length, 0) ?? 0;
  return h.hasNextPage ? `${n}+ hosts` : n === 1 ? '1 host' : `${n} hosts`;
}

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
  const [params] = useSearchParams();
  const navigate = useNavigate();
  const me = useMe();
  const canScan = me.data ? roleAtLeast(me.data.role, 'editor') : false;
  const network = useNetwork(id);
  const scans = useNetworkScans(id);
  const n = network.data;
  const sites = useSiteNames([n?.siteId ?? null]);
  const siteChoices = useSites();
  const daemonList = useDaemons();
  const daemons = useMemo(() => new Map((daemonList.data?.data ?? []).map((d) => [d.id, d])), [daemonList.data]);
  const hosts = useNetworkHosts(n?.cidr);
  const [editing, setEditing] = useState(false);
  const [saved, setSaved] = useState<string | null>(null);
  const [deleting, setDeleting] = useState(false);
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
            <dd><SchedulerCell n={n} daemons={daemons} /></dd>
            <dt>Ports</dt>
            <dd>{[n.topPortsTcp ? `top ${n.topPortsTcp} TCP` : 'no TCP', n.topPortsUdp ? `top ${n.topPortsUdp} UDP` : 'no UDP'].join(', ')}</dd>
            <dt>nmap</dt>
            <dd>{n.nmap.enabled ? `on (${n.nmap.scripts.join(', ') || 'no scripts'})` : 'off'}</dd>
            <dt>Last scan</dt>
            <dd>{n.lastScanAt ? <span title={dateTime(n.lastScanAt)}>{ago(n.lastScanAt)}</span> : 'never'}</dd>
          </dl>
          {canScan && (
            <p className="page-actions">
              <ScanButton networkId={n.id} active={n.activeSessionId} quiet />
              <button type="button" className="small" onClick={() => { setSaved(null); setEditing(true); }}>Edit network</button>
              <button type="button" className="small danger" onClick={() => setDeleting(true)}>Delete network</button>
            </p>
          )}
          {saved && <p role="status" className="notice">{saved}</p>}
          {editing && (
            <EditNetworkDialog
              network={n}
              sites={siteChoices}
              onCancel={() => setEditing(false)}
              onDone={(u) => { setEditing(false); setSaved(`Network ${u.name} saved.`); }}
            />
          )}
          {deleting && (
            <DeleteNetworkDialog
              network={n}
              hosts={hostCount(hosts)}
              sessions={sessions.length}
              onCancel={() => setDeleting(false)}
              onDone={() => void navigate('/networks', { state: { deleted: n.name } })}
            />
          )}
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
            {sessions.length > 0 && <SessionTable caption="Scan history" sessions={sessions} show="daemon" highlight={params.get('session')} />}
          </section>
          <NetworkHosts network={n} />
        </>
      )}
    </>
  );
}
