import { Cidr, type RouteBody, isUuid, routes } from '@surveyor/contract';
import { useQuery } from '@tanstack/react-query';
import { useDeferredValue } from 'react';
import { call } from '../../lib/api';
import { networkKeys, scanKeys } from '../../lib/keys';
import { useCollection, usePage } from '../../lib/queries';

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

/** A network's scan sessions, newest first, each with its daemon (`GET /api/v1/scans?networkId=`, internal). */
export function useNetworkScans(networkId: string, limit = 20) {
  return useQuery({
    queryKey: scanKeys.network(networkId, limit),
    queryFn: ({ signal }) => call(routes.listNetworkScans, { query: { networkId, limit } }, { signal }),
  });
}

/** The hosts with an address inside the network's range (the hosts search by CIDR), page by page. */
export function useNetworkHosts(cidr: string | undefined) {
  return useCollection('hosts', { search: cidr ?? '', limit: 50 }, cidr !== undefined);
}

/**
 * The networks whose range overlaps `cidr` (but `exceptId`), asked once the CIDR is valid and the
 * typing settles (`GET /api/v1/networks/overlaps`, internal). Under the networks' key: a network
 * added or deleted refreshes it.
 */
export function useOverlaps(cidr: string | undefined, exceptId?: string) {
  const settled = useDeferredValue(cidr?.trim() ?? '');
  const valid = settled !== '' && Cidr.safeParse(settled).success;
  return useQuery({
    queryKey: [...networkKeys.all, 'overlaps', settled, exceptId ?? null] as const,
    queryFn: ({ signal }) => call(routes.networkOverlaps, { query: { cidr: settled, ...(exceptId ? { exceptId } : {}) } }, { signal }),
    enabled: valid,
  });
}

export const createNetwork = (body: RouteBody<typeof routes.createNetwork>) => call(routes.createNetwork, { body });
export const patchNetwork = (id: string, body: RouteBody<typeof routes.patchNetwork>) => call(routes.patchNetwork, { params: { id }, body });
export const deleteNetwork = (id: string) => call(routes.deleteNetwork, { params: { id } });
export const startScan = (networkId: string) => call(routes.createScan, { body: { networkId } });
export const cancelScan = (sessionId: string) => call(routes.cancelScan, { params: { id: sessionId } });
