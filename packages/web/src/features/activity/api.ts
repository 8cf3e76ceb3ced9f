import { type AuditQuery, type EventListQuery, routes } from '@surveyor/contract';
import { keepPreviousData, useInfiniteQuery } from '@tanstack/react-query';
import type { z } from 'zod';
import { call } from '../../lib/api';
import { EXPORT_PAGE_SIZE, followPages } from '../../lib/queries';

// The event log and the audit trail (admins), both the newest first, page by page.

export type EventFilters = Pick<z.input<typeof EventListQuery>, 'kind' | 'subjectId' | 'since' | 'until'>;
export type AuditFilters = Omit<z.input<typeof AuditQuery>, 'cursor' | 'limit'>;

export const activityKeys = {
  events: (f: EventFilters) => ['activity', 'events', f] as const,
  audit: (f: AuditFilters) => ['activity', 'audit', f] as const,
};

export function useEventLog(f: EventFilters) {
  return useInfiniteQuery({
    queryKey: activityKeys.events(f),
    initialPageParam: undefined as number | undefined,
    queryFn: ({ pageParam, signal }) => call(routes.listEvents, { query: { ...f, order: 'desc', limit: 100, before: pageParam } }, { signal }),
    getNextPageParam: (last) => last.nextBefore ?? undefined,
    placeholderData: keepPreviousData,
  });
}

export function useAuditTrail(f: AuditFilters) {
  return useInfiniteQuery({
    queryKey: activityKeys.audit(f),
    initialPageParam: undefined as string | undefined,
    queryFn: ({ pageParam, signal }) => call(routes.listAudit, { query: { ...f, limit: 100, cursor: pageParam } }, { signal }),
    getNextPageParam: (last) => last.nextCursor ?? undefined,
    placeholderData: keepPreviousData,
  });
}

/** The whole event log matching `f`, the newest first (CSV export). */
export const eventPages = (f: EventFilters, signal: AbortSignal) =>
  followPages(async (before: number | undefined) => {
    const page = await call(routes.listEvents, { query: { ...f, order: 'desc', limit: EXPORT_PAGE_SIZE, before } }, { signal });
    return { data: page.data, next: page.nextBefore };
  });

/** The whole audit trail matching `f`, the newest first (CSV export). */
export const auditPages = (f: AuditFilters, signal: AbortSignal) =>
  followPages(async (cursor: string | undefined) => {
    const page = await call(routes.listAudit, { query: { ...f, limit: EXPORT_PAGE_SIZE, cursor } }, { signal });
    return { data: page.data, next: page.nextCursor };
  });
