import { routes } from '@surveyor/contract';
import { useQuery } from '@tanstack/react-query';
import { call } from '../../lib/api';
import { overviewKeys } from '../../lib/keys';
import { useDaemons } from '../../lib/queries';

/** The overview's figures no list answers: sessions per state, snapshot and feed ages, expiring certificates. */
export function useOverview() {
  return useQuery({
    queryKey: overviewKeys.all,
    queryFn: ({ signal }) => call(routes.getOverview, {}, { signal }),
  });
}

/**
 * Daemons per presence, every one listed: online, silent (online but quiet past the daemon.offline
 * threshold: never counted as online), degraded, pending.
 */
export function useDaemonCounts() {
  const q = useDaemons();
  // A disabled daemon takes no scan and is never silent: it counts in none of these.
  const presence = (d: { status: string; silent: boolean; disabledAt: string | null }) => (d.disabledAt ? 'disabled' : d.silent ? 'silent' : d.status);
  const counts: Record<string, number> | undefined = q.data
    ? Object.fromEntries(['online', 'silent', 'degraded', 'pending'].map((s) => [s, q.data.data.filter((d) => presence(d) === s).length]))
    : undefined;
  return { ...q, data: counts };
}
