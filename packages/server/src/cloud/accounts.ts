import { randomUUID } from 'node:crypto';
import { AwsAccountSettings, AwsCredentials, type CreateCloudAccountRequest, KubernetesAccountSettings, KubernetesCredentials, type UpdateCloudAccountRequest } from '@surveyor/contract';
import { type Kysely, sql } from 'kysely';
import type { z } from 'zod';
import { type Actor, recordAudit } from '../audit/audit.repo.js';
import { decryptSecret, encryptSecret } from '../crypto/secrets.js';
import type { DB } from '../db/schema.js';
import { rfc3339 } from '../db/sql.js';
import { AppError } from '../errors.js';
import { logChanges } from '../events/changes.js';
import { refreshHostSummaries } from '../inventory/host-summaries.js';
import { markHostsGone } from './cloud.repo.js';

// Cloud accounts (Settings → Cloud accounts): their settings, their sealed credentials, their last
// sync. The credentials are one JSON document sealed with AES-256-GCM under SERVICE_SECRET_KEY,
// bound to the account's row; nothing here returns, logs or audits them.

export type CloudKind = 'aws' | 'kubernetes';
export type AwsAccount = { kind: 'aws'; settings: z.output<typeof AwsAccountSettings>; credentials: z.output<typeof AwsCredentials> };
export type KubernetesAccount = { kind: 'kubernetes'; settings: z.output<typeof KubernetesAccountSettings>; credentials: Partial<z.output<typeof KubernetesCredentials>> };
/** An account opened for a sync: its settings and credentials of its kind. */
export type OpenedAccount = (AwsAccount | KubernetesAccount) & { id: string; organisationId: string; name: string; siteId: string | null; cursor: Record<string, string> };

const schemas = {
  aws: { settings: AwsAccountSettings, credentials: AwsCredentials },
  // In-cluster accounts hold no kubeconfig.
  kubernetes: { settings: KubernetesAccountSettings, credentials: KubernetesCredentials.partial() },
} as const;

export interface AccountRow {
  id: string;
  kind: CloudKind;
  name: string;
  site_id: string | null;
  enabled: boolean;
  settings: Record<string, unknown>;
  credentials_sealed: string;
  credential_hint: string;
  provider_account: string | null;
  last_sync_at: string | null;
  last_sync_ms: number | null;
  last_sync_status: 'ok' | 'failed' | null;
  last_sync_error: string | null;
  last_sync_counts: Record<string, number>;
  last_sync_warnings: string[];
  sync_cursor: Record<string, string>;
  created_at: string;
  updated_at: string;
}

const columns = sql`id, kind, name, site_id, enabled, settings, credentials_sealed, credential_hint, provider_account, ${rfc3339('last_sync_at')} as last_sync_at,
  last_sync_ms, last_sync_status, last_sync_error, last_sync_counts, last_sync_warnings, sync_cursor, ${rfc3339('created_at')} as created_at, ${rfc3339('updated_at')} as updated_at`;

/** The account as the admin API shows it: never its credentials. */
export function view(r: AccountRow) {
  return {
    id: r.id, kind: r.kind, name: r.name, siteId: r.site_id, enabled: r.enabled, settings: r.settings, credentialHint: r.credential_hint, providerAccount: r.provider_account,
    lastSync: r.last_sync_at && r.last_sync_status
      ? { at: r.last_sync_at, durationMs: r.last_sync_ms ?? 0, status: r.last_sync_status, error: r.last_sync_error, counts: r.last_sync_counts, warnings: r.last_sync_warnings }
      : null,
    createdAt: r.created_at, updatedAt: r.updated_at,
  };
}

/** The sealed credentials are bound to their row: a copied value does not open elsewhere. */
const context = (organisationId: string, id: string) => `cloud_account:${organisationId}:${id}`;

/** What identifies credentials without revealing them: an access key id's last four characters; a kubeconfig's server host. */
export function hintOf(kind: CloudKind, credentials: Record<string, unknown>): string {
  if (kind === 'aws') return `access key …${String(credentials.accessKeyId).slice(-4)}`;
  if (credentials.kubeconfig === undefined) return 'in-cluster service account';
  const server = kubeconfigServer(String(credentials.kubeconfig));
  if (!server) return 'kubeconfig';
  try {
    return `kubeconfig for ${new URL(server).host}`;
  } catch {
    return 'kubeconfig';
  }
}

/** A kubeconfig's first cluster server URL (what the console shows as the cluster). */
export const kubeconfigServer = (kubeconfig: string): string | null => /^\s*server:\s*["']?(https?:\/\/[^\s"']+)/m.exec(kubeconfig)?.[1] ?? null;

async function find(db: Kysely<DB>, organisationId: string, id: string): Promise<AccountRow> {
  const r = await sql<AccountRow>`select ${columns} from cloud_accounts where organisation_id = ${organisationId} and id = ${id}`.execute(db);
  if (!r.rows[0]) throw new AppError('not_found', 'No such cloud account.');
  return r.rows[0];
}

/** An account with its credentials opened, for a sync or a test (another organisation's id: 404). */
export async function openAccount(db: Kysely<DB>, key: Buffer, organisationId: string, id: string): Promise<OpenedAccount> {
  const r = await find(db, organisationId, id);
  const credentials = JSON.parse(decryptSecret(key, r.credentials_sealed, context(organisationId, id))) as Record<string, unknown>;
  const s = schemas[r.kind];
  return {
    id: r.id, organisationId, name: r.name, siteId: r.site_id, kind: r.kind, cursor: r.sync_cursor,
    settings: s.settings.parse(r.settings), credentials: s.credentials.parse(credentials),
  } as OpenedAccount;
}

export async function listAccounts(db: Kysely<DB>, organisationId: string) {
  const r = await sql<AccountRow>`select ${columns} from cloud_accounts where organisation_id = ${organisationId} order by lower(name)`.execute(db);
  return r.rows.map(view);
}

/** The enabled accounts of a kind in an organisation (what a scheduled sync goes through). */
export async function enabledAccountIds(db: Kysely<DB>, organisationId: string, kind: CloudKind): Promise<string[]> {
  const r = await sql<{ id: string }>`select id from cloud_accounts where organisation_id = ${organisationId} and kind = ${kind} and enabled order by lower(name)`.execute(db);
  return r.rows.map((x) => x.id);
}

/** An account's kind (404 when it is not the organisation's). */
export async function accountKind(db: Kysely<DB>, organisationId: string, id: string): Promise<CloudKind> {
  return (await find(db, organisationId, id)).kind;
}

function refused(e: unknown): never {
  const code = (e as { code?: string }).code;
  if (code === '23505') throw new AppError('duplicate', 'A cloud account with this name already exists.');
  if (code === '23503') throw new AppError('validation_failed', 'No such site.', { issues: [{ path: 'body.siteId', message: 'no site with this id in the organisation' }] });
  throw e;
}

type OrgActor = Actor & { organisationId: string };
/** What an audit row says of an account: never its credentials. */
const audited = (a: { name: string; kind: string; siteId: string | null; enabled: boolean; settings: Record<string, unknown> }) => ({ name: a.name, kind: a.kind, siteId: a.siteId, enabled: a.enabled, settings: a.settings });

/** A Kubernetes account has a kubeconfig, or is in-cluster without one: else 400 naming the field. */
function requireKubeconfig(input: z.output<typeof CreateCloudAccountRequest>): void {
  if (input.kind !== 'kubernetes' || !!input.credentials !== !!input.settings.inCluster) return;
  const message = input.credentials ? 'an in-cluster account takes no kubeconfig' : 'a kubeconfig, or settings.inCluster where the deployment allows it';
  throw new AppError('validation_failed', `credentials: ${message}.`, { issues: [{ path: 'body.credentials', message }] });
}

/** An in-cluster Kubernetes account where the deployment does not allow one: 400 naming the setting. */
function refuseInCluster(settings: Record<string, unknown>, allowInCluster: boolean): void {
  if (settings.inCluster && !allowInCluster) {
    throw new AppError('validation_failed', 'This deployment does not let accounts read the cluster it runs in with its own service account (SERVICE_CLOUD_IN_CLUSTER=allow); give a kubeconfig.', {
      issues: [{ path: 'body.settings.inCluster', message: 'not allowed in this deployment' }],
    });
  }
}

export async function createAccount(db: Kysely<DB>, key: Buffer, actor: OrgActor, input: z.output<typeof CreateCloudAccountRequest>, opts: { allowInCluster?: boolean } = {}) {
  const organisationId = actor.organisationId;
  requireKubeconfig(input);
  refuseInCluster(input.settings, opts.allowInCluster ?? false);
  const credentials = input.credentials ?? {};
  const id = randomUUID();
  return db.transaction().execute(async (trx) => {
    const r = await sql<AccountRow>`
      insert into cloud_accounts (organisation_id, id, kind, name, site_id, enabled, settings, credentials_sealed, credential_hint)
      values (${organisationId}, ${id}, ${input.kind}, ${input.name}, ${input.siteId}, ${input.enabled}, ${JSON.stringify(input.settings)}::jsonb,
              ${encryptSecret(key, JSON.stringify(credentials), context(organisationId, id))}, ${hintOf(input.kind, credentials)})
      returning ${columns}`
      .execute(trx)
      .catch(refused);
    const created = view(r.rows[0]!);
    await recordAudit(trx, actor, { organisationId, action: 'cloud_account.created', targetType: 'cloud_account', targetId: id, changes: audited(created) });
    return created;
  });
}

/** Settings or credentials of another kind than the account's: 400 naming the field. */
function ofKind<T>(schema: z.ZodType<T>, value: unknown, field: string, kind: CloudKind): T {
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    throw new AppError('validation_failed', `${field} is not valid for a ${kind} account.`, {
      issues: parsed.error.issues.map((i) => ({ path: ['body', field, ...i.path.map(String)].join('.'), message: i.message })),
    });
  }
  return parsed.data;
}

export async function updateAccount(db: Kysely<DB>, key: Buffer, actor: OrgActor, id: string, input: z.output<typeof UpdateCloudAccountRequest>, opts: { allowInCluster?: boolean } = {}) {
  const organisationId = actor.organisationId;
  return db.transaction().execute(async (trx) => {
    const old = await find(trx, organisationId, id);
    const s = schemas[old.kind];
    const settings = input.settings ? ofKind(s.settings as z.ZodType<Record<string, unknown>>, input.settings, 'settings', old.kind) : null;
    if (settings) refuseInCluster(settings, opts.allowInCluster ?? false);
    const credentials = input.credentials ? ofKind((old.kind === 'aws' ? AwsCredentials : KubernetesCredentials) as z.ZodType<Record<string, unknown>>, input.credentials, 'credentials', old.kind) : null;
    // The stored credentials are not sent to a new place on an admin's word alone: a new endpoint takes them given again.
    if (settings && (settings.endpoint ?? null) !== ((old.settings.endpoint as string | undefined) ?? null) && !credentials) {
      throw new AppError('validation_failed', 'Give the credentials again to change the endpoint they are sent to.', { issues: [{ path: 'body.credentials', message: 'required when settings.endpoint changes' }] });
    }
    const r = await sql<AccountRow>`
      update cloud_accounts set
        name = ${input.name ?? old.name},
        site_id = ${input.siteId === undefined ? old.site_id : input.siteId},
        enabled = ${input.enabled ?? old.enabled},
        settings = ${JSON.stringify(settings ?? old.settings)}::jsonb,
        credentials_sealed = ${credentials ? encryptSecret(key, JSON.stringify(credentials), context(organisationId, id)) : old.credentials_sealed},
        credential_hint = ${credentials ? hintOf(old.kind, credentials) : old.credential_hint},
        provider_account = ${credentials ? null : old.provider_account},
        updated_at = now()
      where organisation_id = ${organisationId} and id = ${id}
      returning ${columns}`
      .execute(trx)
      .catch(refused);
    const updated = view(r.rows[0]!);
    await recordAudit(trx, actor, {
      organisationId, action: 'cloud_account.updated', targetType: 'cloud_account', targetId: id,
      changes: { ...audited(updated), ...(credentials ? { credentials: 'replaced' } : {}) },
    });
    return updated;
  });
}

/** Removes an account and its record of the provider's resources; the hosts only it listed are marked gone (they keep their history). */
export async function deleteAccount(db: Kysely<DB>, actor: OrgActor, id: string): Promise<void> {
  const organisationId = actor.organisationId;
  await db.transaction().execute(async (trx) => {
    const old = await find(trx, organisationId, id);
    const hosts = await sql<{ host_id: string }>`select distinct host_id from cloud_resources where organisation_id = ${organisationId} and account_id = ${id} and host_id is not null`.execute(trx);
    await sql`delete from cloud_accounts where organisation_id = ${organisationId} and id = ${id}`.execute(trx);
    // What only this account listed is gone with it (a host a daemon saw, or another account lists, stays).
    const gone = await markHostsGone(trx, organisationId, hosts.rows.map((r) => r.host_id));
    await logChanges(trx, organisationId, 'host', gone, 'updated');
    // Their services are no longer exposed through the account's resources.
    await refreshHostSummaries(trx, organisationId, [], hosts.rows.map((r) => r.host_id));
    await recordAudit(trx, actor, { organisationId, action: 'cloud_account.deleted', targetType: 'cloud_account', targetId: id, changes: { name: old.name, kind: old.kind } });
  });
}

/** Records what the provider calls the account (after a test or sync). */
export async function setProviderAccount(db: Kysely<DB>, organisationId: string, id: string, providerAccount: string | null): Promise<void> {
  await sql`update cloud_accounts set provider_account = ${providerAccount} where organisation_id = ${organisationId} and id = ${id} and provider_account is distinct from ${providerAccount}`.execute(db);
}

/** Records a sync's outcome on its account (what the console's list shows). */
export async function recordSync(
  db: Kysely<DB>,
  organisationId: string,
  id: string,
  outcome: { at: Date; ms: number; status: 'ok' | 'failed'; error: string | null; counts: Record<string, number>; warnings: string[]; cursor?: Record<string, string> | undefined },
): Promise<void> {
  await sql`
    update cloud_accounts set last_sync_at = ${outcome.at}, last_sync_ms = ${outcome.ms}, last_sync_status = ${outcome.status}, last_sync_error = ${outcome.error},
      last_sync_counts = ${JSON.stringify(outcome.counts)}::jsonb, last_sync_warnings = ${outcome.warnings.slice(0, 50).map((w) => w.slice(0, 500))}::text[],
      sync_cursor = ${outcome.cursor ? JSON.stringify(outcome.cursor) : sql`sync_cursor`}::jsonb
    where organisation_id = ${organisationId} and id = ${id}`.execute(db);
}

/**
 * Takes the account for a sync until `leaseMs` from now, unless another sync holds it: the lease (its
 * end, as text) to give back to releaseSync, or null.
 */
export async function claimSync(db: Kysely<DB>, organisationId: string, id: string, leaseMs: number): Promise<string | null> {
  const r = await sql<{ lease: string }>`
    update cloud_accounts set sync_lease_until = clock_timestamp() + ${`${leaseMs} milliseconds`}::interval
    where organisation_id = ${organisationId} and id = ${id} and (sync_lease_until is null or sync_lease_until < now())
    returning sync_lease_until::text as lease`.execute(db);
  return r.rows[0]?.lease ?? null;
}

/** Frees the account for the next sync, if this sync's lease still holds it (one that outlived its lease frees nothing). */
export async function releaseSync(db: Kysely<DB>, organisationId: string, id: string, lease: string): Promise<void> {
  await sql`update cloud_accounts set sync_lease_until = null where organisation_id = ${organisationId} and id = ${id} and sync_lease_until = ${lease}::timestamptz`.execute(db);
}
