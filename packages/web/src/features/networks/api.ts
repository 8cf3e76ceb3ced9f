import { type RouteBody, isUuid, routes } from '@surveyor/contract';
import { useQuery } from '@tanstack/react-query';
import { call } from '../../lib/api';
import { networkKeys, scanKeys } from '../../lib/keys';
import { usePage } from '../../lib/queries';

/** The organisation's networks (the first 500), by name order of the API. */
export function useNetworks() {
  return usePage('networks', { limit: 500 });
}

/** One network by id (`GET /api/v1/lookup?networks=`): null when the organisation has none of that id. */
export function useNetwork(id: string) {
  return useQuery({
    queryKey: networkKeys.one(id),
    queryFn: async ({ signal }) => (isUuid(id) ? ((await call(routes.lookupByIds, { query: { networks: id } }, { signal })).networks[0] ?? null) : null),
  });
}

/** A network's scan sessions, newest first (`GET /api/v1/scans?networkId=`, internal). */
export function useNetworkScans(networkId: string, limit = 20) {
  return useQuery({
    queryKey: scanKeys.network(networkId, limit),
    queryFn: ({ signal }) => call(routes.listNetworkScans, { query: { networkId, limit } }, { signal }),
  });
}

export const createNetwork = (body: RouteBody<typeof routes.createNetwork>) => call(routes.createNetwork, { body });
export const startScan = (networkId: string) => call(routes.createScan, { body: { networkId } });
export const cancelScan = (sessionId: string) => call(routes.cancelScan, { params: { id: sessionId } });
