import { SEARCH_HOST_COUNT_CAP, parseCidr, parseIp, serviceFilters } from '@surveyor/contract';
import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.js';
import * as inventoryRepo from '../inventory/inventory.repo.js';
import { toHost, toNetwork, toService } from '../inventory/inventory.service.js';
import { classifySearch } from '../inventory/search.js';
import * as repo from './search.repo.js';

/** "apache 2.4.49": a product, then a last word that starts with a digit (a `v` before it allowed). */
const PRODUCT_VERSION = /^(.{2,}?)\s+v?(\d\S*)$/i;

/**
 * The services filters the search box applies for `q` (and "see all" opens): a CPE by CPE, a
 * "product version" pair by both, anything else by product.
 */
export function serviceFilterOf(q: string): { product?: string; version?: string; cpe?: string } {
  if (/^cpe:/i.test(q)) {
    const cpe = serviceFilters.cpe.safeParse(q);
    if (cpe.success && cpe.data) return { cpe: cpe.data };
  }
  const pair = PRODUCT_VERSION.exec(q);
  if (pair) return { product: pair[1]!, version: pair[2]! };
  return { product: q };
}

/**
 * One term across hosts (the inventory's host search), present services (the services filters),
 * CVEs of the organisation's findings and networks: `limit` of each and how many match. Hosts are
 * counted up to SEARCH_HOST_COUNT_CAP (their search reads whole rows).
 */
export async function search(db: Kysely<DB>, organisationId: string, q: string, limit: number) {
  const filter = serviceFilterOf(q);
  const address = parseIp(q) || parseCidr(q) ? q : null;
  const [hostRows, serviceRows, serviceTotal, cves, networks] = await Promise.all([
    inventoryRepo.listHosts(db, { organisationId, after: 0, take: SEARCH_HOST_COUNT_CAP + 1 }, { search: classifySearch(q), gone: 'exclude' }),
    inventoryRepo.listServices(db, { organisationId, after: 0, take: limit }, { ...filter, gone: 'exclude' }),
    inventoryRepo.countServices(db, organisationId, { ...filter, gone: 'exclude' }),
    repo.cvesByPrefix(db, organisationId, q, limit),
    repo.networkIds(db, organisationId, q, address, limit),
  ]);
  const networkRows = networks.ids.length ? await inventoryRepo.listNetworks(db, { organisationId, after: 0, take: networks.ids.length }, { ids: networks.ids }) : [];
  return {
    q,
    hosts: { data: hostRows.slice(0, limit).map(toHost), total: Math.min(hostRows.length, SEARCH_HOST_COUNT_CAP), capped: hostRows.length > SEARCH_HOST_COUNT_CAP },
    services: { data: serviceRows.map(toService), total: serviceTotal, capped: false, filter },
    cves: {
      data: cves.rows.map((r) => ({ cveId: r.cve_id, summary: r.summary, severity: r.severity as 'critical', score: r.score === null ? null : Number(r.score), findings: r.findings, hosts: r.hosts })),
      total: cves.total,
      capped: false,
    },
    networks: { data: networkRows.map(toNetwork), total: networks.total, capped: false },
  };
}
