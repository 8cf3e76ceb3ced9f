import type { CollectionName } from './types';

// Query keys of the resources more than one feature reads. Each key starts with its resource's
// root, so invalidating `[root]` refreshes every list, page, lookup and detail of it; features keep
// the keys only they use in their own api.ts, built the same way.

/** The keys of a collection (`GET /api/v1/<name>`) and of the records looked up from it. */
export function collectionKeys<N extends CollectionName>(name: N) {
  return {
    all: [name] as const,
    page: (query: object) => [name, 'page', query] as const,
    list: (query: object) => [name, 'list', query] as const,
    lookup: (ids: readonly string[]) => [name, 'lookup', ids] as const,
    one: (id: string) => [name, 'one', id] as const,
  };
}

export const hostKeys = collectionKeys('hosts');
export const serviceKeys = collectionKeys('services');
export const networkKeys = collectionKeys('networks');
export const siteKeys = collectionKeys('sites');
export const certificateKeys = collectionKeys('certificates');
export const vulnerabilityKeys = collectionKeys('vulnerabilities');
export const snapshotKeys = collectionKeys('snapshots');
export const topologyKeys = collectionKeys('topologies');

/** The overview's own figures (`GET /api/v1/overview`), which most changes move. */
export const overviewKeys = { all: ['overview'] as const };
export const sessionKeys = { me: ['me'] as const };
export const daemonKeys = { all: ['daemons'] as const, one: (id: string) => ['daemons', 'one', id] as const };
export const jobKeys = { all: ['jobs'] as const };
export const scanKeys = { all: ['scans'] as const, network: (networkId: string, limit: number) => ['scans', 'network', networkId, limit] as const };
/** The header's search box (`GET /api/v1/search`): one entry per term. */
export const searchKeys = { all: ['search'] as const, term: (q: string) => ['search', q] as const };
/** The organisation's members (Settings → Members), whose roles the SCIM mapping also moves. */
export const memberKeys = { all: ['members'] as const };
/** API keys (Settings → API keys), SCIM tokens among them (Settings → SCIM). */
export const apiKeyKeys = { all: ['keys'] as const };
