import { z } from 'zod';
import { Uuid } from '../common.js';
import {
  type CollectionName,
  CreateNetworkRequest,
  CreateSnapshotRequest,
  HOST_SEARCH_RULES,
  Network,
  PatchVulnerabilityRequest,
  Snapshot,
  Vulnerability,
  collectionPages,
  listQueries,
  serviceFilters,
} from '../inventory.js';
import { type RouteDef, route } from '../route-def.js';

const collectionSummaries: Record<CollectionName, string> = {
  hosts: 'Hosts: addresses, MACs, names, OS and device type, first and last seen',
  services: 'Services: a port of a host and what runs on it',
  networks: 'Networks the organisation scans',
  sites: 'Sites',
  certificates: 'TLS certificates seen on hosts',
  vulnerabilities: 'Vulnerabilities (findings) on services',
  snapshots: 'Inventory snapshots',
  topologies: 'Topology views (read-only)',
};

/** What a collection's description adds to the common one (its own filters' rules). */
const collectionNotes: Partial<Record<CollectionName, string>> = {
  hosts:
    ` \`search\`: ${HOST_SEARCH_RULES} ` +
    '`gone`: a host is gone (`goneAt` set) once a completed scan session covering every one of its addresses no longer found it, and back (`goneAt` null) when a daemon reports it again; ' +
    '`gone=exclude` lists the hosts present (the console\'s default), `gone=only` the gone ones, and without it (`include`) every host is listed.',
};

function collectionRoute<const N extends CollectionName>(name: N) {
  return route({
    method: 'GET',
    url: `/api/v1/${name}` as `/api/v1/${N}`,
    operationId: `list${name[0]!.toUpperCase()}${name.slice(1)}` as const,
    summary: collectionSummaries[name],
    description:
      'Keyset-paginated in insertion order. `nextCursor` is opaque and bound to this collection, these filters and your organisation. ' +
      'An unknown parameter gives 400 `unknown_parameter`, a bad filter value 400 `invalid_filter`, a bad `limit` 400 `limit_out_of_range`, a bad cursor 400 `invalid_cursor`.' +
      (collectionNotes[name] ?? ''),
    tags: ['inventory'],
    auth: { kind: 'apiKey', scope: 'inventory:read' },
    collection: true,
    querystring: listQueries[name] as (typeof listQueries)[N],
    response: { 200: collectionPages[name] as (typeof collectionPages)[N] },
  });
}

/** The inventory collections: one keyset-paginated list each. */
export const inventoryReadRoutes = {
  listHosts: collectionRoute('hosts'),
  listServices: collectionRoute('services'),
  listNetworks: collectionRoute('networks'),
  listSites: collectionRoute('sites'),
  listCertificates: collectionRoute('certificates'),
  listVulnerabilities: collectionRoute('vulnerabilities'),
  listSnapshots: collectionRoute('snapshots'),
  listTopologies: collectionRoute('topologies'),
} as const satisfies Record<string, RouteDef>;

/** The read route of each collection, by collection name. */
export const routeOfCollection = {
  hosts: inventoryReadRoutes.listHosts,
  services: inventoryReadRoutes.listServices,
  networks: inventoryReadRoutes.listNetworks,
  sites: inventoryReadRoutes.listSites,
  certificates: inventoryReadRoutes.listCertificates,
  vulnerabilities: inventoryReadRoutes.listVulnerabilities,
  snapshots: inventoryReadRoutes.listSnapshots,
  topologies: inventoryReadRoutes.listTopologies,
} as const satisfies Record<CollectionName, RouteDef>;

/** How many services the filters of the services list select (the console's total; internal). */
export const ServiceCount = z.object({ total: z.number().int().describe('Services the same filters page through in `GET /api/v1/services`.') });

export const serviceCountRoutes = {
  countServices: route({
    method: 'GET',
    url: '/api/v1/services/count',
    operationId: 'countServices',
    summary: 'How many services the filters of `GET /api/v1/services` select',
    description: 'The same filters and the same matching as the collection (one function builds both queries). A bad filter value is 400 `invalid_filter`; an unknown parameter 400 `unknown_parameter`.',
    tags: ['console'],
    internal: true,
    auth: { kind: 'apiKey', scope: 'inventory:read' },
    collection: true,
    querystring: z.strictObject(serviceFilters),
    response: { 200: ServiceCount },
  }),
} as const satisfies Record<string, RouteDef>;

/** Changes to the inventory through API keys. */
export const inventoryWriteRoutes = {
  createNetwork: route({
    method: 'POST',
    url: '/api/v1/networks',
    operationId: 'createNetwork',
    summary: 'Add a network to scan',
    description: 'A CIDR with host bits set is refused (400), never truncated. A second network with the same CIDR gives 409 `duplicate`. A `siteId` of another organisation is 404.',
    tags: ['inventory'],
    auth: { kind: 'apiKey', scope: 'inventory:write' },
    body: CreateNetworkRequest,
    errors: ['not_found', 'duplicate'],
    response: { 201: Network },
  }),
  patchVulnerability: route({
    method: 'PATCH',
    url: '/api/v1/vulnerabilities/:id',
    operationId: 'patchVulnerability',
    summary: 'Change a vulnerability\'s state (acknowledge, mark false positive, reopen)',
    description:
      'Allowed moves: open → acknowledged | false_positive; acknowledged → open | false_positive; false_positive → open; resolved → none (only the matcher reopens it). ' +
      'Setting the current state is a 200 no-op. A refused move is 409 `invalid_transition` naming the allowed next states.',
    tags: ['inventory'],
    auth: { kind: 'apiKey', scope: 'inventory:write' },
    params: z.object({ id: Uuid }),
    body: PatchVulnerabilityRequest,
    errors: ['invalid_transition'],
    response: { 200: Vulnerability },
  }),
  createSnapshot: route({
    method: 'POST',
    url: '/api/v1/snapshots',
    operationId: 'createSnapshot',
    summary: 'Take an inventory snapshot now',
    description: '`stats` counts each entity type in one consistent read. `reason` defaults to `manual`; `scheduled` is reserved for the daily job (400).',
    tags: ['inventory'],
    auth: { kind: 'apiKey', scope: 'inventory:write' },
    body: CreateSnapshotRequest,
    errors: ['not_found'],
    response: { 201: Snapshot },
  }),
} as const satisfies Record<string, RouteDef>;

/** Every inventory route: the collections, then the writes. */
export const inventoryRoutes = { ...inventoryReadRoutes, ...inventoryWriteRoutes } as const satisfies Record<string, RouteDef>;
