import { useMutation, useQueryClient } from '@tanstack/react-query';
import type { ColumnDef } from '@tanstack/react-table';
import { CreateNetworkRequest, roleAtLeast } from '@surveyor/contract';
import { type FormEvent, useMemo, useState } from 'react';
import { Link, useNavigate } from 'react-router';
import { api } from '../api';
import { DataTable } from '../components/DataTable';
import { ErrorAlert } from '../components/ErrorAlert';
import { ScanButton } from '../components/ScanButton';
import { useCheckedFields } from '../components/useCheckedFields';
import { ago, dateTime } from '../format';
import { useMe, useNetworks, useSiteNames, useSites } from '../queries';
import type { Network, Site } from '../types';
import { usePageTitle } from './usePageTitle';

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

type Field = 'name' | 'cidr' | 'siteId' | 'scanIntervalMinutes';

function AddNetwork({ sites }: { sites: Map<string, Site> }) {
  const client = useQueryClient();
  const [added, setAdded] = useState<Network | null>(null);
  // The contract's own schema, as the server will apply it: what it refuses is shown as the user types.
  const form = useCheckedFields(
    { name: '', cidr: '', siteId: '', scanIntervalMinutes: '' } as Record<Field, string>,
    (v) => ({
      name: v.name,
      cidr: v.cidr.trim(),
      ...(v.siteId ? { siteId: v.siteId } : {}),
      ...(v.scanIntervalMinutes.trim() ? { scanIntervalMinutes: Number(v.scanIntervalMinutes) } : {}),
    }),
    CreateNetworkRequest,
    {
      onEdit: () => {
        if (create.error) create.reset();
        setAdded(null);
      },
      issueText: (f, message) => (f === 'scanIntervalMinutes' ? 'between 15 and 10080 minutes (empty: manual only)' : message),
    },
  );
  const { values, checked, set, props, issue } = form;

  const create = useMutation({
    mutationFn: (b: unknown) => api<Network>('/api/v1/networks', { method: 'POST', body: b }),
    onSuccess: (n) => {
      void client.invalidateQueries({ queryKey: ['networks'] });
      form.reset();
      setAdded(n);
    },
  });

  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (checked.success) create.mutate(checked.data);
  };

  return (
    <section aria-labelledby="add-network-title">
      <h2 id="add-network-title">Add network</h2>
      <form onSubmit={submit} className="add-network" noValidate>
        <div className="field">
          <label htmlFor={form.id('name')}>Name</label>
          <input value={values.name} onChange={set('name')} maxLength={200} placeholder="office LAN" {...props('name')} />
          {issue('name')}
        </div>
        <div className="field">
          <label htmlFor={form.id('cidr')}>CIDR</label>
          <input className="mono" value={values.cidr} onChange={set('cidr')} placeholder="10.0.0.0/24" {...props('cidr')} />
          {issue('cidr')}
        </div>
        <div className="field">
          <label htmlFor={form.id('siteId')}>Site</label>
          <select {...props('siteId')} value={values.siteId} onChange={set('siteId')}>
            <option value="">No site</option>
            {[...sites.values()].map((s) => <option key={s.id} value={s.id}>{s.name} ({s.code})</option>)}
          </select>
        </div>
        <div className="field">
          <label htmlFor={form.id('scanIntervalMinutes')}>Scan every (minutes)</label>
          <input type="number" min={15} max={10080} value={values.scanIntervalMinutes} onChange={set('scanIntervalMinutes')} placeholder="manual only" {...props('scanIntervalMinutes')} />
          {issue('scanIntervalMinutes')}
        </div>
        <button type="submit" className="primary" disabled={!checked.success || create.isPending}>{create.isPending ? 'Adding…' : 'Add network'}</button>
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
      { header: 'Site', accessorKey: 'siteId', cell: ({ row }) => (row.original.siteId ? (siteNames.get(row.original.siteId)?.name ?? '…') : '—') },
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
