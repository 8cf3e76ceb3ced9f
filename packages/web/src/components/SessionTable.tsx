import type { ColumnDef } from '@tanstack/react-table';
import { useMemo } from 'react';
import { Link } from 'react-router';
import { ago, dateTime, duration } from '../lib/format';
import type { ScanSession, SessionHistoryItem } from '../lib/types';
import { DataTable } from './DataTable';

/** The states of a session still under way (a stalled one may resume). */
export const ACTIVE_SESSION_STATES: readonly ScanSession['state'][] = ['queued', 'dispatched', 'running', 'stalled'];

export function ScanState({ state }: { state: ScanSession['state'] }) {
  return <span className={`badge scan-${state}`}>{state}</span>;
}

export const percentText = (s: ScanSession) => (s.progress.percent === null ? '—' : `${s.progress.percent} %`);
export const hostsText = (s: ScanSession) => `${s.progress.hostsScanned} / ${s.progress.hostsTotal ?? '?'}`;

/** How long the session has run: from hand-over (or its first batch) to its end, or to now while under way; null before hand-over. */
export function sessionMs(s: ScanSession, now = Date.now()): number | null {
  const start = s.dispatchedAt ?? s.startedAt;
  if (!start) return null;
  const end = s.finishedAt ? Date.parse(s.finishedAt) : ACTIVE_SESSION_STATES.includes(s.state) ? now : null;
  return end === null ? null : Math.max(0, end - Date.parse(start));
}

/** "4 min 10 s", "running for 12 s", or "—" before hand-over (a whole second: no milliseconds in a history). */
function durationText(s: ScanSession): string {
  const ms = sessionMs(s);
  if (ms === null) return '—';
  const text = ms < 1000 ? 'under 1 s' : duration(Math.round(ms / 1000) * 1000);
  return s.finishedAt ? text : `${text} so far`;
}

/**
 * Scan sessions as a history: queued, state, daemon (a network's history) or network (a daemon's),
 * hosts, progress, ports, duration, finished. `highlight` marks one session (a link to it).
 */
export function SessionTable({ caption, sessions, show, highlight }: { caption: string; sessions: SessionHistoryItem[]; show: 'daemon' | 'network'; highlight?: string | null }) {
  const columns = useMemo<ColumnDef<SessionHistoryItem>[]>(
    () => [
      { header: 'Queued', accessorKey: 'createdAt', cell: ({ row }) => <time dateTime={row.original.createdAt} title={dateTime(row.original.createdAt)}>{ago(row.original.createdAt)}</time> },
      { header: 'State', accessorKey: 'state', cell: ({ row }) => <ScanState state={row.original.state} /> },
      show === 'daemon'
        ? {
            header: 'Daemon',
            accessorKey: 'daemonName',
            cell: ({ row }) =>
              row.original.daemonRemoved ? <span title="removed since">{row.original.daemonName} <span className="muted">(removed)</span></span> : <Link to={`/daemons/${row.original.daemonId}`}>{row.original.daemonName}</Link>,
          }
        : { header: 'Network', accessorKey: 'networkName', cell: ({ row }) => <Link to={`/networks/${row.original.networkId}`}>{row.original.networkName}</Link> },
      { header: () => <span className="num-head">Hosts</span>, id: 'hosts', cell: ({ row }) => <span className="num nowrap">{hostsText(row.original)}</span> },
      { header: () => <span className="num-head">Progress</span>, id: 'percent', cell: ({ row }) => <span className="num">{percentText(row.original)}</span> },
      { header: () => <span className="num-head">Ports</span>, id: 'ports', cell: ({ row }) => <span className="num">{row.original.progress.portsScanned}</span> },
      { header: 'nmap', id: 'nmap', cell: ({ row }) => (row.original.nmap.enabled ? row.original.nmap.scripts.join(', ') || 'on' : 'off') },
      { header: () => <span className="num-head">Duration</span>, id: 'duration', cell: ({ row }) => <span className="num nowrap" title={row.original.dispatchedAt ? `handed over ${dateTime(row.original.dispatchedAt)}` : 'not handed over'}>{durationText(row.original)}</span> },
      { header: 'Finished', accessorKey: 'finishedAt', cell: ({ row }) => (row.original.finishedAt ? <time dateTime={row.original.finishedAt} title={dateTime(row.original.finishedAt)}>{ago(row.original.finishedAt)}</time> : '—') },
    ],
    [show],
  );
  return <DataTable caption={caption} data={sessions} columns={columns} rowKey={(s) => s.sessionId} rowClassName={(s) => (s.sessionId === highlight ? 'highlight' : undefined)} />;
}
