import { useMutation, useMutationState, useQueryClient } from '@tanstack/react-query';
import { useEffect, useRef } from 'react';
import { networkKeys, scanKeys } from '../../../lib/keys';
import { startScan } from '../api';

/**
 * "Scan now" for one network (`POST /api/v1/scans`, needs scan:run: editors and above). Disabled
 * while a session of the network is queued, dispatched or running (`active`, the network's
 * `activeSessionId`). A refusal (409 no_daemon_online, scan_already_active, nmap_unavailable, …)
 * shows its detail beside it until the session under way ends (the live stream refreshes the
 * network): then it no longer says anything true, and the button is there again. `quiet` leaves the success to the page
 * (the network page shows the session itself). The outcome is read from the mutation cache by key,
 * so it survives the table re-rendering its cells.
 */
export function ScanButton({ networkId, active, label, quiet = false }: { networkId: string; active: string | null; label?: string; quiet?: boolean }) {
  const client = useQueryClient();
  const mutationKey = ['scan-now', networkId];
  const scan = useMutation({
    mutationKey,
    mutationFn: () => startScan(networkId),
    onSuccess: () => {
      void client.invalidateQueries({ queryKey: networkKeys.all });
      void client.invalidateQueries({ queryKey: scanKeys.all });
    },
  });
  const last = useMutationState({ filters: { mutationKey }, select: (m) => ({ status: m.state.status, error: m.state.error }) }).at(-1);
  const shownFor = useRef(active);
  useEffect(() => {
    const ended = shownFor.current !== null && active === null;
    shownFor.current = active;
    if (!ended) return;
    // The session under way ended: forget what the last click was told (a refusal, or "queued").
    const cache = client.getMutationCache();
    for (const m of cache.findAll({ mutationKey })) if (m.state.status !== 'pending') cache.remove(m);
  }, [active, client, networkId]);
  const pending = last?.status === 'pending';
  return (
    <span className="scan-now">
      <button
        type="button"
        className="small"
        onClick={() => scan.mutate()}
        disabled={pending || active !== null}
        aria-label={label}
        title={active !== null ? 'A scan of this network is queued or running' : undefined}
      >
        {pending ? 'Queuing…' : active !== null ? 'Scanning…' : 'Scan now'}
      </button>
      {last?.status === 'error' && <span role="alert" className="error-text">{last.error instanceof Error ? last.error.message : String(last.error)}</span>}
      {!quiet && last?.status === 'success' && <span role="status" className="muted">Scan queued.</span>}
    </span>
  );
}
