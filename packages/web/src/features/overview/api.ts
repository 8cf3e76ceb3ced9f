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

/** Daemons per status (pending, online, degraded), every status listed. */
export function useDaemonCounts() {
  const q = useDaemons();
  const counts: Record<string, number> | undefined = q.data
    ? Object.fromEntries(['online', 'degraded', 'pending'].map((s) => [s, q.data.data.filter((d) => d.status === s).length]))
    : undefined;
  return { ...q, data: counts };
}
