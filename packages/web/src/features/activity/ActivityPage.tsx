import { eventKinds } from '@surveyor/contract';
import type { ColumnDef } from '@tanstack/react-table';
import { useEffect, useMemo, useState } from 'react';
import { Link, useSearchParams } from 'react-router';
import { DataTable } from '../../components/DataTable';
import { ErrorAlert } from '../../components/ErrorAlert';
import { RoleGate } from '../../components/RoleGate';
import { ViewTabs } from '../../components/ViewTabs';
import { ago, dateTime } from '../../lib/format';
import { usePageTitle } from '../../lib/usePageTitle';
import { type AuditFilters, type EventFilters, auditPages, eventPages, useAuditTrail, useEventLog } from './api';

// Settings → Activity (issue 23): what happened (the event log: alerts, scans, daemons, findings)
// and who changed what (the audit trail), the newest first, filtered by kind or action, subject
// and time.

type Event = NonNullable<ReturnType<typeof useEventLog>['data']>['pages'][number]['data'][number];
type Audit = NonNullable<ReturnType<typeof useAuditTrail>['data']>['pages'][number]['data'][number];

/** A datetime-local value as an RFC 3339 instant in this browser's zone, or undefined. */
const instant = (local: string) => (local ? new Date(local).toISOString() : undefined);

/** Where a subject or target is shown in the console, when it is. */
function subjectLink(type: string, id: string | null) {
  if (!id) return null;
  const to = type === 'host' ? `/hosts/${id}` : type === 'network' ? `/networks/${id}` : type === 'daemon' ? '/daemons' : null;
  return to ? <Link to={to} className="mono">{id.slice(0, 8)}</Link> : <span className="mono" title={id}>{id.length > 12 ? `${id.slice(0, 8)}…` : id}</span>;
}

const summary = (o: Record<string, unknown>) => {
  const text = JSON.stringify(o);
  return text.length > 160 ? `${text.slice(0, 160)}…` : text;
};

const eventColumns: ColumnDef<Event>[] = [
  { header: 'When', accessorKey: 'occurredAt', cell: ({ row }) => <time className="nowrap" dateTime={row.original.occurredAt} title={dateTime(row.original.occurredAt)}>{ago(row.original.occurredAt)}</time> },
  { header: 'Kind', accessorKey: 'kind', cell: ({ row }) => <span className="mono nowrap">{row.original.kind}</span> },
  { header: 'Severity', accessorKey: 'severity', cell: ({ row }) => <span className={`badge event-${row.original.severity}`}>{row.original.severity}</span> },
  { id: 'subject', header: 'Subject', accessorFn: (e) => `${e.subject.type} ${e.subject.id}`, cell: ({ row }) => <span className="nowrap">{row.original.subject.type} {subjectLink(row.original.subject.type, row.original.subject.id)}</span> },
  { id: 'data', header: 'Data', enableSorting: false, cell: ({ row }) => <code className="summary" title={JSON.stringify(row.original.data, null, 2)}>{summary(row.original.data as Record<string, unknown>)}</code> },
];

const auditColumns: ColumnDef<Audit>[] = [
  { header: 'When', accessorKey: 'at', cell: ({ row }) => <time className="nowrap" dateTime={row.original.at} title={dateTime(row.original.at)}>{ago(row.original.at)}</time> },
  { header: 'Action', accessorKey: 'action', cell: ({ row }) => <span className="mono nowrap">{row.original.action}</span> },
  { id: 'target', header: 'Target', accessorFn: (a) => `${a.target.type} ${a.target.id ?? ''}`, cell: ({ row }) => <span className="nowrap">{row.original.target.type} {subjectLink(row.original.target.type, row.original.target.id)}</span> },
  {
    id: 'actor',
    header: 'By',
    accessorFn: (a) => a.actor.email ?? a.actor.job ?? a.actor.type,
    cell: ({ row }) => {
      const a = row.original.actor;
      return <span>{a.job ?? a.email ?? a.type}{a.keyPrefix && <span className="muted"> (API key <span className="mono">{a.keyPrefix}</span>)</span>}{a.type === 'cli' && !a.email && <span className="muted"> (command line)</span>}</span>;
    },
  },
  { id: 'changes', header: 'Changes', enableSorting: false, cell: ({ row }) => <code className="summary" title={JSON.stringify(row.original.changes, null, 2)}>{summary(row.original.changes)}</code> },
];

/** A filter field that applies once typing pauses (and is kept in the URL). */
function useDebounced(value: string, apply: (v: string) => void) {
  useEffect(() => {
    const t = setTimeout(() => apply(value.trim()), 300);
    return () => clearTimeout(t);
  }, [value]);
}

/** Settings → Activity (admins and owners). */
export function ActivityPage() {
  return (
    <RoleGate min="admin" title="Activity" why="The event log and the audit trail are for admins and owners of the organisation.">
      <ActivityScreen />
    </RoleGate>
  );
}

function ActivityScreen() {
  usePageTitle('Activity');
  const [params, setParams] = useSearchParams();
  const view = params.get('view') === 'audit' ? 'audit' : 'events';
  const set = (name: string, value: string) => {
    const next = new URLSearchParams(params);
    if (value) next.set(name, value);
    else next.delete(name);
    setParams(next, { replace: true });
  };
  const [subject, setSubject] = useState(params.get('subject') ?? '');
  const [action, setAction] = useState(params.get('action') ?? '');
  useDebounced(subject, (v) => v !== (params.get('subject') ?? '') && set('subject', v));
  useDebounced(action, (v) => v !== (params.get('action') ?? '') && set('action', v));
  const since = params.get('since') ?? '';
  const until = params.get('until') ?? '';
  const kind = params.get('kind') ?? '';

  const eventFilters: EventFilters = useMemo(() => ({
    ...(kind ? { kind: kind as EventFilters['kind'] } : {}),
    ...(params.get('subject') ? { subjectId: params.get('subject')! } : {}),
    ...(since ? { since: instant(since) } : {}),
    ...(until ? { until: instant(until) } : {}),
  }), [kind, params, since, until]);
  const auditFilters: AuditFilters = useMemo(() => ({
    ...(params.get('action') ? { action: params.get('action')! } : {}),
    ...(params.get('subject') ? { targetId: params.get('subject')! } : {}),
    ...(since ? { since: instant(since) } : {}),
    ...(until ? { until: instant(until) } : {}),
  }), [params, since, until]);


  return (
    <>
      <h1>Activity</h1>
      <ViewTabs views={[['events', 'Events'], ['audit', 'Audit trail']]} current={view} />
      <div className="toolbar">
        {view === 'events' ? (
          <label>
            Kind
            <select value={kind} onChange={(e) => set('kind', e.target.value)}>
              <option value="">Any</option>
              {eventKinds.map((k) => <option key={k} value={k}>{k}</option>)}
            </select>
          </label>
        ) : (
          <label>
            Action
            <input type="search" className="narrow" value={action} onChange={(e) => setAction(e.target.value)} placeholder="network. or vulnerability.updated" />
          </label>
        )}
        <label>
          {view === 'events' ? 'Subject id' : 'Target id'}
          <input type="search" className="mono narrow" value={subject} onChange={(e) => setSubject(e.target.value)} placeholder="a host, daemon or finding id" />
        </label>
        <label>
          From
          <input type="datetime-local" value={since} onChange={(e) => set('since', e.target.value)} />
        </label>
        <label>
          Until
          <input type="datetime-local" value={until} onChange={(e) => set('until', e.target.value)} />
        </label>
      </div>
      {view === 'events' ? <EventLog filters={eventFilters} /> : <AuditTrail filters={auditFilters} />}
    </>
  );
}

function EventLog({ filters }: { filters: EventFilters }) {
  const log = useEventLog(filters);
  const rows = useMemo(() => log.data?.pages.flatMap((p) => p.data) ?? [], [log.data]);
  return (
    <>
      <ErrorAlert error={log.error} />
      {log.isPending && !log.error && <p className="loading">Loading…</p>}
      {log.data && rows.length === 0 && <p className="empty">No event matches these filters. Events are what the service announces: scans, daemons going quiet, findings, certificates expiring, jobs failing.</p>}
      {rows.length > 0 && <DataTable caption="Events, the newest first" partial={log.hasNextPage} data={rows} columns={eventColumns} rowKey={(e) => e.id} exportRows={(signal) => eventPages(filters, signal)} />}
      {log.hasNextPage && <button type="button" className="more" onClick={() => void log.fetchNextPage()} disabled={log.isFetchingNextPage}>{log.isFetchingNextPage ? 'Loading…' : 'Load older'}</button>}
    </>
  );
}

function AuditTrail({ filters }: { filters: AuditFilters }) {
  const trail = useAuditTrail(filters);
  const rows = useMemo(() => trail.data?.pages.flatMap((p) => p.data) ?? [], [trail.data]);
  return (
    <>
      <ErrorAlert error={trail.error} />
      {trail.isPending && !trail.error && <p className="loading">Loading…</p>}
      {trail.data && rows.length === 0 && <p className="empty">No change matches these filters. Every write (networks, sites, members, keys, findings, snapshots…) leaves a row here.</p>}
      {rows.length > 0 && <DataTable caption="Audit trail, the newest first" partial={trail.hasNextPage} data={rows} columns={auditColumns} rowKey={(a) => a.id} exportRows={(signal) => auditPages(filters, signal)} />}
      {trail.hasNextPage && <button type="button" className="more" onClick={() => void trail.fetchNextPage()} disabled={trail.isFetchingNextPage}>{trail.isFetchingNextPage ? 'Loading…' : 'Load older'}</button>}
    </>
  );
}
