import { type Kysely, type RawBuilder, sql } from 'kysely';
import type { DB } from '../db/schema.js';

// The SQL of `surveyor admin merge-duplicate-hosts`: hosts of one site sharing an address (left
// by concurrent batches before identity was serialised per site) merged into the oldest.

type Db = Kysely<DB>;

export interface DuplicateHost {
  id: string;
  site_id: string | null;
  other_id: string;
}

/** Organisations that have hosts (all of them, or the one given). */
export async function organisationsWithHosts(db: Db, organisationId: string | null): Promise<string[]> {
  const r = await sql<{ id: string }>`
    select o.id from organisations o where ${organisationId ? sql`o.id = ${organisationId}` : sql`true`}
      and exists (select 1 from hosts h where h.organisation_id = o.id) order by o.id`.execute(db);
  return r.rows.map((x) => x.id);
}

/** Pairs of hosts of one site (null: no site) holding the same address. */
export async function hostsSharingAddresses(db: Db, organisationId: string): Promise<DuplicateHost[]> {
  const r = await sql<DuplicateHost>`
    select distinct a.host_id as id, ha.site_id, b.host_id as other_id
    from host_addresses a
    join host_addresses b on b.organisation_id = a.organisation_id and b.address = a.address and b.host_id > a.host_id
    join hosts ha on ha.organisation_id = a.organisation_id and ha.id = a.host_id
    join hosts hb on hb.organisation_id = b.organisation_id and hb.id = b.host_id
    where a.organisation_id = ${organisationId} and ha.site_id is not distinct from hb.site_id`.execute(db);
  return r.rows;
}

/** The hosts' age order: created first, then inserted first. */
export async function hostAges(db: Db, organisationId: string, ids: string[]): Promise<{ id: string; created_at: Date; seq: number }[]> {
  const r = await sql<{ id: string; created_at: Date; seq: number }>`
    select id, created_at, seq from hosts where organisation_id = ${organisationId} and id = any(${ids}::uuid[])`.execute(db);
  return r.rows.map((x) => ({ ...x, seq: Number(x.seq) }));
}

/** What the audit row of a merge records of the merged host. */
export async function hostSummaries(db: Db, organisationId: string, ids: string[]) {
  const r = await sql<{ id: string; fingerprints: string[]; addresses: string[] }>`
    select h.id,
      coalesce((select array_agg(f.fingerprint order by f.fingerprint) from host_fingerprints f where f.organisation_id = h.organisation_id and f.host_id = h.id), '{}') as fingerprints,
      coalesce((select array_agg(host(a.address) order by a.address) from host_addresses a where a.organisation_id = h.organisation_id and a.host_id = h.id), '{}') as addresses
    from hosts h where h.organisation_id = ${organisationId} and h.id = any(${ids}::uuid[])`.execute(db);
  return new Map(r.rows.map((x) => [x.id, x]));
}

/** A host's rows in a table keyed by (organisation, host, …key): what "the same row" means there. */
interface HostTable {
  table: string;
  key: string[];
  seen: boolean;
}

const HOST_TABLES: HostTable[] = [
  { table: 'host_addresses', key: ['address'], seen: true },
  { table: 'host_interfaces', key: ['name'], seen: true },
  { table: 'host_neighbors', key: ['local_interface', 'remote_chassis_id'], seen: true },
  { table: 'host_vlans', key: ['vlan_id'], seen: false },
  { table: 'host_routes', key: ['destination', 'interface'], seen: false },
  { table: 'host_lag_groups', key: ['name'], seen: false },
  { table: 'certificates', key: ['coalesce(port, -1)', 'sha256'], seen: true },
];

/** `m(dup, surv)`: the merges of one wave (each survivor takes at most one host per wave). */
const mapping = (m: { dup: string; surv: string }[]) => sql`unnest(${m.map((x) => x.dup)}::uuid[], ${m.map((x) => x.surv)}::uuid[]) as m(dup, surv)`;

const keyMatch = (key: string[], a: string, b: string): RawBuilder<unknown> => sql.raw(key.map((k) => (k.includes('(') ? `${k.replace(/\b(port)\b/, `${a}.$1`)} = ${k.replace(/\b(port)\b/, `${b}.$1`)}` : `${a}.${k} = ${b}.${k}`)).join(' and '));

/**
 * Moves everything of each duplicate host to its survivor, in the caller's transaction: rows the
 * survivor already has (same key) are kept on the survivor (first and last seen widened, a
 * service's findings moved over unless the survivor has the same one), the others change host;
 * fingerprints, children and findings follow; the survivor's missing facts are filled from the
 * duplicate; the duplicate is deleted. Derived dependency edges of the duplicates are dropped (the
 * next topology build makes them again). Returns the ids of the services that changed host.
 */
export async function mergeHosts(db: Db, o: string, merges: { dup: string; surv: string }[]): Promise<string[]> {
  if (merges.length === 0) return [];
  const m = mapping(merges);
  for (const t of HOST_TABLES) {
    const table = sql.table(t.table);
    if (t.seen) {
      await sql`update ${table} s set first_seen_at = least(s.first_seen_at, d.first_seen_at), last_seen_at = greatest(s.last_seen_at, d.last_seen_at)
        from ${m}, ${table} d
        where s.organisation_id = ${o} and d.organisation_id = ${o} and d.host_id = m.dup and s.host_id = m.surv and ${keyMatch(t.key, 's', 'd')}`.execute(db);
    } else {
      await sql`update ${table} s set last_seen_at = greatest(s.last_seen_at, d.last_seen_at)
        from ${m}, ${table} d
        where s.organisation_id = ${o} and d.organisation_id = ${o} and d.host_id = m.dup and s.host_id = m.surv and ${keyMatch(t.key, 's', 'd')}`.execute(db);
    }
    await sql`delete from ${table} d using ${m}, ${table} s
      where d.organisation_id = ${o} and s.organisation_id = ${o} and d.host_id = m.dup and s.host_id = m.surv and ${keyMatch(t.key, 's', 'd')}`.execute(db);
    await sql`update ${table} d set host_id = m.surv from ${m} where d.organisation_id = ${o} and d.host_id = m.dup`.execute(db);
  }
  // Services: one per (host, protocol, port). A duplicate's service the survivor also has gives
  // its findings to the survivor's (unless it has the same CVE) and fills its missing facts.
  await sql`
    with pairs as (
      select d.id as dup_service, s.id as surv_service from ${m}
      join services d on d.organisation_id = ${o} and d.host_id = m.dup
      join services s on s.organisation_id = ${o} and s.host_id = m.surv and s.protocol = d.protocol and s.port = d.port
    )
    update vulnerabilities v set service_id = p.surv_service, updated_at = now() from pairs p
    where v.organisation_id = ${o} and v.service_id = p.dup_service
      and not exists (select 1 from vulnerabilities x where x.organisation_id = ${o} and x.service_id = p.surv_service and x.cve_id = v.cve_id)`.execute(db);
  await sql`
    update services s set
      address = coalesce(s.address, d.address), banner = coalesce(s.banner, d.banner), name = coalesce(s.name, d.name), product = coalesce(s.product, d.product),
      vendor = coalesce(s.vendor, d.vendor), version = coalesce(s.version, d.version), cpe = coalesce(s.cpe, d.cpe),
      first_seen_at = least(s.first_seen_at, d.first_seen_at), last_seen_at = greatest(s.last_seen_at, d.last_seen_at),
      gone_at = case when s.gone_at is null or d.gone_at is null then null else greatest(s.gone_at, d.gone_at) end, updated_at = now()
    from ${m}, services d
    where s.organisation_id = ${o} and d.organisation_id = ${o} and d.host_id = m.dup and s.host_id = m.surv and s.protocol = d.protocol and s.port = d.port`.execute(db);
  await sql`delete from services d using ${m}, services s
    where d.organisation_id = ${o} and s.organisation_id = ${o} and d.host_id = m.dup and s.host_id = m.surv and s.protocol = d.protocol and s.port = d.port`.execute(db);
  const moved = await sql<{ id: string }>`update services d set host_id = m.surv, updated_at = now() from ${m} where d.organisation_id = ${o} and d.host_id = m.dup returning d.id`.execute(db);
  await sql`update vulnerabilities v set host_id = m.surv from ${m} where v.organisation_id = ${o} and v.host_id = m.dup`.execute(db);
  await sql`update host_fingerprints f set host_id = m.surv from ${m} where f.organisation_id = ${o} and f.host_id = m.dup`.execute(db);
  await sql`update hosts h set parent_host_id = m.surv from ${m} where h.organisation_id = ${o} and h.parent_host_id = m.dup and h.id <> m.surv`.execute(db);
  await sql`
    update hosts s set
      hostname = coalesce(s.hostname, d.hostname), fqdn = coalesce(s.fqdn, d.fqdn), vendor = coalesce(s.vendor, d.vendor), os = coalesce(s.os, d.os),
      device_type = coalesce(s.device_type, d.device_type), parent_host_id = coalesce(s.parent_host_id, nullif(d.parent_host_id, s.id)),
      first_seen_at = least(s.first_seen_at, d.first_seen_at), last_seen_at = greatest(s.last_seen_at, d.last_seen_at), updated_at = now()
    from ${m}, hosts d
    where s.organisation_id = ${o} and d.organisation_id = ${o} and s.id = m.surv and d.id = m.dup`.execute(db);
  await sql`delete from dependency_edges e using ${m} where e.organisation_id = ${o} and (e.src_host_id = m.dup or e.dst_host_id = m.dup)`.execute(db);
  await sql`delete from hosts h using ${m} where h.organisation_id = ${o} and h.id = m.dup`.execute(db);
  return moved.rows.map((r) => r.id);
}
