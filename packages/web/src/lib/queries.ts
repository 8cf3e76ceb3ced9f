import { type UseQueryResult, useInfiniteQuery, useQueries, useQuery } from '@tanstack/react-query';
import { LOOKUP_MAX_IDS, type RouteDef, routeOfCollection, routes } from '@surveyor/contract';
import { useCallback, useMemo } from 'react';
import { call } from './api';
import { collectionKeys, daemonKeys, jobKeys, sessionKeys } from './keys';
import type { CollectionName, CollectionPage, CollectionQuery, LookupResult, Site } from './types';

// The reads several features share, each a hook over the contract's route and a key of lib/keys.

/** The signed-in user, their organisation, role and CSRF token (`GET /api/v1/auth/me`). */
export function useMe() {
  return useQuery({
    queryKey: sessionKeys.me,
    queryFn: ({ signal }) => call(routes.me, {}, { signal }),
    staleTime: 60_000,
    retry: false,
  });
}

type Filters<N extends CollectionName> = Omit<CollectionQuery<N>, 'cursor'>;

/** One page of a collection with these filters and cursor. */
export function fetchPage<N extends CollectionName>(name: N, query: CollectionQuery<N>, signal?: AbortSignal): Promise<CollectionPage<N>> {
  // One generic place where the name picks the route: the union of eight routes narrows to N's by the table above.
  const route = routeOfCollection[name] as RouteDef;
  return call(route, { query } as never, { signal }) as Promise<CollectionPage<N>>;
}

/** The first page of a collection (for counts and small lookups). */
export function usePage<N extends CollectionName>(name: N, query: Filters<N>, enabled = true) {
  return useQuery({
    queryKey: collectionKeys(name).page(query),
    queryFn: ({ signal }) => fetchPage(name, query as CollectionQuery<N>, signal),
    enabled,
  });
}

/** A collection read page by page with its keyset cursor ("Load more"). */
export function useCollection<N extends CollectionName>(name: N, query: Filters<N>, enabled = true) {
  return useInfiniteQuery({
    queryKey: collectionKeys(name).list(query),
    initialPageParam: null as string | null,
    queryFn: ({ pageParam, signal }) => fetchPage(name, { ...query, cursor: pageParam ?? undefined } as CollectionQuery<N>, signal),
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
      queryKey: collectionKeys(kind).lookup(chunk),
      queryFn: ({ signal }: { signal: AbortSignal }) => call(routes.lookupByIds, { query: { [kind]: chunk.join(',') } }, { signal }),
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

/** Every job's status (`GET /api/v1/admin/jobs`, admins and owners). */
export function useJobs(enabled: boolean) {
  return useQuery({
    queryKey: jobKeys.all,
    queryFn: ({ signal }) => call(routes.adminJobs, {}, { signal }),
    enabled,
  });
}

/** The organisation's daemons, the quietest first (`GET /api/v1/daemons`). */
export function useDaemons(enabled = true) {
  return useQuery({
    queryKey: daemonKeys.all,
    queryFn: ({ signal }) => call(routes.listDaemons, {}, { signal }),
    enabled,
  });
}

/** Rows a page of an export reads at once. */
export const EXPORT_PAGE_SIZE = 200;

/**
 * Every page a paged read gives, following its cursor to the end (CSV export): `read` takes the
 * cursor (undefined first) and answers the rows and the next cursor (null or undefined at the end).
 */
export async function* followPages<T, C>(read: (cursor: C | undefined) => Promise<{ data: readonly T[]; next: C | null | undefined }>): AsyncGenerator<readonly T[]> {
  let cursor: C | undefined;
  do {
    const page = await read(cursor);
    yield page.data;
    cursor = page.next ?? undefined;
  } while (cursor !== undefined);
}

/** Every page of a collection with these filters (CSV export). */
export function collectionPages<N extends CollectionName>(name: N, query: Filters<N>, signal?: AbortSignal): AsyncGenerator<readonly CollectionPage<N>['data'][number][]> {
  return followPages<CollectionPage<N>['data'][number], string>(async (cursor) => {
    const page = await fetchPage(name, { ...query, limit: EXPORT_PAGE_SIZE, cursor } as CollectionQuery<N>, signal);
    return { data: page.data, next: page.hasMore ? page.nextCursor : null };
  });
}
