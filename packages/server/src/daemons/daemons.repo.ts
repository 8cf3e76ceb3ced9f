import { type Kysely, sql } from 'kysely';
import type { DB } from '../db/schema.js';
import { changeSelect, logChanges } from '../events/changes.js';
import { emitSelect } from '../events/emit.js';

/** The daemon `id` of the organisation registered with key `keyId`, or undefined. */
export function findOwnDaemon(db: Kysely<DB>, organisationId: string, id: string, keyId: string) {
  return db
    .selectFrom('daemons')
    .select(['id', 'name', 'status', 'capabilities', 'site_id'])
    .where('organisation_id', '=', organisationId)
    .where('id', '=', id)
    .where('key_id', '=', keyId)
    .where('removed_at', 'is', null)
    .executeTakeFirst();
}

export function findDaemonByName(db: Kysely<DB>, organisationId: string, name: string) {
  return db
    .selectFrom('daemons')
    .select(['id', 'boot_id'])
    .where('organisation_id', '=', organisationId)
    .where(sql`lower(name)`, '=', name.toLowerCase())
    .where('removed_at', 'is', null)
    .forUpdate()
    .executeTakeFirst();
}

/** The site with this code, created (named after the code) when none has it. */
export async function siteForCode(db: Kysely<DB>, organisationId: string, code: string): Promise<string> {
  const created = await sql<{ id: string }>`insert into sites (organisation_id, code, name) values (${organisationId}, ${code}, ${code}) on conflict (organisation_id, lower(code)) do nothing returning id`.execute(db);
  await logChanges(db, organisationId, 'site', created.rows.map((c) => c.id), 'created');
  const r = await sql<{ id: string }>`select id from sites where organisation_id = ${organisationId} and lower(code) = lower(${code})`.execute(db);
  return r.rows[0]!.id;
}

export interface DaemonFacts {
  keyId: string;
  name: string;
  version: string;
  os: string;
  arch: string;
  capabilities: Record<string, boolean>;
  networkCidrs: string[];
  metadata: Record<string, unknown>;
  bootId: string;
}

export async function insertDaemon(db: Kysely<DB>, organisationId: string, f: DaemonFacts, siteId: string | null) {
  const r = await sql<{ id: string }>`
    insert into daemons (organisation_id, key_id, name, version, os, arch, capabilities, network_cidrs, metadata, boot_id, site_id, last_seen_at)
    values (${organisationId}, ${f.keyId}, ${f.name}, ${f.version}, ${f.os}, ${f.arch}, ${JSON.stringify(f.capabilities)}::jsonb,
            ${f.networkCidrs}::cidr[], ${JSON.stringify(f.metadata)}::jsonb, ${f.bootId}, ${siteId}, now())
    returning id`.execute(db);
  const id = r.rows[0]!.id;
  await logChanges(db, organisationId, 'daemon', [id], 'created');
  return id;
}

/** Re-registration: facts refreshed, a new boot id counted as a restart; the site is left alone (one set in the UI always wins). */
export async function updateDaemon(db: Kysely<DB>, organisationId: string, id: string, f: DaemonFacts) {
  await sql`
    update daemons set key_id = ${f.keyId}, version = ${f.version}, os = ${f.os}, arch = ${f.arch},
      capabilities = ${JSON.stringify(f.capabilities)}::jsonb, network_cidrs = ${f.networkCidrs}::cidr[],
      metadata = ${JSON.stringify(f.metadata)}::jsonb,
      restart_count = restart_count + (case when boot_id is distinct from ${f.bootId}::uuid then 1 else 0 end),
      boot_id = ${f.bootId}, last_seen_at = now(), updated_at = now()
    where organisation_id = ${organisationId} and id = ${id}`.execute(db);
  await logChanges(db, organisationId, 'daemon', [id], 'updated');
}

/**
 * Records a heartbeat. A daemon that was announced offline (`daemon.offline`) is back: the same
 * statement clears its quiet episode and appends `daemon.online`.
 */
export async function recordHeartbeat(db: Kysely<DB>, organisationId: string, id: string, status: 'online' | 'degraded', reason: string | null, loadedSignatures: Record<string, number>, intervalSeconds: number) {
  await sql`
    with prev as (
      select id, name, status, offline_since, last_heartbeat_at from daemons where organisation_id = ${organisationId} and id = ${id} for update
    ), updated as (
      update daemons d set status = ${status}, status_reason = ${reason}, loaded_signatures = ${JSON.stringify(loadedSignatures)}::jsonb, heartbeat_interval_seconds = ${intervalSeconds},
        last_heartbeat_at = now(), last_seen_at = now(), updated_at = now(), offline_since = null
      from prev where d.organisation_id = ${organisationId} and d.id = prev.id
    ), logged as (
      -- A change of status, or the end of a quiet episode; not every heartbeat.
      ${changeSelect('daemon', 'updated', { from: sql`prev`, organisationId: sql`${organisationId}::uuid`, where: sql`prev.status <> ${status} or prev.offline_since is not null` })}
    )
    ${emitSelect('daemon.online', {
      from: sql`prev`,
      where: sql`prev.offline_since is not null`,
      organisationId: sql`${organisationId}::uuid`,
      subjectId: sql`prev.id`,
      data: {
        name: sql`prev.name`, status: sql`${status}::text`, reason: sql`${reason}::text`, offlineSince: sql`prev.offline_since`, lastHeartbeatAt: sql`prev.last_heartbeat_at`,
        quietSeconds: sql`round(extract(epoch from now() - coalesce(prev.last_heartbeat_at, prev.offline_since)))`,
      },
    })}`.execute(db);
}

/** Quiet for more than this while `online` is a problem (spec 3.3, decisions.md). */
export const DAEMON_QUIET_SECONDS = 300;

/**
 * daemon.offline (decisions.md): an `online` daemon quiet (no heartbeat) for more than 300 s
 * starts a quiet episode, announced once; its next heartbeat ends it with `daemon.online`
 * (recordHeartbeat). Checked every minute, by scan.stall.
 */
export async function markQuietDaemonsOffline(db: Kysely<DB>, at: Date): Promise<{ organisation_id: string; id: string }[]> {
  const r = await sql<{ organisation_id: string; id: string }>`
    with quiet as (
      update daemons set offline_since = ${at}
      where status = 'online' and offline_since is null and disabled_at is null and removed_at is null
        and coalesce(last_heartbeat_at, registered_at) < ${at}::timestamptz - make_interval(secs => ${DAEMON_QUIET_SECONDS})
      returning organisation_id, id, name, last_heartbeat_at, site_id
    ), logged as (
      ${changeSelect('daemon', 'updated', { from: sql`quiet` })}
    ), announced as (
      ${emitSelect('daemon.offline', {
        from: sql`quiet`, organisationId: sql`organisation_id`, subjectId: sql`id`,
        data: { name: sql`name`, siteId: sql`site_id`, lastHeartbeatAt: sql`last_heartbeat_at`, quietSeconds: sql`round(extract(epoch from ${at}::timestamptz - last_heartbeat_at))` },
      })}
    )
    select organisation_id, id from quiet order by organisation_id, id`.execute(db);
  return r.rows;
}

/** Every daemon of the organisation for the console (removed ones aside), the quietest first. */
export async function listDaemons(db: Kysely<DB>, organisationId: string, id?: string) {
  const r = await sql<{
    id: string; name: string; site_id: string | null; status: string; version: string; os: string; arch: string; capabilities: Record<string, boolean>;
    status_reason: string | null; network_cidrs: string[]; last_heartbeat_at: Date | null; offline_since: Date | null; quiet: number; heartbeat_interval_seconds: number; flows_dropped: number; restart_count: number; registered_at: Date;
    disabled_at: Date | null; key_id: string; loaded_signatures: Record<string, number>;
  }>`
    select id, name, site_id, status, status_reason, version, os, arch, capabilities, network_cidrs::text[] as network_cidrs, last_heartbeat_at, offline_since,
           extract(epoch from now() - coalesce(last_heartbeat_at, registered_at))::float8 as quiet, heartbeat_interval_seconds, flows_dropped, restart_count, registered_at,
           disabled_at, key_id, loaded_signatures
    from daemons where organisation_id = ${organisationId} and removed_at is null ${id === undefined ? sql`` : sql`and id = ${id}`}
    order by coalesce(last_heartbeat_at, registered_at), name`.execute(db);
  return r.rows;
}

/** The prefix of a key (shown to say which key a daemon uses). */
export async function keyPrefix(db: Kysely<DB>, organisationId: string, keyId: string): Promise<string> {
  const k = await db.selectFrom('keys').select('token_prefix').where('organisation_id', '=', organisationId).where('id', '=', keyId).executeTakeFirst();
  return k?.token_prefix ?? '';
}

/** The daemon (not removed), locked for a change; undefined when the organisation has none of that id. */
export function lockDaemon(db: Kysely<DB>, organisationId: string, id: string) {
  return db
    .selectFrom('daemons')
    .select(['id', 'name', 'key_id', 'disabled_at'])
    .where('organisation_id', '=', organisationId)
    .where('id', '=', id)
    .where('removed_at', 'is', null)
    .forUpdate()
    .executeTakeFirst();
}

/** Disables (sets disabled_at, ending any quiet episode: a disabled daemon is never silent) or re-enables the daemon; logs it. */
export async function setDisabled(db: Kysely<DB>, organisationId: string, id: string, disabled: boolean): Promise<void> {
  await db
    .updateTable('daemons')
    .set(disabled ? { disabled_at: sql`now()`, offline_since: null, updated_at: sql`now()` } : { disabled_at: null, updated_at: sql`now()` })
    .where('organisation_id', '=', organisationId)
    .where('id', '=', id)
    .execute();
  await logChanges(db, organisationId, 'daemon', [id], 'updated');
}

/** Marks the daemon removed (the row stays for its sessions' history) and logs it deleted. */
export async function markRemoved(db: Kysely<DB>, organisationId: string, id: string): Promise<void> {
  await db.updateTable('daemons').set({ removed_at: sql`now()`, offline_since: null, updated_at: sql`now()` }).where('organisation_id', '=', organisationId).where('id', '=', id).execute();
  await logChanges(db, organisationId, 'daemon', [id], 'deleted');
}
