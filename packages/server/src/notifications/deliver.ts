import { type Kysely, sql } from 'kysely';
import type { DB } from '../db/schema.js';
import { rfc3339 } from '../db/sql.js';
import { type EventPayload, type EventRow, eventColumns, toPayload } from '../events/events.js';
import type { JobDefinition, OrganisationOutcome } from '../jobs/runner.js';
import { type DestinationConfig, type DestinationKind, openConfig } from './destinations.js';
import { type SendOptions, type SendOutcome, send } from './senders.js';

/** decisions.md: after a failed attempt, the next one waits 1, 5, 15, 60, then 360 minutes; after that the alert is `dead`. */
export const RETRY_MINUTES = [1, 5, 15, 60, 360] as const;

const BATCH = 50;
const CONCURRENCY = 8;
/**
 * How long a claimed batch is leased to its sender: long enough for every row of it to be tried
 * at the attempt timeout (BATCH / CONCURRENCY rounds), plus a margin. A crashed sender's lease
 * runs out and its rows are due again.
 */
const leaseSeconds = (timeoutMs: number) => Math.ceil(BATCH / CONCURRENCY) * Math.ceil(timeoutMs / 1000) + 60;
/** A tick stops claiming after this long, so that one minute's backlog does not hold the job past its next tick. */
const TICK_BUDGET_MS = 45_000;

export interface DeliverOptions {
  secretKey: Buffer;
  send: SendOptions;
}

interface Claimed {
  organisation_id: string;
  id: string;
  attempts: number;
  event_id: string;
  destination_id: string;
  kind: DestinationKind;
  config_sealed: string;
}

/**
 * Claims due deliveries: the rows are locked (`for update skip locked`), so two workers never
 * take the same one, and leased until sent, so none is taken again while its attempt is under
 * way. Only deliveries of enabled destinations are due.
 */
async function claim(db: Kysely<DB>, at: Date, limit: number, lease: number): Promise<Claimed[]> {
  const r = await sql<Claimed>`
    with due as (
      select d.organisation_id, d.id from notification_deliveries d
      join notification_destinations n on n.organisation_id = d.organisation_id and n.id = d.destination_id and n.enabled
      where d.state = 'pending' and d.next_attempt_at <= ${at} and (d.claimed_until is null or d.claimed_until < now())
      order by d.next_attempt_at
      limit ${limit}
      for update of d skip locked
    )
    update notification_deliveries d set claimed_until = now() + make_interval(secs => ${lease})
    from due, notification_destinations n
    where d.organisation_id = due.organisation_id and d.id = due.id and n.organisation_id = d.organisation_id and n.id = d.destination_id
    returning d.organisation_id, d.id, d.attempts, d.event_id, d.destination_id, n.kind, n.config_sealed`.execute(db);
  return r.rows;
}

async function payloads(db: Kysely<DB>, claimed: Claimed[]): Promise<Map<string, EventPayload>> {
  const r = await sql<EventRow>`
    select ${eventColumns}
    from unnest(${claimed.map((c) => c.organisation_id)}::uuid[], ${claimed.map((c) => c.event_id)}::uuid[]) as k(o, i)
    join events e on e.organisation_id = k.o and e.id = k.i`.execute(db);
  return new Map(r.rows.map((e) => [e.id, toPayload(e)]));
}

/** Records an attempt and moves the delivery on: delivered, due again after its backoff, or dead. */
async function record(db: Kysely<DB>, c: Claimed, o: SendOutcome, at: Date): Promise<'delivered' | 'retry' | 'dead'> {
  const attempt = c.attempts + 1;
  const next = o.ok ? 'delivered' : !o.retry || attempt > RETRY_MINUTES.length ? 'dead' : 'retry';
  const nextAt = next === 'retry' ? new Date(at.getTime() + RETRY_MINUTES[attempt - 1]! * 60_000) : at;
  // The attempt is written only when the delivery still exists (its destination may have been
  // deleted while it was being sent).
  await sql`
    with d as (
      update notification_deliveries set attempts = ${attempt}, claimed_until = null, last_status = ${o.statusCode}, last_error = ${o.error},
        state = ${next === 'retry' ? 'pending' : next}, next_attempt_at = ${nextAt}, delivered_at = ${next === 'delivered' ? at : null}, updated_at = now()
      where organisation_id = ${c.organisation_id} and id = ${c.id} and attempts = ${c.attempts} -- not recorded twice, should a lease have run out
      returning organisation_id, id
    )
    insert into notification_attempts (organisation_id, delivery_id, attempt, attempted_at, duration_ms, status_code, error)
    select organisation_id, id, ${attempt}, ${at}, ${o.durationMs}, ${o.statusCode}, ${o.error} from d`.execute(db);
  return next;
}

/** Runs `fn` over `items`, at most `n` at a time; every item is tried, and the first failure is thrown at the end. */
async function pool<T>(items: T[], n: number, fn: (item: T) => Promise<void>): Promise<void> {
  let i = 0;
  const failures: unknown[] = [];
  await Promise.all(
    Array.from({ length: Math.min(n, items.length) }, async () => {
      while (i < items.length) await fn(items[i++]!).catch((err) => void failures.push(err));
    }),
  );
  if (failures.length > 0) throw failures[0];
}

/**
 * notify.deliver (1 min): sends the alerts that are due, each to its destination, recording every
 * attempt (status code, error). A failed attempt is retried per RETRY_MINUTES; a refusal that
 * would not change (an HTTP 4xx other than 408 and 429, an SMTP 5xx) and the last retry's failure
 * make it `dead`.
 */
export function notifyDeliver(opts: DeliverOptions): JobDefinition {
  return {
    name: 'notify.deliver',
    intervalMs: 60_000,
    async run({ db, now, signal, logger }) {
      const started = performance.now();
      const sendOptions = opts.send;
      const totals = { delivered: 0, retry: 0, dead: 0 };
      const organisations = new Map<string, OrganisationOutcome>();
      const settings = new Map<string, DestinationConfig | Error>();
      for (;;) {
        if (signal.aborted || performance.now() - started > TICK_BUDGET_MS) break;
        const claimed = await claim(db, now(), BATCH, leaseSeconds(sendOptions.timeoutMs));
        if (claimed.length === 0) break;
        const events = await payloads(db, claimed);
        await pool(claimed, CONCURRENCY, async (c) => {
          const event = events.get(c.event_id)!;
          if (!settings.has(c.destination_id)) {
            try {
              settings.set(c.destination_id, openConfig(opts.secretKey, c.organisation_id, { id: c.destination_id, kind: c.kind, config_sealed: c.config_sealed }));
            } catch {
              settings.set(c.destination_id, new Error('cannot decrypt the destination settings: was SERVICE_SECRET_KEY changed?'));
            }
          }
          const dest = settings.get(c.destination_id)!;
          const outcome: SendOutcome = dest instanceof Error ? { ok: false, statusCode: null, error: dest.message, retry: true, durationMs: 0 } : await send(dest, event, sendOptions);
          const next = await record(db, c, outcome, now());
          totals[next]++;
          const org = organisations.get(c.organisation_id) ?? { ok: true, detail: { delivered: 0, retry: 0, dead: 0 } };
          (org.detail as typeof totals)[next]++;
          organisations.set(c.organisation_id, org);
          if (!outcome.ok) logger.warn({ delivery: c.id, destination: c.destination_id, attempt: c.attempts + 1, status: outcome.statusCode, error: outcome.error, next }, 'alert delivery failed');
        });
        if (claimed.length < BATCH) break;
      }
      return { detail: totals, organisations };
    },
  };
}

/** Recent deliveries of the organisation with their attempts, newest first (Settings → Notifications). */
/**
 * An event's subject named from what the event recorded (its `data` outlives a deleted
 * certificate or finding): a certificate's subject and endpoint, a CVE id, a daemon, the network
 * a scan covered, a job. A host is named by the console from `hostId`.
 */
const subjectName = sql<string | null>`case e.subject_type
  when 'certificate' then concat_ws(' on ', e.data->>'subject', nullif(concat_ws(':', e.data->>'address', e.data->>'port'), ''))
  when 'vulnerability' then e.data->>'cveId'
  when 'daemon' then e.data->>'name'
  when 'job' then e.data->>'job'
  when 'scan_session' then coalesce(
    (select coalesce(n.name, n.cidr::text) from scan_sessions ss join networks n on n.organisation_id = ss.organisation_id and n.id = ss.network_id
     where ss.organisation_id = e.organisation_id and ss.id = e.subject_id::uuid),
    e.data->>'cidr')
  when 'notification_destination' then e.data->>'name'
end`;

/** The host an event concerns: the host itself, or the host of the certificate or finding. */
const subjectHost = sql<string | null>`case e.subject_type
  when 'host' then e.subject_id::uuid
  when 'certificate' then (e.data->>'hostId')::uuid
  when 'vulnerability' then (e.data->>'hostId')::uuid
end`;

export async function listDeliveries(db: Kysely<DB>, organisationId: string, f: { state?: string | undefined; destinationId?: string | undefined; limit: number }) {
  const r = await sql<{
    id: string; event_id: string; event_kind: string; subject_type: string; subject_id: string; subject_name: string | null; subject_host_id: string | null; destination_id: string; state: 'pending' | 'delivered' | 'dead'; attempts: number; next_attempt_at: string | null;
    last_status: number | null; last_error: string | null; created_at: string; delivered_at: string | null;
    attempt_log: { attempt: number; at: string; durationMs: number; statusCode: number | null; error: string | null }[];
  }>`
    select d.id, d.event_id, e.kind as event_kind, e.subject_type, e.subject_id, d.destination_id, d.state, d.attempts,
      ${subjectName} as subject_name, ${subjectHost} as subject_host_id,
      case when d.state = 'pending' then ${rfc3339('d.next_attempt_at')} end as next_attempt_at, d.last_status, d.last_error,
      ${rfc3339('d.created_at')} as created_at, ${rfc3339('d.delivered_at')} as delivered_at,
      coalesce((select json_agg(json_build_object('attempt', a.attempt, 'at', ${rfc3339('a.attempted_at')}, 'durationMs', a.duration_ms, 'statusCode', a.status_code, 'error', a.error) order by a.attempt)
                from notification_attempts a where a.organisation_id = d.organisation_id and a.delivery_id = d.id), '[]') as attempt_log
    from notification_deliveries d join events e on e.organisation_id = d.organisation_id and e.id = d.event_id
    where d.organisation_id = ${organisationId}
      ${f.state ? sql`and d.state = ${f.state}` : sql``}
      ${f.destinationId ? sql`and d.destination_id = ${f.destinationId}` : sql``}
    order by d.created_at desc, d.id
    limit ${f.limit}`.execute(db);
  return r.rows.map((d) => ({
    id: d.id, eventId: d.event_id, eventKind: d.event_kind,
    subject: { type: d.subject_type, id: d.subject_id, name: d.subject_name, hostId: d.subject_host_id }, destinationId: d.destination_id, state: d.state, attempts: d.attempts, nextAttemptAt: d.next_attempt_at,
    lastStatus: d.last_status, lastError: d.last_error, createdAt: d.created_at, deliveredAt: d.delivered_at, attemptLog: d.attempt_log,
  }));
}
