import { useQueryClient } from '@tanstack/react-query';
import type { ColumnDef } from '@tanstack/react-table';
import { CreateNetworkRequest, roleAtLeast } from '@surveyor/contract';
import { useMemo } from 'react';
import { Link, useLocation, useNavigate } from 'react-router';
import type { FieldValues, UseFormRegister } from 'react-hook-form';
import { DataTable } from '../../components/DataTable';
import { ErrorAlert } from '../../components/ErrorAlert';
import { ScanButton } from './components/ScanButton';
import { Field, trimmed, useContractForm } from '../../components/form';
import { NetworkFields, OverlapWarning, networkFields } from './components/NetworkFields';
import { ago, dateTime } from '../../lib/format';
import { useDaemons, useMe, useSiteNames, useSites } from '../../lib/queries';
import { createNetwork, useNetworks } from './api';
import type { DaemonSummary, Network, Site } from '../../lib/types';
import { usePageTitle } from '../../lib/usePageTitle';
import { networkKeys } from '../../lib/keys';
import type { z } from 'zod';

/** "every 60 min", "every 2 h", or "manual only" (no scanIntervalMinutes). */
export function intervalText(minutes: number | null): string {
  if (minutes === null) return 'manual only';
  if (minutes % 1440 === 0) return `every ${minutes / 1440} d`;
  if (minutes % 60 === 0) return `every ${minutes / 60} h`;
  return `every ${minutes} min`;
}

/** What the scheduler last did, as the API says it (`schedule`), or why there is nothing yet. */
export function scheduleText(n: Network): string {
  if (!n.schedule) return n.scanIntervalMinutes === null ? '—' : 'not due yet';
  return n.schedule.detail ? `${n.schedule.outcome}: ${n.schedule.detail}` : n.schedule.outcome;
}

/**
 * The scheduler's last move for a network: "queued on <daemon>, session" (each a link) when it
 * queued one, the refusal when it skipped, with the time of the check on hover.
 */
export function SchedulerCell({ n, daemons }: { n: Network; daemons: Map<string, DaemonSummary> }) {
  const s = n.schedule;
  if (!s || s.outcome !== 'queued' || !s.sessionId || !s.daemonId) {
    return <span className="schedule-text" title={s ? `checked ${dateTime(s.checkedAt)}` : undefined}>{scheduleText(n)}</span>;
  }
  const daemon = daemons.get(s.daemonId);
  return (
    <span className="schedule-text" title={`checked ${dateTime(s.checkedAt)}`}>
      queued {ago(s.checkedAt)} on {daemon ? <Link to={`/daemons/${daemon.id}`}>{daemon.name}</Link> : 'a removed daemon'}
      {' · '}
      <Link to={`/networks/${n.id}?session=${s.sessionId}`} aria-label={`Session ${s.sessionId.slice(0, 8)} of ${n.name}`}>session {s.sessionId.slice(0, 8)}</Link>
    </span>
  );
}

type NetworkForm = z.input<typeof CreateNetworkRequest>;

function AddNetwork({ sites }: { sites: Map<string, Site> }) {
  const client = useQueryClient();
  // The contract's own schema, checked as the user types (the server applies the same).
  const { form, mutation: create, onSubmit, done: added, edited: onChange, shown } = useContractForm({
    schema: CreateNetworkRequest,
    mode: 'onChange',
    defaultValues: { name: '', cidr: '', excludeCidrs: '' as unknown as string[], nmap: { enabled: false, scripts: [] } } as NetworkForm,
    submit: createNetwork,
    fields: networkFields,
    onSuccess: () => void client.invalidateQueries({ queryKey: networkKeys.all }),
  });
  const { register, watch, formState: { errors, isValid } } = form;
  const cidr = watch('cidr');

  return (
    <section aria-labelledby="add-network-title">
      <h2 id="add-network-title">Add network</h2>
      <form onSubmit={onSubmit} className="add-network network-form" noValidate>
        <Field label="Name" error={shown('name')}>
          {(a) => <input {...a} {...register('name', { onChange })} maxLength={200} placeholder="office LAN" />}
        </Field>
        <Field label="CIDR" error={shown('cidr')}>
          {(a) => <input {...a} className="mono" {...register('cidr', { onChange, setValueAs: trimmed })} placeholder="10.0.0.0/24" />}
        </Field>
        <NetworkFields register={register as unknown as UseFormRegister<FieldValues>} errors={errors} sites={sites} edit={false} onChange={onChange} />
        <button type="submit" className="primary" disabled={!isValid || create.isPending}>{create.isPending ? 'Adding…' : 'Add network'}</button>
      </form>
      <OverlapWarning cidr={cidr} />
      <ErrorAlert error={create.error} />
      {added && <p role="status" className="notice">Network <Link to={`/networks/${added.id}`}>{added.name}</Link> ({added.cidr}) added.</p>}
    </section>
  );
}

export function NetworksPage() {
  usePageTitle('Networks');
  const me = useMe();
  const navigate = useNavigate();
  const canScan = me.data ? roleAtLeast(me.data.role, 'editor') : false;
  const sites = useSites();
  const networks = useNetworks();
  const rows = networks.data?.data ?? [];
  const siteNames = useSiteNames(rows.map((n) => n.siteId));
  const daemonList = useDaemons();
  const daemons = useMemo(() => new Map((daemonList.data?.data ?? []).map((d) => [d.id, d])), [daemonList.data]);
  // A network deleted on its page comes back here saying so.
  const deleted = (useLocation().state as { deleted?: string } | null)?.deleted;

  const columns = useMemo<ColumnDef<Network>[]>(
    () => [
      { header: 'Name', accessorKey: 'name', cell: ({ row }) => <Link to={`/networks/${row.original.id}`}>{row.original.name}</Link> },
      { header: 'CIDR', accessorKey: 'cidr', cell: ({ row }) => <span className="mono">{row.original.cidr}</span> },
      { header: 'Site', accessorKey: 'siteId', enableSorting: false, cell: ({ row }) => (row.original.siteId ? (siteNames.get(row.original.siteId)?.name ?? '…') : '—') },
      { header: 'Schedule', accessorKey: 'scanIntervalMinutes', cell: ({ row }) => <span className="nowrap">{intervalText(row.original.scanIntervalMinutes)}</span> },
      {
        header: 'Last scan',
        accessorKey: 'lastScanAt',
        cell: ({ row }) => (row.original.lastScanAt ? <time dateTime={row.original.lastScanAt} title={dateTime(row.original.lastScanAt)}>{ago(row.original.lastScanAt)}</time> : 'never'),
      },
      {
        id: 'scheduler',
        header: 'Scheduler',
        cell: ({ row }) => <SchedulerCell n={row.original} daemons={daemons} />,
      },
      ...(canScan
        ? [{ id: 'scan', header: 'Scan', cell: ({ row }) => <ScanButton networkId={row.original.id} active={row.original.activeSessionId} label={`Scan ${row.original.name} now`} /> } satisfies ColumnDef<Network>]
        : []),
    ],
    [siteNames, canScan, daemons],
  );

  return (
    <>
      <h1>Networks</h1>
      {deleted && <p role="status" className="notice">Network {deleted} deleted; its hosts stay in the inventory.</p>}
      <ErrorAlert error={networks.error} />
      {networks.isPending && !networks.error && <p className="loading">Loading…</p>}
      {networks.data && rows.length === 0 && <p className="empty">No networks yet{canScan ? ': add one below, then scan it.' : '.'}</p>}
      {rows.length > 0 && <DataTable caption="Networks" data={rows} columns={columns} rowKey={(n) => n.id} onRowOpen={(n) => void navigate(`/networks/${n.id}`)} />}
      {canScan && <AddNetwork sites={sites} />}
    </>
  );
}
