import { type Kysely, sql } from 'kysely';
import type { DB } from '../db/schema.js';
import { emitSelect } from '../events/emit.js';

/** decisions.md: days before `notAfter` at which `tls.expiring` is emitted; 0 is "expired". */
export const EXPIRY_THRESHOLDS_DAYS = [30, 14, 7, 1, 0] as const;

/**
 * Emits `tls.expiring` for the organisation's certificates that crossed a threshold not yet
 * announced, once per certificate and threshold. A certificate first seen past several thresholds
 * (e.g. 5 days left) is announced once, at the smallest one crossed (7), and the larger ones count
 * as announced: one alert, not three. Only current certificates are considered (view
 * `certificate_states`, the overview's definition, stored on the row): one replaced by a later certificate on the
 * same endpoint, or whose service is gone, is not announced.
 * Severity: 30 and 14 days info, 7 and 1 warning, expired critical.
 */
export async function announceExpiringCertificates(db: Kysely<DB>, organisationId: string, at: Date): Promise<{ announced: number }> {
  const r = await sql<{ n: number }>`
    with candidates as (
      select c.id, c.host_id, c.address, c.port, c.subject, c.issuer, c.not_after, c.sha256, c.expiry_notified_days,
             (select min(t) from unnest(${[...EXPIRY_THRESHOLDS_DAYS]}::int[]) t where c.not_after <= ${at}::timestamptz + make_interval(days => t)) as threshold
      from certificates c
      where c.organisation_id = ${organisationId} and c.not_after <= ${at}::timestamptz + make_interval(days => ${EXPIRY_THRESHOLDS_DAYS[0]})
        and (c.expiry_notified_days is null or c.expiry_notified_days > 0)
        and c.state = 'current'
    ), due as (
      select * from candidates where expiry_notified_days is null or threshold < expiry_notified_days
    ), marked as (
      update certificates c set expiry_notified_days = due.threshold
      from due where c.organisation_id = ${organisationId} and c.id = due.id
    ), announced as (
      ${emitSelect('tls.expiring', {
        from: sql`due`,
        organisationId: sql`${organisationId}::uuid`,
        subjectId: sql`id`,
        severity: sql`case when threshold = 0 then 'critical' when threshold <= 7 then 'warning' else 'info' end`,
        data: {
          thresholdDays: sql`threshold`, expired: sql`threshold = 0`, notAfter: sql`not_after`,
          daysLeft: sql`floor(extract(epoch from not_after - ${at}::timestamptz) / 86400)`,
          subject: sql`subject`, issuer: sql`issuer`, sha256: sql`sha256`, hostId: sql`host_id`, address: sql`host(address)`, port: sql`port`,
        },
      })}
    )
    select count(*)::int as n from due`.execute(db);
  return { announced: r.rows[0]?.n ?? 0 };
}
