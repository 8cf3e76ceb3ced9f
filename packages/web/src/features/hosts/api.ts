import { routes } from '@surveyor/contract';
import { useQueries, useQuery } from '@tanstack/react-query';
import { call } from '../../lib/api';
import { hostKeys, vulnerabilityKeys } from '../../lib/keys';
import { fetchPage } from '../../lib/queries';

/** A host's topology over a window, kept under the hosts' keys (a scan or a host change refreshes it). */
const hostTopologyKey = (hostId: string, windowHours: number) => [...hostKeys.all, 'topology', hostId, windowHours] as const;

/** A host's interfaces, VLANs, LAG groups, routes and port map, under the hosts' keys (a host change refreshes it). */
const hostDetailKey = (hostId: string) => [...hostKeys.all, 'detail', hostId] as const;

/** What the daemons reported of a host's layer 2/3, and who reports being on its ports (`GET /api/v1/hosts/{id}/detail`, internal). */
export function useHostDetail(hostId: string) {
  return useQuery({
    queryKey: hostDetailKey(hostId),
    queryFn: ({ signal }) => call(routes.getHostDetail, { params: { id: hostId } }, { signal }),
  });
}

/** One host by id (the hosts search matches a UUID to the host id): null when the organisation has none. */
export function useHost(id: string) {
  return useQuery({
    queryKey: hostKeys.one(id),
    queryFn: async ({ signal }) => (await fetchPage('hosts', { search: id, limit: 1 }, signal)).data[0] ?? null,
  });
}

/** A host's topology (`GET /api/v1/hosts/{id}/topology`) over the window (24 h by default). */
export function useHostTopology(hostId: string, windowHours = 24) {
  return useQuery({
    queryKey: hostTopologyKey(hostId, windowHours),
    queryFn: ({ signal }) => call(routes.getHostTopology, { params: { id: hostId }, query: { windowHours } }, { signal }),
  });
}

/** The findings of these services, one query each (the findings API filters by service, not host). */
export function useServiceFindings(serviceIds: readonly string[]) {
  return useQueries({
    queries: serviceIds.map((serviceId) => ({
      queryKey: vulnerabilityKeys.page({ serviceId, limit: 500 }),
      queryFn: ({ signal }: { signal: AbortSignal }) => fetchPage('vulnerabilities', { serviceId, limit: 500 }, signal),
    })),
  });
}
