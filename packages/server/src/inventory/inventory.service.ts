import { type CertificateExpiryWindow, type CollectionName, type VulnerabilityState, certificateWindowDays, listQueries, vulnerabilityPatchMoves } from '@surveyor/contract';
import type { Kysely } from 'kysely';
import type { z } from 'zod';
import { type Actor, recordAudit } from '../audit/audit.repo.js';
import type { ArrayRows, Database } from '../db/database.js';
import type { DB } from '../db/schema.js';
import { AppError } from '../errors.js';
import { logChanges } from '../events/changes.js';
import type { CursorCodec } from './cursor.js';
import * as repo from './inventory.repo.js';
import { type ArrayPageWriter, type Field, arrayPageWriter } from './page-json.js';
import { classifySearch } from './search.js';
import { distributionOf } from '../findings/findings.service.js';
import { toSnapshot } from '../snapshots/snapshots.service.js';
import { markNetworkViewsStale } from '../topology/dependencies.js';


type Row<F extends (...a: never[]) => Promise<unknown[]>> = Awaited<ReturnType<F>>[number];

const toSite = (r: Row<typeof repo.listSites>) => ({
  id: r.id, code: r.code, name: r.name, description: r.description, createdAt: r.created_at, updatedAt: r.updated_at,
});

export const toNetwork = (r: Row<typeof repo.listNetworks>) => ({
  id: r.id,
  siteId: r.site_id,
  name: r.name,
  cidr: r.cidr_text,
  family: r.family as 4 | 6,
  excludeCidrs: r.exclude_cidrs_text,
  scanIntervalMinutes: r.scan_interval_minutes,
  topPortsTcp: r.top_ports_tcp,
  topPortsUdp: r.top_ports_udp,
  nmap: { enabled: r.nmap_enabled, scripts: r.nmap_scripts as ('default' | 'safe' | 'version' | 'vuln')[] },
  lastScanAt: r.last_scan_at,
  activeSessionId: r.active_session_id,
  schedule: r.schedule_checked_at
    ? { checkedAt: r.schedule_checked_at, outcome: r.schedule_outcome as 'queued' | 'skipped', detail: r.schedule_detail, sessionId: r.schedule_session_id, daemonId: r.schedule_daemon_id }
    : null,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

export const toHost = (r: Row<typeof repo.listHosts>) => ({
  id: r.id,
  siteId: r.site_id,
  hostname: r.hostname,
  fqdn: r.fqdn,
  addresses: JSON.parse(r.addresses_json) as string[],
  macs: JSON.parse(r.macs_json) as string[],
  vendor: r.vendor,
  os: r.os,
  deviceType: r.device_type,
  parentHostId: r.parent_host_id,
  openPortCount: r.open_port_count,
  firstSeenAt: r.first_seen_at,
  lastSeenAt: r.last_seen_at,
  goneAt: r.gone_at,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

/** The fields of a page of hosts, each the key of `toHost` and the row's column it writes. */
const hostFields: Field[] = [
  { key: 'id', column: 'id', kind: 'uuid' },
  { key: 'siteId', column: 'site_id', kind: 'uuid', nullable: true },
  { key: 'hostname', column: 'hostname', kind: 'text', nullable: true },
  { key: 'fqdn', column: 'fqdn', kind: 'text', nullable: true },
  { key: 'addresses', column: 'addresses_json', kind: 'json' },
  { key: 'macs', column: 'macs_json', kind: 'json' },
  { key: 'vendor', column: 'vendor', kind: 'text', nullable: true },
  { key: 'os', column: 'os', kind: 'text', nullable: true },
  { key: 'deviceType', column: 'device_type', kind: 'text', nullable: true },
  { key: 'parentHostId', column: 'parent_host_id', kind: 'uuid', nullable: true },
  { key: 'openPortCount', column: 'open_port_count', kind: 'int' },
  { key: 'firstSeenAt', column: 'first_seen_at', kind: 'time' },
  { key: 'lastSeenAt', column: 'last_seen_at', kind: 'time' },
  { key: 'goneAt', column: 'gone_at', kind: 'time', nullable: true },
  { key: 'createdAt', column: 'created_at', kind: 'time' },
  { key: 'updatedAt', column: 'updated_at', kind: 'time' },
];

/** A page of hosts as JSON text from its rows as arrays (`repo.listHostsArrays`): what `toHost` of each row serialises to (page-json.test.ts). */
export const hostArrayPage = arrayPageWriter(hostFields);

export const toService = (r: Row<typeof repo.listServices>) => ({
  id: r.id,
  hostId: r.host_id,
  address: r.address_text,
  port: r.port,
  protocol: r.protocol as 'tcp' | 'udp' | 'sctp',
  state: r.state as 'open' | 'closed' | 'filtered',
  name: r.name,
  product: r.product,
  vendor: r.vendor,
  version: r.version,
  cpe: r.cpe,
  banner: r.banner,
  signatureId: r.signature_id,
  signatureSource: r.signature_source as 'core' | 'custom' | 'nmap' | null,
  confidence: r.confidence,
  firstSeenAt: r.first_seen_at,
  lastSeenAt: r.last_seen_at,
  goneAt: r.gone_at,
  exposedVia: r.exposed_via,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

const toCertificate = (r: Row<typeof repo.listCertificates>) => ({
  id: r.id,
  hostId: r.host_id,
  address: r.address_text,
  port: r.port,
  subject: r.subject,
  issuer: r.issuer,
  notBefore: r.not_before,
  notAfter: r.not_after,
  fingerprint: r.sha256,
  trustStatus: r.trust_status as 'trusted',
  state: r.state,
  firstSeenAt: r.first_seen_at,
  lastSeenAt: r.last_seen_at,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

export const toVulnerability = (r: Row<typeof repo.listVulnerabilities>) => ({
  id: r.id,
  serviceId: r.service_id,
  hostId: r.host_id,
  cveId: r.cve_id,
  advisoryId: r.advisory_id,
  summary: r.summary,
  severity: r.severity as 'critical',
  score: r.score === null ? null : Number(r.score),
  vector: r.vector,
  matchedCpe: r.matched_cpe,
  distribution: distributionOf(r.distribution),
  state: r.state as VulnerabilityState,
  note: r.note,
  firstSeenAt: r.first_seen_at,
  lastSeenAt: r.last_seen_at,
  stateChangedAt: r.state_changed_at,
  resolvedAt: r.resolved_at,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

const toTopology = (r: Row<typeof repo.listTopologies>) => ({
  id: r.id,
  siteId: r.site_id,
  kind: r.kind as 'network' | 'application',
  status: r.status as 'pending',
  name: r.name,
  nodeCount: r.node_count,
  edgeCount: r.edge_count,
  builtAt: r.built_at,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

type Query<N extends CollectionName> = z.output<(typeof listQueries)[N]>;

/** A certificate expiry window of the contract as of `now`. */
export function expiryWindow(w: CertificateExpiryWindow, now: Date): repo.ExpiryWindow {
  return w === 'expired' ? { kind: 'expired', now } : { kind: 'within', now, days: certificateWindowDays[w] };
}

type PageRow = { seq: number };

/** A page of items: `limit` items after the cursor, and the cursor of the next page when more follow. */
type ItemPage = { data: unknown[]; nextCursor: string | null; hasMore: boolean };

/**
 * Per collection, one page: `limit` rows after a position, as the contract's items, or where the
 * collection has a writer of the whole page as JSON text straight from its rows (page-json.ts) and
 * `text` asks for it, as that text. Each collection's row type stays inside its lister.
 */
type Lister<N extends CollectionName> = (
  db: Kysely<DB>,
  p: repo.PageArgs,
  q: Query<N>,
  limit: number,
  cursorAfter: (seq: number) => string,
  text: PageStatements | undefined,
) => Promise<ItemPage | string>;

/** Where pages of a fixed shape run as prepared statements: the web process's database, outside any transaction. */
type PageStatements = Pick<Database, 'prepared' | 'preparedArrays'>;

function lister<N extends CollectionName, R extends PageRow>(l: {
  rows: (db: Kysely<DB>, p: repo.PageArgs, q: Query<N>) => Promise<R[]>;
  item: (r: R) => unknown;
  /** The page's rows as arrays, and their writer of the page's JSON text: no object per row. */
  arrays?: { rows: (db: Kysely<DB>, run: Database['preparedArrays'], p: repo.PageArgs, q: Query<N>) => Promise<ArrayRows>; write: ArrayPageWriter };
}): Lister<N> {
  return async (db, p, q, limit, cursorAfter, text) => {
    if (text && l.arrays) {
      const { columns, rows } = await l.arrays.rows(db, text.preparedArrays, p, q);
      const hasMore = rows.length > limit;
      if (hasMore) rows.length = limit;
      return l.arrays.write(columns, rows, hasMore ? cursorAfter(seqOf(columns, rows[limit - 1]!)) : null, hasMore);
    }
    const rows = await l.rows(db, p, q);
    const hasMore = rows.length > limit;
    if (hasMore) rows.length = limit;
    const nextCursor = hasMore ? cursorAfter(rows[limit - 1]!.seq) : null;
    return { data: rows.map(l.item), nextCursor, hasMore };
  };
}

/** The position (`seq`) of a row of values. */
function seqOf(columns: readonly string[], row: readonly unknown[]): number {
  const seq = row[columns.indexOf('seq')];
  if (typeof seq !== 'number') throw new Error('A page row has no numeric seq');
  return seq;
}

/** The hosts page's query as the repository's filters. */
const hostFilters = (q: Query<'hosts'>): repo.HostFilters => ({
  siteId: q.siteId,
  search: q.search === undefined ? undefined : classifySearch(q.search),
  gone: q.gone,
  source: q.source,
});

const listers: { [N in CollectionName]: Lister<N> } = {
  sites: lister({ rows: (db, p) => repo.listSites(db, p), item: toSite }),
  networks: lister({ rows: (db, p, q) => repo.listNetworks(db, p, q), item: toNetwork }),
  hosts: lister({
    rows: (db, p, q: Query<'hosts'>) => repo.listHosts(db, p, hostFilters(q)),
    item: toHost,
    arrays: {
      rows: (db, run, p, q: Query<'hosts'>) => repo.listHostsArrays(db, run, p, hostFilters(q)),
      write: hostArrayPage,
    },
  }),
  services: lister({ rows: (db, p, q: Query<'services'>) => repo.listServices(db, p, q), item: toService }),
  certificates: lister({
    rows: (db, p, q: Query<'certificates'>) =>
      repo.listCertificates(db, p, {
        ...q,
        expiring: q.expiring === undefined ? undefined : expiryWindow(q.expiring, new Date()),
        current: q.current === undefined ? undefined : q.current === 'true',
      }),
    item: toCertificate,
  }),
  vulnerabilities: lister({ rows: (db, p, q: Query<'vulnerabilities'>) => repo.listVulnerabilities(db, p, q), item: toVulnerability }),
  snapshots: lister({ rows: (db, p, q: Query<'snapshots'>) => repo.listSnapshots(db, p, q), item: toSnapshot }),
  topologies: lister({ rows: (db, p, q: Query<'topologies'>) => repo.listTopologies(db, p, q), item: toTopology }),
};

/** One page of a collection, as items or (`prepared` given, and a writer for the collection) as its JSON text. */
function page<N extends CollectionName>(db: Kysely<DB>, cursors: CursorCodec, organisationId: string, name: N, query: Query<N>, statements: PageStatements | undefined) {
  const { limit, cursor, ...filters } = query as Query<N> & { limit: number; cursor?: string };
  const after = cursor ? cursors.decode(organisationId, name, filters, cursor) : 0;
  const desc = (filters as { order?: 'asc' | 'desc' }).order === 'desc';
  const list: Lister<N> = listers[name];
  return list(db, { organisationId, after, take: limit + 1, desc, prepared: statements?.prepared }, query, limit, (seq) => cursors.encode(organisationId, name, filters, seq), statements);
}

/** One page of a collection: `limit` items after the cursor, and the cursor of the next page when more follow. */
export async function listCollection<N extends CollectionName>(db: Kysely<DB>, cursors: CursorCodec, organisationId: string, name: N, query: Query<N>): Promise<ItemPage> {
  const items = await page(db, cursors, organisationId, name, query, undefined);
  if (typeof items === 'string') throw new Error('a page of items was asked, not its text');
  return items;
}

/**
 * The page the collection's route answers: the same page as listCollection, as JSON text where
 * the collection has a page writer (the same text its items would serialise to), else as items.
 * `statements`: the web process's database (outside any transaction), through which pages of a
 * fixed shape run as prepared statements.
 */
export function collectionPage<N extends CollectionName>(db: Kysely<DB>, cursors: CursorCodec, organisationId: string, name: N, query: Query<N>, statements: PageStatements) {
  return page(db, cursors, organisationId, name, query, statements);
}

/** How many services the filters of the services list select (`GET /api/v1/services/count`). */
export async function countServices(db: Kysely<DB>, organisationId: string, filters: repo.ServiceFilters) {
  return { total: await repo.countServices(db, organisationId, filters) };
}

/** The hosts, sites and networks of the organisation among these ids (absent ids are left out), as their collections list them. */
export async function lookup(db: Kysely<DB>, organisationId: string, q: { hosts?: string[] | undefined; sites?: string[] | undefined; networks?: string[] | undefined }) {
  const among = (ids: string[]) => ({ organisationId, after: 0, take: ids.length });
  const [hosts, sites, networks] = await Promise.all([
    q.hosts ? repo.listHosts(db, among(q.hosts), { ids: q.hosts }).then((r) => r.map(toHost)) : [],
    q.sites ? repo.listSites(db, among(q.sites), { ids: q.sites }).then((r) => r.map(toSite)) : [],
    q.networks ? repo.listNetworks(db, among(q.networks), { ids: q.networks }).then((r) => r.map(toNetwork)) : [],
  ]);
  return { hosts, sites, networks };
}

// --- writes -----------------------------------------------------------------------------------

/** Adds a network. 404 for a site of another organisation, 409 duplicate for a CIDR it already has. */
export async function createNetwork(
  db: Kysely<DB>,
  actor: Actor & { organisationId: string },
  input: { name: string; cidr: string; siteId?: string | undefined; scanIntervalMinutes?: number | undefined; excludeCidrs?: string[] | undefined; topPortsTcp?: number | undefined; topPortsUdp?: number | undefined; nmap?: { enabled: boolean; scripts: string[] } | undefined },
) {
  return db.transaction().execute(async (trx) => {
    if (input.siteId && !(await repo.findSite(trx, actor.organisationId, input.siteId))) throw new AppError('not_found', `No site ${input.siteId}.`);
    const id = await repo.insertNetwork(trx, {
      organisationId: actor.organisationId,
      siteId: input.siteId ?? null,
      name: input.name,
      cidr: input.cidr,
      excludeCidrs: input.excludeCidrs ?? [],
      scanIntervalMinutes: input.scanIntervalMinutes ?? null,
      topPortsTcp: input.topPortsTcp ?? 1000,
      topPortsUdp: input.topPortsUdp ?? 0,
      nmapEnabled: input.nmap?.enabled ?? false,
      nmapScripts: [...new Set(input.nmap?.scripts ?? [])],
    });
    if (!id) throw new AppError('duplicate', `The organisation already has a network ${input.cidr}.`);
    const network = toNetwork((await repo.findNetwork(trx, actor.organisationId, id))!);
    // The network views that place addresses in networks no longer match the inventory.
    await markNetworkViewsStale(trx, actor.organisationId, { siteId: network.siteId, cidrs: [network.cidr] });
    await recordAudit(trx, actor, { organisationId: actor.organisationId, action: 'network.created', targetType: 'network', targetId: id, changes: { after: network } });
    return network;
  });
}

/** Moves a vulnerability through the PATCH state machine (decisions.md); same state is a no-op. */
export async function patchVulnerability(db: Kysely<DB>, actor: Actor & { organisationId: string }, id: string, input: { state: VulnerabilityState; note?: string | undefined }) {
  return db.transaction().execute(async (trx) => {
    const current = await repo.lockVulnerability(trx, actor.organisationId, id);
    if (!current) throw new AppError('not_found', `No vulnerability ${id}.`);
    const from = current.state as VulnerabilityState;
    if (from === input.state && (input.note === undefined || input.note === current.note)) return toVulnerability(current);
    const allowed = vulnerabilityPatchMoves[from];
    if (from !== input.state && !allowed.includes(input.state)) {
      throw new AppError(
        'invalid_transition',
        `A vulnerability in state ${from} cannot move to ${input.state}; allowed: ${allowed.length ? allowed.join(', ') : 'none (only the matcher reopens a resolved finding)'}.`,
        { currentState: from, allowedStates: allowed },
      );
    }
    const updated = from === input.state ? await repo.updateVulnerabilityNote(trx, actor.organisationId, id, input.note ?? null) : await repo.updateVulnerabilityState(trx, actor.organisationId, id, input.state, input.note);
    await recordAudit(trx, actor, {
      organisationId: actor.organisationId,
      action: 'vulnerability.updated',
      targetType: 'vulnerability',
      targetId: id,
      changes: { state: { from, to: input.state }, ...(input.note !== undefined ? { note: { from: current.note, to: input.note } } : {}) },
    });
    await logChanges(trx, actor.organisationId, 'vulnerability', [id], 'updated');
    return toVulnerability(updated);
  });
}
