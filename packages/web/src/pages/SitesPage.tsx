import { useMutation, useQueryClient } from '@tanstack/react-query';
import type { ColumnDef } from '@tanstack/react-table';
import { CreateSiteRequest, RenameSiteRequest, roleAtLeast } from '@surveyor/contract';
import { type FormEvent, useId, useMemo, useState } from 'react';
import { api } from '../api';
import { DataTable } from '../components/DataTable';
import { Dialog } from '../components/Dialog';
import { ErrorAlert } from '../components/ErrorAlert';
import { useCheckedFields } from '../components/useCheckedFields';
import { ago, dateTime } from '../format';
import { useMe, usePage } from '../queries';
import type { Site } from '../types';
import { usePageTitle } from './usePageTitle';

type Field = 'code' | 'name';

function AddSite() {
  const client = useQueryClient();
  const [added, setAdded] = useState<Site | null>(null);
  // The contract's own schema, as the server applies it: what it refuses is shown as the user types.
  const form = useCheckedFields({ code: '', name: '' } as Record<Field, string>, (v) => ({ code: v.code.trim(), name: v.name }), CreateSiteRequest, {
    onEdit: () => {
      if (create.error) create.reset();
      setAdded(null);
    },
  });
  const { values, checked, set, props, issue } = form;

  const create = useMutation({
    mutationFn: (b: unknown) => api<Site>('/api/v1/sites', { method: 'POST', body: b }),
    onSuccess: (s) => {
      void client.invalidateQueries({ queryKey: ['sites'] });
      form.reset();
      setAdded(s);
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (checked.success) create.mutate(checked.data);
  };

  return (
    <section aria-labelledby="add-site-title">
      <h2 id="add-site-title">Add site</h2>
      <form onSubmit={submit} className="add-network" noValidate>
        <div className="field">
          <label htmlFor={form.id('code')}>Code</label>
          <input className="mono" value={values.code} onChange={set('code')} maxLength={64} placeholder="fra-1" {...props('code')} />
          {issue('code')}
        </div>
        <div className="field">
          <label htmlFor={form.id('name')}>Name</label>
          <input value={values.name} onChange={set('name')} maxLength={200} placeholder="Frankfurt office" {...props('name')} />
          {issue('name')}
        </div>
        <button type="submit" className="primary" disabled={!checked.success || create.isPending}>{create.isPending ? 'Adding…' : 'Add site'}</button>
      </form>
      <ErrorAlert error={create.error} />
      {added && <p role="status" className="notice">Site {added.name} (<span className="mono">{added.code}</span>) added. Daemons started with <span className="mono">--site {added.code}</span> join it.</p>}
    </section>
  );
}

function RenameSite({ site, onDone }: { site: Site; onDone: () => void }) {
  const client = useQueryClient();
  const [name, setName] = useState(site.name);
  const id = useId();
  const checked = RenameSiteRequest.safeParse({ name });
  const rename = useMutation({
    mutationFn: (b: unknown) => api<Site>(`/api/v1/sites/${site.id}`, { method: 'PATCH', body: b }),
    onSuccess: () => {
      void client.invalidateQueries({ queryKey: ['sites'] });
      onDone();
    },
  });
  const issue = checked.success ? undefined : checked.error.issues[0]?.message;
  return (
    <Dialog title={`Rename site ${site.code}`} confirmLabel="Rename" busy={rename.isPending || !checked.success} onConfirm={() => checked.success && rename.mutate(checked.data)} onCancel={onDone}>
      <div className="field">
        <label htmlFor={id}>Name</label>
        <input id={id} value={name} onChange={(e) => { setName(e.target.value); rename.reset(); }} maxLength={200} autoFocus {...(issue ? { 'aria-invalid': true, 'aria-describedby': `${id}-issue` } : {})} />
        {issue && <span id={`${id}-issue`} className="field-issue error-text">{issue}</span>}
      </div>
      <ErrorAlert error={rename.error} />
    </Dialog>
  );
}

export function SitesPage() {
  usePageTitle('Sites');
  const me = useMe();
  const admin = me.data ? roleAtLeast(me.data.role, 'admin') : false;
  const sites = usePage('sites', { limit: 500 });
  const [renaming, setRenaming] = useState<Site | null>(null);
  const rows = sites.data?.data ?? [];

  const columns = useMemo<ColumnDef<Site>[]>(
    () => [
      { header: 'Code', accessorKey: 'code', cell: ({ row }) => <span className="mono">{row.original.code}</span> },
      { header: 'Name', accessorKey: 'name' },
      { header: 'Created', accessorKey: 'createdAt', cell: ({ row }) => <time dateTime={row.original.createdAt} title={dateTime(row.original.createdAt)}>{ago(row.original.createdAt)}</time> },
      ...(admin
        ? [{ id: 'rename', header: 'Actions', cell: ({ row }) => <button type="button" className="small" onClick={() => setRenaming(row.original)} aria-label={`Rename ${row.original.code}`}>Rename</button> } satisfies ColumnDef<Site>]
        : []),
    ],
    [admin],
  );

  return (
    <>
      <h1>Sites</h1>
      <ErrorAlert error={sites.error} />
      {sites.isPending && !sites.error && <p className="loading">Loading…</p>}
      {sites.data && rows.length === 0 && <p className="empty">No sites yet{admin ? ': add one below, or start a daemon with --site CODE.' : '.'}</p>}
      {rows.length > 0 && <DataTable caption="Sites" data={rows} columns={columns} rowKey={(s) => s.id} />}
      {admin && <AddSite />}
      {renaming && <RenameSite site={renaming} onDone={() => setRenaming(null)} />}
    </>
  );
}
