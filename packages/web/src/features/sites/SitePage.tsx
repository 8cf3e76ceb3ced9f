import { roleAtLeast } from '@surveyor/contract';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import type { ColumnDef } from '@tanstack/react-table';
import { useMemo, useState } from 'react';
import { Link, useNavigate, useParams } from 'react-router';
import { DataTable } from '../../components/DataTable';
import { Dialog } from '../../components/Dialog';
import { ErrorAlert } from '../../components/ErrorAlert';
import { HostList } from '../../components/HostList';
import { ago, dateTime, plural } from '../../lib/format';
import { siteKeys } from '../../lib/keys';
import { collectionPages, useDaemons, useMe } from '../../lib/queries';
import type { DaemonSummary, Network } from '../../lib/types';
import { usePageTitle } from '../../lib/usePageTitle';
import { deleteSite, useSite, useSiteContents } from './api';

const networkColumns: ColumnDef<Network>[] = [
  { header: 'Name', accessorKey: 'name', cell: ({ row }) => <Link to={`/networks/${row.original.id}`}>{row.original.name}</Link> },
  { header: 'CIDR', accessorKey: 'cidr', cell: ({ row }) => <span className="mono">{row.original.cidr}</span> },
  { header: 'Last scan', accessorKey: 'lastScanAt', cell: ({ row }) => (row.original.lastScanAt ? <time dateTime={row.original.lastScanAt} title={dateTime(row.original.lastScanAt)}>{ago(row.original.lastScanAt)}</time> : 'never') },
];

const daemonColumns: ColumnDef<DaemonSummary>[] = [
  { header: 'Name', accessorKey: 'name', cell: ({ row }) => <Link className="nowrap" to={`/daemons/${row.original.id}`}>{row.original.name}</Link> },
  {
    header: 'Status',
    accessorKey: 'status',
    cell: ({ row }) =>
      row.original.disabledAt ? <span className="badge daemon-disabled">disabled</span> : row.original.silent ? <span className="badge daemon-silent">silent</span> : <span className={`badge daemon-${row.original.status}`}>{row.original.status}</span>,
  },
  { header: 'Version', accessorKey: 'version', cell: ({ row }) => <span className="mono">{row.original.version || '—'}</span> },
  { header: 'Last heartbeat', accessorKey: 'lastHeartbeatAt', cell: ({ row }) => (row.original.lastHeartbeatAt ? <time dateTime={row.original.lastHeartbeatAt} title={dateTime(row.original.lastHeartbeatAt)}>{ago(row.original.lastHeartbeatAt)}</time> : 'never') },
];

/** "Delete site", confirmed; a site still holding hosts, networks, daemons or snapshots is refused by the API, whose detail says what it holds. */
function DeleteSite({ id, code, onCancel }: { id: string; code: string; onCancel: () => void }) {
  const client = useQueryClient();
  const navigate = useNavigate();
  const remove = useMutation({
    mutationFn: () => deleteSite(id),
    onSuccess: () => {
      void client.invalidateQueries({ queryKey: siteKeys.all });
      void navigate('/sites', { state: { deleted: code } });
    },
  });
  return (
    <Dialog title={`Delete site ${code}?`} danger confirmLabel={remove.isPending ? 'Deleting…' : 'Delete site'} cancelLabel={remove.error ? 'Close' : 'Keep it'} busy={remove.isPending} onConfirm={() => remove.mutate()} onCancel={onCancel}>
      <p>Only an empty site can be deleted: one with no host, network or daemon. Its topology views go with it; snapshots taken of it stay, naming no site.</p>
      <ErrorAlert error={remove.error} />
    </Dialog>
  );
}

/** A site: its networks, hosts, daemons and topology views, each linked; admins delete it when empty. */
export function SitePage() {
  const { id = '' } = useParams();
  const me = useMe();
  const admin = me.data ? roleAtLeast(me.data.role, 'admin') : false;
  const { site, pending, error } = useSite(id);
  const { networks, hosts, views } = useSiteContents(id);
  const daemonList = useDaemons();
  const daemons = useMemo(() => (daemonList.data?.data ?? []).filter((d) => d.siteId === id), [daemonList.data, id]);
  const hostRows = useMemo(() => hosts.data?.pages.flatMap((p) => p.data) ?? [], [hosts.data]);
  const networkRows = networks.data?.data ?? [];
  const viewRows = views.data?.data ?? [];
  const [deleting, setDeleting] = useState(false);
  usePageTitle(site ? `Site ${site.name}` : 'Site');

  const hostCount = hosts.hasNextPage ? `${hostRows.length}+` : String(hostRows.length);
  return (
    <>
      <p className="crumbs"><Link to="/sites">Sites</Link> /</p>
      <h1>{site ? site.name : 'Site'}</h1>
      <ErrorAlert error={error} />
      {pending && !error && <p className="loading">Loading…</p>}
      {!pending && !site && !error && <p className="empty">No site {id} in this organisation.</p>}
      {site && (
        <>
          <dl className="fields">
            <dt>Code</dt>
            <dd className="mono">{site.code}</dd>
            <dt>Holds</dt>
            <dd>{hostCount} hosts, {plural(networkRows.length, 'network')}, {plural(daemons.length, 'daemon')}</dd>
            <dt>Created</dt>
            <dd><time dateTime={site.createdAt} title={dateTime(site.createdAt)}>{ago(site.createdAt)}</time></dd>
          </dl>
          {admin && <p className="page-actions"><button type="button" className="small danger" onClick={() => setDeleting(true)}>Delete site</button></p>}
          {deleting && <DeleteSite id={site.id} code={site.code} onCancel={() => setDeleting(false)} />}

          <section aria-labelledby="site-networks">
            <h2 id="site-networks">Networks</h2>
            <ErrorAlert error={networks.error} />
            {networks.data && networkRows.length === 0 && <p className="empty">No network in this site. Add one under <Link to="/networks">Networks</Link> and choose the site.</p>}
            {networkRows.length > 0 && <DataTable caption={`Networks of ${site.name}`} data={networkRows} columns={networkColumns} rowKey={(n) => n.id} />}
          </section>

          <section aria-labelledby="site-daemons">
            <h2 id="site-daemons">Daemons</h2>
            <ErrorAlert error={daemonList.error} />
            {daemonList.data && daemons.length === 0 && <p className="empty">No daemon in this site. Start one with <span className="mono">--site {site.code}</span>, or assign one under <Link to="/daemons">Daemons</Link>.</p>}
            {daemons.length > 0 && <DataTable caption={`Daemons of ${site.name}`} data={daemons} columns={daemonColumns} rowKey={(d) => d.id} />}
          </section>

          <section aria-labelledby="site-views">
            <h2 id="site-views">Topology views</h2>
            <ErrorAlert error={views.error} />
            {views.data && viewRows.length === 0 && <p className="empty">No topology view of this site yet; an admin builds them under <Link to="/topology">Topology</Link>.</p>}
            {viewRows.length > 0 && (
              <ul className="section-links">
                {viewRows.map((v) => (
                  <li key={v.id}><Link to={`/topology?view=${v.id}`}>{v.name}</Link> <span className="muted">({v.kind}, {v.status}, {plural(v.nodeCount, 'node')})</span></li>
                ))}
              </ul>
            )}
          </section>

          <section aria-labelledby="site-hosts">
            <h2 id="site-hosts">Hosts</h2>
            <HostList caption={`Hosts of ${site.name}`} hosts={hosts} exportRows={(signal) => collectionPages('hosts', { siteId: site.id }, signal)} empty="No host in this site yet: its daemons' scans put them here." />
          </section>
        </>
      )}
    </>
  );
}
