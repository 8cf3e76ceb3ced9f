import { type RouteBody, type TopologyGraph, type TopologyGroupBy, routePath, routes } from '@surveyor/contract';
import { keepPreviousData, useQueries, useQuery } from '@tanstack/react-query';
import { call, consoleTransport } from '../../lib/api';
import { hostKeys, vulnerabilityKeys } from '../../lib/keys';
import { fetchPage, usePage } from '../../lib/queries';

/** A view's drawing (nodes, edges, positions, share state), kept under its own root: a topology or site change refreshes it. */
export const viewKeys = {
  all: ['topology-graph'] as const,
  view: (id: string | null) => ['topology-graph', id] as const,
  graph: (id: string | null, q: GraphQuery) => ['topology-graph', id, q] as const,
  search: (id: string | null, q: string) => ['topology-graph', id, 'search', q] as const,
};

/**
 * What is on screen: the groups open (`null`: the server's default, every group for a small view
 * and none for a large one; `''`: none; `'all'`; or group node ids joined by commas) and the filters.
 */
export type GraphQuery = { expand: string | null; vlan: number | null; service: string | null };

const graphQuery = (q: GraphQuery) => ({ expand: q.expand || undefined, vlan: q.vlan ?? undefined, service: q.service ?? undefined });
/** `expand=` (none) is sent as such: routePath leaves empty values out, which would mean the server's default. */
const keepNone = (path: string, q: GraphQuery) => (q.expand === '' ? `${path}${path.includes('?') ? '&' : '?'}expand=` : path);

const transport = consoleTransport();

/** The graph of view `id` with `q` (`GET /api/v1/topology/{id}/graph`, internal); the previous drawing stays while the next loads. */
export function useViewGraph(id: string | null, q: GraphQuery) {
  return useQuery({
    queryKey: viewKeys.graph(id, q),
    queryFn: async ({ signal }) => (await transport({ method: 'GET', path: keepNone(routePath(routes.getTopologyGraph, { params: { id: id! }, query: graphQuery(q) }), q), route: routes.getTopologyGraph }, { signal })).body as TopologyGraph,
    enabled: !!id,
    placeholderData: keepPreviousData,
  });
}

/** Nodes of view `id` matching `q` by name, address or service, open group or not (at most 20). */
export function useViewSearch(id: string | null, q: string) {
  return useQuery({
    queryKey: viewKeys.search(id, q),
    queryFn: ({ signal }) => call(routes.searchTopology, { params: { id: id! }, query: { q } }, { signal }),
    enabled: !!id && q.length > 0,
    placeholderData: keepPreviousData,
    staleTime: 15_000,
  });
}

export const regenerateViews = () => call(routes.regenerateTopology);
export const regenerateView = (id: string) => call(routes.regenerateTopologyView, { params: { id } });
export const groupView = (id: string, groupBy: TopologyGroupBy) => call(routes.updateTopology, { params: { id }, body: { groupBy } });
export const shareView = (id: string, body: RouteBody<typeof routes.shareTopology>) => call(routes.shareTopology, { params: { id }, body });
/** Saves absolute positions; the server keeps a member's relative to its group, and a group moved carries its members. */
export const saveNodePositions = (id: string, positions: { nodeId: string; x: number; y: number }[]) => call(routes.saveTopologyPositions, { params: { id }, body: { positions } });
/** The link downloading the view in `format` as it is on screen (the browser follows it with the session cookie). */
export const exportHref = (id: string, format: 'mermaid' | 'drawio', q: GraphQuery) => keepNone(routePath(routes.exportTopology, { params: { id, format }, query: graphQuery(q) }), q);

// The side panel's reads of a host: the same routes and keys as the host page, so either fills the other's cache.

/** One host by id (the hosts search matches a UUID to the host id): null when the organisation has none. */
export function useHostRow(id: string) {
  return useQuery({
    queryKey: hostKeys.one(id),
    queryFn: async ({ signal }) => (await fetchPage('hosts', { search: id, limit: 1 }, signal)).data[0] ?? null,
  });
}

/** A host's services (the first 100). */
export const useHostServices = (hostId: string) => usePage('services', { hostId, limit: 100 });

/** The findings of these services, one query each (the findings API filters by service, not host). */
export function useServiceFindings(serviceIds: readonly string[]) {
  return useQueries({
    queries: serviceIds.map((serviceId) => ({
      queryKey: vulnerabilityKeys.page({ serviceId, limit: 500 }),
      queryFn: ({ signal }: { signal: AbortSignal }) => fetchPage('vulnerabilities', { serviceId, limit: 500 }, signal),
    })),
  });
}

/** A host's callers and destinations over the last 24 hours of flows (`GET /api/v1/hosts/{id}/topology`). */
export function useHostFlows(hostId: string) {
  return useQuery({
    queryKey: [...hostKeys.all, 'topology', hostId, 24] as const,
    queryFn: ({ signal }) => call(routes.getHostTopology, { params: { id: hostId }, query: { windowHours: 24 } }, { signal }),
  });
}
