import { type Kysely, sql } from 'kysely';
import { CLOUD_FINGERPRINT } from './facts.js';
import { type EventData, canonicalIp } from '@surveyor/contract';
import type { DB } from '../db/schema.js';
import { changeSelect, nextChangeId } from '../events/changes.js';
import { emit, emitSelect } from '../events/emit.js';

type Db = Kysely<DB>;
const rows = async <T>(q: ReturnType<typeof sql<T>>, db: Db) => (await q.execute(db)).rows;

/** The session, locked for this batch, with its daemon's site. Undefined when not this daemon's. */
export async function lockSession(db: Db, organisationId: string, sessionId: string, daemonId: string) {
  const r = await rows(
    sql<{ state: string; cidr: string; exclude_cidrs: string[]; since: Date; site_id: string | null }>`
      select s.state, s.cidr::text as cidr, s.exclude_cidrs::text[] as exclude_cidrs, coalesce(s.started_at, now()) as since, d.site_id
        from scan_sessions s join daemons d on d.organisation_id = s.organisation_id and d.id = s.daemon_id
       where s.organisation_id = ${organisationId} and s.id = ${sessionId} and s.daemon_id = ${daemonId}
       for update of s`,
    db,
  );
  return r[0];
}

/** The first key of identity locks ("Id"), apart from the jobs' locks. */
const IDENTITY_LOCK_NAMESPACE = 0x4964;

/**
 * Serialises host identity within (organisation, site) until the transaction ends: a
 * transaction-scoped advisory lock keyed by schema, organisation and site (on PGlite, one
 * connection, transactions already run one at a time and the lock is granted at once).
 */
export async function lockIdentityScope(db: Db, organisationId: string, siteId: string | null): Promise<void> {
  await sql`select pg_advisory_xact_lock(${IDENTITY_LOCK_NAMESPACE}, hashtext(current_schema() || ':identity:' || ${organisationId} || ':' || ${siteId ?? '-'}))`.execute(db);
}

export async function knownFingerprints(db: Db, organisationId: string, fingerprints: string[]) {
  return rows(sql<{ fingerprint: string; host_id: string }>`select fingerprint, host_id from host_fingerprints where organisation_id = ${organisationId} and fingerprint = any(${fingerprints}::text[])`, db);
}

// The two lookups below start from the values looked up (a MATERIALIZED CTE on the value
// indexes) and only then check each host's site: during an organisation's first large sweep the
// planner's statistics still describe an almost empty organisation, and a plan that starts from
// "all hosts of the organisation" grows with every batch.

/** Hosts of the site holding one of these MACs (on an address or an interface). */
export async function hostsByMac(db: Db, organisationId: string, siteId: string | null, macs: string[]) {
  if (macs.length === 0) return [];
  return rows(
    sql<{ mac: string; host_id: string }>`
      with x as materialized (
        select mac, host_id from host_addresses where organisation_id = ${organisationId} and mac = any(${macs}::macaddr[])
        union select mac, host_id from host_interfaces where organisation_id = ${organisationId} and mac = any(${macs}::macaddr[])
      )
      select x.mac::text as mac, x.host_id from x join hosts h on h.organisation_id = ${organisationId} and h.id = x.host_id
      where h.site_id is not distinct from ${siteId}::uuid`,
    db,
  );
}

/**
 * Hosts of the site holding one of these addresses; addresses come back canonical. `daemonHostsOnly`
 * (a cloud sync's resources): only hosts no cloud account names (no `aws:` or `k8s:` fingerprint).
 */
export async function hostsByAddress(db: Db, organisationId: string, siteId: string | null, addresses: string[], daemonHostsOnly = false) {
  if (addresses.length === 0) return [];
  const found = await rows(
    sql<{ address: string; host_id: string }>`
      with a as materialized (
        select address, host_id from host_addresses where organisation_id = ${organisationId} and address = any(${addresses}::inet[])
      )
      select host(a.address) as address, a.host_id from a join hosts h on h.organisation_id = ${organisationId} and h.id = a.host_id
      where h.site_id is not distinct from ${siteId}::uuid${
        daemonHostsOnly ? sql` and not exists (select 1 from host_fingerprints f where f.organisation_id = h.organisation_id and f.host_id = h.id and f.fingerprint ~ ${CLOUD_FINGERPRINT})` : sql``
      }`,
    db,
  );
  return found.map((r) => ({ address: canonicalIp(r.address)!, host_id: r.host_id }));
}

/**
 * New hosts with their facts, one per fingerprint, each bound to its fingerprint, logged as
 * created and announced (event host.discovered: the events insert of this statement), in one
 * statement. Returns those this call created (a concurrent batch may have created some first).
 */
export async function createHosts(db: Db, organisationId: string, siteId: string | null, hosts: (Omit<HostRow, 'id' | 'parentId'> & { fingerprint: string })[]) {
  if (hosts.length === 0) return [];
  const col = <K extends keyof (typeof hosts)[number]>(k: K) => hosts.map((h) => h[k]);
  return rows(
    sql<{ id: string; fingerprint: string }>`
      with created as (
        insert into hosts (organisation_id, fingerprint, site_id, hostname, fqdn, vendor, os, device_type)
        select ${organisationId}, f, ${siteId}::uuid, hn, fq, ve, os, dt
        from unnest(${col('fingerprint')}::text[], ${col('hostname')}::text[], ${col('fqdn')}::text[], ${col('vendor')}::text[], ${col('os')}::text[], ${col('deviceType')}::text[]) as v(f, hn, fq, ve, os, dt)
        on conflict (organisation_id, fingerprint) do nothing
        returning id, fingerprint
      ), bound as (
        insert into host_fingerprints (organisation_id, fingerprint, host_id) select ${organisationId}, fingerprint, id from created on conflict do nothing
      ), logged as (
        ${changeSelect('host', 'created', { from: sql`created`, organisationId: sql`${organisationId}` })}
      ), announced as (
        ${emitSelect('host.discovered', { from: sql`created`, organisationId: sql`${organisationId}::uuid`, subjectId: sql`id`, data: { fingerprint: sql`fingerprint`, siteId: sql`${siteId}::uuid` } })}
      )
      select id, fingerprint from created`,
    db,
  );
}

/** Binds fingerprints to hosts. */
export async function linkFingerprints(db: Db, organisationId: string, links: { fingerprint: string; hostId: string }[]) {
  if (links.length === 0) return;
  await sql`
    insert into host_fingerprints (organisation_id, fingerprint, host_id)
    select ${organisationId}, f, h from unnest(${links.map((l) => l.fingerprint)}::text[], ${links.map((l) => l.hostId)}::uuid[]) as v(f, h)
    on conflict do nothing`.execute(db);
}

/** Binds fingerprints to the host another fingerprint (their leader) is bound to. */
export async function linkToLeaders(db: Db, organisationId: string, followers: { fingerprint: string; leader: string }[]) {
  if (followers.length === 0) return;
  await sql`
    insert into host_fingerprints (organisation_id, fingerprint, host_id)
    select ${organisationId}, v.f, l.host_id from unnest(${followers.map((x) => x.fingerprint)}::text[], ${followers.map((x) => x.leader)}::text[]) as v(f, leader)
    join host_fingerprints l on l.organisation_id = ${organisationId} and l.fingerprint = v.leader
    on conflict do nothing`.execute(db);
}

export interface HostRow {
  id: string;
  hostname: string | null;
  fqdn: string | null;
  vendor: string | null;
  os: string | null;
  deviceType: string | null;
  parentId: string | null;
}

/** Fills host facts (absent stays as it was); returns the ids whose facts changed. */
export async function updateHosts(db: Db, organisationId: string, since: Date, hosts: HostRow[]) {
  if (hosts.length === 0) return [];
  const col = <K extends keyof HostRow>(k: K) => hosts.map((h) => h[k]);
  return rows(
    sql<{ id: string; changed: boolean }>`
      update hosts h set
        hostname = coalesce(v.hostname, h.hostname), fqdn = coalesce(v.fqdn, h.fqdn), vendor = coalesce(v.vendor, h.vendor),
        os = coalesce(v.os, h.os), device_type = coalesce(v.device_type, h.device_type), parent_host_id = coalesce(v.parent_id, h.parent_host_id),
        last_seen_at = now(),
        updated_at = case when v.changed then now() else h.updated_at end
      from (
        select v.*, (
          (v.hostname is not null and v.hostname is distinct from o.hostname) or (v.fqdn is not null and v.fqdn is distinct from o.fqdn) or
          (v.vendor is not null and v.vendor is distinct from o.vendor) or (v.os is not null and v.os is distinct from o.os) or
          (v.device_type is not null and v.device_type is distinct from o.device_type) or (v.parent_id is not null and v.parent_id is distinct from o.parent_host_id)
        ) as changed, o.last_seen_at as old_seen
        from unnest(${col('id')}::uuid[], ${col('hostname')}::text[], ${col('fqdn')}::text[], ${col('vendor')}::text[], ${col('os')}::text[], ${col('deviceType')}::text[], ${col('parentId')}::uuid[])
          as v(id, hostname, fqdn, vendor, os, device_type, parent_id)
        join hosts o on o.organisation_id = ${organisationId} and o.id = v.id
      ) v
      where h.organisation_id = ${organisationId} and h.id = v.id and (v.changed or v.old_seen < ${since})
      returning h.id, v.changed`,
    db,
  );
}

/**
 * Every host the facts name was seen: its last-seen time moves on when older than this session's
 * start or than the start of any session still running in the organisation (an overlapping
 * session that started later must see this sighting, or it would mark the host gone:
 * markHostsGone), and a gone host is back. Returns the hosts that were gone.
 */
export async function touchHosts(db: Db, organisationId: string, since: Date, hostIds: readonly string[]) {
  if (hostIds.length === 0) return [];
  // The rows are locked in the order of `hostIds` (the caller sorts them), so this statement of two
  // batches naming the same hosts never waits in a cycle: a lateral probe of the primary key for each
  // id, in turn (where a scan of the organisation's hosts in key order, filtered by the ids, is what
  // the planner chose for `id = any(...) order by id`); `old` is each row as locked: its gone_at
  // before this update.
  const r = await rows(
    sql<{ id: string; was_gone: boolean }>`
      update hosts h set last_seen_at = now(), gone_at = null, updated_at = case when old.gone_at is not null then now() else h.updated_at end
      from unnest(${hostIds}::uuid[]) as v(id) cross join lateral (
        select id, gone_at from hosts
        where organisation_id = ${organisationId} and id = v.id
          and (gone_at is not null or last_seen_at < greatest(${since}::timestamptz, (
            select max(started_at) from scan_sessions where organisation_id = ${organisationId} and state in ('dispatched', 'running'))))
        for update
      ) old
      where h.organisation_id = ${organisationId} and h.id = old.id
      returning h.id, old.gone_at is not null as was_gone`,
    db,
  );
  return r.filter((x) => x.was_gone).map((x) => x.id);
}

/**
 * The upserts below share one shape: INSERT ... SELECT FROM unnest (left-joined to the existing row
 * where an absent value must keep the stored one) ... ON CONFLICT DO UPDATE ... WHERE a fact changed
 * or the row was not yet seen this session (last_seen_at < since). RETURNING lists the rows written
 * with `changed`: inserted, or a fact changed (updated_at moved); a bare last-seen refresh is not a change.
 */
const CHANGED = sql.raw('(xmax = 0 or updated_at = now()) as changed');

export async function upsertAddresses(db: Db, organisationId: string, since: Date, a: { hostId: string; address: string; mac: string | null }[]) {
  if (a.length === 0) return [];
  return rows(
    sql<{ host_id: string; address: string; changed: boolean }>`
      ${insertAddresses(organisationId, a)}
      on conflict (organisation_id, host_id, address) do update set mac = coalesce(excluded.mac, host_addresses.mac), last_seen_at = now(),
        updated_at = case when excluded.mac is not null and excluded.mac is distinct from host_addresses.mac then now() else host_addresses.updated_at end
      where (excluded.mac is not null and excluded.mac is distinct from host_addresses.mac) or host_addresses.last_seen_at < ${since}
      returning host_id, host(address) as address, ${CHANGED}`,
    db,
  );
}

/**
 * Addresses of hosts this transaction created: none of theirs can exist yet (no other transaction
 * sees such a host before this one commits), so they are plain inserts, each a change.
 */
export async function insertNewAddresses(db: Db, organisationId: string, a: { hostId: string; address: string; mac: string | null }[]): Promise<void> {
  if (a.length === 0) return;
  await insertAddresses(organisationId, a).execute(db);
}

/** `insert into host_addresses … select … from unnest(…)` of these rows. */
function insertAddresses(organisationId: string, a: { hostId: string; address: string; mac: string | null }[]) {
  return sql`
    insert into host_addresses (organisation_id, host_id, address, mac)
    select ${organisationId}, h, addr::inet, m::macaddr from unnest(${a.map((x) => x.hostId)}::uuid[], ${a.map((x) => x.address)}::text[], ${a.map((x) => x.mac)}::text[]) as v(h, addr, m)`;
}

export async function upsertInterfaces(db: Db, organisationId: string, since: Date, a: { hostId: string; name: string; mac: string | null }[]) {
  if (a.length === 0) return [];
  return rows(
    sql<{ host_id: string; changed: boolean }>`
      insert into host_interfaces (organisation_id, host_id, name, mac)
      select ${organisationId}, h, n, m::macaddr from unnest(${a.map((x) => x.hostId)}::uuid[], ${a.map((x) => x.name)}::text[], ${a.map((x) => x.mac)}::text[]) as v(h, n, m)
      on conflict (organisation_id, host_id, name) do update set mac = coalesce(excluded.mac, host_interfaces.mac), last_seen_at = now(),
        updated_at = case when excluded.mac is not null and excluded.mac is distinct from host_interfaces.mac then now() else host_interfaces.updated_at end
      where (excluded.mac is not null and excluded.mac is distinct from host_interfaces.mac) or host_interfaces.last_seen_at < ${since}
      returning host_id, ${CHANGED}`,
    db,
  );
}

export interface ServiceRow {
  hostId: string;
  protocol: string;
  port: number;
  address: string | null;
  state: string | null;
  banner: string | null;
  name: string | null;
  product: string | null;
  vendor: string | null;
  version: string | null;
  cpe: string | null;
  signatureId: string | null;
  signatureSource: string | null;
  confidence: number | null;
  evidence: string | null;
}

const SERVICE_FACTS = ['address', 'banner', 'name', 'product', 'vendor', 'version', 'cpe', 'signature_id', 'signature_source', 'confidence', 'evidence'] as const;

/**
 * Ports and what runs on them, one row per (host, protocol, port), each insert or fact change
 * logged to the change log in the same statement. An absent fact keeps the stored one; a service
 * seen without a port state keeps the stored state ('open' when new), so rows with and without a
 * state go in two statements. Returns the keys (`host|protocol|port`) of the rows that changed
 * (inserted, or a fact changed), as one aggregated value: a first sweep changes every row.
 */
export async function upsertServices(db: Db, organisationId: string, since: Date, s: ServiceRow[]): Promise<string[]> {
  const withState = s.filter((x) => x.state !== null);
  const withoutState = s.filter((x) => x.state === null);
  return [...(await upsertServiceGroup(db, organisationId, since, withState, true)), ...(await upsertServiceGroup(db, organisationId, since, withoutState, false))];
}

/** `insert into services … select … from unnest(…)` of these rows (a new row's state: 'open' unless given). */
function insertServices(organisationId: string, s: ServiceRow[]) {
  const col = <K extends keyof ServiceRow>(k: K) => s.map((x) => x[k]);
  return sql`
    insert into services (organisation_id, host_id, protocol, port, address, state, banner, name, product, vendor, version, cpe, signature_id, signature_source, confidence, evidence)
    select ${organisationId}, v.h, v.pr, v.po, v.addr::inet, coalesce(v.st, 'open'), v.b, v.n, v.p, v.ve, v.v, v.c, v.si, v.ss, v.cf, v.ev
    from unnest(${col('hostId')}::uuid[], ${col('protocol')}::text[], ${col('port')}::int[], ${col('address')}::text[], ${col('state')}::text[], ${col('banner')}::text[],
                ${col('name')}::text[], ${col('product')}::text[], ${col('vendor')}::text[], ${col('version')}::text[], ${col('cpe')}::text[],
                ${col('signatureId')}::text[], ${col('signatureSource')}::text[], ${col('confidence')}::smallint[], ${col('evidence')}::text[])
      as v(h, pr, po, addr, st, b, n, p, ve, v, c, si, ss, cf, ev)`;
}

/**
 * Services of hosts this transaction created (see insertNewAddresses): plain inserts, without the
 * conflict arbiter's speculative insertion, each logged as created in the same statement.
 */
export async function insertNewServices(db: Db, organisationId: string, s: ServiceRow[]): Promise<void> {
  if (s.length === 0) return;
  await sql`
    with up as (
      ${insertServices(organisationId, s)}
      returning id
    )
    insert into change_log (organisation_id, id, entity_type, entity_id, action)
    select ${organisationId}, ${nextChangeId(sql`${organisationId}`)}, 'service', id, 'created' from up`.execute(db);
}

async function upsertServiceGroup(db: Db, organisationId: string, since: Date, s: ServiceRow[], stateKnown: boolean) {
  if (s.length === 0) return [];
  const facts = stateKnown ? [...SERVICE_FACTS, 'state'] : SERVICE_FACTS;
  const differs = facts.map((f) => `(excluded.${f} is not null and excluded.${f} is distinct from services.${f})`).join(' or ');
  const set = facts.map((f) => `${f} = coalesce(excluded.${f}, services.${f})`).join(', ');
  return rows(
    sql<{ keys: string | null }>`
      with up as (
        ${insertServices(organisationId, s)}
        on conflict (organisation_id, host_id, protocol, port) do update set
          ${sql.raw(set)}, gone_at = null, last_seen_at = now(),
          updated_at = case when ${sql.raw(differs)} or services.gone_at is not null then now() else services.updated_at end
        where ${sql.raw(differs)} or services.gone_at is not null or services.last_seen_at < ${since}
        returning id, host_id, protocol, port, (xmax = 0) as inserted, ${CHANGED}
      ), logged as (
        insert into change_log (organisation_id, id, entity_type, entity_id, action)
        select ${organisationId}, ${nextChangeId(sql`${organisationId}`)}, 'service', id, case when inserted then 'created' else 'updated' end from up where changed
      )
      select string_agg(host_id::text || '|' || protocol || '|' || port, ',') as keys from up where changed`,
    db,
  ).then((r) => (r[0]?.keys ? r[0].keys.split(',') : []));
}

export interface CertificateRow {
  hostId: string;
  address: string;
  port: number;
  subject: string;
  issuer: string;
  notBefore: Date;
  notAfter: Date;
  sha256: string;
  chainPem: string[];
  trustStatus: string;
}

export async function upsertCertificates(db: Db, organisationId: string, since: Date, c: CertificateRow[]) {
  if (c.length === 0) return [];
  const col = <K extends keyof CertificateRow>(k: K) => c.map((x) => x[k]);
  return rows(
    sql<{ host_id: string; port: number; sha256: string; changed: boolean }>`
      insert into certificates (organisation_id, host_id, address, port, subject, issuer, not_before, not_after, sha256, chain_pem, trust_status)
      select ${organisationId}, h, a::inet, p, su, iss, nb, na, sha, coalesce((select array_agg(x) from jsonb_array_elements_text(ch::jsonb) x), '{}'), ts
      from unnest(${col('hostId')}::uuid[], ${col('address')}::text[], ${col('port')}::int[], ${col('subject')}::text[], ${col('issuer')}::text[],
                  ${col('notBefore')}::timestamptz[], ${col('notAfter')}::timestamptz[], ${col('sha256')}::text[], ${c.map((x) => JSON.stringify(x.chainPem))}::text[], ${col('trustStatus')}::text[])
        as v(h, a, p, su, iss, nb, na, sha, ch, ts)
      on conflict (organisation_id, host_id, coalesce(port, -1), sha256) do update set
        trust_status = excluded.trust_status, address = excluded.address, last_seen_at = now(),
        updated_at = case when excluded.trust_status is distinct from certificates.trust_status or excluded.address is distinct from certificates.address then now() else certificates.updated_at end
      where excluded.trust_status is distinct from certificates.trust_status or excluded.address is distinct from certificates.address or certificates.last_seen_at < ${since}
      returning host_id, port, sha256, ${CHANGED}`,
    db,
  );
}

export async function upsertNeighbors(db: Db, o: string, since: Date, n: { hostId: string; localInterface: string; remoteChassisId: string; remotePortId: string | null; remoteSystemName: string | null; managementAddress: string | null; protocol: string | null }[]) {
  if (n.length === 0) return [];
  const c = <K extends keyof (typeof n)[number]>(k: K) => n.map((x) => x[k]);
  const differs = 'excluded.remote_port_id is distinct from host_neighbors.remote_port_id or excluded.remote_system_name is distinct from host_neighbors.remote_system_name or excluded.management_address is distinct from host_neighbors.management_address or excluded.protocol is distinct from host_neighbors.protocol';
  return rows(
    sql<{ host_id: string; local_interface: string; remote_chassis_id: string; changed: boolean }>`
      insert into host_neighbors (organisation_id, host_id, local_interface, remote_chassis_id, remote_port_id, remote_system_name, management_address, protocol)
      select ${o}, v.h, v.li, v.rc, coalesce(v.rp, e.remote_port_id), coalesce(v.rs, e.remote_system_name), coalesce(v.ma::inet, e.management_address), coalesce(v.pr, e.protocol, 'lldp')
      from unnest(${c('hostId')}::uuid[], ${c('localInterface')}::text[], ${c('remoteChassisId')}::text[], ${c('remotePortId')}::text[], ${c('remoteSystemName')}::text[], ${c('managementAddress')}::text[], ${c('protocol')}::text[]) as v(h, li, rc, rp, rs, ma, pr)
      left join host_neighbors e on e.organisation_id = ${o} and e.host_id = v.h and e.local_interface = v.li and e.remote_chassis_id = v.rc
      on conflict (organisation_id, host_id, local_interface, remote_chassis_id) do update set
        remote_port_id = excluded.remote_port_id, remote_system_name = excluded.remote_system_name, management_address = excluded.management_address, protocol = excluded.protocol, last_seen_at = now(),
        updated_at = case when ${sql.raw(differs)} then now() else host_neighbors.updated_at end
      where ${sql.raw(differs)} or host_neighbors.last_seen_at < ${since}
      returning host_id, local_interface, remote_chassis_id, ${CHANGED}`,
    db,
  );
}

const textArray = (col: string) => sql.raw(`(select array_agg(x order by x) from jsonb_array_elements_text(${col}::jsonb) x)`);

/** VLAN membership; absent member lists keep the stored ones. */
export async function upsertVlans(db: Db, o: string, since: Date, v: { hostId: string; vlanId: number; name: string | null; tagged: string[] | null; untagged: string[] | null }[]) {
  if (v.length === 0) return [];
  const differs = 'excluded.tagged is distinct from host_vlans.tagged or excluded.untagged is distinct from host_vlans.untagged or excluded.name is distinct from host_vlans.name';
  return rows(
    sql<{ host_id: string; vlan_id: number; changed: boolean }>`
      insert into host_vlans (organisation_id, host_id, vlan_id, name, tagged, untagged)
      select ${o}, v.h, v.vid, coalesce(v.n, e.name), coalesce(${textArray('v.t')}, e.tagged, '{}'), coalesce(${textArray('v.u')}, e.untagged, '{}')
      from unnest(${v.map((x) => x.hostId)}::uuid[], ${v.map((x) => x.vlanId)}::int[], ${v.map((x) => x.name)}::text[], ${v.map((x) => (x.tagged ? JSON.stringify(x.tagged) : null))}::text[], ${v.map((x) => (x.untagged ? JSON.stringify(x.untagged) : null))}::text[]) as v(h, vid, n, t, u)
      left join host_vlans e on e.organisation_id = ${o} and e.host_id = v.h and e.vlan_id = v.vid
      on conflict (organisation_id, host_id, vlan_id) do update set name = excluded.name, tagged = excluded.tagged, untagged = excluded.untagged, last_seen_at = now(),
        updated_at = case when ${sql.raw(differs)} then now() else host_vlans.updated_at end
      where ${sql.raw(differs)} or host_vlans.last_seen_at < ${since}
      returning host_id, vlan_id, ${CHANGED}`,
    db,
  );
}

/** How long a host keeps a platform CPE its reports no longer name (a scan may simply not reach the service that names it). */
export const PLATFORM_CPE_KEEP_DAYS = 30;

/**
 * Adds each reported platform CPE to its host's set (or refreshes it), and drops from a reporting
 * host the CPEs it has not named for PLATFORM_CPE_KEEP_DAYS: a scan that detects fewer services
 * does not shrink the set (no finding flaps), a host that changed does lose what it no longer is.
 * The ids of the hosts whose set changed.
 */
export async function reportPlatformCpes(db: Db, o: string, v: { hostId: string; cpe: string }[], hostIds: string[]): Promise<string[]> {
  if (hostIds.length === 0) return [];
  const removed = await sql<{ host_id: string }>`
    delete from host_platform_cpes p
    where p.organisation_id = ${o} and p.host_id = any(${hostIds}::uuid[])
      and p.seen_at < now() - ${PLATFORM_CPE_KEEP_DAYS} * interval '1 day'
      and not exists (select 1 from unnest(${v.map((x) => x.hostId)}::uuid[], ${v.map((x) => x.cpe)}::text[]) as n(h, c) where n.h = p.host_id and n.c = p.cpe)
    returning p.host_id`.execute(db);
  const added = v.length === 0 ? { rows: [] } : await sql<{ host_id: string; inserted: boolean }>`
    insert into host_platform_cpes (organisation_id, host_id, cpe)
    select ${o}, h, c from unnest(${v.map((x) => x.hostId)}::uuid[], ${v.map((x) => x.cpe)}::text[]) as n(h, c)
    on conflict (organisation_id, host_id, cpe) do update set seen_at = now() where host_platform_cpes.seen_at < now()
    returning host_id, (xmax = 0) as inserted`.execute(db);
  return [...new Set([...removed.rows.map((r) => r.host_id), ...added.rows.filter((r) => r.inserted).map((r) => r.host_id)])];
}

export async function upsertRoutes(db: Db, o: string, since: Date, v: { hostId: string; destination: string; nextHop: string | null; iface: string; metric: number | null }[]) {
  if (v.length === 0) return [];
  const differs = '(excluded.next_hop is not null and excluded.next_hop is distinct from host_routes.next_hop) or (excluded.metric is not null and excluded.metric is distinct from host_routes.metric)';
  return rows(
    sql<{ host_id: string; destination: string; interface: string; changed: boolean }>`
      insert into host_routes (organisation_id, host_id, destination, next_hop, interface, metric)
      select ${o}, h, network(d::inet)::cidr, nh::inet, i, m from unnest(${v.map((x) => x.hostId)}::uuid[], ${v.map((x) => x.destination)}::text[], ${v.map((x) => x.nextHop)}::text[], ${v.map((x) => x.iface)}::text[], ${v.map((x) => x.metric)}::int[]) as v(h, d, nh, i, m)
      on conflict (organisation_id, host_id, destination, interface) do update set next_hop = coalesce(excluded.next_hop, host_routes.next_hop), metric = coalesce(excluded.metric, host_routes.metric), last_seen_at = now(),
        updated_at = case when ${sql.raw(differs)} then now() else host_routes.updated_at end
      where ${sql.raw(differs)} or host_routes.last_seen_at < ${since}
      returning host_id, destination::text as destination, interface, ${CHANGED}`,
    db,
  );
}

/** LAG groups; an absent member list keeps the stored one. */
export async function upsertLagGroups(db: Db, o: string, since: Date, v: { hostId: string; name: string; protocol: string | null; members: string[] | null }[]) {
  if (v.length === 0) return [];
  const differs = 'excluded.members is distinct from host_lag_groups.members or excluded.protocol is distinct from host_lag_groups.protocol';
  return rows(
    sql<{ host_id: string; name: string; changed: boolean }>`
      insert into host_lag_groups (organisation_id, host_id, name, protocol, members)
      select ${o}, v.h, v.n, coalesce(v.p, e.protocol), coalesce(${textArray('v.m')}, e.members, '{}')
      from unnest(${v.map((x) => x.hostId)}::uuid[], ${v.map((x) => x.name)}::text[], ${v.map((x) => x.protocol)}::text[], ${v.map((x) => (x.members ? JSON.stringify(x.members) : null))}::text[]) as v(h, n, p, m)
      left join host_lag_groups e on e.organisation_id = ${o} and e.host_id = v.h and e.name = v.n
      on conflict (organisation_id, host_id, name) do update set protocol = excluded.protocol, members = excluded.members, last_seen_at = now(),
        updated_at = case when ${sql.raw(differs)} then now() else host_lag_groups.updated_at end
      where ${sql.raw(differs)} or host_lag_groups.last_seen_at < ${since}
      returning host_id, name, ${CHANGED}`,
    db,
  );
}

/**
 * Records the batch on the session: progress, first batch → running, final → completed. Returns
 * the new state. A change of state or progress (hosts and ports scanned, hosts total) is logged
 * (scan.updated on the live stream); a batch that moves neither is not.
 */
export async function advanceSession(db: Db, o: string, id: string, b: { final: boolean; hostsTotal?: number | undefined; hostsScanned?: number | undefined; portsScanned?: number | undefined; durationMs?: number | undefined }) {
  const r = await rows(
    sql<{ state: string }>`
      with prev as (
        -- Locked first (the update joins it): a row the same statement already updated is invisible to FOR UPDATE.
        select id as prev_id, state as prev_state, hosts_total as prev_total, hosts_scanned as prev_hosts, ports_scanned as prev_ports
        from scan_sessions where organisation_id = ${o} and id = ${id} for update
      ), s as (
      update scan_sessions set
        state = case when state in ('completed', 'failed', 'cancelled') then state when ${b.final} then 'completed' else 'running' end,
        started_at = coalesce(started_at, now()), last_batch_at = now(), batches = batches + 1, updated_at = now(),
        finished_at = case when ${b.final} and state not in ('completed', 'failed', 'cancelled') then now() else finished_at end,
        hosts_total = coalesce(${b.hostsTotal ?? null}::bigint, hosts_total),
        hosts_scanned = greatest(hosts_scanned, coalesce(${b.hostsScanned ?? null}::bigint, 0)),
        ports_scanned = greatest(ports_scanned, coalesce(${b.portsScanned ?? null}::bigint, 0)),
        duration_ms = coalesce(${b.durationMs ?? null}::bigint, duration_ms)
      from prev
      where organisation_id = ${o} and id = prev.prev_id
      returning id, state, (state, hosts_total, hosts_scanned, ports_scanned) is distinct from (prev_state, prev_total, prev_hosts, prev_ports) as moved
      ), logged as (
        ${changeSelect('scan', 'updated', { from: sql`s`, organisationId: sql`${o}::uuid`, where: sql`moved` })}
      )
      select state from s`,
    db,
  );
  return r[0]!.state;
}

/**
 * A completed session marks absent what it no longer saw inside its CIDR (less its exclusions):
 * services of hosts with an address there, not seen since the session started. Returns them with their hosts.
 */
export async function markAbsent(db: Db, o: string, session: { cidr: string; exclude_cidrs: string[]; since: Date; site_id: string | null }) {
  return rows(
    sql<{ id: string; host_id: string }>`
      update services s set gone_at = now(), updated_at = now()
      from hosts h
      where s.organisation_id = ${o} and s.gone_at is null and s.last_seen_at < ${session.since}
        and h.organisation_id = s.organisation_id and h.id = s.host_id and h.site_id is not distinct from ${session.site_id}::uuid
        and s.address is not null and s.address <<= ${session.cidr}::cidr
        and not exists (select 1 from unnest(${session.exclude_cidrs}::cidr[]) e where s.address <<= e)
        -- A Kubernetes service a cloud account still lists publishes its ports whether a scan reaches them or not.
        and not exists (select 1 from cloud_resources c where c.organisation_id = ${o} and c.host_id = s.host_id and c.kind = 'service' and c.gone_at is null)
      returning s.id, s.host_id`,
    db,
  );
}

/**
 * A completed session marks gone the hosts of its site it no longer found: every address of the
 * host inside its CIDR (less its exclusions), the host not seen since the session started (a
 * sighting by another session meanwhile moved last_seen_at: touchHosts), and no cloud account
 * lists it any more (cloud_resources). The rows are locked in
 * id order, as touchHosts locks them, so a concurrent batch never waits on it in a cycle.
 * Returns their ids.
 */
export async function markHostsGone(db: Db, o: string, session: { cidr: string; exclude_cidrs: string[]; since: Date; site_id: string | null }) {
  const r = await rows(
    sql<{ id: string }>`
      update hosts h set gone_at = now(), updated_at = now()
      from (
        select g.id from hosts g
        where g.organisation_id = ${o} and g.gone_at is null and g.last_seen_at < ${session.since} and g.site_id is not distinct from ${session.site_id}::uuid
          and g.id in (select a.host_id from host_addresses a where a.organisation_id = ${o} and a.address <<= ${session.cidr}::cidr)
          and not exists (
            select 1 from host_addresses a where a.organisation_id = ${o} and a.host_id = g.id
              and (not (a.address <<= ${session.cidr}::cidr) or exists (select 1 from unnest(${session.exclude_cidrs}::cidr[]) e where a.address <<= e))
          )
          -- What a cloud account still lists is the provider's to mark gone, not a scan's (issue 25).
          and not exists (select 1 from cloud_resources c where c.organisation_id = ${o} and c.host_id = g.id and c.gone_at is null)
        order by g.id for update
      ) gone
      where h.organisation_id = ${o} and h.id = gone.id
      returning h.id`,
    db,
  );
  return r.map((x) => x.id);
}

/** Announces a session that completed with this batch (event scan.completed). */
export async function announceScanCompleted(db: Db, o: string, sessionId: string, data: EventData<'scan.completed'>) {
  await emit(db, o, 'scan.completed', [{ subjectId: sessionId, data }]);
}

/** Whether the session already applied a batch with this digest. */
export async function batchSeen(db: Db, o: string, sessionId: string, digest: string) {
  const r = await rows(sql<{ rows: number }>`select rows from scan_batches where organisation_id = ${o} and session_id = ${sessionId} and digest = ${digest}`, db);
  return r.length > 0;
}

export async function recordBatch(db: Db, o: string, sessionId: string, digest: string, n: number) {
  await sql`insert into scan_batches (organisation_id, session_id, digest, rows) values (${o}, ${sessionId}, ${digest}, ${n}) on conflict do nothing`.execute(db);
}
