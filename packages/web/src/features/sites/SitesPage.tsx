import { useMutation, useQueryClient } from '@tanstack/react-query';
import type { ColumnDef } from '@tanstack/react-table';
import { CreateSiteRequest, RenameSiteRequest, roleAtLeast } from '@surveyor/contract';
import { zodResolver } from '@hookform/resolvers/zod';
import { useMemo, useState } from 'react';
import { Link, useLocation } from 'react-router';
import { useForm } from 'react-hook-form';
import { siteKeys } from '../../lib/keys';
import { createSite, renameSite } from './api';
import { DataTable } from '../../components/DataTable';
import { Dialog } from '../../components/Dialog';
import { ErrorAlert } from '../../components/ErrorAlert';
import { Field, errorAt, plainMessages, setServerIssues, trimmed, useContractForm } from '../../components/form';
import { ago, dateTime } from '../../lib/format';
import { useMe, usePage } from '../../lib/queries';
import type { Site } from '../../lib/types';
import { usePageTitle } from '../../lib/usePageTitle';

const siteFields = ['code', 'name'] as const;

function AddSite() {
  const client = useQueryClient();
  // The contract's own schema, checked as the user types (the server applies the same).
  const { form, mutation: create, onSubmit, done: added, edited: onChange, shown } = useContractForm({
    schema: CreateSiteRequest,
    mode: 'onChange',
    defaultValues: { code: '', name: '' },
    submit: createSite,
    fields: siteFields,
    onSuccess: () => void client.invalidateQueries({ queryKey: siteKeys.all }),
  });
  const { register, formState: { isValid } } = form;

  return (
    <section aria-labelledby="add-site-title">
      <h2 id="add-site-title">Add site</h2>
      <form onSubmit={onSubmit} className="add-network" noValidate>
        <Field label="Code" error={shown('code')}>
          {(a) => <input {...a} className="mono" {...register('code', { onChange, setValueAs: trimmed })} maxLength={64} placeholder="fra-1" />}
        </Field>
        <Field label="Name" error={shown('name')}>
          {(a) => <input {...a} {...register('name', { onChange })} maxLength={200} placeholder="Frankfurt office" />}
        </Field>
        <button type="submit" className="primary" disabled={!isValid || create.isPending}>{create.isPending ? 'Adding…' : 'Add site'}</button>
      </form>
      <ErrorAlert error={create.error} />
      {added && <p role="status" className="notice">Site {added.name} (<span className="mono">{added.code}</span>) added. Daemons started with <span className="mono">--site {added.code}</span> join it.</p>}
    </section>
  );
}

function RenameSite({ site, onDone }: { site: Site; onDone: () => void }) {
  const client = useQueryClient();
  const form = useForm({ resolver: zodResolver(RenameSiteRequest, plainMessages), mode: 'onChange', defaultValues: { name: site.name } });
  const { register, handleSubmit, formState: { errors, isValid } } = form;
  const rename = useMutation({
    mutationFn: (b: Parameters<typeof renameSite>[1]) => renameSite(site.id, b),
    onSuccess: () => {
      void client.invalidateQueries({ queryKey: siteKeys.all });
      onDone();
    },
    onError: (e) => setServerIssues(e, form.setError, ['name']),
  });
  return (
    <Dialog title={`Rename site ${site.code}`} confirmLabel="Rename" busy={rename.isPending || !isValid} onConfirm={() => void handleSubmit((b) => rename.mutate(b))()} onCancel={onDone}>
      <Field label="Name" error={errorAt(errors, 'name')}>
        {(a) => <input {...a} {...register('name', { onChange: () => rename.reset() })} maxLength={200} autoFocus />}
      </Field>
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
  // A site deleted on its page comes back here saying so.
  const deleted = (useLocation().state as { deleted?: string } | null)?.deleted;

  const columns = useMemo<ColumnDef<Site>[]>(
    () => [
      { header: 'Code', accessorKey: 'code', cell: ({ row }) => <Link className="mono" to={`/sites/${row.original.id}`}>{row.original.code}</Link> },
      { header: 'Name', accessorKey: 'name', cell: ({ row }) => <Link to={`/sites/${row.original.id}`}>{row.original.name}</Link> },
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
      {deleted && <p role="status" className="notice">Site <span className="mono">{deleted}</span> deleted.</p>}
      <ErrorAlert error={sites.error} />
      {sites.isPending && !sites.error && <p className="loading">Loading…</p>}
      {sites.data && rows.length === 0 && <p className="empty">No sites yet{admin ? ': add one below, or start a daemon with --site CODE.' : '.'}</p>}
      {rows.length > 0 && <DataTable caption="Sites" data={rows} columns={columns} rowKey={(s) => s.id} />}
      {admin && <AddSite />}
      {renaming && <RenameSite site={renaming} onDone={() => setRenaming(null)} />}
    </>
  );
}
