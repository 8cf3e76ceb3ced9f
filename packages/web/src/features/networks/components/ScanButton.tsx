import { useMutation, useMutationState, useQueryClient } from '@tanstack/react-query';
import { networkKeys, scanKeys } from '../../../lib/keys';
import { startScan } from '../api';

/**
 * "Scan now" for one network (`POST /api/v1/scans`, needs scan:run: editors and above). A refusal
 * (409 no_daemon_online, scan_already_active, nmap_unavailable, …) shows its detail beside it.
 * `quiet` leaves the success to the page (the network page shows the session itself). The outcome is read from the mutation cache by key, so it survives the table re-rendering its cells.
 */
export function ScanButton({ networkId, label, quiet = false }: { networkId: string; label?: string; quiet?: boolean }) {
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
  const pending = last?.status === 'pending';
  return (
    <span className="scan-now">
      <button type="button" className="small" onClick={() => scan.mutate()} disabled={pending} aria-label={label}>
        {pending ? 'Queuing…' : 'Scan now'}
      </button>
      {last?.status === 'error' && <span role="alert" className="error-text">{last.error instanceof Error ? last.error.message : String(last.error)}</span>}
      {!quiet && last?.status === 'success' && <span role="status" className="muted">Scan queued.</span>}
    </span>
  );
}
