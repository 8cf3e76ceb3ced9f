import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import type { ColumnDef } from '@tanstack/react-table';
import { CreateApiKeyRequest, type Scope, scopesForRole } from '@surveyor/contract';
import { type FormEvent, useMemo, useRef, useState } from 'react';
import { api } from '../api';
import { DataTable } from '../components/DataTable';
import { Dialog } from '../components/Dialog';
import { ErrorAlert } from '../components/ErrorAlert';
import { useRevealPanel } from '../components/focus';
import { ago, dateTime } from '../format';
import { useMe } from '../queries';
import type { ApiKeyCreated, ApiKeyInfo } from '../types';
import { usePageTitle } from './usePageTitle';

function MintedKey({ created, onClose }: { created: ApiKeyCreated; onClose: () => void }) {
  const input = useRef<HTMLInputElement>(null);
  const [copied, setCopied] = useState(false);
  const copy = async () => {
    input.current?.select();
    try {
      await navigator.clipboard.writeText(created.token);
      setCopied(true);
    } catch {
      setCopied(false); // selected: Ctrl+C copies it
    }
  };
  return (
    <section className="minted" aria-labelledby="minted-title" {...useRevealPanel(onClose)}>
      <h2 id="minted-title">Key “{created.name}” minted</h2>
      <p role="status" className="warning">Copy the token now: it is shown only once and cannot be read again.</p>
      <div className="copy-row">
        <label>
          Token
          <input ref={input} readOnly value={created.token} className="mono" onFocus={(e) => e.target.select()} />
        </label>
        <button type="button" onClick={() => void copy()}>{copied ? 'Copied' : 'Copy'}</button>
        <button type="button" onClick={onClose}>Done</button>
      </div>
    </section>
  );
}

export function KeysPage() {
  usePageTitle('API keys');
  const me = useMe();
  const client = useQueryClient();
  const allowed = me.data ? scopesForRole(me.data.role) : [];
  const [name, setName] = useState('');
  const [chosen, setChosen] = useState<Scope[]>(['inventory:read']);
  const [expires, setExpires] = useState('');
  const [invalid, setInvalid] = useState<string | null>(null);
  const [created, setCreated] = useState<ApiKeyCreated | null>(null);
  const [revoking, setRevoking] = useState<ApiKeyInfo | null>(null);

  const keys = useQuery({ queryKey: ['keys'], queryFn: ({ signal }) => api<{ data: ApiKeyInfo[] }>('/api/v1/auth/keys', { signal }) });

  const mint = useMutation({
    mutationFn: (body: unknown) => api<ApiKeyCreated>('/api/v1/auth/keys', { method: 'POST', body }),
    onSuccess: (k) => {
      setCreated(k);
      setName('');
      void client.invalidateQueries({ queryKey: ['keys'] });
    },
  });
  const revoke = useMutation({
    mutationFn: (id: string) => api<void>(`/api/v1/auth/keys/${id}`, { method: 'DELETE' }),
    onSuccess: () => {
      setRevoking(null);
      void client.invalidateQueries({ queryKey: ['keys'] });
    },
  });

  const submit = (e: FormEvent) => {
    e.preventDefault();
    const body = { name, scopes: chosen.filter((s) => allowed.includes(s)), ...(expires ? { expiresInDays: Number(expires) } : {}) };
    const checked = CreateApiKeyRequest.safeParse(body);
    if (!checked.success) {
      const issue = checked.error.issues[0];
      const field = issue?.path[0] === 'scopes' ? 'Scopes' : issue?.path[0] === 'expiresInDays' ? 'Expires in (days)' : 'Name';
      setInvalid(issue ? `${field}: ${issue.message}` : 'Check the fields.');
      return;
    }
    setInvalid(null);
    mint.mutate(checked.data);
  };

  const columns = useMemo<ColumnDef<ApiKeyInfo>[]>(
    () => [
      { header: 'Name', accessorKey: 'name' },
      { header: 'Prefix', accessorKey: 'tokenPrefix', cell: ({ row }) => <span className="mono">{row.original.tokenPrefix}…</span> },
      { header: 'Kind', accessorKey: 'kind' },
      { header: 'Scopes', accessorKey: 'scopes', cell: ({ row }) => row.original.scopes.join(', ') },
      { header: 'Owner', accessorKey: 'userEmail' },
      { header: 'Created', accessorKey: 'createdAt', cell: ({ row }) => <span title={dateTime(row.original.createdAt)}>{ago(row.original.createdAt)}</span> },
      { header: 'Last used', accessorKey: 'lastUsedAt', cell: ({ row }) => (row.original.lastUsedAt ? <span title={dateTime(row.original.lastUsedAt)}>{ago(row.original.lastUsedAt)}</span> : 'never') },
      { header: 'Expires', accessorKey: 'expiresAt', cell: ({ row }) => dateTime(row.original.expiresAt) },
      {
        id: 'status',
        header: 'Status',
        cell: ({ row }) =>
          row.original.revokedAt ? (
            <span className="muted">revoked {ago(row.original.revokedAt)}</span>
          ) : row.original.expiresAt && Date.parse(row.original.expiresAt) < Date.now() ? (
            <span className="muted">expired</span>
          ) : (
            <button type="button" className="small danger" onClick={() => setRevoking(row.original)} aria-label={`Revoke ${row.original.name}`}>Revoke</button>
          ),
      },
    ],
    [],
  );

  const rows = keys.data?.data ?? [];
  return (
    <>
      <h1>API keys</h1>
      {created && <MintedKey created={created} onClose={() => setCreated(null)} />}

      <section aria-labelledby="mint-title">
        <h2 id="mint-title">Mint a key</h2>
        <form onSubmit={submit} className="mint">
          <label>
            Name
            <input value={name} onChange={(e) => setName(e.target.value)} maxLength={200} required placeholder="ci-inventory-export" />
          </label>
          <fieldset>
            <legend>Scopes</legend>
            {allowed.map((s) => (
              <label key={s} className="check">
                <input
                  type="checkbox"
                  checked={chosen.includes(s)}
                  onChange={(e) => setChosen(e.target.checked ? [...chosen, s] : chosen.filter((x) => x !== s))}
                />
                {s}
              </label>
            ))}
          </fieldset>
          <label>
            Expires in (days)
            <input type="number" min={1} max={3650} value={expires} onChange={(e) => setExpires(e.target.value)} placeholder="never" />
          </label>
          <button type="submit" className="primary" disabled={mint.isPending}>Mint key</button>
        </form>
        {invalid ? <p role="alert" className="alert">{invalid}</p> : <ErrorAlert error={mint.error} />}
      </section>

      <section aria-labelledby="keys-title">
        <h2 id="keys-title">{me.data && (me.data.role === 'admin' || me.data.role === 'owner') ? "The organisation's keys" : 'Your keys'}</h2>
        <ErrorAlert error={keys.error} />
        {keys.data && rows.length === 0 && <p className="empty">No API keys yet: mint one above for scripts and integrations.</p>}
        {rows.length > 0 && <DataTable caption="API keys" data={rows} columns={columns} rowKey={(k) => k.id} rowClassName={(k) => (k.revokedAt ? 'revoked' : undefined)} />}
      </section>

      {revoking && (
        <Dialog title={`Revoke key “${revoking.name}”?`} busy={revoke.isPending} onConfirm={() => revoke.mutate(revoking.id)} onCancel={() => { setRevoking(null); revoke.reset(); }}>
          <p>Anything using the token <span className="mono">{revoking.tokenPrefix}…</span> is refused from now on. This cannot be undone.</p>
          <ErrorAlert error={revoke.error} />
        </Dialog>
      )}
    </>
  );
}
