import { useMutation, useQueryClient } from '@tanstack/react-query';
import type { ColumnDef } from '@tanstack/react-table';
import { CreateScimTokenRequest, PutScimMappingsRequest, scimMappableRoles } from '@surveyor/contract';
import { type ReactNode, useEffect, useId, useMemo, useState } from 'react';
import { useFieldArray } from 'react-hook-form';
import { createScimToken, putScimMappings, revokeScimToken, scimKeys, useScimSettings } from './api';
import { Ago } from '../../components/Ago';
import { CopyField } from '../../components/Copy';
import { DataTable } from '../../components/DataTable';
import { ErrorAlert } from '../../components/ErrorAlert';
import { Figure } from '../../components/Figure';
import { Field, errorAt, optionalNumber, useContractForm } from '../../components/form';
import { useRevealPanel } from '../../components/focus';
import { RevokeKeyDialog, keyColumns, keyRowClass } from '../../components/keys';
import { RoleGate } from '../../components/RoleGate';
import { plural } from '../../lib/format';
import { apiKeyKeys, memberKeys } from '../../lib/keys';
import { useMe } from '../../lib/queries';
import type { ApiKeyInfo, ScimGroup, ScimSettings, ScimTokenCreated } from '../../lib/types';

// Settings → SCIM (spec 5): an identity provider (Okta, Microsoft Entra ID) creates, updates and
// deactivates members through SCIM 2.0 with a token minted here, and its groups give roles through
// a mapping only an owner changes. Admins see everything and mint or revoke tokens; the mapping is
// read-only to them (the server answers 403).

/** How SCIM moves roles and access, said once beside the mapping (the server's rules, PUT /admin/scim/mappings). */
const RULES =
  'A member in several mapped groups gets the highest of their roles; a provisioned member in no mapped group gets viewer. ' +
  'With no mapping at all, SCIM never changes roles. Owners are never changed by SCIM. ' +
  'Deactivating a user in the identity provider ends their sessions and stops their API keys at once.';

function MintedToken({ created, onClose }: { created: ScimTokenCreated; onClose: () => void }) {
  return (
    <section className="minted" aria-labelledby="scim-minted-title" {...useRevealPanel(onClose)}>
      <h2 id="scim-minted-title">Token “{created.name}” minted</h2>
      <p role="status" className="warning">Copy the token now: it is shown only once and cannot be read again.</p>
      <p className="hint">
        In the identity provider&apos;s SCIM app, paste the base URL as the SCIM base URL (Okta: SCIM connector base URL; Microsoft Entra ID: Tenant URL) and the token as the bearer token (Okta: API
        token, authentication mode HTTP Header; Entra ID: Secret Token).
      </p>
      <div className="copy-row">
        <CopyField label="Base URL" value={created.baseUrl} copyLabel="Copy URL" />
      </div>
      <div className="copy-row">
        <CopyField label="Token" value={created.token} copyLabel="Copy token" />
        <button type="button" onClick={onClose}>Done</button>
      </div>
    </section>
  );
}

/** The tokens the identity provider authenticates with: the base URL, mint (shown once), the list, revoke. */
function Tokens({ settings }: { settings: ScimSettings }) {
  const client = useQueryClient();
  const [created, setCreated] = useState<ScimTokenCreated | null>(null);
  const [revoking, setRevoking] = useState<ApiKeyInfo | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const refresh = () => {
    void client.invalidateQueries({ queryKey: scimKeys.settings });
    void client.invalidateQueries({ queryKey: apiKeyKeys.all });
  };
  const { form, mutation: mint } = useContractForm({
    schema: CreateScimTokenRequest,
    defaultValues: { name: '' },
    submit: createScimToken,
    fields: ['name', 'expiresInDays'],
    onSuccess: (t) => {
      setNotice(null);
      setCreated(t);
      refresh();
    },
  });
  const { register, handleSubmit, formState: { errors } } = form;
  const revoke = useMutation({
    mutationFn: (k: ApiKeyInfo) => revokeScimToken(k.id),
    onSuccess: (_, k) => {
      setRevoking(null);
      setNotice(`Revoked “${k.name}”: the identity provider's requests with it are refused from now on.`);
      refresh();
    },
  });
  const columns = useMemo(() => keyColumns(setRevoking, { kinds: false }), []);
  const tokens = settings.tokens;

  return (
    <section aria-labelledby="scim-tokens-title">
      <h2 id="scim-tokens-title">Tokens</h2>
      <div className="copy-row scim-base">
        <CopyField label="SCIM base URL" value={settings.baseUrl} copyLabel="Copy URL" />
      </div>
      {created && <MintedToken created={created} onClose={() => setCreated(null)} />}
      <form onSubmit={handleSubmit((b) => mint.mutate(b), () => mint.reset())} className="mint" noValidate>
        <Field label="Token name" error={errorAt(errors, 'name')}>
          {(a) => <input {...a} {...register('name')} maxLength={200} placeholder="okta-provisioning" />}
        </Field>
        <Field label="Expires in (days)" error={errorAt(errors, 'expiresInDays')}>
          {(a) => <input {...a} type="number" min={1} max={3650} {...register('expiresInDays', { setValueAs: optionalNumber })} placeholder="never" />}
        </Field>
        <button type="submit" className="primary" disabled={mint.isPending}>Mint token</button>
      </form>
      <ErrorAlert error={mint.error} />
      {notice && (
        <p role="status" className="notice">
          {notice} <button type="button" className="small" onClick={() => setNotice(null)}>Dismiss</button>
        </p>
      )}
      {tokens.length === 0 ? (
        <p className="empty">No tokens yet. Mint a token, then paste the base URL and token into your identity provider&apos;s SCIM app.</p>
      ) : (
        <DataTable caption="SCIM tokens" data={tokens} columns={columns} rowKey={(k) => k.id} rowClassName={keyRowClass} />
      )}
      {revoking && (
        <RevokeKeyDialog apiKey={revoking} noun="token" busy={revoke.isPending} error={revoke.error} onConfirm={() => revoke.mutate(revoking)} onCancel={() => { setRevoking(null); revoke.reset(); }}>
          <p>
            The identity provider&apos;s requests with <span className="mono">{revoking.tokenPrefix}…</span> are refused from now on, so provisioning stops until it has another token. The members it
            provisioned stay as they are. This cannot be undone.
          </p>
        </RevokeKeyDialog>
      )}
    </section>
  );
}

const sameGroup = (name: string, g: ScimGroup) => {
  const n = name.trim().toLowerCase();
  return n === g.displayName.toLowerCase() || n === g.id;
};

/**
 * The mapping as the server keeps it (a group's name in lower case, or its id), each name written
 * as the pushed group of that name spells it; names match case-insensitively, so this changes no meaning.
 */
function spelled(s: ScimSettings): ScimSettings['mappings'] {
  const names = new Map(s.groups.map((g) => [g.displayName.toLowerCase(), g.displayName]));
  return s.mappings.map((m) => ({ ...m, group: names.get(m.group.toLowerCase()) ?? m.group }));
}

/** Every field a 400 may name: each row's (at most 200, the contract's bound), then the list itself. */
const MAPPING_FIELDS = [...Array.from({ length: 200 }, (_, i) => [`mappings.${i}.group`, `mappings.${i}.role`] as const).flat(), 'mappings' as const];

/** The mapping's table: a row per group, with a column of Remove buttons when `remove`. */
function MappingFrame({ remove, children }: { remove?: boolean; children: ReactNode }) {
  return (
    <div className="table-wrap">
      <table>
        <caption className="sr-only">Group-to-role mapping</caption>
        <thead>
          <tr>
            <th scope="col">Group</th>
            <th scope="col">Role</th>
            {remove && <th scope="col"><span className="sr-only">Remove</span></th>}
          </tr>
        </thead>
        <tbody>{children}</tbody>
      </table>
    </div>
  );
}

/** The owner's editor of the mapping: rows of group and role, replaced all at once by Save. */
function MappingForm({ settings }: { settings: ScimSettings }) {
  const client = useQueryClient();
  const listId = useId();
  const mappings = useMemo(() => spelled(settings), [settings]);
  const { form, mutation: save, done, edited } = useContractForm({
    schema: PutScimMappingsRequest,
    defaultValues: { mappings },
    submit: putScimMappings,
    // A 400 names a row's field (the same group twice: body.mappings.1.group), else the list.
    fields: MAPPING_FIELDS,
    reset: false,
    onSuccess: (s) => {
      client.setQueryData(scimKeys.settings, s);
      form.reset({ mappings: spelled(s) });
      void client.invalidateQueries({ queryKey: memberKeys.all });
    },
  });
  const { register, control, formState: { errors, isDirty } } = form;
  const rows = useFieldArray({ control, name: 'mappings' });
  // Another owner's save, seen on a refetch, replaces an untouched form.
  useEffect(() => {
    if (!form.formState.isDirty) form.reset({ mappings });
  }, [mappings]);
  const values = form.watch('mappings');
  const listError = errors.mappings?.message ?? errors.mappings?.root?.message;

  return (
    <form
      onSubmit={form.handleSubmit((b) => save.mutate(b), () => save.reset())}
      onChange={edited}
      noValidate
      className="scim-mapping"
    >
      <datalist id={listId}>
        {settings.groups.map((g) => <option key={g.id} value={g.displayName} />)}
      </datalist>
      {rows.fields.length === 0 ? (
        <p className="empty">No mapping: SCIM provisions and deactivates members but never changes their roles. Add a row to give a group&apos;s members a role.</p>
      ) : (
        <MappingFrame remove>
          {rows.fields.map((f, i) => {
            const groupError = errors.mappings?.[i]?.group?.message;
            const roleError = errors.mappings?.[i]?.role?.message;
            const typed = values?.[i]?.group?.trim() ?? '';
            const unknown = typed !== '' && !settings.groups.some((g) => sameGroup(typed, g));
            const groupHelp = `${listId}-group-${i}`;
            return (
              <tr key={f.id}>
                <td>
                  <input
                    {...register(`mappings.${i}.group`)}
                    list={listId}
                    className="scim-group"
                    aria-label={`Group ${i + 1}`}
                    placeholder="Network Admins"
                    maxLength={256}
                    autoComplete="off"
                    {...(groupError ? { 'aria-invalid': true } : {})}
                    {...(groupError || unknown ? { 'aria-describedby': groupHelp } : {})}
                  />
                  {groupError ? (
                    <span id={groupHelp} className="field-error">{groupError}</span>
                  ) : (
                    unknown && <span id={groupHelp} className="hint field-note">No group of this name pushed yet</span>
                  )}
                </td>
                <td>
                  <select {...register(`mappings.${i}.role`)} aria-label={`Role ${i + 1}`} {...(roleError ? { 'aria-invalid': true } : {})}>
                    {scimMappableRoles.map((r) => <option key={r} value={r}>{r}</option>)}
                  </select>
                  {roleError && <span className="field-error">{roleError}</span>}
                </td>
                <td>
                  <button type="button" className="small danger" aria-label={`Remove mapping ${i + 1}`} onClick={() => { edited(); rows.remove(i); }}>Remove</button>
                </td>
              </tr>
            );
          })}
        </MappingFrame>
      )}
      {listError && <p className="field-error">{listError}</p>}
      <div className="page-actions">
        <button type="button" onClick={() => { edited(); rows.append({ group: '', role: 'viewer' }, { shouldFocus: true }); }}>Add mapping</button>
        <button type="submit" className="primary" disabled={save.isPending || !isDirty}>{save.isPending ? 'Saving…' : 'Save mapping'}</button>
        {isDirty && <button type="button" onClick={() => { edited(); form.reset({ mappings }); }}>Discard changes</button>}
      </div>
      <ErrorAlert error={save.error} />
      {done && (
        <p role="status" className="notice">
          {done.mappings.length === 0 ? 'Saved: no mapping, so SCIM leaves roles as they are.' : `Saved ${plural(done.mappings.length, 'mapping')}: the roles of provisioned members follow at once.`}
        </p>
      )}
    </form>
  );
}

/** The mapping as an admin sees it: read-only. */
function MappingTable({ settings }: { settings: ScimSettings }) {
  const mappings = useMemo(() => spelled(settings), [settings]);
  if (mappings.length === 0) return <p className="empty">No mapping: SCIM provisions and deactivates members but never changes their roles.</p>;
  return (
    <div className="scim-mapping">
      <MappingFrame>
        {mappings.map((m) => (
          <tr key={m.group}>
            <td>{m.group}</td>
            <td>{m.role}</td>
          </tr>
        ))}
      </MappingFrame>
    </div>
  );
}

const groupColumns: ColumnDef<ScimGroup>[] = [
  { header: 'Display name', accessorKey: 'displayName', cell: ({ row }) => <strong>{row.original.displayName}</strong> },
  { header: 'External id', accessorKey: 'externalId', cell: ({ row }) => (row.original.externalId ? <span className="mono">{row.original.externalId}</span> : <span className="muted">—</span>) },
  { id: 'members', header: () => <span className="num-head">Members</span>, accessorKey: 'members', cell: ({ row }) => <span className="num">{row.original.members}</span> },
  {
    header: 'Role',
    accessorKey: 'role',
    cell: ({ row }) => (row.original.role ? row.original.role : <span className="muted" title="No mapping names this group">—</span>),
  },
  { header: 'Updated', accessorKey: 'updatedAt', cell: ({ row }) => <Ago at={row.original.updatedAt} /> },
];

function Scim() {
  const me = useMe();
  const settings = useScimSettings();
  const s = settings.data;
  const owner = me.data?.role === 'owner';

  return (
    <>
      <h1>SCIM provisioning</h1>
      <p className="muted intro">
        Your identity provider (Okta, Microsoft Entra ID, or another SCIM 2.0 client) creates, updates and deactivates the organisation&apos;s members here, and its groups can give them their role.
      </p>
      <ErrorAlert error={settings.error} />
      {settings.isPending && !settings.error && <p className="loading">Loading…</p>}
      {s && (
        <>
          <ul className="figures scim-figures" aria-label="Provisioning">
            <Figure label="managed members" value={s.users.managed} to="/settings/members" />
            <Figure label="deactivated" value={s.users.deactivated} tone={s.users.deactivated > 0 ? 'amber' : undefined} />
            <Figure label="last change" value={<Ago at={s.lastChangeAt} never="none yet" />} />
          </ul>

          <Tokens settings={s} />

          <section aria-labelledby="scim-mapping-title">
            <h2 id="scim-mapping-title">Groups to roles</h2>
            <p className="intro">{RULES}</p>
            {owner ? (
              <MappingForm settings={s} />
            ) : (
              <>
                <p className="muted">Only an owner can change the mapping. You are {me.data?.role}.</p>
                <MappingTable settings={s} />
              </>
            )}
          </section>

          <section aria-labelledby="scim-groups-title">
            <h2 id="scim-groups-title">Groups the provider pushed</h2>
            {s.groups.length === 0 ? (
              <p className="empty">No groups pushed yet. Once the identity provider pushes groups (Okta: Push Groups; Entra ID: the groups assigned to the app), they are listed here with their members and can be mapped to a role.</p>
            ) : (
              <DataTable caption="SCIM groups" data={s.groups} columns={groupColumns} rowKey={(g) => g.id} />
            )}
          </section>
        </>
      )}
    </>
  );
}

export function ScimPage() {
  return (
    <RoleGate min="admin" title="SCIM provisioning" why="SCIM provisioning is managed by admins and owners of the organisation.">
      <Scim />
    </RoleGate>
  );
}
