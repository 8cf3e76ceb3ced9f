import { createHash } from 'node:crypto';
import type { hostSources } from '@surveyor/contract';
import { CLOUD_FINGERPRINT } from '../ingest/facts.js';
import { type Kysely, type SelectQueryBuilder, sql } from 'kysely';
import type { ArrayRows, Database, Row } from '../db/database.js';
import type { DB } from '../db/schema.js';
import { likeLiteral, rfc3339 } from '../db/sql.js';
import { logChanges } from '../events/changes.js';
import { snapshotColumns } from '../snapshots/snapshots.repo.js';
import type { HostSearch } from './search.js';
import { topologyName } from '../topology/views.repo.js';
import { summaryOf } from '../findings/findings.repo.js';

/** What a `gone` filter keeps: everything, what is present now, or only what a completed scan no longer found. */
type GoneMode = 'include' | 'exclude' | 'only';

export interface PageArgs {
  organisationId: string;
  /** Rows strictly after this position (0: from the start). */
  after: number;
  /** Rows to fetch: the page size plus one, to learn whether more follow. */
  take: number;
  /** Newest first: rows strictly before `after` (0: from the end), in descending order. */
  desc?: boolean;
  /**
   * Where a page of a fixed shape may run as a statement PostgreSQL keeps prepared per connection
   * (`Database.prepared`): parsed and planned once per connection, not per page. Absent (the
   * caller holds a transaction, or any other reader): through Kysely.
   */
  prepared?: Database['prepared'] | undefined;
}

/** A page query, built but not run. */
type PageQuery<O> = { compile(): { sql: string; parameters: readonly unknown[] }; execute(): Promise<O[]> };

/**
 * Stands for one value of a page (the organisation, the position, the page size, a filter's value)
 * while the page's statement is compiled once for its shape, and is bound to the value per call.
 */
class Slot {
  constructor(readonly name: string) {}
}

/** A value of a page, or the Slot standing for it while the page's statement is compiled (fixedPage). */
type Bound<T> = T | Slot;

/** The keys of filters `S` that may hold a Slot: the filters that are values (a mode's text depends on it). */
type SlotKey<S> = { [K in keyof S]-?: Slot extends S[K] ? K : never }[keyof S] & string;

/** Where a page starts and how many rows it takes, as `keyset` and the page builders read them. */
interface PageBounds {
  organisationId: Bound<string>;
  after: Bound<number>;
  take: Bound<number>;
  desc?: boolean | undefined;
}

/** A filter's value (or its Slot) as the operand of a comparison: `$n` either way, as Kysely writes a value. */
const bound = <T>(v: Bound<T>) => sql<T>`${v}`;

/** A compiled page statement: its name, text, and per parameter the Slot it binds (by name) or a constant. */
type PageStatement = { name: string; sql: string; parameters: readonly unknown[] };

/** The compiled statements of the page shapes seen so far: which filters are set, their modes, the direction. A few dozen. */
const pageStatements = new Map<string, PageStatement>();

/**
 * Runs a page whose SQL text depends only on which filters are set and on their modes (never on a
 * value: no LIKE pattern, no list of ids). With `p.prepared`, the text is built and compiled by
 * Kysely once per shape, with a Slot for each value (`values` names the filters that are values),
 * and run as a statement PostgreSQL keeps prepared per connection, its values bound per call: no
 * query building, parsing or planning per page. Without, `build` runs through Kysely as usual.
 * `build` must not branch on a value, only on whether it is set (a Slot is set); its values go
 * into the query as they are (`bound` for a comparison), which its types hold it to.
 */
function fixedPage<S extends Record<string, unknown>, O extends Row>(
  p: PageArgs,
  collection: string,
  f: NoInfer<S>,
  values: readonly SlotKey<S>[],
  build: (p: PageBounds, f: S) => PageQuery<O>,
): Promise<O[]> {
  if (!p.prepared) return build(p, f).execute();
  const { name, sql, args } = fixedStatement(p, collection, f, values, build);
  return p.prepared<O>(name, sql, args);
}

/** The prepared statement of a page of a fixed shape (fixedPage) and its values for `p` and `f`. */
function fixedStatement<S extends Record<string, unknown>>(
  p: PageArgs,
  collection: string,
  f: NoInfer<S>,
  values: readonly SlotKey<S>[],
  build: (p: PageBounds, f: S) => PageQuery<unknown>,
): { name: string; sql: string; args: unknown[] } {
  // The shape: the direction, every mode as it is, every value as whether it is set. Modes are
  // the contract's enumerations and booleans (no `|`); the keys of `f` are in a fixed order.
  let shape = `${collection}|${p.desc ? (p.after === 0 ? 'last' : 'before') : 'after'}`;
  for (const k in f) {
    const v = f[k];
    shape += (values as readonly string[]).includes(k) ? (v === undefined ? '|-' : '|=') : v === undefined ? '|-' : `|${String(v)}`;
  }
  let statement = pageStatements.get(shape);
  if (statement === undefined) {
    const slots: Record<string, Slot> = {};
    for (const k of values) if (f[k] !== undefined) slots[k] = new Slot(k);
    const slotted: S = Object.assign({}, f, slots);
    const at: PageBounds = { organisationId: new Slot('organisationId'), after: p.desc && p.after === 0 ? 0 : new Slot('after'), take: new Slot('take'), desc: p.desc };
    const c = build(at, slotted).compile();
    statement = { name: `surveyor_page_${createHash('sha256').update(c.sql).digest('hex').slice(0, 24)}`, sql: c.sql, parameters: c.parameters };
    if (pageStatements.size < 1000) pageStatements.set(shape, statement);
  }
  const params = statement.parameters;
  const args: unknown[] = new Array(params.length);
  for (let i = 0; i < params.length; i++) {
    const x = params[i];
    args[i] = !(x instanceof Slot) ? x : x.name === 'organisationId' ? p.organisationId : x.name === 'after' ? p.after : x.name === 'take' ? p.take : f[x.name];
  }
  return { name: statement.name, sql: statement.sql, args };
}

const iso = <C extends string>(column: C) => rfc3339(column).as(column);
const isoOrNull = <C extends string>(column: C) => rfc3339<string | null>(column).as(column);

/** Keyset page on (organisation_id, seq): the same index range scan at any depth, either way. */
function keyset<T extends keyof DB & string, O>(q: SelectQueryBuilder<DB, T, O>, table: T, p: PageBounds) {
  const ref = (c: string) => sql.ref(`${table}.${c}`);
  const scoped = q.where(sql<boolean>`${ref('organisation_id')} = ${p.organisationId}`);
  // `after` may be a Slot (fixedPage): any position but 0 is a bound.
  if (p.desc) return (p.after !== 0 ? scoped.where(sql<boolean>`${ref('seq')} < ${p.after}`) : scoped).orderBy(sql`${ref('seq')} desc`).limit(bound(p.take));
  return scoped.where(sql<boolean>`${ref('seq')} > ${p.after}`).orderBy(sql`${ref('seq')}`).limit(bound(p.take));
}

/** Only these ids (a lookup of the ids a page shows). */
type ById = { ids?: readonly string[] | undefined };

export function listSites(db: Kysely<DB>, p: PageArgs, f: ById = {}) {
  const build = (p: PageBounds, f: ById) => {
    let q = db.selectFrom('sites').select(['id', 'seq', 'code', 'name', 'description', iso('created_at'), iso('updated_at')]);
    if (f.ids) q = q.where('id', 'in', [...f.ids]);
    return keyset(q, 'sites', p);
  };
  return f.ids ? build(p, f).execute() : fixedPage(p, 'sites', {}, [], build);
}

const networkColumns = [
  'id', 'seq', 'site_id', 'name', 'scan_interval_minutes', 'top_ports_tcp', 'top_ports_udp', 'nmap_enabled', 'nmap_scripts',
  isoOrNull('last_scan_at'), isoOrNull('schedule_checked_at'), 'schedule_outcome', 'schedule_detail', iso('created_at'), iso('updated_at'),
  sql<number>`family(cidr)`.as('family'), sql<string[]>`exclude_cidrs::text[]`.as('exclude_cidrs_text'), sql<string>`cidr::text`.as('cidr_text'),
  'schedule_session_id', 'schedule_daemon_id',
  // At most one such session per network (scan_sessions_active_key): an index probe per row.
  sql<string | null>`(select s.id from scan_sessions s where s.organisation_id = networks.organisation_id and s.network_id = networks.id
    and s.state in ('queued', 'dispatched', 'running') limit 1)`.as('active_session_id'),
] as const;

export function listNetworks(db: Kysely<DB>, p: PageArgs, f: { siteId?: string | undefined } & ById) {
  const build = (p: PageBounds, f: { siteId?: Bound<string> | undefined } & ById) => {
    let q = db.selectFrom('networks').select(networkColumns);
    if (f.siteId) q = q.where('site_id', '=', bound(f.siteId));
    if (f.ids) q = q.where('id', 'in', [...f.ids]);
    return keyset(q, 'networks', p);
  };
  return f.ids ? build(p, f).execute() : fixedPage(p, 'networks', { siteId: f.siteId }, ['siteId'], build);
}

/** Below this many matches a text search collects its hosts from the value indexes, not the page index. */
const SPARSE_TEXT_MATCHES = 5000;

export type HostFilters = { siteId?: string | undefined; search?: HostSearch | undefined; gone?: GoneMode | undefined; source?: HostSource | undefined } & ById;
export type HostSource = (typeof hostSources)[number];

/**
 * Where the inventory knows host `h` from: `cloud`, a cloud account lists it now (cloud_resources);
 * `daemon`, one of its fingerprints is a daemon's (a cloud sync's are namespaced `aws:` / `k8s:`).
 */
function sourceMatch(source: HostSource, h: string) {
  const host = sql.ref(h);
  return source === 'cloud'
    ? sql<boolean>`exists (select 1 from cloud_resources c where c.organisation_id = ${host}.organisation_id and c.host_id = ${host}.id and c.gone_at is null)`
    : sql<boolean>`exists (select 1 from host_fingerprints f where f.organisation_id = ${host}.organisation_id and f.host_id = ${host}.id and f.fingerprint !~ ${CLOUD_FINGERPRINT})`;
}

/** The LIKE pattern of a prefix: its wildcards escaped. */
const prefixPattern = (prefix: string) => `${prefix.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

/** Whether the host (`hosts` of the outer query) matches a text search: the whole rule, for the walk over the page index. */
function textMatch(s: Extract<HostSearch, { kind: 'text' }>) {
  const p = prefixPattern(s.prefix);
  // The host's stored MACs and addresses (host-summaries.ts), read from the row the walk is on.
  const byValue = [
    s.mac && sql`exists (select 1 from unnest(hosts.macs) m where m::macaddr between ${s.mac.from}::macaddr and ${s.mac.to}::macaddr)`,
    s.cidr && sql`exists (select 1 from unnest(hosts.addresses) a where a::inet <<= ${s.cidr}::cidr)`,
  ].filter((x) => !!x);
  return sql<boolean>`(lower(hostname) like ${p} or lower(fqdn) like ${p} or lower(vendor) like ${p} or lower(os) like ${p}${sql.join(byValue.map((x) => sql` or ${x}`), sql``)})`;
}

/**
 * The hosts a text search matches after `p.after`, within the filters, gathered from the value
 * indexes (names, vendor, OS, MACs, addresses) one branch each: at most SPARSE_TEXT_MATCHES + 1.
 */
async function textCandidates(db: Kysely<DB>, p: PageArgs, f: HostFilters, s: Extract<HostSearch, { kind: 'text' }>) {
  const o = p.organisationId;
  const pattern = prefixPattern(s.prefix);
  const scope = sql`h.organisation_id = ${o} and h.seq > ${p.after}${f.siteId ? sql` and h.site_id = ${f.siteId}` : sql``}${f.gone === 'only' ? sql` and h.gone_at is not null` : f.gone !== 'exclude' ? sql`` : sql` and h.gone_at is null`}${f.source ? sql` and ${sourceMatch(f.source, 'h')}` : sql``}`;
  const branches = [
    ...['hostname', 'fqdn', 'vendor', 'os'].map((c) => sql`select h.id, h.seq from hosts h where ${scope} and lower(${sql.ref(`h.${c}`)}) like ${pattern}`),
    ...(s.mac
      ? [
          sql`select h.id, h.seq from host_addresses a join hosts h on h.organisation_id = a.organisation_id and h.id = a.host_id where a.organisation_id = ${o} and a.mac between ${s.mac.from}::macaddr and ${s.mac.to}::macaddr and ${scope}`,
          sql`select h.id, h.seq from host_interfaces i join hosts h on h.organisation_id = i.organisation_id and h.id = i.host_id where i.organisation_id = ${o} and i.mac between ${s.mac.from}::macaddr and ${s.mac.to}::macaddr and ${scope}`,
        ]
      : []),
    ...(s.cidr ? [sql`select h.id, h.seq from host_addresses a join hosts h on h.organisation_id = a.organisation_id and h.id = a.host_id where a.organisation_id = ${o} and a.address <<= ${s.cidr}::cidr and ${scope}`] : []),
  ];
  // UNION ALL, so the LIMIT stops the branches early (a de-duplicating UNION reads them whole
  // first); a host two branches match counts twice, which only sends a search to the page-index
  // walk a little sooner.
  const rows = (await sql<{ id: string; seq: number }>`${sql.join(branches, sql` union all `)} limit ${SPARSE_TEXT_MATCHES + 1}`.execute(db)).rows;
  return rows.length > SPARSE_TEXT_MATCHES ? rows : [...new Map(rows.map((r) => [r.id, r])).values()];
}

/** The filters of a hosts page other than a search (its site a Slot while its statement is compiled). */
type HostPageFilters = Omit<HostFilters, 'siteId' | 'search'> & { siteId?: Bound<string> | undefined };

/** The hosts page under the filters other than a search. */
function hostsQuery(db: Kysely<DB>, f: HostPageFilters) {
  let q = db
    .selectFrom('hosts')
    .select([
      'id', 'seq', 'site_id', 'hostname', 'fqdn', 'vendor', 'os', 'device_type', 'parent_host_id',
      iso('first_seen_at'), iso('last_seen_at'), isoOrNull('gone_at'), iso('created_at'), iso('updated_at'),
      // Stored on the host by its writers (host-summaries.ts): no per-row work. The arrays as
      // JSON text, which a page writes as it is (page-json.ts): pg's text-array parser cost twice
      // the rest of a row's decoding (postgres-array, about 2 µs an array).
      sql<string>`array_to_json(addresses)::text`.as('addresses_json'), sql<string>`array_to_json(macs)::text`.as('macs_json'), 'open_port_count',
    ]);
  if (f.siteId) q = q.where('site_id', '=', bound(f.siteId));
  if (f.ids) q = q.where('id', 'in', [...f.ids]);
  if (f.gone === 'exclude' || f.gone === 'only') q = q.where('gone_at', f.gone === 'only' ? 'is not' : 'is', null);
  if (f.source) q = q.where(sourceMatch(f.source, 'hosts'));
  return q;
}

/** The hosts page of a fixed shape (fixedPage): no search, no id list. */
const hostsPage = (db: Kysely<DB>) => (p: PageBounds, f: HostPageFilters) => keyset(hostsQuery(db, f), 'hosts', p);

/**
 * The hosts page as rows of values (Database.preparedArrays), for a page writer reading them by
 * position: the same statement and rows as listHosts, prepared where the filters are a fixed shape.
 */
export async function listHostsArrays(db: Kysely<DB>, run: Database['preparedArrays'], p: PageArgs, f: HostFilters): Promise<ArrayRows> {
  if (!f.search && !f.ids) {
    const { name, sql, args } = fixedStatement(p, 'hosts', { siteId: f.siteId, gone: f.gone, source: f.source }, ['siteId'], hostsPage(db));
    return run(name, sql, args);
  }
  const q = await hostsMatching(db, p, f);
  if (!q) return { columns: [], rows: [] };
  const c = q.compile();
  return run(null, c.sql, c.parameters as unknown[]);
}

export async function listHosts(db: Kysely<DB>, p: PageArgs, f: HostFilters) {
  if (!f.search && !f.ids) return fixedPage(p, 'hosts', { siteId: f.siteId, gone: f.gone, source: f.source }, ['siteId'], hostsPage(db));
  const q = await hostsMatching(db, p, f);
  return q ? q.execute() : [];
}

/** The page of a search or an id list (not a fixed shape); null when no host can match. */
async function hostsMatching(db: Kysely<DB>, p: PageArgs, f: HostFilters) {
  const s = f.search;
  let q = hostsQuery(db, f);
  if (s?.kind === 'id') q = q.where('id', '=', s.id);
  else if (s?.kind === 'address' || s?.kind === 'cidr') {
    const match = s.kind === 'address' ? sql<boolean>`a.address = ${s.address}::inet` : sql<boolean>`a.address <<= network(${s.cidr}::inet)`;
    q = q.where('id', 'in', (eb) =>
      eb.selectFrom('host_addresses as a').select('a.host_id').where('a.organisation_id', '=', p.organisationId).where(match),
    );
  } else if (s?.kind === 'text') {
    // The planner misjudges how many hosts share a prefix and may walk the page index for a
    // rare one (seconds at a million hosts). So first gather the matches from the value indexes:
    // when they are few, page over exactly those ids; when many, the page-index walk is right.
    const candidates = p.desc ? null : await textCandidates(db, p, f, s);
    if (candidates && candidates.length <= SPARSE_TEXT_MATCHES) {
      const ids = candidates.sort((a, b) => a.seq - b.seq).slice(0, p.take).map((r) => r.id);
      if (ids.length === 0) return null;
      q = q.where('id', 'in', ids);
    } else {
      q = q.where(textMatch(s));
    }
  }
  return keyset(q, 'hosts', p);
}

/** The services filters (contract `serviceFilters`), already validated and normalised (a CPE lower-case, without trailing `:*`). */
export interface ServiceFilters {
  hostId?: string | undefined;
  product?: string | undefined;
  version?: string | undefined;
  port?: number | undefined;
  protocol?: string | undefined;
  cpe?: string | undefined;
  gone?: GoneMode | undefined;
  exposed?: 'true' | 'false' | undefined;
}

/** The services filters with their values possibly Slots (fixedPage); product, version and CPE never are (their text is a LIKE pattern). */
type ServicePageFilters = Omit<ServiceFilters, 'hostId' | 'port' | 'protocol'> & { hostId?: Bound<string> | undefined; port?: Bound<number> | undefined; protocol?: Bound<string> | undefined };

/**
 * The where clause of the services filters: the list and the count share it, so a count is the
 * rows the list pages through. Product: case-insensitive substring. Version: equal, or a longer
 * version whose next character is not a digit (`2.4` → `2.4.49`, not `2.40`). CPE: equal, or
 * continued by `:` (whole components). Gone: included unless asked otherwise.
 */
function whereServices<O>(q: SelectQueryBuilder<DB, 'services', O>, f: ServicePageFilters) {
  if (f.hostId) q = q.where('host_id', '=', bound(f.hostId));
  if (f.port !== undefined) q = q.where('port', '=', bound(f.port));
  if (f.protocol) q = q.where('protocol', '=', bound(f.protocol));
  if (f.product) q = q.where(sql<boolean>`lower(product) like ${`%${likeLiteral(f.product.toLowerCase())}%`}`);
  if (f.version) {
    const v = f.version.toLowerCase();
    q = q.where(sql<boolean>`(lower(version) = ${v} or (lower(version) like ${`${likeLiteral(v)}%`} and substr(version, char_length(${v}) + 1, 1) !~ '[0-9]'))`);
  }
  if (f.cpe) q = q.where(sql<boolean>`(lower(cpe) = ${f.cpe} or lower(cpe) like ${`${likeLiteral(f.cpe)}:%`})`);
  if (f.gone === 'exclude') q = q.where('gone_at', 'is', null);
  else if (f.gone === 'only') q = q.where('gone_at', 'is not', null);
  // The exposure stored on the service (migration 0046), the value written in the statement, not
  // bound: `true` pages over services_exposed_page_idx.
  if (f.exposed) q = q.where(f.exposed === 'true' ? sql<boolean>`exposed_via is not null` : sql<boolean>`exposed_via is null`);
  return q;
}

export function listServices(db: Kysely<DB>, p: PageArgs, f: ServiceFilters) {
  const build = (p: PageBounds, f: ServicePageFilters) => {
    const q = db.selectFrom('services').select([
      'id', 'seq', 'host_id', 'protocol', 'port', 'state', 'banner', 'name', 'product', 'vendor', 'version', 'cpe', 'signature_id', 'signature_source', 'confidence',
      iso('first_seen_at'), iso('last_seen_at'), isoOrNull('gone_at'), iso('created_at'), iso('updated_at'), sql<string | null>`host(address)`.as('address_text'), 'exposed_via',
    ]);
    return keyset(whereServices(q, f), 'services', p);
  };
  // Product, version and CPE become LIKE patterns: their pages are planned per value.
  if (f.product || f.version || f.cpe) return build(p, f).execute();
  return fixedPage(p, 'services', { hostId: f.hostId, port: f.port, protocol: f.protocol, gone: f.gone, exposed: f.exposed }, ['hostId', 'port', 'protocol'], build);
}

/** How many services of the organisation the filters select. */
export async function countServices(db: Kysely<DB>, organisationId: string, f: ServiceFilters): Promise<number> {
  const q = db.selectFrom('services').select(sql<number>`count(*)::int`.as('n')).where('organisation_id', '=', organisationId);
  return (await whereServices(q, f).executeTakeFirstOrThrow()).n;
}

/** `expired`: notAfter past; a window of days: notAfter within it and not yet past (the overview's and the metric's definition). */
export type ExpiryWindow = { kind: 'expired'; now: Date } | { kind: 'within'; now: Date; days: number };

type CertificateFilters = {
  hostId?: Bound<string> | undefined;
  trustStatus?: Bound<string> | undefined;
  current?: boolean | undefined;
  /** The expiry window's kind, its instant and its days. */
  expiring?: ExpiryWindow['kind'] | undefined;
  now?: Bound<Date> | undefined;
  days?: Bound<number> | undefined;
};

export function listCertificates(
  db: Kysely<DB>,
  p: PageArgs,
  f: { hostId?: string | undefined; trustStatus?: string | undefined; expiring?: ExpiryWindow | undefined; current?: boolean | undefined },
) {
  const build = (p: PageBounds, f: CertificateFilters) => {
    let q = db.selectFrom('certificates').select([
      'id', 'seq', 'host_id', 'port', 'subject', 'issuer', 'sha256', 'trust_status',
      iso('not_before'), iso('not_after'), iso('first_seen_at'), iso('last_seen_at'), iso('created_at'), iso('updated_at'), sql<string | null>`host(address)`.as('address_text'),
      // The state view certificate_states defines, stored by the certificates' and services' writers (migration 0045).
      'state',
    ]);
    if (f.hostId) q = q.where('host_id', '=', bound(f.hostId));
    // Each a partial index's order (certificates_current_page_idx, certificates_past_page_idx): the
    // value written in the statement, not bound, so that a prepared statement's plan can use them.
    if (f.current !== undefined) q = q.where(f.current ? sql<boolean>`state = 'current'` : sql<boolean>`state <> 'current'`);
    if (f.trustStatus) q = q.where('trust_status', '=', bound(f.trustStatus));
    if (f.expiring === 'expired') q = q.where(sql<boolean>`not_after <= ${f.now}`);
    else if (f.expiring === 'within') q = q.where(sql<boolean>`not_after > ${f.now} and not_after <= ${f.now}::timestamptz + make_interval(days => ${f.days})`);
    return keyset(q, 'certificates', p);
  };
  const e = f.expiring;
  const flat: CertificateFilters = { hostId: f.hostId, trustStatus: f.trustStatus, current: f.current, expiring: e?.kind, now: e?.now, days: e?.kind === 'within' ? e.days : undefined };
  return fixedPage(p, 'certificates', flat, ['hostId', 'trustStatus', 'now', 'days'], build);
}

const vulnerabilityColumns = [
  'id', 'seq', 'service_id', 'host_id', 'cve_id', 'advisory_id', summaryOf('vulnerabilities').as('summary'), 'severity', 'score', 'vector', 'matched_cpe', 'distribution', 'state', 'note',
  iso('first_seen_at'), iso('last_seen_at'), iso('state_changed_at'), isoOrNull('resolved_at'), iso('created_at'), iso('updated_at'),
] as const;

type VulnerabilityFilters = { serviceId?: Bound<string> | undefined; state?: Bound<string> | undefined; severity?: Bound<string> | undefined };

export function listVulnerabilities(db: Kysely<DB>, p: PageArgs, f: VulnerabilityFilters) {
  const build = (p: PageBounds, f: VulnerabilityFilters) => {
    let q = db.selectFrom('vulnerabilities').select(vulnerabilityColumns);
    if (f.serviceId) q = q.where('service_id', '=', bound(f.serviceId));
    if (f.state) q = q.where('state', '=', bound(f.state));
    if (f.severity) q = q.where('severity', '=', bound(f.severity));
    return keyset(q, 'vulnerabilities', p);
  };
  return fixedPage(p, 'vulnerabilities', { serviceId: f.serviceId, state: f.state, severity: f.severity }, ['serviceId', 'state', 'severity'], build);
}

type SnapshotFilters = { siteId?: Bound<string> | undefined; reason?: Bound<string> | undefined };

export function listSnapshots(db: Kysely<DB>, p: PageArgs, f: SnapshotFilters) {
  const build = (p: PageBounds, f: SnapshotFilters) => {
    let q = db.selectFrom('snapshots').select(snapshotColumns);
    if (f.siteId) q = q.where('site_id', '=', bound(f.siteId));
    if (f.reason) q = q.where('reason', '=', bound(f.reason));
    return keyset(q, 'snapshots', p);
  };
  return fixedPage(p, 'snapshots', { siteId: f.siteId, reason: f.reason }, ['siteId', 'reason'], build);
}


type TopologyFilters = { siteId?: Bound<string> | undefined; kind?: Bound<string> | undefined; status?: Bound<string> | undefined };

export function listTopologies(db: Kysely<DB>, p: PageArgs, f: TopologyFilters) {
  const build = (p: PageBounds, f: TopologyFilters) => {
    // The name from the site's current name (a renamed site shows at once).
    let q = db.selectFrom('topologies').select(['id', 'seq', 'site_id', 'kind', 'status', topologyName('topologies').as('name'), 'node_count', 'edge_count', isoOrNull('built_at'), iso('created_at'), iso('updated_at')]);
    if (f.siteId) q = q.where('site_id', '=', bound(f.siteId));
    if (f.kind) q = q.where('kind', '=', bound(f.kind));
    if (f.status) q = q.where('status', '=', bound(f.status));
    return keyset(q, 'topologies', p);
  };
  return fixedPage(p, 'topologies', { siteId: f.siteId, kind: f.kind, status: f.status }, ['siteId', 'kind', 'status'], build);
}

// --- writes -----------------------------------------------------------------------------------

export function findSite(db: Kysely<DB>, organisationId: string, id: string) {
  return db.selectFrom('sites').select('id').where('organisation_id', '=', organisationId).where('id', '=', id).executeTakeFirst();
}

/** Inserts a network; returns undefined when the organisation already has that CIDR. */
export async function insertNetwork(
  db: Kysely<DB>,
  n: { organisationId: string; siteId: string | null; name: string; cidr: string; excludeCidrs: string[]; scanIntervalMinutes: number | null; topPortsTcp: number; topPortsUdp: number; nmapEnabled: boolean; nmapScripts: string[] },
) {
  const row = await db
    .insertInto('networks')
    .values({
      organisation_id: n.organisationId,
      site_id: n.siteId,
      name: n.name,
      cidr: n.cidr,
      exclude_cidrs: sql<string[]>`${n.excludeCidrs}::cidr[]` as unknown as string[],
      scan_interval_minutes: n.scanIntervalMinutes,
      top_ports_tcp: n.topPortsTcp,
      top_ports_udp: n.topPortsUdp,
      nmap_enabled: n.nmapEnabled,
      nmap_scripts: n.nmapScripts,
    })
    .onConflict((oc) => oc.columns(['organisation_id', 'cidr']).doNothing())
    .returning('id')
    .executeTakeFirst();
  if (row) await logChanges(db, n.organisationId, 'network', [row.id], 'created');
  return row?.id;
}

export function findNetwork(db: Kysely<DB>, organisationId: string, id: string) {
  return db
    .selectFrom('networks')
    .select(networkColumns)
    .where('organisation_id', '=', organisationId)
    .where('id', '=', id)
    .executeTakeFirst();
}

/** The vulnerability, locked for update in the caller's transaction. */
export function lockVulnerability(db: Kysely<DB>, organisationId: string, id: string) {
  return db.selectFrom('vulnerabilities').select(vulnerabilityColumns).where('organisation_id', '=', organisationId).where('id', '=', id).forUpdate().executeTakeFirst();
}

export function updateVulnerabilityState(db: Kysely<DB>, organisationId: string, id: string, state: string, note: string | null | undefined) {
  return db
    .updateTable('vulnerabilities')
    .set({
      state,
      ...(note !== undefined ? { note } : {}),
      state_changed_at: sql`now()`,
      updated_at: sql`now()`,
      resolved_at: state === 'resolved' ? sql`now()` : null,
    })
    .where('organisation_id', '=', organisationId)
    .where('id', '=', id)
    .returning(vulnerabilityColumns)
    .executeTakeFirstOrThrow();
}

export function updateVulnerabilityNote(db: Kysely<DB>, organisationId: string, id: string, note: string | null) {
  return db
    .updateTable('vulnerabilities')
    .set({ note, updated_at: sql`now()` })
    .where('organisation_id', '=', organisationId)
    .where('id', '=', id)
    .returning(vulnerabilityColumns)
    .executeTakeFirstOrThrow();
}
