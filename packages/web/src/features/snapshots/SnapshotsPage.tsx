import { useQueryClient } from '@tanstack/react-query';
import type { ColumnDef } from '@tanstack/react-table';
import { CreateSnapshotRequest, roleAtLeast, snapshotReasons } from '@surveyor/contract';
import { useId, useMemo, useState } from 'react';
import { useSearchParams } from 'react-router';
import { snapshotKeys } from '../../lib/keys';
import { attestationHref, createSnapshot } from './api';
import { DataTable } from '../../components/DataTable';
import { ErrorAlert } from '../../components/ErrorAlert';
import { Field, errorAt, useContractForm } from '../../components/form';
import { ago, bytes, dateTime, plural } from '../../lib/format';
import { collectionPages, useCollection, useMe, useSiteNames } from '../../lib/queries';
import type { Site, Snapshot } from '../../lib/types';
import { CompareSnapshots } from './SnapshotDiffPage';
import { usePageTitle } from '../../lib/usePageTitle';

type Reason = Snapshot['reason'];

const reasonLabels: Record<Reason, string> = {
  scheduled: 'Scheduled',
  manual: 'Manual',
  pre_change: 'Before a change',
  post_change: 'After a change',
  audit: 'Audit',
};
/** What a person may ask for: `scheduled` belongs to the daily job (the API refuses it). */
const TAKEABLE = snapshotReasons.filter((r) => r !== 'scheduled');

/** Short column heads, so the eight counts and the size fit a 1280 px window (the full name is the tooltip). */
const STAT_HEADS = { hosts: 'Hosts', addresses: 'Addr.', services: 'Services', networks: 'Nets', sites: 'Sites', certificates: 'Certs', vulnerabilities: 'Findings', topologies: 'Views' } as const;
const STATS = ['hosts', 'addresses', 'services', 'networks', 'sites', 'certificates', 'vulnerabilities', 'topologies'] as const satisfies readonly (keyof Snapshot['stats'])[];

function snapshotColumns(sites: Map<string, Site>, canAttest = false): ColumnDef<Snapshot>[] {
  return [
    {
      header: 'Captured',
      accessorKey: 'capturedAt',
      cell: ({ row }) => <time className="nowrap" dateTime={row.original.capturedAt} title={ago(row.original.capturedAt)}>{dateTime(row.original.capturedAt)}</time>,
    },
    { header: 'Reason', accessorKey: 'reason', cell: ({ row }) => <span className={`reason-${row.original.reason}`}>{reasonLabels[row.original.reason]}</span> },
    { header: 'Site', accessorKey: 'siteId', enableSorting: false, cell: ({ row }) => (row.original.siteId ? (sites.get(row.original.siteId)?.name ?? '…') : 'All') },
    ...STATS.map<ColumnDef<Snapshot>>((k) => ({
      id: k,
      header: () => <span className="num-head" title={k}>{STAT_HEADS[k]}</span>,
      cell: ({ row }) => <span className="num">{row.original.stats[k]}</span>,
    })),
    {
      header: 'Content',
      accessorKey: 'contentBytes',
      cell: ({ row }) => <span className="nowrap" title={row.original.contentSha256 ? `SHA-256 ${row.original.contentSha256}` : undefined}>{bytes(row.original.contentBytes)}</span>,
    },
    ...(canAttest ? [{ id: 'attestation', header: 'Evidence', cell: ({ row }) => <a className="nowrap" href={attestationHref(row.original.id)} download title="A PDF signed with the service's key (verify it with: surveyor snapshots verify)">Attestation (PDF)</a> } satisfies ColumnDef<Snapshot>] : []),
  ];
}

function TakeSnapshot({ onTaken }: { onTaken: (s: Snapshot) => void }) {
  const client = useQueryClient();
  // The contract's schema (without its "no body at all" preprocessing) as the resolver.
  const { form, mutation: take, onSubmit } = useContractForm({
    schema: CreateSnapshotRequest.out,
    defaultValues: { reason: 'manual' as Reason },
    submit: createSnapshot,
    fields: ['reason'],
    reset: false,
    onSuccess: (s) => {
      onTaken(s);
      void client.invalidateQueries({ queryKey: snapshotKeys.all });
    },
  });
  const { register, formState: { errors } } = form;
  return (
    <section aria-labelledby="take-title">
      <h2 id="take-title">Take a snapshot</h2>
      <form className="mint" onSubmit={onSubmit} noValidate>
        <Field label="Reason" error={errorAt(errors, 'reason')}>
          {(a) => (
            <select {...a} {...register('reason')}>
              {TAKEABLE.map((r) => (
                <option key={r} value={r}>{reasonLabels[r]}</option>
              ))}
            </select>
          )}
        </Field>
        <button type="submit" className="primary" disabled={take.isPending}>{take.isPending ? 'Taking…' : 'Take snapshot'}</button>
        <span className="hint">Counts the whole organisation's inventory now; the daily job takes the scheduled ones.</span>
      </form>
      <ErrorAlert error={take.error} />
      {take.data && !take.isPending && (
        <p role="status" className="notice">
          Snapshot taken ({reasonLabels[take.data.reason].toLowerCase()}, {dateTime(take.data.capturedAt)}): {plural(take.data.stats.hosts, 'host')}, {plural(take.data.stats.services, 'service')},{' '}
          {plural(take.data.stats.certificates, 'certificate')}, {plural(take.data.stats.vulnerabilities, 'vulnerability', 'vulnerabilities')}. It is listed first, highlighted.
        </p>
      )}
    </section>
  );
}

export function SnapshotsPage() {
  usePageTitle('Snapshots');
  const me = useMe();
  const canWrite = me.data ? roleAtLeast(me.data.role, 'editor') : false;
  const [params, setParams] = useSearchParams();
  const raw = params.get('reason');
  const reason = raw && (snapshotReasons as readonly string[]).includes(raw) ? (raw as Reason) : undefined;
  const [taken, setTaken] = useState<Set<string>>(new Set());
  const filterId = useId();
  const snapshots = useCollection('snapshots', { limit: 100, reason, order: 'desc' });
  const rows = useMemo(() => snapshots.data?.pages.flatMap((p) => p.data) ?? [], [snapshots.data]);
  const canAttest = me.data ? roleAtLeast(me.data.role, 'admin') : false;
  const sites = useSiteNames(rows.map((s) => s.siteId));
  const columns = useMemo(() => snapshotColumns(sites, canAttest), [sites, canAttest]);

  return (
    <>
      <h1>Snapshots</h1>
      {canWrite && <TakeSnapshot onTaken={(s) => setTaken((t) => new Set(t).add(s.id))} />}
      <section aria-labelledby="snapshots-title">
        <h2 id="snapshots-title">Taken</h2>
        <div className="toolbar">
          <div className="field">
            <label htmlFor={filterId}>Filter by reason</label>
            <select id={filterId} value={reason ?? ''} onChange={(e) => setParams(e.target.value ? { reason: e.target.value } : {}, { replace: true })}>
              <option value="">Any</option>
              {snapshotReasons.map((r) => (
                <option key={r} value={r}>{reasonLabels[r]}</option>
              ))}
            </select>
          </div>
        </div>
        <ErrorAlert error={snapshots.error} />
        {snapshots.isPending && !snapshots.error && <p className="loading">Loading…</p>}
        {snapshots.data && rows.length === 0 && (
          <p className="empty">
            {reason
              ? `No ${reasonLabels[reason].toLowerCase()} snapshot yet.`
              : canWrite
                ? 'No snapshots yet: take one above, or wait for the daily one (job inventory.snapshot).'
                : 'No snapshots yet: the daily job (inventory.snapshot) takes one, or an editor can take one now.'}
          </p>
        )}
        {rows.length > 0 && <DataTable caption="Snapshots, the newest first" partial={snapshots.hasNextPage} data={rows} columns={columns} rowKey={(s) => s.id} rowClassName={(s) => (taken.has(s.id) ? 'just-taken' : undefined)} exportRows={(signal) => collectionPages('snapshots', { reason, order: 'desc' }, signal)} />}
        {snapshots.hasNextPage && (
          <button type="button" className="more" onClick={() => void snapshots.fetchNextPage()} disabled={snapshots.isFetchingNextPage}>
            {snapshots.isFetchingNextPage ? 'Loading…' : 'Load more'}
          </button>
        )}
      </section>
      <CompareSnapshots snapshots={rows} sites={sites} />
    </>
  );
}
