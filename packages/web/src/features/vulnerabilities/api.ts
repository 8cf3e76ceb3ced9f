import { type RouteBody, routes } from '@surveyor/contract';
import { keepPreviousData, useInfiniteQuery, useQuery } from '@tanstack/react-query';
import type { z } from 'zod';
import type { FindingsQuery } from '@surveyor/contract';
import { call } from '../../lib/api';
import { vulnerabilityKeys } from '../../lib/keys';
import { EXPORT_PAGE_SIZE, followPages } from '../../lib/queries';

// Triage: the findings list and its advisories (internal routes), bulk moves, a finding's history.
// Kept under the vulnerabilities' root, so a finding changed anywhere refreshes them.

export type FindingFilters = Omit<z.input<typeof FindingsQuery>, 'cursor' | 'limit'>;

export const triageKeys = {
  findings: (f: FindingFilters) => [...vulnerabilityKeys.all, 'triage', f] as const,
  advisories: (f: FindingFilters) => [...vulnerabilityKeys.all, 'advisories', f] as const,
  history: (id: string) => [...vulnerabilityKeys.all, 'history', id] as const,
};

/** The findings matching `f`, 100 a page, the most severe first ("Load more" for the next). */
export function useFindings(f: FindingFilters, enabled = true) {
  return useInfiniteQuery({
    queryKey: triageKeys.findings(f),
    initialPageParam: null as string | null,
    queryFn: ({ pageParam, signal }) => call(routes.listFindings, { query: { ...f, limit: 100, cursor: pageParam ?? undefined } }, { signal }),
    getNextPageParam: (last) => (last.hasMore ? last.nextCursor : null),
    placeholderData: keepPreviousData,
    enabled,
  });
}

/** The advisories of the findings matching `f`, one row each. */
export function useAdvisoryFindings(f: Omit<FindingFilters, 'cveId'>) {
  return useInfiniteQuery({
    queryKey: triageKeys.advisories(f),
    initialPageParam: null as string | null,
    queryFn: ({ pageParam, signal }) => call(routes.listAdvisoryFindings, { query: { ...f, limit: 100, cursor: pageParam ?? undefined } }, { signal }),
    getNextPageParam: (last) => (last.hasMore ? last.nextCursor : null),
    placeholderData: keepPreviousData,
  });
}

export function useFindingHistory(id: string) {
  return useQuery({ queryKey: triageKeys.history(id), queryFn: ({ signal }) => call(routes.findingHistory, { params: { id } }, { signal }) });
}

export const bulkMove = (body: RouteBody<typeof routes.bulkFindings>) => call(routes.bulkFindings, { body });

/** Every finding matching `f` (CSV export). */
export const findingPages = (f: FindingFilters, signal: AbortSignal) =>
  followPages(async (cursor: string | undefined) => {
    const page = await call(routes.listFindings, { query: { ...f, limit: EXPORT_PAGE_SIZE, cursor } }, { signal });
    return { data: page.data, next: page.hasMore ? page.nextCursor : null };
  });

/** Every advisory row matching `f` (CSV export). */
export const advisoryPages = (f: Omit<FindingFilters, 'cveId'>, signal: AbortSignal) =>
  followPages(async (cursor: string | undefined) => {
    const page = await call(routes.listAdvisoryFindings, { query: { ...f, limit: EXPORT_PAGE_SIZE, cursor } }, { signal });
    return { data: page.data, next: page.hasMore ? page.nextCursor : null };
  });
