import { useQueryClient } from '@tanstack/react-query';
import type { ColumnDef } from '@tanstack/react-table';
import { CreateNetworkRequest, roleAtLeast } from '@surveyor/contract';
import { useMemo } from 'react';
import { Link, useNavigate } from 'react-router';
import { DataTable } from '../../components/DataTable';
import { ErrorAlert } from '../../components/ErrorAlert';
import { ScanButton } from './components/ScanButton';
import { Field, errorAt, optionalNumber, optionalText, trimmed, useContractForm } from '../../components/form';
import { ago, dateTime } from '../../lib/format';
import { useMe, useSiteNames, useSites } from '../../lib/queries';
import { createNetwork, useNetworks } from './api';
import type { Network, Site } from '../../lib/types';
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

type NetworkForm = z.input<typeof CreateNetworkRequest>;

function AddNetwork({ sites }: { sites: Map<string, Site> }) {
  const client = useQueryClient();
  // The contract's own schema, checked as the user types (the server applies the same).
  const { form, mutation: create, onSubmit, done: added, edited: onChange, shown } = useContractForm({
    schema: CreateNetworkRequest,
    mode: 'onChange',
    defaultValues: { name: '', cidr: '' } as NetworkForm,
    submit: createNetwork,
    fields: ['name', 'cidr', 'siteId', 'scanIntervalMinutes'],
    onSuccess: () => void client.invalidateQueries({ queryKey: networkKeys.all }),
  });
  const { register, formState: { errors, isValid } } = form;

  return (
    <section aria-labelledby="add-network-title">
      <h2 id="add-network-title">Add network</h2>
      <form onSubmit={onSubmit} className="add-network" noValidate>
        <Field label="Name" error={shown('name')}>
          {(a) => <input {...a} {...register('name', { onChange })} maxLength={200} placeholder="office LAN" />}
        </Field>
        <Field label="CIDR" error={shown('cidr')}>
          {(a) => <input {...a} className="mono" {...register('cidr', { onChange, setValueAs: trimmed })} placeholder="10.0.0.0/24" />}
        </Field>
        <Field label="Site" error={errorAt(errors, 'siteId')}>
          {(a) => (
            <select {...a} {...register('siteId', { onChange, setValueAs: optionalText })}>
              <option value="">No site</option>
              {[...sites.values()].map((s) => <option key={s.id} value={s.id}>{s.name} ({s.code})</option>)}
            </select>
          )}
        </Field>
        <Field label="Scan every (minutes)" error={shown('scanIntervalMinutes') && 'between 15 and 10080 minutes (empty: manual only)'}>
          {(a) => <input {...a} type="number" min={15} max={10080} {...register('scanIntervalMinutes', { onChange, setValueAs: optionalNumber })} placeholder="manual only" />}
        </Field>
        <button type="submit" className="primary" disabled={!isValid || create.isPending}>{create.isPending ? 'Adding…' : 'Add network'}</button>
      </form>
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
        cell: ({ row }) => <span className="schedule-text" title={row.original.schedule ? `checked ${dateTime(row.original.schedule.checkedAt)}` : undefined}>{scheduleText(row.original)}</span>,
      },
      ...(canScan ? [{ id: 'scan', header: 'Scan', cell: ({ row }) => <ScanButton networkId={row.original.id} label={`Scan ${row.original.name} now`} /> } satisfies ColumnDef<Network>] : []),
    ],
    [siteNames, canScan],
  );

  return (
    <>
      <h1>Networks</h1>
      <ErrorAlert error={networks.error} />
      {networks.isPending && !networks.error && <p className="loading">Loading…</p>}
      {networks.data && rows.length === 0 && <p className="empty">No networks yet{canScan ? ': add one below, then scan it.' : '.'}</p>}
      {rows.length > 0 && <DataTable caption="Networks" data={rows} columns={columns} rowKey={(n) => n.id} onRowOpen={(n) => void navigate(`/networks/${n.id}`)} />}
      {canScan && <AddNetwork sites={sites} />}
    </>
  );
}
