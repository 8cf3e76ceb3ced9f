import { zodResolver } from '@hookform/resolvers/zod';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import type { ColumnDef } from '@tanstack/react-table';
import { AwsCredentials, CreateCloudAccountRequest, KubernetesCredentials } from '@surveyor/contract';
import { type ChangeEvent, useEffect, useMemo, useState } from 'react';
import { type Resolver, useForm } from 'react-hook-form';
import { z } from 'zod';
import { cloudKeys, createCloudAccount, deleteCloudAccount, setCloudAccountEnabled, syncCloudAccount, testCloudAccount, updateCloudAccount, useCloudAccounts } from './api';
import { DataTable } from '../../components/DataTable';
import { Dialog } from '../../components/Dialog';
import { ErrorAlert } from '../../components/ErrorAlert';
import { Field, errorAt, listOf, plainMessages, setServerIssues } from '../../components/form';
import { RoleGate } from '../../components/RoleGate';
import { ApiError } from '../../lib/api';
import { ago, dateTime, duration, plural } from '../../lib/format';
import { useSiteNames, useSites } from '../../lib/queries';
import type { CloudAccount, CloudSyncResult, CloudTestResult, Site } from '../../lib/types';

// Settings → Cloud accounts (issue 25): the AWS accounts and Kubernetes clusters whose inventory the
// server reads, with read-only credentials that go in and never come back (the list shows a hint of
// them and what they reached). Each account can be tested, synced now, edited, disabled and deleted.

type Kind = CloudAccount['kind'];
const kindLabels: Record<Kind, string> = { aws: 'AWS', kubernetes: 'Kubernetes' };
const addLabels: Record<Kind, string> = { aws: 'Add AWS account', kubernetes: 'Add Kubernetes cluster' };

/** What each kind may read, said where an account is added and when there is none yet. */
const AWS_ACCESS = (
  <>
    An IAM user&apos;s access key, or a role the key may assume, allowed <code>ec2:DescribeInstances</code>, <code>ec2:DescribeNetworkInterfaces</code>, <code>ec2:DescribeVpcs</code>, <code>ec2:DescribeSubnets</code>, <code>ec2:DescribeSecurityGroups</code> and{' '}
    <code>ec2:DescribeRegions</code> (read-only), and <code>sts:AssumeRole</code> on the role when one is used.
  </>
);
const K8S_ACCESS = (
  <>
    A kubeconfig whose user may <code>get</code>, <code>list</code> and <code>watch</code> nodes, pods and services, and ingresses (<code>networking.k8s.io</code>).
  </>
);

/** Every control of the form, both kinds at once (only the chosen kind's are shown and sent). */
interface AccountForm {
  name: string;
  siteId: string;
  enabled: boolean;
  settings: { regions: string; roleArn: string; externalId: string; endpoint: string; context: string };
  credentials: { accessKeyId: string; secretAccessKey: string; sessionToken: string; kubeconfig: string };
}
const formFields = [
  'name',
  'siteId',
  'settings.regions',
  'settings.roleArn',
  'settings.externalId',
  'settings.endpoint',
  'settings.context',
  'credentials.accessKeyId',
  'credentials.secretAccessKey',
  'credentials.sessionToken',
  'credentials.kubeconfig',
] as const;

const text = (v: unknown): string | undefined => (typeof v === 'string' && v.trim() !== '' ? v.trim() : undefined);

/**
 * The request the form's controls make: empty optional fields left out, regions split on commas
 * and spaces; editing, credentials left all empty are left out (the stored ones are kept).
 */
function toBody(kind: Kind, editing: boolean, f: AccountForm) {
  const settings =
    kind === 'aws'
      ? { regions: listOf(f.settings.regions ?? '') as string[], roleArn: text(f.settings.roleArn), externalId: text(f.settings.externalId), endpoint: text(f.settings.endpoint) }
      : { context: text(f.settings.context) };
  const credentials =
    kind === 'aws'
      ? { accessKeyId: text(f.credentials.accessKeyId), secretAccessKey: text(f.credentials.secretAccessKey), sessionToken: text(f.credentials.sessionToken) }
      : { kubeconfig: text(f.credentials.kubeconfig) === undefined ? undefined : f.credentials.kubeconfig };
  const kept = editing && Object.values(credentials).every((v) => v === undefined);
  return { ...(editing ? {} : { kind }), name: f.name, siteId: f.siteId || null, enabled: f.enabled, settings, ...(kept ? {} : { credentials }) };
}

// The contract's own schemas as the resolver: one branch of the create request per kind; an edit is
// that branch without its kind, credentials optional (UpdateCloudAccountRequest takes the same body).
const [awsCreate, k8sCreate] = CreateCloudAccountRequest.options;
// The console asks for a kubeconfig (an in-cluster account, where a deployment allows it, is made through the API).
const createSchemas = { aws: awsCreate, kubernetes: k8sCreate.extend({ credentials: KubernetesCredentials }) };
const editSchemas = {
  aws: awsCreate.omit({ kind: true }).extend({ credentials: AwsCredentials.optional() }),
  kubernetes: k8sCreate.omit({ kind: true }).extend({ credentials: KubernetesCredentials.optional() }),
};
type CreateBody = z.output<typeof CreateCloudAccountRequest>;
type EditBody = z.output<(typeof editSchemas)[Kind]>;

function defaultsOf(account: CloudAccount | null): AccountForm {
  const s = (account?.settings ?? {}) as { regions?: string[]; roleArn?: string; externalId?: string; endpoint?: string; context?: string };
  return {
    name: account?.name ?? '',
    siteId: account?.siteId ?? '',
    enabled: account?.enabled ?? true,
    settings: { regions: (s.regions ?? []).join(', '), roleArn: s.roleArn ?? '', externalId: s.externalId ?? '', endpoint: s.endpoint ?? '', context: s.context ?? '' },
    credentials: { accessKeyId: '', secretAccessKey: '', sessionToken: '', kubeconfig: '' },
  };
}

/** Add an account of a kind, or edit one (`account`): the same form, credentials empty meaning "keep the stored ones". */
function AccountDialog({ kind, account, sites, onDone }: { kind: Kind; account: CloudAccount | null; sites: Map<string, Site>; onDone: (message?: string) => void }) {
  const client = useQueryClient();
  const editing = account !== null;
  const form = useForm<AccountForm, unknown, CreateBody | EditBody>({
    // The form's flat controls become the request in toBody; the schema then checks that request, paths unchanged.
    resolver: zodResolver(z.preprocess((f) => toBody(kind, editing, f as AccountForm), editing ? editSchemas[kind] : createSchemas[kind]) as never, plainMessages) as unknown as Resolver<AccountForm, unknown, CreateBody | EditBody>,
    defaultValues: defaultsOf(account),
  });
  const { register, formState: { errors } } = form;
  const save = useMutation({
    mutationFn: (body: CreateBody | EditBody) => (account ? updateCloudAccount(account.id, body as EditBody) : createCloudAccount(body as CreateBody)),
    onSuccess: (a, body) => {
      void client.invalidateQueries({ queryKey: cloudKeys.accounts });
      if (!account) onDone(`Added “${a.name}”. Test its connection, then sync it now or let its job do it (${kind === 'aws' ? 'every 15 minutes' : 'every 5 minutes'}${a.enabled ? '' : ', once enabled'}).`);
      else onDone(`Saved “${a.name}”: ${'credentials' in body && body.credentials ? 'its new credentials replace the stored ones; test the connection again.' : 'its stored credentials were kept.'}`);
    },
    onError: (e) => {
      if (setServerIssues(e, form.setError, formFields)) return;
      if (e instanceof ApiError && e.code === 'duplicate') form.setError('name', { type: 'server', message: 'another account has this name' }, { shouldFocus: true });
    },
  });
  const endpointError = errorAt(errors, 'settings.endpoint');
  const [advanced, setAdvanced] = useState(Boolean(account && (account.settings as { endpoint?: string }).endpoint));
  const keep = editing ? 'Leave empty to keep the stored one.' : undefined;

  const readFile = async (e: ChangeEvent<HTMLInputElement>) => {
    const file = e.target.files?.[0];
    if (!file) return;
    form.setValue('credentials.kubeconfig', await file.text(), { shouldDirty: true, shouldValidate: form.formState.isSubmitted });
  };

  const title = account ? `Edit ${kindLabels[kind] === 'AWS' ? 'AWS account' : 'Kubernetes cluster'} “${account.name}”` : addLabels[kind];
  return (
    <Dialog title={title} confirmLabel={save.isPending ? 'Saving…' : account ? 'Save account' : 'Add account'} busy={save.isPending} onConfirm={() => void form.handleSubmit((b) => save.mutate(b))()} onCancel={() => onDone()}>
      <p className="hint cloud-access">Needs read-only access: {kind === 'aws' ? AWS_ACCESS : K8S_ACCESS}</p>
      <div className="cloud-form">
        <Field label="Name" error={errorAt(errors, 'name')}>
          {(a) => <input {...a} {...register('name')} maxLength={200} placeholder={kind === 'aws' ? 'production' : 'prod-cluster'} />}
        </Field>
        <Field label="Site" error={errorAt(errors, 'siteId')} hint="A host a daemon of this site sees at the same address is the same host.">
          {(a) => (
            <select {...a} {...register('siteId')}>
              <option value="">No site</option>
              {[...sites.values()].map((s) => <option key={s.id} value={s.id}>{s.name} ({s.code})</option>)}
            </select>
          )}
        </Field>
        {kind === 'aws' ? (
          <>
            <Field label="Regions" error={errorAt(errors, 'settings.regions')} hint="Separated by commas or spaces; empty: every region enabled for the account.">
              {(a) => <input {...a} className="wide" {...register('settings.regions')} placeholder="eu-west-1, us-east-1" autoComplete="off" />}
            </Field>
            <Field label="Role ARN (optional)" error={errorAt(errors, 'settings.roleArn')} hint="A role the access key assumes (sts:AssumeRole); the sync then reads as the role.">
              {(a) => <input {...a} className="wide" {...register('settings.roleArn')} placeholder="arn:aws:iam::123456789012:role/surveyor-read" autoComplete="off" />}
            </Field>
            <Field label="External id (optional)" error={errorAt(errors, 'settings.externalId')} hint="When the role's trust policy requires one.">
              {(a) => <input {...a} {...register('settings.externalId')} autoComplete="off" />}
            </Field>
            <details className="advanced" open={advanced || !!endpointError} onToggle={(e) => setAdvanced(e.currentTarget.open)}>
              <summary>Advanced</summary>
              <Field label="Endpoint (optional)" error={endpointError} hint="An EC2 and STS endpoint instead of AWS's public ones (a VPC endpoint, a compatible service).">
                {(a) => <input {...a} type="url" className="wide" {...register('settings.endpoint')} placeholder="https://ec2.eu-west-1.amazonaws.com" autoComplete="off" />}
              </Field>
            </details>
            <fieldset className="credentials">
              <legend>Credentials</legend>
              {account && <p className="hint">Stored: {account.credentialHint}. Leave these empty to keep the stored credentials; fill in the access key id and secret to replace them.</p>}
              <Field label="Access key id" error={errorAt(errors, 'credentials.accessKeyId')} {...(keep ? { hint: keep } : {})}>
                {(a) => <input {...a} className="wide mono" {...register('credentials.accessKeyId')} placeholder={editing ? 'unchanged' : 'AKIAIOSFODNN7EXAMPLE'} autoComplete="off" spellCheck={false} />}
              </Field>
              <Field label="Secret access key" error={errorAt(errors, 'credentials.secretAccessKey')} hint={editing ? 'Leave empty to keep the stored one; never shown after saving.' : 'Stored encrypted; never shown after saving.'}>
                {(a) => <input {...a} type="password" className="wide" {...register('credentials.secretAccessKey')} placeholder={editing ? 'unchanged' : undefined} autoComplete="new-password" spellCheck={false} />}
              </Field>
              <Field label="Session token (optional)" error={errorAt(errors, 'credentials.sessionToken')} hint="Only for temporary credentials.">
                {(a) => <input {...a} type="password" className="wide" {...register('credentials.sessionToken')} autoComplete="new-password" spellCheck={false} />}
              </Field>
            </fieldset>
          </>
        ) : (
          <>
            <Field label="Context (optional)" error={errorAt(errors, 'settings.context')} hint="The kubeconfig context to use; empty: its current context.">
              {(a) => <input {...a} {...register('settings.context')} autoComplete="off" />}
            </Field>
            <fieldset className="credentials">
              <legend>Credentials</legend>
              {account && <p className="hint">Stored: {account.credentialHint}. Leave the kubeconfig empty to keep the stored one.</p>}
              <Field label="Kubeconfig" error={errorAt(errors, 'credentials.kubeconfig')} hint={editing ? 'YAML, with its cluster, user and token or client certificate. Leave empty to keep the stored one.' : 'YAML, with its cluster, user and token or client certificate; stored encrypted, never shown after saving.'}>
                {(a) => <textarea {...a} className="mono" rows={8} wrap="off" {...register('credentials.kubeconfig')} spellCheck={false} placeholder={editing ? 'unchanged' : 'apiVersion: v1\nkind: Config\nclusters: …'} />}
              </Field>
              <Field label="Or read it from a file">
                {(a) => <input {...a} type="file" onChange={(e) => void readFile(e)} />}
              </Field>
            </fieldset>
          </>
        )}
        <label className="check">
          <input type="checkbox" {...register('enabled')} />
          Enabled: synced by its job every {kind === 'aws' ? '15' : '5'} minutes
        </label>
      </div>
      <ErrorAlert error={save.error} />
    </Dialog>
  );
}

/** Seconds since `since`, counting on while shown. */
function Elapsed({ since }: { since: number }) {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(t);
  }, []);
  return <>{Math.max(0, Math.round((now - since) / 1000))} s</>;
}

type Counts = Partial<CloudSyncResult['counts']>;
function countsText(c: Counts): string {
  const parts: string[] = [];
  if (c.resources !== undefined) parts.push(plural(c.resources, 'resource'));
  if (c.hosts !== undefined) parts.push(plural(c.hosts, 'host'));
  if (c.changed !== undefined) parts.push(`${c.changed} changed`);
  if (c.gone !== undefined) parts.push(`${c.gone} gone`);
  return parts.join(' · ');
}

function Warnings({ warnings }: { warnings: string[] }) {
  if (warnings.length === 0) return null;
  return (
    <details className="cloud-more warnings">
      <summary>{plural(warnings.length, 'warning')}</summary>
      <ul>{warnings.map((w, i) => <li key={i}>{w}</li>)}</ul>
    </details>
  );
}

/** When the account last synced, how it went (the provider's words in full on demand), what it counted. */
function LastSync({ s }: { s: CloudAccount['lastSync'] }) {
  if (!s) return <span className="muted nowrap">never</span>;
  return (
    <div className="last-sync">
      <span className="nowrap">
        <span className={`badge outcome-${s.status}`}>{s.status}</span> <time dateTime={s.at} title={dateTime(s.at)}>{ago(s.at)}</time> <span className="muted">in {duration(s.durationMs)}</span>
      </span>
      {Object.keys(s.counts).length > 0 && <span className="counts">{countsText(s.counts)}</span>}
      {s.error && (
        <details className="cloud-more">
          <summary>Why it failed</summary>
          <p className="error-text">{s.error}</p>
        </details>
      )}
      <Warnings warnings={s.warnings} />
    </div>
  );
}

function Reaches({ a }: { a: CloudAccount }) {
  return (
    <div className="reaches">
      {a.providerAccount ? <span className="mono">{a.providerAccount}</span> : <span className="muted" title="Known after the first test or sync">not tested yet</span>}
      <span className="muted">{a.credentialHint}</span>
    </div>
  );
}

type Outcome<R> = { pending: true; since: number } | { result: R } | { error: unknown };
const message = (e: unknown) => (e instanceof Error ? e.message : String(e));

function TestLine({ t }: { t: Outcome<CloudTestResult> }) {
  if ('pending' in t) return <p role="status" className="test-result muted">Testing the connection…</p>;
  if ('error' in t) return <p role="status" className="test-result error-text">Test failed: {message(t.error)}</p>;
  return <p role="status" className={`test-result ${t.result.ok ? 'outcome-ok' : 'error-text'}`}>{t.result.ok ? 'Connected' : 'Refused'}: {t.result.detail}</p>;
}

function SyncLine({ s }: { s: Outcome<CloudSyncResult> }) {
  if ('pending' in s) return <p role="status" className="test-result outcome-running">Syncing… <Elapsed since={s.since} /></p>;
  if ('error' in s) {
    const upstream = s.error instanceof ApiError && s.error.code === 'upstream_error';
    return <p role="status" className="test-result error-text">Sync failed{upstream ? ', the provider said' : ''}: {message(s.error)}</p>;
  }
  const r = s.result;
  return (
    <div role="status" className={`test-result ${r.status === 'ok' ? 'outcome-ok' : 'error-text'}`}>
      {r.status === 'ok' ? 'Synced' : 'Sync failed'} in {duration(r.durationMs)}: {countsText(r.counts)}.
      <Warnings warnings={r.warnings} />
    </div>
  );
}

function CloudAccounts() {
  const client = useQueryClient();
  const accounts = useCloudAccounts();
  const rows = accounts.data?.data ?? [];
  const sites = useSites();
  const siteNames = useSiteNames(rows.map((a) => a.siteId));
  const [dialog, setDialog] = useState<{ kind: Kind; account: CloudAccount | null } | null>(null);
  const [deleting, setDeleting] = useState<CloudAccount | null>(null);
  // What the last write did, said until the next one.
  const [notice, setNotice] = useState<string | null>(null);
  const [tests, setTests] = useState<Record<string, Outcome<CloudTestResult>>>({});
  const [syncs, setSyncs] = useState<Record<string, Outcome<CloudSyncResult>>>({});
  const refresh = () => void client.invalidateQueries({ queryKey: cloudKeys.accounts });

  const test = useMutation({
    mutationFn: testCloudAccount,
    onMutate: (id) => setTests((t) => ({ ...t, [id]: { pending: true, since: Date.now() } })),
    onSuccess: (result, id) => setTests((t) => ({ ...t, [id]: { result } })),
    onError: (error, id) => setTests((t) => ({ ...t, [id]: { error } })),
    onSettled: refresh,
  });
  const sync = useMutation({
    mutationFn: syncCloudAccount,
    onMutate: (id) => setSyncs((s) => ({ ...s, [id]: { pending: true, since: Date.now() } })),
    onSuccess: (result, id) => setSyncs((s) => ({ ...s, [id]: { result } })),
    onError: (error, id) => setSyncs((s) => ({ ...s, [id]: { error } })),
    onSettled: refresh,
  });
  const toggle = useMutation({
    mutationFn: (a: CloudAccount) => setCloudAccountEnabled(a.id, !a.enabled),
    onSuccess: (a) => {
      setNotice(a.enabled ? `Enabled “${a.name}”: its job syncs it again.` : `Disabled “${a.name}”: its job skips it (Sync now still works).`);
      refresh();
    },
  });
  const remove = useMutation({
    mutationFn: (a: CloudAccount) => deleteCloudAccount(a.id),
    onSuccess: (_, a) => {
      setDeleting(null);
      setNotice(`Deleted “${a.name}”; the hosts only it listed are marked gone (they keep their history).`);
      refresh();
    },
  });

  const columns = useMemo<ColumnDef<CloudAccount>[]>(
    () => [
      { header: 'Name', accessorKey: 'name', cell: ({ row }) => <strong className="nowrap">{row.original.name}</strong> },
      { header: 'Kind', accessorKey: 'kind', cell: ({ row }) => kindLabels[row.original.kind] },
      { header: 'Site', accessorKey: 'siteId', enableSorting: false, cell: ({ row }) => (row.original.siteId ? <span className="nowrap">{siteNames.get(row.original.siteId)?.name ?? '…'}</span> : <span className="muted">—</span>) },
      { id: 'reaches', header: 'Reaches', accessorFn: (a) => a.providerAccount ?? a.credentialHint, cell: ({ row }) => <Reaches a={row.original} /> },
      { id: 'lastSync', header: 'Last sync', accessorFn: (a) => a.lastSync?.at ?? '', cell: ({ row }) => <LastSync s={row.original.lastSync} /> },
      { header: 'Status', accessorKey: 'enabled', cell: ({ row }) => <span className={`badge ${row.original.enabled ? 'outcome-ok' : 'outcome-never'}`}>{row.original.enabled ? 'enabled' : 'disabled'}</span> },
      {
        id: 'actions',
        header: 'Actions',
        enableSorting: false,
        cell: ({ row }) => {
          const a = row.original;
          const t = tests[a.id];
          const s = syncs[a.id];
          const syncing = s !== undefined && 'pending' in s;
          return (
            <div className="cloud-actions">
              <span className="row-actions">
                <button type="button" className="small" onClick={() => test.mutate(a.id)} disabled={t !== undefined && 'pending' in t} aria-label={`Test connection of ${a.name}`}>Test connection</button>
                <button type="button" className="small" onClick={() => sync.mutate(a.id)} disabled={syncing} aria-busy={syncing || undefined} aria-label={`Sync ${a.name} now`}>{syncing ? 'Syncing…' : 'Sync now'}</button>
                <button type="button" className="small" onClick={() => { setNotice(null); setDialog({ kind: a.kind, account: a }); }} aria-label={`Edit ${a.name}`}>Edit</button>
                <button type="button" className="small" onClick={() => toggle.mutate(a)} disabled={toggle.isPending} aria-label={`${a.enabled ? 'Disable' : 'Enable'} ${a.name}`}>{a.enabled ? 'Disable' : 'Enable'}</button>
                <button type="button" className="small danger" onClick={() => setDeleting(a)} aria-label={`Delete ${a.name}`}>Delete</button>
              </span>
              {t && <TestLine t={t} />}
              {s && <SyncLine s={s} />}
            </div>
          );
        },
      },
    ],
    [siteNames, tests, syncs, test, sync, toggle],
  );

  return (
    <>
      <h1>Cloud accounts</h1>
      <p className="muted intro">AWS accounts and Kubernetes clusters whose inventory the server reads with read-only credentials: their instances, nodes, pods and services become hosts beside the ones daemons find.</p>
      <div className="toolbar">
        <button type="button" className="primary" onClick={() => { setNotice(null); setDialog({ kind: 'aws', account: null }); }}>{addLabels.aws}</button>
        <button type="button" onClick={() => { setNotice(null); setDialog({ kind: 'kubernetes', account: null }); }}>{addLabels.kubernetes}</button>
      </div>
      {notice && (
        <p role="status" className="notice">
          {notice} <button type="button" className="small" onClick={() => setNotice(null)}>Dismiss</button>
        </p>
      )}
      <ErrorAlert error={accounts.error} />
      <ErrorAlert error={toggle.error} />
      {accounts.isPending && !accounts.error && <p className="loading">Loading…</p>}
      {accounts.data && rows.length === 0 && (
        <div className="empty cloud-empty">
          <p>No cloud accounts yet. An account lets the server read an AWS account&apos;s EC2 instances, VPCs, subnets and security groups (every 15 minutes), or a Kubernetes cluster&apos;s nodes, pods, services and ingresses (every 5 minutes), and keep them as hosts with the ones daemons find. Credentials are stored encrypted and never shown again. Each needs read-only access:</p>
          <ul>
            <li><strong>AWS</strong>: {AWS_ACCESS}</li>
            <li><strong>Kubernetes</strong>: {K8S_ACCESS}</li>
          </ul>
        </div>
      )}
      {rows.length > 0 && <DataTable caption="Cloud accounts" data={rows} columns={columns} rowKey={(a) => a.id} rowClassName={(a) => (a.enabled ? undefined : 'revoked')} />}

      {dialog && (
        <AccountDialog
          kind={dialog.kind}
          account={dialog.account}
          sites={sites}
          onDone={(m) => {
            setDialog(null);
            if (m) setNotice(m);
          }}
        />
      )}
      {deleting && (
        <Dialog danger title={`Delete cloud account “${deleting.name}”?`} confirmLabel="Delete account" busy={remove.isPending} onConfirm={() => remove.mutate(deleting)} onCancel={() => { setDeleting(null); remove.reset(); }}>
          <p>Its stored credentials and its record of the provider&apos;s resources are removed and it is no longer synced. The hosts only it listed are marked gone (they keep their history); a host a daemon saw, or another account lists, stays present. This cannot be undone.</p>
          <ErrorAlert error={remove.error} />
        </Dialog>
      )}
    </>
  );
}

export function CloudAccountsPage() {
  return (
    <RoleGate min="admin" title="Cloud accounts" why="Cloud accounts are managed by admins and owners of the organisation.">
      <CloudAccounts />
    </RoleGate>
  );
}
