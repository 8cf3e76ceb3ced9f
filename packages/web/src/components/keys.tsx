import type { ColumnDef } from '@tanstack/react-table';
import type { ReactNode } from 'react';
import { Ago } from './Ago';
import { Dialog } from './Dialog';
import { ErrorAlert } from './ErrorAlert';
import { ago, dateTime } from '../lib/format';
import type { ApiKeyInfo } from '../lib/types';

// What the screens listing keys share (Settings → API keys, the SCIM tokens of Settings → SCIM):
// the table's columns, the last one revoking a live key, and the confirmation of a revocation.

/** A table of keys' columns; `kinds: false` leaves out Kind and Scopes (a list of one kind). */
export function keyColumns(onRevoke: (k: ApiKeyInfo) => void, { kinds = true } = {}): ColumnDef<ApiKeyInfo>[] {
  return [
    { header: 'Name', accessorKey: 'name' },
    { header: 'Prefix', accessorKey: 'tokenPrefix', cell: ({ row }) => <span className="mono">{row.original.tokenPrefix}…</span> },
    ...(kinds
      ? ([
          { header: 'Kind', accessorKey: 'kind' },
          { header: 'Scopes', accessorKey: 'scopes', cell: ({ row }) => row.original.scopes.join(', ') },
        ] satisfies ColumnDef<ApiKeyInfo>[])
      : []),
    { header: 'Owner', accessorKey: 'userEmail' },
    { header: 'Created', accessorKey: 'createdAt', cell: ({ row }) => <Ago at={row.original.createdAt} /> },
    { header: 'Last used', accessorKey: 'lastUsedAt', cell: ({ row }) => <Ago at={row.original.lastUsedAt} never="never" /> },
    { header: 'Expires', accessorKey: 'expiresAt', cell: ({ row }) => (row.original.expiresAt ? dateTime(row.original.expiresAt) : <span className="muted">never</span>) },
    {
      id: 'status',
      header: 'Status',
      cell: ({ row }) =>
        row.original.revokedAt ? (
          <span className="muted">revoked {ago(row.original.revokedAt)}</span>
        ) : row.original.expiresAt && Date.parse(row.original.expiresAt) < Date.now() ? (
          <span className="muted">expired</span>
        ) : (
          <button type="button" className="small danger" onClick={() => onRevoke(row.original)} aria-label={`Revoke ${row.original.name}`}>Revoke</button>
        ),
    },
  ];
}

/** A revoked or expired key's row is muted. */
export const keyRowClass = (k: ApiKeyInfo) => (k.revokedAt ? 'revoked' : undefined);

/** "Revoke key “ci”?" (`noun` key or token), confirmed by "Revoke key"; `children` say what stops working. */
export function RevokeKeyDialog({ apiKey, noun, busy, error, onConfirm, onCancel, children }: { apiKey: ApiKeyInfo; noun: string; busy: boolean; error: unknown; onConfirm: () => void; onCancel: () => void; children: ReactNode }) {
  return (
    <Dialog danger title={`Revoke ${noun} “${apiKey.name}”?`} confirmLabel={`Revoke ${noun}`} busy={busy} onConfirm={onConfirm} onCancel={onCancel}>
      {children}
      <ErrorAlert error={error} />
    </Dialog>
  );
}
