import { type RouteBody, routePath, routes } from '@surveyor/contract';
import { useQuery } from '@tanstack/react-query';
import { call } from '../../lib/api';

/** A view's drawing (nodes, edges, positions, share state), kept under its own root: a topology or site change refreshes it. */
export const viewKeys = { all: ['topology-graph'] as const, graph: (id: string | null) => ['topology-graph', id] as const };

/** The graph of view `id` (`GET /api/v1/topology/{id}/graph`, internal). */
export function useViewGraph(id: string | null) {
  return useQuery({
    queryKey: viewKeys.graph(id),
    queryFn: ({ signal }) => call(routes.getTopologyGraph, { params: { id: id! } }, { signal }),
    enabled: !!id,
  });
}

export const regenerateViews = () => call(routes.regenerateTopology);
export const shareView = (id: string, body: RouteBody<typeof routes.shareTopology>) => call(routes.shareTopology, { params: { id }, body });
export const saveNodePosition = (id: string, p: { nodeId: string; x: number; y: number }) => call(routes.saveTopologyPositions, { params: { id }, body: { positions: [p] } });
/** The link downloading the view in `format` (the browser follows it with the session cookie). */
export const exportHref = (id: string, format: 'mermaid' | 'drawio') => routePath(routes.exportTopology, { params: { id, format } });
