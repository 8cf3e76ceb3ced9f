import { useMutation, useQueryClient } from '@tanstack/react-query';
import type { ColumnDef } from '@tanstack/react-table';
import { roleAtLeast } from '@surveyor/contract';
import { useMemo, useState } from 'react';
import { routes } from '@surveyor/contract';
import { call } from '../../lib/api';
import { jobKeys } from '../../lib/keys';
import { DataTable } from '../../components/DataTable';
import { ErrorAlert } from '../../components/ErrorAlert';
import { ago, dateTime, duration, every } from '../../lib/format';
import { useJobs, useMe } from '../../lib/queries';
import type { JobStatus } from '../../lib/types';
import { jobHealthy } from '../../lib/jobs';
import { usePageTitle } from '../../lib/usePageTitle';

/** The jobs an admin may run now for their organisation, and the route of each. */
const runNow: Record<string, () => Promise<unknown>> = {
  'inventory.snapshot': () => call(routes.adminSnapshot),
  'topology.dependencies': () => call(routes.adminDependencyTick),
  'cve.match': () => call(routes.adminCveMatch),
};

function RunNow({ job, onResult }: { job: string; onResult: (job: string, message: string | null, error: unknown) => void }) {
  const client = useQueryClient();
  const run = useMutation({
    mutationFn: () => runNow[job]!(),
    onSuccess: () => {
      onResult(job, `${job} ran.`, null);
      void client.invalidateQueries({ queryKey: jobKeys.all });
    },
    onError: (e) => onResult(job, null, e),
  });
  return (
    <button type="button" className="small" onClick={() => run.mutate()} disabled={run.isPending}>
      {run.isPending ? 'Running…' : 'Run now'}
    </button>
  );
}

export function JobsPage() {
  usePageTitle('Jobs');
  const me = useMe();
  const admin = me.data ? roleAtLeast(me.data.role, 'admin') : false;
  const jobs = useJobs(admin);
  const [result, setResult] = useState<{ message: string | null; error: unknown } | null>(null);

  const columns = useMemo<ColumnDef<JobStatus>[]>(
    () => [
      {
        header: 'Job',
        id: 'job',
        cell: ({ row }) => (row.original.organisationId === null ? <span className="mono">{row.original.job}</span> : <span className="sub">↳ this organisation</span>),
      },
      { header: 'Every', id: 'interval', cell: ({ row }) => (row.original.organisationId === null ? every(row.original.intervalSeconds) : '') },
      {
        header: 'Last run',
        id: 'lastRunAt',
        cell: ({ row }) => (row.original.lastRunAt ? <time dateTime={row.original.lastRunAt} title={dateTime(row.original.lastRunAt)}>{ago(row.original.lastRunAt)}</time> : 'never'),
      },
      { header: 'Duration', id: 'duration', cell: ({ row }) => duration(row.original.durationMs) },
      {
        header: 'Outcome',
        id: 'outcome',
        cell: ({ row }) => {
          const j = row.original;
          const stale = j.lastRunAt && j.organisationId === null && Date.now() - Date.parse(j.lastRunAt) > 3 * j.intervalSeconds * 1000;
          return (
            <span className={`badge outcome-${j.outcome}`}>
              {j.outcome}
              {j.startedAt && (j.outcome === 'running' || j.outcome === 'interrupted') ? ` since ${ago(j.startedAt)}` : ''}
              {stale ? ' · overdue' : ''}
            </span>
          );
        },
      },
      { header: 'Attempts', accessorKey: 'attempts' },
      { header: 'Error', id: 'error', cell: ({ row }) => <span className="error-text">{row.original.error ?? ''}</span> },
      {
        id: 'run',
        header: 'Run',
        cell: ({ row }) =>
          row.original.organisationId === null && runNow[row.original.job] ? (
            <RunNow job={row.original.job} onResult={(_job, message, error) => setResult({ message, error })} />
          ) : null,
      },
    ],
    [],
  );

  if (me.data && !admin) {
    return (
      <>
        <h1>Jobs</h1>
        <p className="empty">Job status is for admins and owners; you are {me.data.role}.</p>
      </>
    );
  }
  const rows = jobs.data?.data ?? [];
  return (
    <>
      <h1>Jobs</h1>
      <p className="hint">A job is overdue when its last run is older than three times its interval. “Run now” runs it for this organisation.</p>
      {result?.message && <p role="status" className="notice">{result.message}</p>}
      <ErrorAlert error={result?.error} />
      <ErrorAlert error={jobs.error} />
      {jobs.isPending && !jobs.error && <p className="loading">Loading…</p>}
      {rows.length > 0 && (
        <DataTable caption="Scheduled jobs" data={rows} columns={columns} rowKey={(j) => `${j.job}:${j.organisationId ?? '*'}`} rowClassName={(j) => (jobHealthy(j) ? undefined : 'unhealthy')} />
      )}
    </>
  );
}
