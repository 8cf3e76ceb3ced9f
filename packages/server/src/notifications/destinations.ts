import { randomBytes, randomUUID } from 'node:crypto';
import {
  type CreateDestinationRequest,
  defaultDestinationEvents,
  EmailConfig,
  SlackConfig,
  type UpdateDestinationRequest,
  WebhookConfig,
} from '@surveyor/contract';
import { type Kysely, sql } from 'kysely';
import { z } from 'zod';
import { type Actor, recordAudit } from '../audit/audit.repo.js';
import type { DB } from '../db/schema.js';
import { rfc3339 } from '../db/sql.js';
import { decryptSecret, encryptSecret } from '../crypto/secrets.js';
import { AppError } from '../errors.js';
import type { EventPayload } from '../events/events.js';
import { type SendOptions, send } from './senders.js';

export type DestinationKind = 'webhook' | 'slack' | 'email';
export type WebhookSettings = z.output<typeof WebhookConfig> & { secret: string };
export type SlackSettings = z.output<typeof SlackConfig>;
export type EmailSettings = z.output<typeof EmailConfig>;
export type DestinationConfig =
  | { kind: 'webhook'; config: WebhookSettings }
  | { kind: 'slack'; config: SlackSettings }
  | { kind: 'email'; config: EmailSettings };

const configSchemas = { webhook: WebhookConfig, slack: SlackConfig, email: EmailConfig } as const;

interface Row {
  id: string;
  name: string;
  kind: DestinationKind;
  enabled: boolean;
  event_kinds: string[];
  min_severity: 'info' | 'warning' | 'critical';
  target: string;
  config_sealed: string;
  created_at: string;
  updated_at: string;
}

/** The destination as the admin API shows it: never a secret. */
function view(r: Row) {
  return { id: r.id, name: r.name, kind: r.kind, enabled: r.enabled, events: r.event_kinds, minSeverity: r.min_severity, target: r.target, createdAt: r.created_at, updatedAt: r.updated_at };
}

/** The sealed settings are bound to their row (organisation and id): a copied value does not open elsewhere. */
const context = (organisationId: string, id: string) => `notification_destination:${organisationId}:${id}`;

/**
 * Where a destination sends, with what could be a credential left out: of a URL only its scheme
 * and host (webhook paths often are the token: Slack, Discord, Teams, Mattermost).
 */
export function targetOf(d: DestinationConfig): string {
  if (d.kind === 'email') return `smtp://${d.config.host}:${d.config.port} → ${d.config.to.join(', ')}`;
  const u = new URL(d.config.url);
  return `${u.protocol}//${u.host}/…`;
}

const columns = sql`id, name, kind, enabled, event_kinds, min_severity, target, config_sealed, ${rfc3339('created_at')} as created_at, ${rfc3339('updated_at')} as updated_at`;

async function find(db: Kysely<DB>, organisationId: string, id: string): Promise<Row> {
  const r = await sql<Row>`select ${columns} from notification_destinations where organisation_id = ${organisationId} and id = ${id}`.execute(db);
  if (!r.rows[0]) throw new AppError('not_found', 'No such notification destination.');
  return r.rows[0];
}

/** The settings of a destination, decrypted: only for sending. */
export function openConfig(key: Buffer, organisationId: string, row: { id: string; kind: DestinationKind; config_sealed: string }): DestinationConfig {
  return { kind: row.kind, config: JSON.parse(decryptSecret(key, row.config_sealed, context(organisationId, row.id))) } as DestinationConfig;
}

export async function listDestinations(db: Kysely<DB>, organisationId: string) {
  const r = await sql<Row>`select ${columns} from notification_destinations where organisation_id = ${organisationId} order by lower(name)`.execute(db);
  return r.rows.map(view);
}

export async function getDestination(db: Kysely<DB>, key: Buffer, organisationId: string, id: string) {
  const row = await find(db, organisationId, id);
  return { ...view(row), settings: openConfig(key, organisationId, row) };
}

function duplicateName(e: unknown): never {
  if ((e as { code?: string }).code === '23505') throw new AppError('duplicate', 'A notification destination with this name already exists.');
  throw e;
}

/** Who changed a destination: the audit row's actor, and the organisation it belongs to. */
type OrgActor = Actor & { organisationId: string };

/** What an audit row says of a destination: never its configuration (secrets). */
const audited = (d: { name: string; kind: string; enabled: boolean; events: string[]; minSeverity: string }) => ({
  name: d.name, kind: d.kind, enabled: d.enabled, events: d.events, minSeverity: d.minSeverity,
});

export async function createDestination(db: Kysely<DB>, key: Buffer, actor: OrgActor, input: z.output<typeof CreateDestinationRequest>) {
  const organisationId = actor.organisationId;
  let generated: string | undefined;
  const settings = { kind: input.kind, config: { ...input.config } } as DestinationConfig;
  if (settings.kind === 'webhook' && !settings.config.secret) settings.config.secret = generated = randomBytes(32).toString('base64url');
  const id = randomUUID();
  return db.transaction().execute(async (trx) => {
    const row = await sql<Row>`
      insert into notification_destinations (organisation_id, id, name, kind, enabled, event_kinds, min_severity, target, config_sealed)
      values (${organisationId}, ${id}, ${input.name}, ${input.kind}, ${input.enabled ?? true}, ${input.events ?? [...defaultDestinationEvents]}::text[],
              ${input.minSeverity ?? 'info'}, ${targetOf(settings)}, ${encryptSecret(key, JSON.stringify(settings.config), context(organisationId, id))})
      returning ${columns}`
      .execute(trx)
      .catch(duplicateName);
    const created = view(row.rows[0]!);
    await recordAudit(trx, actor, { organisationId, action: 'notification_destination.created', targetType: 'notification_destination', targetId: id, changes: audited(created) });
    return { ...created, ...(generated ? { signingSecret: generated } : {}) };
  });
}

/**
 * Changes a destination. `config` replaces the settings of its kind, validated as on create;
 * a secret it leaves out (webhook secret, SMTP password) keeps its stored value.
 */
export async function updateDestination(db: Kysely<DB>, key: Buffer, actor: OrgActor, id: string, input: z.output<typeof UpdateDestinationRequest>) {
  const organisationId = actor.organisationId;
  return db.transaction().execute(async (trx) => {
    const row = await find(trx, organisationId, id);
    let sealed = row.config_sealed;
    let target = row.target;
    if (input.config) {
      const parsed = configSchemas[row.kind].safeParse(input.config);
      if (!parsed.success) {
        throw new AppError('validation_failed', `config is not a valid ${row.kind} configuration.`, {
          issues: parsed.error.issues.map((i) => ({ path: ['body', 'config', ...i.path].join('.'), message: i.message })),
        });
      }
      const old = openConfig(key, organisationId, row).config as Record<string, unknown>;
      const next = { ...parsed.data } as Record<string, unknown>;
      for (const secret of ['secret', 'password']) if (next[secret] === undefined && old[secret] !== undefined) next[secret] = old[secret];
      sealed = encryptSecret(key, JSON.stringify(next), context(organisationId, id));
      target = targetOf({ kind: row.kind, config: next } as DestinationConfig);
    }
    const r = await sql<Row>`
      update notification_destinations set
        name = ${input.name ?? row.name}, enabled = ${input.enabled ?? row.enabled}, event_kinds = ${input.events ?? row.event_kinds}::text[],
        min_severity = ${input.minSeverity ?? row.min_severity}, target = ${target}, config_sealed = ${sealed}, updated_at = now()
      where organisation_id = ${organisationId} and id = ${id}
      returning ${columns}`
      .execute(trx)
      .catch(duplicateName);
    const before = audited(view(row));
    const after = audited(view(r.rows[0]!));
    const changes: Record<string, unknown> = Object.fromEntries(
      Object.entries(after).filter(([k, v]) => JSON.stringify(v) !== JSON.stringify(before[k as keyof typeof before])).map(([k, v]) => [k, { from: before[k as keyof typeof before], to: v }]),
    );
    if (input.config) changes.config = 'changed';
    await recordAudit(trx, actor, { organisationId, action: 'notification_destination.updated', targetType: 'notification_destination', targetId: id, changes });
    return view(r.rows[0]!);
  });
}

export async function deleteDestination(db: Kysely<DB>, actor: OrgActor, id: string): Promise<void> {
  const organisationId = actor.organisationId;
  await db.transaction().execute(async (trx) => {
    const r = await sql<{ name: string }>`delete from notification_destinations where organisation_id = ${organisationId} and id = ${id} returning name`.execute(trx);
    if (r.rows.length === 0) throw new AppError('not_found', 'No such notification destination.');
    await recordAudit(trx, actor, { organisationId, action: 'notification_destination.deleted', targetType: 'notification_destination', targetId: id, changes: { name: r.rows[0]!.name } });
  });
}

/**
 * Sends a test alert (kind `notification.test`, not stored, not an event of the organisation)
 * to one destination now, and says how it went.
 */
export async function testDestination(db: Kysely<DB>, key: Buffer, organisationId: string, id: string, options: SendOptions) {
  const d = await getDestination(db, key, organisationId, id);
  const event: EventPayload = {
    id: randomUUID(),
    kind: 'notification.test',
    severity: 'info',
    occurredAt: new Date().toISOString(),
    organisationId,
    subject: { type: 'notification_destination', id: d.id },
    data: { name: d.name, message: 'A test of this destination from Surveyor.' },
  };
  const o = await send(d.settings, event, options);
  return { ok: o.ok, statusCode: o.statusCode, error: o.error, durationMs: o.durationMs };
}
