import { useMutation, useQueryClient } from '@tanstack/react-query';
import { DEFAULT_SHARE_HOURS, MAX_SHARE_HOURS, type TopologyView } from '@surveyor/contract';
import { useId, useState } from 'react';
import { CopyField } from '../../components/Copy';
import { Dialog } from '../../components/Dialog';
import { ErrorAlert } from '../../components/ErrorAlert';
import { dateTime } from '../../lib/format';
import { shareView, viewKeys } from './api';

/** Creates (replacing any earlier one) or revokes the read-only link of a view; the URL shows once. */
export function ShareDialog({ view, active, onDone }: { view: TopologyView; active: string | null; onDone: () => void }) {
  const client = useQueryClient();
  const id = useId();
  const [hours, setHours] = useState(String(DEFAULT_SHARE_HOURS));
  const [link, setLink] = useState<{ url: string; expiresAt: string } | null>(null);
  const n = Number(hours);
  const valid = Number.isInteger(n) && n >= 1 && n <= MAX_SHARE_HOURS;
  const share = useMutation({
    mutationFn: (body: Parameters<typeof shareView>[1]) => shareView(view.id, body),
    onSuccess: (r) => {
      void client.invalidateQueries({ queryKey: viewKeys.view(view.id) });
      if (r.enabled && r.url && r.expiresAt) setLink({ url: r.url, expiresAt: r.expiresAt });
      else onDone();
    },
  });
  return (
    <Dialog title={`Share ${view.name}`} confirmLabel={link ? 'Done' : 'Create link'} busy={share.isPending || (!link && !valid)} onConfirm={() => (link ? onDone() : share.mutate({ enabled: true, expiresInHours: n }))} onCancel={onDone}>
      <p className="hint">Anyone with the link sees this one view, read-only, without signing in, until it expires. A new link replaces the previous one.</p>
      {active && !link && <p className="notice">A link is active until {dateTime(active)}.</p>}
      {!link && (
        <div className="field">
          <label htmlFor={id}>Expires in (hours)</label>
          <input id={id} type="number" min={1} max={MAX_SHARE_HOURS} value={hours} onChange={(e) => setHours(e.target.value)} {...(valid ? {} : { 'aria-invalid': true, 'aria-describedby': `${id}-issue` })} />
          {!valid && <span id={`${id}-issue`} className="field-issue error-text">A whole number of hours from 1 to {MAX_SHARE_HOURS}.</span>}
        </div>
      )}
      {link && (
        <div className="field">
          <div className="copy-row">
            <CopyField label="Share link" value={link.url} copyLabel="Copy link" />
          </div>
          <span className="hint">Shown only now. Valid until {dateTime(link.expiresAt)}.</span>
        </div>
      )}
      {active && !link && (
        <button type="button" onClick={() => share.mutate({ enabled: false })} disabled={share.isPending}>Revoke link</button>
      )}
      <ErrorAlert error={share.error} />
    </Dialog>
  );
}
