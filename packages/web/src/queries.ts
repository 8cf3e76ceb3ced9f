import { type QueryClient, type UseQueryResult, useInfiniteQuery, useQueries, useQuery } from '@tanstack/react-query';
import { LOOKUP_MAX_IDS, isUuid } from '@surveyor/contract';
import { useCallback, useMemo } from 'react';
import { api } from './api';
import type { CollectionName, CollectionPage, CollectionQuery, DaemonList, HostTopology, JobStatusList, LookupResult, Overview, ScanSession, SessionInfo, Site } from './types';

// Query keys start with the collection (or resource) name, so a live event invalidates by prefix.

export const meKey = ['me'] as const;

export function useMe() {
  return useQuery({
    queryKey: meKey,
    queryFn: ({ signal }) => api<SessionInfo>('/api/v1/auth/me', { signal }),
    staleTime: 60_000,
    retry: false,
  });
}

type Filters<N extends CollectionName> = Omit<CollectionQuery<N>, 'cursor'>;

/** The first page of a collection (for counts and small lookups). */
export function usePage<N extends CollectionName>(name: N, query: Filters<N>, enabled = true) {
  return useQuery({
    queryKey: [name, 'page', query],
    queryFn: ({ signal }) => api<CollectionPage<N>>(`/api/v1/${name}`, { query: query as Record<string, string>, signal }),
    enabled,
  });
}

/** A collection read page by page with its keyset cursor ("Load more"). */
export function useCollection<N extends CollectionName>(name: N, query: Filters<N>, enabled = true) {
  return useInfiniteQuery({
    queryKey: [name, 'list', query],
    initialPageParam: null as string | null,
    queryFn: ({ pageParam, signal }) =>
      api<CollectionPage<N>>(`/api/v1/${name}`, { query: { ...(query as Record<string, string>), cursor: pageParam ?? undefined }, signal }),
    getNextPageParam: (last) => (last.hasMore ? last.nextCursor : null),
    enabled,
  });
}

type LookupKind = keyof LookupResult;
type LookupItem<K extends LookupKind> = LookupResult[K][number];

/**
 * The hosts, sites or networks of these ids, by id (`GET /api/v1/lookup`, internal): the names of
 * the ids a page shows, however long the collection. Ids go 100 to a call, in the order given, so
 * the calls of rows already shown stay cached as "Load more" adds rows.
 */
export function useLookup<K extends LookupKind>(kind: K, ids: readonly (string | null | undefined)[]) {
  const unique = [...new Set(ids.filter((i): i is string => !!i))];
  const chunks: string[][] = [];
  for (let i = 0; i < unique.length; i += LOOKUP_MAX_IDS) chunks.push(unique.slice(i, i + LOOKUP_MAX_IDS));
  const combine = useCallback(
    (results: UseQueryResult<LookupResult>[]) => ({
      byId: new Map<string, LookupItem<K>>(results.flatMap((r) => (r.data?.[kind] ?? []) as LookupItem<K>[]).map((item) => [item.id, item])),
      pending: results.some((r) => r.isPending),
      error: results.find((r) => r.error)?.error ?? null,
    }),
    [kind],
  );
  return useQueries({
    queries: chunks.map((chunk) => ({
      queryKey: [kind, 'lookup', chunk],
      queryFn: ({ signal }: { signal: AbortSignal }) => api<LookupResult>('/api/v1/lookup', { query: { [kind]: chunk.join(',') }, signal }),
    })),
    combine,
  });
}

/** Hosts by id among the ids shown (findings, services, certificates). */
export const useHostNames = (ids: readonly string[]) => useLookup('hosts', ids).byId;

/** Sites by id among the ids shown. */
export const useSiteNames = (ids: readonly (string | null)[]) => useLookup('sites', ids).byId;

/** The first 500 sites, by id: the choices of a site picker. */
export function useSites() {
  const q = usePage('sites', { limit: 500 });
  return useMemo(() => new Map<string, Site>((q.data?.data ?? []).map((s) => [s.id, s])), [q.data]);
}

/** One host by id (the hosts search matches a UUID to the host id). */
export function useHost(id: string) {
  return useQuery({
    queryKey: ['hosts', 'one', id],
    queryFn: async ({ signal }) => {
      const page = await api<CollectionPage<'hosts'>>('/api/v1/hosts', { query: { search: id, limit: 1 }, signal });
      return page.data[0] ?? null;
    },
  });
}

export function useJobs(enabled: boolean) {
  return useQuery({
    queryKey: ['jobs'],
    queryFn: ({ signal }) => api<JobStatusList>('/api/v1/admin/jobs', { signal }),
    enabled,
  });
}

/** The organisation's daemons, the quietest first (`GET /api/v1/daemons`). */
export function useDaemons() {
  return useQuery({
    queryKey: ['daemons'],
    queryFn: ({ signal }) => api<DaemonList>('/api/v1/daemons', { signal }),
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

/** The organisation's networks (the first 500), by name order of the API. */
export function useNetworks() {
  return usePage('networks', { limit: 500 });
}

/** One network by id (`GET /api/v1/lookup?networks=`): null when the organisation has none of that id. */
export function useNetwork(id: string) {
  return useQuery({
    queryKey: ['networks', 'one', id],
    queryFn: async ({ signal }) => (isUuid(id) ? ((await api<LookupResult>('/api/v1/lookup', { query: { networks: id }, signal })).networks[0] ?? null) : null),
  });
}

/** A network's scan sessions, newest first (`GET /api/v1/scans?networkId=`, internal). */
export function useNetworkScans(networkId: string, limit = 20) {
  return useQuery({
    queryKey: ['scans', 'network', networkId, limit],
    queryFn: ({ signal }) => api<{ data: ScanSession[] }>('/api/v1/scans', { query: { networkId, limit }, signal }),
  });
}

/** The overview's figures no list answers: sessions per state, snapshot and feed ages, expiring certificates. */
export function useOverview() {
  return useQuery({
    queryKey: ['overview'],
    queryFn: ({ signal }) => api<Overview>('/api/v1/overview', { signal }),
  });
}

/** A host's topology over the default window (24 h): its LLDP/CDP neighbours among the rest. */
export function useHostTopology(hostId: string, windowHours = 24) {
  return useQuery({
    queryKey: ['topology', hostId, windowHours],
    queryFn: ({ signal }) => api<HostTopology>(`/api/v1/hosts/${hostId}/topology`, { query: { windowHours }, signal }),
  });
}

/** What each live event (`<type>.<action>`) makes stale. */
export const invalidatedBy: Record<string, string[][]> = {
  host: [['hosts'], ['overview']],
  service: [['services'], ['hosts']],
  vulnerability: [['vulnerabilities'], ['overview']],
  job: [['jobs']],
  scan: [['hosts'], ['services'], ['jobs'], ['scans'], ['networks'], ['certificates'], ['topology'], ['overview']],
  network: [['networks'], ['scans']],
  daemon: [['daemons'], ['overview']],
  snapshot: [['snapshots'], ['overview']],
  site: [['sites'], ['daemons']],
};

export function invalidateAll(client: QueryClient): void {
  void client.invalidateQueries({ predicate: (q) => q.queryKey[0] !== 'me' });
}
