import { useMutation, useQueryClient } from '@tanstack/react-query';
import type { ColumnDef } from '@tanstack/react-table';
import { AddMemberRequest, type Role, roleAtLeast, roles } from '@surveyor/contract';
import { useMemo, useState } from 'react';
import { sessionKeys } from '../../lib/keys';
import { addMember, removeMember, setMemberRole, settingsKeys, useMembers } from './api';
import { CopyField } from '../../components/Copy';
import { DataTable } from '../../components/DataTable';
import { Dialog } from '../../components/Dialog';
import { RoleGate } from '../../components/RoleGate';
import { useRevealPanel } from '../../components/focus';
import { ErrorAlert } from '../../components/ErrorAlert';
import { Field, errorAt, useContractForm } from '../../components/form';
import { ago, dateTime } from '../../lib/format';
import { useMe } from '../../lib/queries';
import type { Member, MemberAdded } from '../../lib/types';
import { usePageTitle } from '../../lib/usePageTitle';

/** What each role may do, said in the confirmation of a role change. */
const roleMeaning: Record<Role, string> = {
  viewer: 'A viewer reads the inventory and changes nothing.',
  editor: 'An editor also triages findings, adds networks, runs scans and takes snapshots.',
  admin: 'An admin also manages members, API keys, notifications, sites, daemons and jobs.',
  owner: 'An owner also grants and takes the role owner.',
};

const article = (role: Role) => (role === 'admin' || role === 'owner' || role === 'editor' ? 'an' : 'a');

/** The roles `viewer` may grant: an owner any, an admin up to admin (only an owner grants owner). */
function grantable(viewer: Role): Role[] {
  return viewer === 'owner' ? [...roles] : roles.filter((r) => r !== 'owner' && roleAtLeast(viewer, r));
}

function OneTimePassword({ added, onClose }: { added: MemberAdded & { oneTimePassword: string }; onClose: () => void }) {
  return (
    <section className="minted" aria-labelledby="otp-title" {...useRevealPanel(onClose)}>
      <h2 id="otp-title">{added.member.email} added as {added.member.role}</h2>
      <p role="status" className="warning">
        Give them this one-time password now: it is shown only once. They choose their own at their first sign-in.
      </p>
      <div className="copy-row">
        <CopyField label="One-time password" value={added.oneTimePassword} />
        <button type="button" onClick={onClose}>Done</button>
      </div>
    </section>
  );
}

/** Who manages the member (the identity provider, through SCIM) and whether it has them deactivated: a word and a colour each. */
function MemberBadges({ m }: { m: Member }) {
  return (
    <>
      {m.managedBy === 'scim' && (
        <> <span className="badge scim" title="Managed by the identity provider through SCIM: it sets their details and deactivates them; with a group-to-role mapping, their role comes from their groups (Settings → SCIM).">SCIM</span></>
      )}
      {!m.active && (
        <> <span className="badge deactivated" title="The identity provider deactivated them: no session, no working API key, until it reactivates them.">Deactivated</span></>
      )}
    </>
  );
}

/** Settings → Members (admins and owners): who belongs to the organisation, with which role. */
export function MembersPage() {
  return (
    <RoleGate min="admin" title="Members" why="Members are managed by admins and owners of the organisation.">
      <MembersScreen />
    </RoleGate>
  );
}

function MembersScreen() {
  usePageTitle('Members');
  const me = useMe();
  const client = useQueryClient();
  const viewerRole = me.data?.role ?? 'viewer';
  const allowed = grantable(viewerRole);
  // The contract's own schema as the resolver: checked on submit, then as the user corrects.
  const [added, setAdded] = useState<MemberAdded | null>(null);
  const [removing, setRemoving] = useState<Member | null>(null);
  // A role chosen in a row's select waits for its confirmation ("Make editor"); the select keeps the current role meanwhile.
  const [changing, setChanging] = useState<{ member: Member; role: Role } | null>(null);
  const [changed, setChanged] = useState<{ email: string; from: Role; to: Role } | null>(null);

  const members = useMembers();
  const refresh = () => void client.invalidateQueries({ queryKey: settingsKeys.members });

  const { form, mutation: add } = useContractForm({
    schema: AddMemberRequest,
    defaultValues: { email: '', role: 'viewer' as Role },
    submit: addMember,
    fields: ['email', 'role'],
    // The role chosen stays for the next member.
    reset: false,
    onSuccess: (r) => {
      setAdded(r);
      form.resetField('email');
      refresh();
    },
  });
  const { register, handleSubmit, formState: { errors } } = form;
  const update = useMutation({
    mutationFn: setMemberRole,
    onSuccess: (m, v) => {
      if (changing && changing.member.userId === v.userId) setChanged({ email: m.email, from: changing.member.role, to: m.role });
      setChanging(null);
      // Your own role changed: the navigation and this page's choices follow.
      if (m.userId === me.data?.user.id) void client.invalidateQueries({ queryKey: sessionKeys.me });
      // Shown at once, not after the refetch: the select is controlled by the cached list.
      client.setQueryData<{ data: Member[] }>(settingsKeys.members, (list) => list && { data: list.data.map((x) => (x.userId === m.userId ? m : x)) });
      refresh();
    },
  });
  const remove = useMutation({
    mutationFn: removeMember,
    onSuccess: () => {
      setRemoving(null);
      refresh();
    },
  });

  const columns = useMemo<ColumnDef<Member>[]>(
    () => [
      {
        header: 'Email',
        accessorKey: 'email',
        cell: ({ row }) => (
          <>
            {row.original.email}
            {row.original.userId === me.data?.user.id && <span className="muted"> (you)</span>}
            <MemberBadges m={row.original} />
          </>
        ),
      },
      {
        header: 'Role',
        accessorKey: 'role',
        cell: ({ row }) => {
          const m = row.original;
          // An admin cannot change an owner: the owner's role is shown, not offered.
          const choices = allowed.includes(m.role) ? allowed : [m.role];
          return (
            <select
              aria-label={`Role of ${m.email}`}
              value={m.role}
              disabled={choices.length < 2 || update.isPending}
              onChange={(e) => {
                add.reset();
                update.reset();
                setChanged(null);
                setChanging({ member: m, role: e.target.value as Role });
              }}
            >
              {choices.map((r) => (
                <option key={r} value={r}>{r}</option>
              ))}
            </select>
          );
        },
      },
      { header: 'Must change password', accessorKey: 'mustChangePassword', cell: ({ row }) => (row.original.mustChangePassword ? 'yes' : 'no') },
      { header: 'Since', accessorKey: 'createdAt', cell: ({ row }) => <span title={dateTime(row.original.createdAt)}>{ago(row.original.createdAt)}</span> },
      {
        header: 'Last sign-in',
        accessorKey: 'lastSignInAt',
        cell: ({ row }) => (row.original.lastSignInAt ? <span title={dateTime(row.original.lastSignInAt)}>{ago(row.original.lastSignInAt)}</span> : <span className="muted">never</span>),
      },
      {
        id: 'actions',
        header: 'Actions',
        cell: ({ row }) =>
          // Not yourself, and (for an admin) not an owner: the server refuses both.
          row.original.userId === me.data?.user.id || (row.original.role === 'owner' && viewerRole !== 'owner') ? null : (
            <button
              type="button"
              className="small danger"
              aria-label={`Remove ${row.original.email}`}
              onClick={() => {
                update.reset();
                setChanged(null);
                setRemoving(row.original);
              }}
            >
              Remove
            </button>
          ),
      },
    ],
    [me.data?.user.id, viewerRole, update.isPending], // allowed follows viewerRole; the mutations are stable
  );

  const rows = members.data?.data ?? [];
  return (
    <>
      <h1>Members</h1>
      {added?.oneTimePassword && <OneTimePassword added={{ ...added, oneTimePassword: added.oneTimePassword }} onClose={() => setAdded(null)} />}
      {added && !added.oneTimePassword && (
        <p role="status" className="notice">
          {added.member.email} already had an account and was added as {added.member.role}; they sign in with their own password.{' '}
          <button type="button" className="small" onClick={() => setAdded(null)}>Dismiss</button>
        </p>
      )}

      <section aria-labelledby="add-title">
        <h2 id="add-title">Add member</h2>
        <form
          onSubmit={handleSubmit((b) => {
            update.reset();
            add.mutate(b);
          }, () => add.reset())}
          className="mint"
          noValidate
        >
          <Field label="Email" error={errorAt(errors, 'email')}>
            {(a) => <input {...a} type="email" {...register('email')} maxLength={320} placeholder="name@example.com" />}
          </Field>
          <Field label="Role" error={errorAt(errors, 'role')}>
            {(a) => (
              <select {...a} {...register('role')}>
                {allowed.map((r) => (
                  <option key={r} value={r}>{r}</option>
                ))}
              </select>
            )}
          </Field>
          <button type="submit" className="primary" disabled={add.isPending}>Add member</button>
        </form>
        <ErrorAlert error={add.error} />
      </section>

      <section aria-labelledby="members-title">
        <h2 id="members-title">The organisation's members</h2>
        <p className="muted">
          Only an owner grants or takes the role owner; the last owner stays an owner. A change applies from the member's next request.
        </p>
        <ErrorAlert error={members.error} />
        {changed && (
          <p role="status" className="notice">
            {changed.email} is now {article(changed.to)} {changed.to} (was {changed.from}).{' '}
            <button type="button" className="small" onClick={() => setChanged(null)}>Dismiss</button>
          </p>
        )}
        {rows.length > 0 && <DataTable caption="Members" data={rows} columns={columns} rowKey={(m) => m.userId} rowClassName={(m) => (m.active ? undefined : 'deactivated')} />}
      </section>

      {changing && (
        <Dialog
          title={`Change the role of ${changing.member.email}?`}
          confirmLabel={update.isPending ? 'Changing…' : `Make ${changing.role}`}
          busy={update.isPending}
          onConfirm={() => update.mutate({ userId: changing.member.userId, role: changing.role })}
          onCancel={() => {
            setChanging(null);
            update.reset();
          }}
        >
          <p>
            {changing.member.email}: {changing.member.role} → <strong>{changing.role}</strong>. {roleMeaning[changing.role]} It applies from their next request, to their API keys too.
          </p>
          <ErrorAlert error={update.error} />
        </Dialog>
      )}

      {removing && (
        <Dialog
          title={`Remove ${removing.email}?`}
          danger
          confirmLabel="Remove member"
          busy={remove.isPending}
          onConfirm={() => remove.mutate(removing.userId)}
          onCancel={() => {
            setRemoving(null);
            remove.reset();
          }}
        >
          <p>They lose access to this organisation at once: their sessions here end and their API keys here are revoked. Their account and other organisations stay.</p>
          <ErrorAlert error={remove.error} />
        </Dialog>
      )}
    </>
  );
}
