import { useMutation, useQueryClient } from '@tanstack/react-query';
import { CreateApiKeyRequest, type Scope, scopesForRole } from '@surveyor/contract';
import { useId, useMemo, useState } from 'react';
import { Controller } from 'react-hook-form';
import { createApiKey, revokeApiKey, settingsKeys, useApiKeys } from './api';
import { CopyField } from '../../components/Copy';
import { DataTable } from '../../components/DataTable';
import { ErrorAlert } from '../../components/ErrorAlert';
import { Field, errorAt, optionalNumber, useContractForm } from '../../components/form';
import { useRevealPanel } from '../../components/focus';
import { RevokeKeyDialog, keyColumns, keyRowClass } from '../../components/keys';
import { useMe } from '../../lib/queries';
import type { ApiKeyCreated, ApiKeyInfo } from '../../lib/types';
import { usePageTitle } from '../../lib/usePageTitle';

function MintedKey({ created, onClose }: { created: ApiKeyCreated; onClose: () => void }) {
  return (
    <section className="minted" aria-labelledby="minted-title" {...useRevealPanel(onClose)}>
      <h2 id="minted-title">Key “{created.name}” minted</h2>
      <p role="status" className="warning">Copy the token now: it is shown only once and cannot be read again.</p>
      <div className="copy-row">
        <CopyField label="Token" value={created.token} />
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
  // The contract's own schema as the resolver: checked on submit, then as the user corrects.
  const [created, setCreated] = useState<ApiKeyCreated | null>(null);
  const { form, mutation: mint } = useContractForm({
    schema: CreateApiKeyRequest,
    defaultValues: { name: '', scopes: ['inventory:read'] as Scope[] },
    submit: createApiKey,
    fields: ['name', 'scopes', 'expiresInDays'],
    // The scopes chosen stay for the next key; the name is the next key's own.
    reset: false,
    onSuccess: (k) => {
      setCreated(k);
      form.resetField('name');
      void client.invalidateQueries({ queryKey: settingsKeys.apiKeys });
    },
  });
  const { register, handleSubmit, formState: { errors } } = form;
  const scopesError = useId();
  const [revoking, setRevoking] = useState<ApiKeyInfo | null>(null);

  const keys = useApiKeys();

  const revoke = useMutation({
    mutationFn: revokeApiKey,
    onSuccess: () => {
      setRevoking(null);
      void client.invalidateQueries({ queryKey: settingsKeys.apiKeys });
    },
  });

  const columns = useMemo(() => keyColumns(setRevoking), []);

  const rows = keys.data?.data ?? [];
  return (
    <>
      <h1>API keys</h1>
      {created && <MintedKey created={created} onClose={() => setCreated(null)} />}

      <section aria-labelledby="mint-title">
        <h2 id="mint-title">Mint a key</h2>
        <form onSubmit={handleSubmit((b) => mint.mutate(b), () => mint.reset())} className="mint" noValidate>
          <Field label="Name" error={errorAt(errors, 'name')}>
            {(a) => <input {...a} {...register('name')} maxLength={200} placeholder="ci-inventory-export" />}
          </Field>
          <Controller
            control={form.control}
            name="scopes"
            render={({ field, fieldState }) => (
              <fieldset aria-describedby={fieldState.error ? scopesError : undefined}>
                <legend>Scopes</legend>
                {allowed.map((s) => (
                  <label key={s} className="check">
                    <input
                      type="checkbox"
                      checked={field.value.includes(s)}
                      onChange={(e) => field.onChange(e.target.checked ? [...field.value, s] : field.value.filter((x) => x !== s))}
                      onBlur={field.onBlur}
                      {...(fieldState.error ? { 'aria-invalid': true } : {})}
                    />
                    {s}
                  </label>
                ))}
                {fieldState.error && <span id={scopesError} className="field-error">{errorAt(errors, 'scopes')}</span>}
              </fieldset>
            )}
          />
          <Field label="Expires in (days)" error={errorAt(errors, 'expiresInDays')}>
            {(a) => <input {...a} type="number" min={1} max={3650} {...register('expiresInDays', { setValueAs: optionalNumber })} placeholder="never" />}
          </Field>
          <button type="submit" className="primary" disabled={mint.isPending}>Mint key</button>
        </form>
        <ErrorAlert error={mint.error} />
      </section>

      <section aria-labelledby="keys-title">
        <h2 id="keys-title">{me.data && (me.data.role === 'admin' || me.data.role === 'owner') ? "The organisation's keys" : 'Your keys'}</h2>
        <ErrorAlert error={keys.error} />
        {keys.data && rows.length === 0 && <p className="empty">No API keys yet: mint one above for scripts and integrations.</p>}
        {rows.length > 0 && <DataTable caption="API keys" data={rows} columns={columns} rowKey={(k) => k.id} rowClassName={keyRowClass} />}
      </section>

      {revoking && (
        <RevokeKeyDialog apiKey={revoking} noun="key" busy={revoke.isPending} error={revoke.error} onConfirm={() => revoke.mutate(revoking.id)} onCancel={() => { setRevoking(null); revoke.reset(); }}>
          <p>Anything using the token <span className="mono">{revoking.tokenPrefix}…</span> is refused from now on. This cannot be undone.</p>
        </RevokeKeyDialog>
      )}
    </>
  );
}
