import { useMutation, useQueryClient } from '@tanstack/react-query';
import type { ColumnDef } from '@tanstack/react-table';
import { EnrolDaemonRequest, roleAtLeast } from '@surveyor/contract';
import { useEffect, useMemo, useState } from 'react';
import { Link, useLocation } from 'react-router';
import { daemonKeys } from '../../lib/keys';
import { enrolDaemon, setDaemonSite } from './api';
import { CopyButton, CopyField } from '../../components/Copy';
import { DataTable } from '../../components/DataTable';
import { Dialog } from '../../components/Dialog';
import { useRevealPanel } from '../../components/focus';
import { ErrorAlert } from '../../components/ErrorAlert';
import { Field, errorAt, optionalText, useContractForm } from '../../components/form';
import { ago, dateTime, seconds } from '../../lib/format';
import { useDaemons, useMe, useSiteNames, useSites } from '../../lib/queries';
import type { DaemonList, DaemonSummary, EnrolDaemonResponse, Site } from '../../lib/types';
import { usePageTitle } from '../../lib/usePageTitle';

/** The daemon.offline threshold: an online daemon quiet for longer is silent (the server says so in `silent`). */
export const QUIET_LIMIT_SECONDS = 300;
export const CAPABILITIES = ['nmap', 'netflow', 'ebpf'] as const;

/** Quiet time to the second under an hour (it counts on while the page is open), as `seconds` beyond. */
export const quietText = (s: number) => (s >= 60 && s < 3600 ? `${Math.floor(s / 60)} min ${s % 60} s` : seconds(s));

/** A daemon with its quiet time counted on to this second (the list was read `sinceFetch` seconds ago). */
export type Shown = DaemonSummary & { quietNow: number };
export const quietTooLong = (d: Shown) => d.disabledAt === null && (d.silent || (d.status === 'online' && d.quietNow > QUIET_LIMIT_SECONDS));

/** Status as a word and a colour: disabled, silent (online but quiet too long), or the reported status, with the degraded reason. */
export function DaemonStatus({ daemon: d }: { daemon: Shown }) {
  return (
    <>
      {d.disabledAt ? (
        <span className="badge daemon-disabled" title={`disabled ${dateTime(d.disabledAt)}: takes no scan; reports ${d.status}`}>disabled</span>
      ) : quietTooLong(d) ? (
        <span className="badge daemon-silent" title="online, but no heartbeat for more than 5 minutes: daemon.offline was sent">silent</span>
      ) : (
        <span className={`badge daemon-${d.status}`}>{d.status}</span>
      )}
      {d.reason && <div className="daemon-reason">{d.reason}</div>}
    </>
  );
}

/** A daemon's site: a select for admins (the change is shown at once), the site's name for others. */
export function SiteCell({ daemon, sites, admin }: { daemon: DaemonSummary; sites: Map<string, Site>; admin: boolean }) {
  const client = useQueryClient();
  const assign = useMutation({
    mutationFn: (siteId: string | null) => setDaemonSite(daemon.id, siteId),
    onSuccess: (d) => {
      client.setQueryData<DaemonList>(['daemons'], (list) => list && { data: list.data.map((x) => (x.id === d.id ? d : x)) });
      void client.invalidateQueries({ queryKey: daemonKeys.all });
    },
  });
  const site = daemon.siteId ? sites.get(daemon.siteId) : undefined;
  if (!admin) return <span>{site ? site.name : daemon.siteId ? '…' : '—'}</span>;
  return (
    <span className="nowrap">
      <select className="site-select" aria-label={`Site of ${daemon.name}`} value={daemon.siteId ?? ''} disabled={assign.isPending} onChange={(e) => assign.mutate(e.target.value || null)}>
        <option value="">No site</option>
        {daemon.siteId && !site && <option value={daemon.siteId}>…</option>}
        {[...sites.values()].map((s) => <option key={s.id} value={s.id}>{s.name} ({s.code})</option>)}
      </select>
      {assign.error && <span role="alert" className="field-issue error-text">{assign.error.message}</span>}
    </span>
  );
}

function Enrolled({ enrolled, onClose }: { enrolled: EnrolDaemonResponse; onClose: () => void }) {
  return (
    <section className="minted" aria-labelledby="enrolled-title" {...useRevealPanel(onClose)}>
      <h2 id="enrolled-title">Daemon key minted</h2>
      <p role="status" className="warning">Copy the token now: it is shown only once and cannot be read again.</p>
      <div className="copy-row">
        <CopyField label="Token" value={enrolled.token} copyLabel="Copy token" />
      </div>
      <p>Run this on the daemon host; the daemon registers itself and appears below:</p>
      <pre className="command mono" aria-label="Command line">{enrolled.command}</pre>
      <div className="copy-row">
        <CopyButton text={enrolled.command} label="Copy command" />
        <button type="button" onClick={onClose}>Done</button>
      </div>
    </section>
  );
}

function EnrolDialog({ sites, onDone, onCancel }: { sites: Map<string, Site>; onDone: (e: EnrolDaemonResponse) => void; onCancel: () => void }) {
  // The contract's own schema as the resolver; both fields are optional (empty: left out).
  const { form, mutation: enrol, onSubmit } = useContractForm({ schema: EnrolDaemonRequest, mode: 'onChange', defaultValues: {}, submit: enrolDaemon, fields: ['name', 'siteId'], onSuccess: onDone });
  const { register, formState: { errors, isValid } } = form;
  return (
    <Dialog title="Enrol a daemon" confirmLabel={enrol.isPending ? 'Minting…' : 'Mint key'} busy={enrol.isPending || !isValid} onConfirm={() => void onSubmit()} onCancel={onCancel}>
      <p>Mints a daemon key and the command line that starts a daemon with it.</p>
      <Field label="Key name (optional)" error={errorAt(errors, 'name')}>
        {(a) => <input {...a} {...register('name', { setValueAs: optionalText })} maxLength={200} placeholder="daemon key" />}
      </Field>
      <Field label="Site (optional)" error={errorAt(errors, 'siteId')}>
        {(a) => (
          <select {...a} {...register('siteId', { setValueAs: optionalText })}>
            <option value="">No site</option>
            {[...sites.values()].map((s) => <option key={s.id} value={s.id}>{s.name} ({s.code})</option>)}
          </select>
        )}
      </Field>
      <ErrorAlert error={enrol.error} />
    </Dialog>
  );
}

function daemonColumns(sites: Map<string, Site>, admin: boolean): ColumnDef<Shown>[] {
  return [
    { header: 'Name', accessorKey: 'name', cell: ({ row }) => <Link className="daemon-name" to={`/daemons/${row.original.id}`}><strong>{row.original.name}</strong></Link> },
    { header: 'Status', accessorKey: 'status', cell: ({ row }) => <DaemonStatus daemon={row.original} /> },
    {
      header: 'Quiet for',
      accessorKey: 'quietNow',
      cell: ({ row }) => {
        const d = row.original;
        const title = d.lastHeartbeatAt ? `last heartbeat ${dateTime(d.lastHeartbeatAt)} (every ${d.heartbeatIntervalSeconds} s)` : 'no heartbeat yet: quiet since registration';
        return <span className={`nowrap ${quietTooLong(d) ? 'error-text' : ''}`} title={title}>{quietText(d.quietNow)}{quietTooLong(d) && <span className="sr-only"> (too long)</span>}</span>;
      },
    },
    {
      header: 'Version',
      accessorKey: 'version',
      cell: ({ row }) => (
        <>
          <span className="mono">{row.original.version || '—'}</span>
          <br />
          <span className="muted nowrap">{[row.original.os, row.original.arch].filter(Boolean).join('/') || '—'}</span>
        </>
      ),
    },
    {
      id: 'capabilities',
      header: 'Capabilities',
      cell: ({ row }) => (
        <span className="chips">
          {CAPABILITIES.map((c) => {
            const on = row.original.capabilities[c] === true;
            return (
              <span key={c} className={`chip ${on ? 'on' : 'off'}`} title={on ? `${c}: available` : `${c}: not available`}>
                {c}{!on && <span className="sr-only"> (not available)</span>}
              </span>
            );
          })}
        </span>
      ),
    },
    { header: 'Site', accessorKey: 'siteId', enableSorting: false, cell: ({ row }) => <SiteCell daemon={row.original} sites={sites} admin={admin} /> },
    { header: 'Networks', accessorKey: 'networkCidrs', cell: ({ row }) => <span className="mono">{row.original.networkCidrs.join(', ') || '—'}</span> },
    { header: 'Dropped', accessorKey: 'flowsDropped', cell: ({ row }) => <span className={`num ${row.original.flowsDropped > 0 ? 'error-text' : ''}`}>{row.original.flowsDropped}</span> },
    { header: 'Restarts', accessorKey: 'restartCount', cell: ({ row }) => <span className="num">{row.original.restartCount}</span> },
    {
      header: 'Registered',
      accessorKey: 'registeredAt',
      cell: ({ row }) => <time dateTime={row.original.registeredAt} title={dateTime(row.original.registeredAt)}>{ago(row.original.registeredAt)}</time>,
    },
  ];
}

export function DaemonsPage() {
  usePageTitle('Daemons');
  const me = useMe();
  const admin = me.data ? roleAtLeast(me.data.role, 'admin') : false;
  const daemons = useDaemons();
  const sites = useSites();
  const [enrolling, setEnrolling] = useState(false);
  const [enrolled, setEnrolled] = useState<EnrolDaemonResponse | null>(null);
  // The API lists the quietest first; kept so whatever the order it sends.
  // "Quiet for" keeps counting between reads of the list.
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(t);
  }, []);
  const sinceFetch = Math.max(0, Math.floor((now - daemons.dataUpdatedAt) / 1000));
  const rows = useMemo<Shown[]>(
    () => [...(daemons.data?.data ?? [])].map((d) => ({ ...d, quietNow: d.quietSeconds + sinceFetch })).sort((a, b) => b.quietNow - a.quietNow),
    [daemons.data, sinceFetch],
  );
  // The picker's sites (the first 500) and the sites of the daemons shown, looked up by id.
  const siteNames = useSiteNames(rows.map((d) => d.siteId));
  const known = useMemo(() => new Map([...sites, ...siteNames]), [sites, siteNames]);
  const columns = useMemo(() => daemonColumns(known, admin), [known, admin]);
  const quiet = rows.filter(quietTooLong).length;
  // A daemon removed on its page comes back here saying so.
  const removed = (useLocation().state as { removed?: string } | null)?.removed;

  return (
    <>
      <h1>Daemons</h1>
      {removed && <p role="status" className="notice">Daemon {removed} removed: its key is revoked, its past sessions keep their history.</p>}
      {admin && !enrolled && <p><button type="button" className="primary" onClick={() => setEnrolling(true)}>Enrol a daemon</button></p>}
      {enrolled && <Enrolled enrolled={enrolled} onClose={() => setEnrolled(null)} />}
      {enrolling && <EnrolDialog sites={sites} onCancel={() => setEnrolling(false)} onDone={(e) => { setEnrolling(false); setEnrolled(e); }} />}
      <ErrorAlert error={daemons.error} />
      {daemons.isPending && !daemons.error && <p className="loading">Loading…</p>}
      {daemons.data && rows.length === 0 && (
        <div className="empty">
          <p>No daemons yet. To enrol one:</p>
          <ol>
            <li>{admin ? <>Choose “Enrol a daemon” above (or run </> : <>Ask an admin to enrol one, or run </>}<code>surveyor admin create-daemon-key --org &lt;org&gt;</code>{admin ? ')' : ''}.</li>
            <li>Start the daemon inside the network with that key; it registers itself and appears here.</li>
          </ol>
        </div>
      )}
      {quiet > 0 && <p className="warning">{quiet === 1 ? 'One online daemon has' : `${quiet} online daemons have`} sent no heartbeat for more than {QUIET_LIMIT_SECONDS / 60} minutes.</p>}
      {rows.length > 0 && (
        <DataTable caption="Daemons, the quietest first" data={rows} columns={columns} rowKey={(d) => d.id} rowClassName={(d) => (quietTooLong(d) ? 'unhealthy' : undefined)} />
      )}
      {admin && rows.length > 0 && <p className="muted">A site assigned here wins over the daemon's own <span className="mono">--site</span>: restarting it with another site does not move it. “No site” clears the assignment.</p>}
    </>
  );
}
