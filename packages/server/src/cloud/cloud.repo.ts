import { type Kysely, sql } from 'kysely';
import { CLOUD_FINGERPRINT } from '../ingest/facts.js';
import type { DB } from '../db/schema.js';

// The SQL of a cloud sync: the account's record of the provider's resources, and the hosts it vouches for.

/** What the account's previous syncs recorded: each resource's content hash, host and whether it is gone. */
export async function knownResources(db: Kysely<DB>, org: string, accountId: string) {
  const r = await sql<{ provider_id: string; kind: string; location: string | null; content_hash: string; host_id: string | null; gone: boolean }>`
    select provider_id, kind, location, content_hash, host_id, gone_at is not null as gone from cloud_resources where organisation_id = ${org} and account_id = ${accountId}`.execute(db);
  return r.rows;
}

/** The hosts fingerprints are bound to. */
export async function hostsOfFingerprints(db: Kysely<DB>, org: string, fingerprints: string[]): Promise<Map<string, string>> {
  if (fingerprints.length === 0) return new Map();
  const r = await sql<{ fingerprint: string; host_id: string }>`select fingerprint, host_id from host_fingerprints where organisation_id = ${org} and fingerprint = any(${fingerprints}::text[])`.execute(db);
  return new Map(r.rows.map((x) => [x.fingerprint, x.host_id]));
}

export interface ResourceValues {
  provider_id: string;
  kind: string;
  host_id: string | null;
  name: string | null;
  state: string;
  location: string | null;
  public_addresses: string[];
  labels: Record<string, string>;
  data: Record<string, unknown>;
  inbound: unknown[];
  ports: unknown[];
  content_hash: string;
}

/**
 * Writes resources new or changed (one statement, from one JSON document); a gone one listed again
 * is back. Returns the hosts they are, and were before (a resource may move to another host):
 * those whose services' exposure may have changed.
 */
export async function upsertResources(db: Kysely<DB>, org: string, accountId: string, values: ResourceValues[]): Promise<string[]> {
  if (values.length === 0) return [];
  const r = await sql<{ host_id: string }>`
    with v as (
      select * from jsonb_to_recordset(${JSON.stringify(values)}::jsonb) as v(provider_id text, kind text, host_id uuid, name text, state text, location text, public_addresses jsonb,
                                                                               labels jsonb, data jsonb, inbound jsonb, ports jsonb, content_hash text)
    ), before as (
      select c.host_id from cloud_resources c join v on c.organisation_id = ${org} and c.account_id = ${accountId} and c.provider_id = v.provider_id
    ), up as (
      insert into cloud_resources (organisation_id, account_id, provider_id, kind, host_id, name, state, location, public_addresses, labels, data, inbound, ports, content_hash)
      select ${org}, ${accountId}, v.provider_id, v.kind, v.host_id, v.name, v.state, v.location, array(select jsonb_array_elements_text(v.public_addresses))::inet[],
             v.labels, v.data, v.inbound, v.ports, v.content_hash
      from v
      on conflict (organisation_id, account_id, provider_id) do update set
        kind = excluded.kind, host_id = excluded.host_id, name = excluded.name, state = excluded.state, location = excluded.location, public_addresses = excluded.public_addresses,
        labels = excluded.labels, data = excluded.data, inbound = excluded.inbound, ports = excluded.ports, content_hash = excluded.content_hash, last_seen_at = now(), gone_at = null
      returning host_id
    )
    select host_id from before where host_id is not null union select host_id from up where host_id is not null`.execute(db);
  return r.rows.map((x) => x.host_id);
}

/** Marks resources no longer listed gone; returns the hosts they were. */
export async function markResourcesGone(db: Kysely<DB>, org: string, accountId: string, providerIds: string[]): Promise<string[]> {
  const r = await sql<{ host_id: string | null }>`
    update cloud_resources set gone_at = now() where organisation_id = ${org} and account_id = ${accountId} and provider_id = any(${providerIds}::text[]) and gone_at is null
    returning host_id`.execute(db);
  return [...new Set(r.rows.flatMap((x) => (x.host_id ? [x.host_id] : [])))];
}

/**
 * Marks gone the hosts of `hostIds` no cloud account lists any more and no daemon observed (a host
 * with a daemon's fingerprint is a completed scan's to mark gone). Rows locked in id order, as the
 * ingest path locks them. Returns their ids.
 */
export async function markHostsGone(db: Kysely<DB>, org: string, hostIds: string[]): Promise<string[]> {
  const r = await sql<{ id: string }>`
    update hosts h set gone_at = now(), updated_at = now()
    from (
      select g.id from hosts g
      where g.organisation_id = ${org} and g.id = any(${hostIds}::uuid[]) and g.gone_at is null
        and not exists (select 1 from cloud_resources c where c.organisation_id = ${org} and c.host_id = g.id and c.gone_at is null)
        and not exists (select 1 from host_fingerprints f where f.organisation_id = ${org} and f.host_id = g.id and f.fingerprint !~ ${CLOUD_FINGERPRINT})
      order by g.id for update
    ) x
    where h.organisation_id = ${org} and h.id = x.id
    returning h.id`.execute(db);
  return r.rows.map((x) => x.id);
}

/** The hosts an account still lists were seen now: their last-seen time moves, at most once per `everyMs` (a sync every few minutes does not rewrite them). */
export async function touchListedHosts(db: Kysely<DB>, org: string, hostIds: string[], everyMs: number): Promise<void> {
  if (hostIds.length === 0) return;
  await sql`
    update hosts h set last_seen_at = now()
    from (select id from hosts where organisation_id = ${org} and id = any(${hostIds}::uuid[]) and gone_at is null and last_seen_at < now() - ${`${everyMs} milliseconds`}::interval order by id for update) x
    where h.organisation_id = ${org} and h.id = x.id`.execute(db);
}

/** What cloud accounts list host `hostId` as (its provenance): listed ones first. */
export async function provenanceOf(db: Kysely<DB>, org: string, hostId: string) {
  const r = await sql<{
    account_id: string; account_name: string; provider: 'aws' | 'kubernetes'; kind: 'instance' | 'interface' | 'node' | 'pod' | 'service' | 'ingress'; provider_id: string; name: string | null; state: string;
    location: string | null; labels: Record<string, string>; data: Record<string, unknown>; public_addresses: string[]; inbound: unknown[]; ports: unknown[];
    first_seen_at: Date; last_seen_at: Date; gone_at: Date | null;
  }>`
    select r.account_id, a.name as account_name, a.kind as provider, r.kind, r.provider_id, r.name, r.state, r.location, r.labels, r.data,
           array(select host(x) from unnest(r.public_addresses) x) as public_addresses, r.inbound, r.ports, r.first_seen_at, r.last_seen_at, r.gone_at
    from cloud_resources r join cloud_accounts a on a.organisation_id = r.organisation_id and a.id = r.account_id
    where r.organisation_id = ${org} and r.host_id = ${hostId}
    order by r.gone_at is not null, r.gone_at desc, a.name, r.provider_id`.execute(db);
  return r.rows;
}
