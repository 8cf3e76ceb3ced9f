import { type RouteBody, type SnapshotDiffKind, type SnapshotDiffSection, routePath, routes } from '@surveyor/contract';
import { useInfiniteQuery } from '@tanstack/react-query';
import { call } from '../../lib/api';
import { snapshotKeys } from '../../lib/keys';
import { EXPORT_PAGE_SIZE, followPages } from '../../lib/queries';

/** The link downloading a snapshot's signed attestation (admins and owners). */
export const attestationHref = (id: string) => routePath(routes.getSnapshotAttestation, { params: { id } });

export const createSnapshot = (body: RouteBody<typeof routes.createSnapshot>) => call(routes.createSnapshot, { body });

/** The changes from snapshot `against` to `id`, 100 a page, of one section and kind or all (`GET /api/v1/snapshots/{id}/diff`, internal). */
export function useSnapshotDiff(id: string, against: string, section: SnapshotDiffSection | undefined, kind: SnapshotDiffKind | undefined) {
  return useInfiniteQuery({
    queryKey: [...snapshotKeys.all, 'diff', id, against, section, kind],
    initialPageParam: null as string | null,
    queryFn: ({ pageParam, signal }) => call(routes.snapshotDiff, { params: { id }, query: { against, section, kind, limit: 100, cursor: pageParam ?? undefined } }, { signal }),
    getNextPageParam: (last) => last.nextCursor,
    // Two snapshots never change: their diff is fetched once.
    staleTime: Number.POSITIVE_INFINITY,
    enabled: against !== '',
  });
}

/** Every change from `against` to `id` of the section and kind (CSV export). */
export const snapshotDiffPages = (id: string, against: string, section: SnapshotDiffSection | undefined, kind: SnapshotDiffKind | undefined, signal: AbortSignal) =>
  followPages(async (cursor: string | undefined) => {
    const page = await call(routes.snapshotDiff, { params: { id }, query: { against, section, kind, limit: EXPORT_PAGE_SIZE, cursor } }, { signal });
    return { data: page.changes, next: page.nextCursor };
  });
