import { useMutation, useQueryClient } from '@tanstack/react-query';
import type { ColumnDef } from '@tanstack/react-table';
import { CreateDestinationRequest, EventSeverity, UpdateDestinationRequest, defaultDestinationEvents, eventKindInfo, eventKinds, roleAtLeast } from '@surveyor/contract';
import { zodResolver } from '@hookform/resolvers/zod';
import { useId, useMemo, useState } from 'react';
import { type FieldErrors, type Resolver, type UseFormRegisterReturn, useForm } from 'react-hook-form';
import type { z } from 'zod';
import { createDestination, deleteDestination, setDestinationEnabled, settingsKeys, testDestination, updateDestination, useDeliveries, useDestinations } from './api';
import { CopyField } from '../../components/Copy';
import { HostLink } from '../../components/hostLabel';
import { DataTable } from '../../components/DataTable';
import { Dialog } from '../../components/Dialog';
import { useRevealPanel } from '../../components/focus';
import { ErrorAlert } from '../../components/ErrorAlert';
import { Field, errorAt, optionalNumber, optionalText, plainMessages, listOf, setServerIssues, trimmed, useContractForm } from '../../components/form';
import { ago, dateTime } from '../../lib/format';
import { useHostNames, useMe } from '../../lib/queries';
import type { Delivery, Destination, DestinationCreated, DestinationTestResult } from '../../lib/types';
import { usePageTitle } from '../../lib/usePageTitle';


type Kind = Destination['kind'];
type Severity = Destination['minSeverity'];
type CreateDestination = z.output<typeof CreateDestinationRequest>;
const kindLabels: Record<Kind, string> = { webhook: 'Webhook', slack: 'Slack', email: 'Email (SMTP)' };

/** The on-screen label of a schema path, for the summary of field errors. */
function fieldLabel(path: string, kind: Kind): string {
  const key = path.split('.').slice(0, 2).join('.');
  const labels: Record<string, string> = {
    name: 'Name',
    kind: 'Kind',
    events: 'Events',
    minSeverity: 'Minimum severity',
    'config.url': kind === 'slack' ? 'Slack webhook URL' : 'URL',
    'config.secret': 'Signing secret',
    'config.host': 'SMTP host',
    'config.port': 'SMTP port',
    'config.username': 'Username',
    'config.password': 'SMTP password',
    'config.from': 'From',
    'config.to': 'To',
  };
  return labels[key] ?? path;
}

/** Every control of the form, all kinds at once (the fields of the other kinds are left out by the contract's schema). */
interface DestinationForm {
  kind: Kind;
  name: string;
  events: string[];
  minSeverity: Severity;
  config: { url: string; secret?: string | undefined; host: string; port: number; secure: boolean; requireTls: boolean; username?: string | undefined; password?: string | undefined; from: string; to: string[] };
}
const formDefaults: DestinationForm = { kind: 'webhook', name: '', events: [...defaultDestinationEvents], minSeverity: 'info', config: { url: '', host: '', port: 587, secure: false, requireTls: false, from: '', to: [] } };
const destinationFields = ['name', 'kind', 'events', 'minSeverity', 'config.url', 'config.secret', 'config.host', 'config.port', 'config.username', 'config.password', 'config.from', 'config.to'] as const;
/** Optional secrets: absent when empty, kept as typed otherwise (spaces count). */
const optionalSecret = (v: unknown) => (v === '' ? undefined : v);

/** What a destination receives: the minimum severity, and one checkbox per event kind (its meaning on hover). */
function RoutingFields({ severity, events, errors }: { severity: UseFormRegisterReturn; events: UseFormRegisterReturn; errors: FieldErrors }) {
  const id = useId();
  const error = errorAt(errors, 'events');
  return (
    <>
      <Field label="Minimum severity" error={errorAt(errors, 'minSeverity')}>
        {(a) => (
          <select {...a} {...severity}>
            {EventSeverity.options.map((s) => <option key={s} value={s}>{s}</option>)}
          </select>
        )}
      </Field>
      <fieldset className="event-kinds" aria-describedby={error ? `${id}-error` : undefined} aria-invalid={error ? true : undefined}>
        <legend>Events</legend>
        {eventKinds.map((k) => (
          <label key={k} className="check" title={eventKindInfo[k].description}>
            <input type="checkbox" value={k} {...events} />
            <span className="mono">{k}</span>
          </label>
        ))}
        {error && <span id={`${id}-error`} className="field-error">{error}</span>}
      </fieldset>
    </>
  );
}

function CreateDestination({ onCreated }: { onCreated: (d: DestinationCreated) => void }) {
  const client = useQueryClient();
  // The contract's own schema (one branch per kind) as the resolver: checked on submit, then as the user corrects.
  const form = useForm<DestinationForm, unknown, CreateDestination>({
    // The form holds every kind's controls at once, a wider shape than the schema's input union: hence the cast.
    resolver: zodResolver(CreateDestinationRequest, plainMessages) as unknown as Resolver<DestinationForm, unknown, CreateDestination>,
    defaultValues: formDefaults,
  });
  const { register, handleSubmit, formState: { errors } } = form;
  const kind = form.watch('kind');

  const create = useMutation({
    mutationFn: createDestination,
    onSuccess: (d) => {
      onCreated(d);
      for (const f of ['name', 'config.url', 'config.secret', 'config.password'] as const) form.resetField(f);
      void client.invalidateQueries({ queryKey: settingsKeys.destinations });
    },
    onError: (e) => setServerIssues(e, form.setError, destinationFields),
  });

  const found = destinationFields.flatMap((f) => {
    const m = errorAt(errors, f);
    return m ? [[f, m] as const] : [];
  });
  return (
    <section aria-labelledby="create-dest-title">
      <h2 id="create-dest-title">Add a destination</h2>
      <form className="dest-form" onSubmit={handleSubmit((b) => create.mutate(b), () => create.reset())} noValidate>
        <Field label="Name" error={errorAt(errors, 'name')}>
          {(a) => <input {...a} {...register('name')} maxLength={200} placeholder="ops-webhook" />}
        </Field>
        <Field label="Kind" error={errorAt(errors, 'kind')}>
          {(a) => (
            <select {...a} {...register('kind', { onChange: () => form.clearErrors() })}>
              {(Object.keys(kindLabels) as Kind[]).map((k) => <option key={k} value={k}>{kindLabels[k]}</option>)}
            </select>
          )}
        </Field>
        <RoutingFields severity={register('minSeverity')} events={register('events')} errors={errors} />
        {kind !== 'email' && (
          <Field label={kind === 'slack' ? 'Slack webhook URL' : 'URL'} error={errorAt(errors, 'config.url')} hint={kind === 'slack' ? 'Stored encrypted; shown redacted.' : 'http or https; receives a signed JSON POST per event.'}>
            {(a) => <input {...a} type="url" className="wide" {...register('config.url', { setValueAs: trimmed })} placeholder={kind === 'slack' ? 'https://hooks.slack.com/services/…' : 'https://alerts.example.net/surveyor'} />}
          </Field>
        )}
        {kind === 'webhook' && (
          <Field label="Signing secret (optional)" error={errorAt(errors, 'config.secret')} hint="16+ characters; generated and shown once when left empty.">
            {(a) => <input {...a} type="password" autoComplete="new-password" {...register('config.secret', { setValueAs: optionalSecret })} />}
          </Field>
        )}
        {kind === 'email' && (
          <>
            <Field label="SMTP host" error={errorAt(errors, 'config.host')}>
              {(a) => <input {...a} {...register('config.host')} placeholder="smtp.example.net" />}
            </Field>
            <Field label="SMTP port" error={errorAt(errors, 'config.port')}>
              {(a) => <input {...a} type="number" min={1} max={65535} {...register('config.port', { setValueAs: optionalNumber })} className="narrow" />}
            </Field>
            <Field label="Username (optional)" error={errorAt(errors, 'config.username')}>
              {(a) => <input {...a} {...register('config.username', { setValueAs: optionalText })} autoComplete="off" />}
            </Field>
            <Field label="SMTP password (optional)" error={errorAt(errors, 'config.password')}>
              {(a) => <input {...a} type="password" {...register('config.password', { setValueAs: optionalSecret })} autoComplete="new-password" />}
            </Field>
            <Field label="From" error={errorAt(errors, 'config.from')}>
              {(a) => <input {...a} type="email" {...register('config.from', { setValueAs: trimmed })} placeholder="surveyor@example.net" />}
            </Field>
            <Field label="To" error={errorAt(errors, 'config.to')} hint="Addresses separated by commas.">
              {(a) => <input {...a} className="wide" {...register('config.to', { setValueAs: listOf })} placeholder="ops@example.net, oncall@example.net" />}
            </Field>
            <fieldset>
              <legend>TLS</legend>
              <label className="check"><input type="checkbox" {...register('config.secure')} />TLS from the first byte (port 465)</label>
              <label className="check"><input type="checkbox" {...register('config.requireTls')} />Require STARTTLS</label>
            </fieldset>
          </>
        )}
        <div className="form-actions">
          <button type="submit" className="primary" disabled={create.isPending}>Create destination</button>
        </div>
      </form>
      {found.length > 0 && (
        <p role="alert" className="alert">
          {found.length === 1 ? 'One field needs' : `${found.length} fields need`} attention: {found.map(([k, m]) => `${fieldLabel(k, kind)}: ${m}`).join('; ')}
        </p>
      )}
      <ErrorAlert error={create.error} />
    </section>
  );
}

type DestinationEdit = z.input<typeof UpdateDestinationRequest>;
type EventKindName = (typeof eventKinds)[number];

/** Edit a destination's name, event kinds and minimum severity (its connection settings stay as they are). */
function EditDestination({ destination, onDone }: { destination: Destination; onDone: (message?: string) => void }) {
  const client = useQueryClient();
  const { form, mutation, onSubmit } = useContractForm({
    schema: UpdateDestinationRequest,
    defaultValues: { name: destination.name, events: destination.events as EventKindName[], minSeverity: destination.minSeverity } satisfies DestinationEdit,
    submit: (body) => updateDestination(destination.id, body),
    fields: ['name', 'events', 'minSeverity'],
    reset: false,
    onSuccess: (d: Destination) => {
      void client.invalidateQueries({ queryKey: settingsKeys.destinations });
      onDone(`Saved “${d.name}”: it receives ${d.events.join(', ')} at ${d.minSeverity} and above.`);
    },
  });
  const { register, formState: { errors } } = form;
  return (
    <Dialog title={`Edit destination “${destination.name}”`} confirmLabel={mutation.isPending ? 'Saving…' : 'Save destination'} busy={mutation.isPending} onConfirm={() => void onSubmit()} onCancel={() => onDone()}>
      <Field label="Name" error={errorAt(errors, 'name')}>
        {(a) => <input {...a} {...register('name')} maxLength={200} />}
      </Field>
      <RoutingFields severity={register('minSeverity')} events={register('events')} errors={errors} />
      <p className="muted">Sends to {destination.target}. To change where it sends, delete it and add it again.</p>
      <ErrorAlert error={mutation.error} />
    </Dialog>
  );
}

/** What a delivery's event is about: the host (a link, named) and the certificate, finding, daemon, network or job. */
function Concerns({ d, hosts }: { d: Delivery; hosts: Parameters<typeof HostLink>[0]['hosts'] }) {
  const { name, hostId } = d.subject;
  if (!name && !hostId) return <span className="muted">—</span>;
  return (
    <span className="concerns">
      {name && <span className={d.subject.type === 'certificate' ? 'dn' : 'mono'}>{name}</span>}
      {name && hostId && <span className="muted"> · </span>}
      {hostId && <HostLink id={hostId} hosts={hosts} />}
    </span>
  );
}

function testSummary(r: DestinationTestResult): string {
  const code = r.statusCode !== null ? `answered ${r.statusCode}` : 'no answer';
  return r.ok ? `Delivered: ${code} in ${r.durationMs} ms.` : `Failed: ${code}${r.error ? ` (${r.error})` : ''} after ${r.durationMs} ms.`;
}

function Attempts({ d }: { d: Delivery }) {
  if (d.attemptLog.length === 0) return <span className="muted nowrap">none yet</span>;
  return (
    <ol className="attempts">
      {d.attemptLog.map((a) => (
        <li key={a.attempt}>
          <time dateTime={a.at} title={dateTime(a.at)}>{ago(a.at)}</time>{' '}
          <span className={a.error || (a.statusCode !== null && a.statusCode >= 400) ? 'error-text' : 'outcome-ok'}>{a.statusCode ?? '—'}</span>{' '}
          <span className="muted">{a.durationMs} ms</span>
          {a.error && <span className="error-text"> {a.error}</span>}
        </li>
      ))}
    </ol>
  );
}

export function NotificationsPage() {
  usePageTitle('Notifications');
  const me = useMe();
  const admin = me.data ? roleAtLeast(me.data.role, 'admin') : false;
  const client = useQueryClient();
  const [created, setCreated] = useState<DestinationCreated | null>(null);
  const createdPanel = useRevealPanel(() => setCreated(null));
  const [deleting, setDeleting] = useState<Destination | null>(null);
  const [editing, setEditing] = useState<Destination | null>(null);
  // What the last write did, said until the next one.
  const [notice, setNotice] = useState<string | null>(null);
  const [tests, setTests] = useState<Record<string, { result?: DestinationTestResult; error?: unknown }>>({});

  const destinations = useDestinations(admin);
  const deliveries = useDeliveries(admin);

  const toggle = useMutation({
    mutationFn: (d: Destination) => setDestinationEnabled(d.id, !d.enabled),
    onSuccess: (d) => {
      setNotice(d.enabled ? `Enabled “${d.name}”: it receives alerts again.` : `Disabled “${d.name}”: it receives no alerts until enabled.`);
      void client.invalidateQueries({ queryKey: settingsKeys.destinations });
    },
  });
  const remove = useMutation({
    mutationFn: (d: Destination) => deleteDestination(d.id),
    onSuccess: (_, d) => {
      setDeleting(null);
      setNotice(`Deleted “${d.name}” and its queued deliveries.`);
      void client.invalidateQueries({ queryKey: settingsKeys.destinations });
      void client.invalidateQueries({ queryKey: settingsKeys.deliveries });
    },
  });
  const test = useMutation({
    mutationFn: testDestination,
    onMutate: (id) => setTests((t) => ({ ...t, [id]: {} })),
    onSuccess: (result, id) => setTests((t) => ({ ...t, [id]: { result } })),
    onError: (error, id) => setTests((t) => ({ ...t, [id]: { error } })),
  });

  const names = useMemo(() => new Map((destinations.data?.data ?? []).map((d) => [d.id, d.name])), [destinations.data]);
  const hosts = useHostNames((deliveries.data?.data ?? []).flatMap((d) => (d.subject.hostId ? [d.subject.hostId] : [])));

  const destinationColumns = useMemo<ColumnDef<Destination>[]>(
    () => [
      { header: 'Name', accessorKey: 'name', cell: ({ row }) => <strong className="nowrap">{row.original.name}</strong> },
      { header: 'Kind', accessorKey: 'kind', cell: ({ row }) => kindLabels[row.original.kind] },
      { header: 'Target', accessorKey: 'target', cell: ({ row }) => <span className="mono">{row.original.target}</span> },
      { header: 'Events', accessorKey: 'events', cell: ({ row }) => <span className="events">{row.original.events.join(', ')}</span> },
      { header: 'Min severity', accessorKey: 'minSeverity' },
      { header: 'Status', accessorKey: 'enabled', cell: ({ row }) => <span className={`badge ${row.original.enabled ? 'outcome-ok' : 'outcome-never'}`}>{row.original.enabled ? 'enabled' : 'disabled'}</span> },
      {
        id: 'actions',
        header: 'Actions',
        cell: ({ row }) => {
          const d = row.original;
          const t = tests[d.id];
          return (
            <div className="dest-actions">
              <span className="row-actions">
                <button type="button" className="small" onClick={() => test.mutate(d.id)} disabled={t !== undefined && !t.result && !t.error}>Send test</button>
                <button type="button" className="small" onClick={() => { setNotice(null); setEditing(d); }} aria-label={`Edit ${d.name}`}>Edit</button>
                <button type="button" className="small" onClick={() => toggle.mutate(d)} disabled={toggle.isPending}>{d.enabled ? 'Disable' : 'Enable'}</button>
                <button type="button" className="small danger" onClick={() => setDeleting(d)}>Delete</button>
              </span>
              {t && (
                <p role="status" className={`test-result ${t.result?.ok ? 'outcome-ok' : t.result || t.error ? 'error-text' : 'muted'}`}>
                  {t.result ? testSummary(t.result) : t.error ? `Failed: ${t.error instanceof Error ? t.error.message : String(t.error)}` : 'Sending…'}
                </p>
              )}
            </div>
          );
        },
      },
    ],
    [tests, test, toggle],
  );

  const deliveryColumns = useMemo<ColumnDef<Delivery>[]>(
    () => [
      { header: 'Event', accessorKey: 'eventKind', cell: ({ row }) => <span className="mono nowrap">{row.original.eventKind}</span> },
      { id: 'concerns', header: 'Concerns', enableSorting: false, cell: ({ row }) => <Concerns d={row.original} hosts={hosts} /> },
      { header: 'Destination', accessorKey: 'destinationId', enableSorting: false, cell: ({ row }) => <span className="nowrap">{names.get(row.original.destinationId) ?? `${row.original.destinationId.slice(0, 8)}…`}</span> },
      { header: 'State', accessorKey: 'state', cell: ({ row }) => <span className={`badge delivery-${row.original.state}`}>{row.original.state}</span> },
      { header: 'Attempts', accessorKey: 'attempts', cell: ({ row }) => <span className="num">{row.original.attempts}</span> },
      { id: 'log', header: 'Attempt log', cell: ({ row }) => <Attempts d={row.original} /> },
      {
        header: 'Next attempt',
        accessorKey: 'nextAttemptAt',
        cell: ({ row }) => (row.original.nextAttemptAt ? <span className="nowrap" title={dateTime(row.original.nextAttemptAt)}>{dateTime(row.original.nextAttemptAt)}</span> : '—'),
      },
      { header: 'Queued', accessorKey: 'createdAt', cell: ({ row }) => <time className="nowrap" dateTime={row.original.createdAt} title={dateTime(row.original.createdAt)}>{ago(row.original.createdAt)}</time> },
      {
        header: 'Delivered',
        accessorKey: 'deliveredAt',
        cell: ({ row }) => (row.original.deliveredAt ? <time className="nowrap" dateTime={row.original.deliveredAt} title={dateTime(row.original.deliveredAt)}>{ago(row.original.deliveredAt)}</time> : '—'),
      },
    ],
    [names, hosts],
  );

  if (me.data && !admin) {
    return (
      <>
        <h1>Notifications</h1>
        <p className="empty">Notification destinations are managed by admins and owners of the organisation.</p>
      </>
    );
  }

  const rows = destinations.data?.data ?? [];
  const sent = deliveries.data?.data ?? [];
  return (
    <>
      <h1>Notifications</h1>
      {created && (
        <section className="minted" aria-labelledby="dest-created-title" {...createdPanel}>
          <h2 id="dest-created-title">Destination “{created.name}” created</h2>
          {created.signingSecret ? (
            <>
              <p role="status" className="warning">Copy the signing secret now: it is shown only once. Receivers check the <code>X-Signature</code> header (HMAC-SHA256) with it.</p>
              <div className="copy-row">
                <CopyField label="Signing secret" value={created.signingSecret} />
                <button type="button" onClick={() => setCreated(null)}>Done</button>
              </div>
            </>
          ) : (
            <div className="copy-row">
              <p role="status">It receives {created.events.join(', ')} from now on. Use “Send test” to check it.</p>
              <button type="button" onClick={() => setCreated(null)}>Done</button>
            </div>
          )}
        </section>
      )}
      {notice && (
        <p role="status" className="notice">
          {notice} <button type="button" className="small" onClick={() => setNotice(null)}>Dismiss</button>
        </p>
      )}
      <CreateDestination onCreated={(d) => { setNotice(null); setCreated(d); }} />

      <section aria-labelledby="dest-title">
        <h2 id="dest-title">Destinations</h2>
        <ErrorAlert error={destinations.error} />
        <ErrorAlert error={toggle.error} />
        {destinations.isPending && !destinations.error && <p className="loading">Loading…</p>}
        {destinations.data && rows.length === 0 && <p className="empty">No destinations yet: add a webhook, Slack or email destination above to be told of daemons going offline, failed scans and new findings.</p>}
        {rows.length > 0 && <DataTable caption="Notification destinations" data={rows} columns={destinationColumns} rowKey={(d) => d.id} rowClassName={(d) => (d.enabled ? undefined : 'revoked')} />}
      </section>

      <section aria-labelledby="deliveries-title">
        <div className="section-head">
          <h2 id="deliveries-title">Recent deliveries</h2>
          <button type="button" className="small" onClick={() => void deliveries.refetch()} disabled={deliveries.isFetching}>Refresh</button>
        </div>
        <ErrorAlert error={deliveries.error} />
        {deliveries.data && sent.length === 0 && <p className="empty">No deliveries yet: events a destination receives are sent within a minute (job notify.deliver) and listed here. “Send test” is not queued and not listed.</p>}
        {sent.length > 0 && <DataTable caption="Recent deliveries, the newest first" data={sent} columns={deliveryColumns} rowKey={(d) => d.id} rowClassName={(d) => (d.state === 'dead' ? 'unhealthy' : undefined)} />}
      </section>

      {editing && (
        <EditDestination
          destination={editing}
          onDone={(message) => {
            setEditing(null);
            if (message) setNotice(message);
          }}
        />
      )}
      {deleting && (
        <Dialog danger title={`Delete destination “${deleting.name}”?`} confirmLabel="Delete destination" busy={remove.isPending} onConfirm={() => remove.mutate(deleting)} onCancel={() => { setDeleting(null); remove.reset(); }}>
          <p>It stops receiving alerts, and its queued deliveries are removed. This cannot be undone.</p>
          <ErrorAlert error={remove.error} />
        </Dialog>
      )}
    </>
  );
}
