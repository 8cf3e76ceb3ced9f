import type { FlowsRequest } from '@surveyor/contract';
import { type Kysely, sql } from 'kysely';
import type { z } from 'zod';
import type { DaemonPrincipal } from '../daemons/daemons.service.js';
import { ownDaemon } from '../daemons/daemons.service.js';
import type { DB } from '../db/schema.js';

const DAY = 86_400_000;

/** Creates the daily partitions the batch needs (under a lock, so concurrent creators agree). */
async function ensurePartitions(db: Kysely<DB>, days: number[]) {
  for (const day of days) {
    const from = new Date(day).toISOString().slice(0, 10);
    const to = new Date(day + DAY).toISOString().slice(0, 10);
    const name = `flows_${from.replace(/-/g, '')}`;
    const exists = await sql<{ ok: boolean }>`select to_regclass(${name}) is not null as ok`.execute(db);
    if (exists.rows[0]?.ok) continue;
    await db.transaction().execute(async (trx) => {
      await sql`select pg_advisory_xact_lock(hashtext('surveyor.flows.partition'))`.execute(trx);
      const again = await sql<{ ok: boolean }>`select to_regclass(${name}) is not null as ok`.execute(trx);
      if (again.rows[0]?.ok) return;
      await sql.raw(`create table ${name} partition of flows for values from ('${from}T00:00:00Z') to ('${to}T00:00:00Z')`).execute(trx);
    });
  }
}

/**
 * Stores flow records, each resolved to the inventory: destination host by address, its
 * service by (address, port); source host by address. Unknown peers keep null ids. One
 * set-based statement; a record already stored is skipped. `dropped` accumulates on the daemon.
 */
export async function ingestFlows(db: Kysely<DB>, p: DaemonPrincipal, body: z.output<typeof FlowsRequest>): Promise<{ accepted: number }> {
  const daemon = await ownDaemon(db, p);
  const org = p.organisationId;
  const f = body.flows;
  if (f.length) await ensurePartitions(db, [...new Set(f.map((x) => Math.floor(Date.parse(x.bucketStart) / DAY) * DAY))]);
  return db.transaction().execute(async (trx) => {
    let accepted = 0;
    if (f.length) {
      // Set-based resolution: the batch's distinct addresses are looked up once each (hash joins),
      // not once per record.
      const r = await sql<{ n: number }>`
        with v as (
          select * from unnest(${f.map((x) => x.bucketStart)}::timestamptz[], ${f.map((x) => x.srcIp)}::inet[], ${f.map((x) => x.dstIp)}::inet[], ${f.map((x) => x.dstPort)}::int[],
                               ${f.map((x) => x.protocol.toLowerCase())}::text[], ${f.map((x) => x.packets)}::bigint[], ${f.map((x) => x.bytes)}::bigint[], ${f.map((x) => x.source)}::text[])
            as v(bucket_start, src_ip, dst_ip, dst_port, protocol, packets, bytes, source)
        ), addrs as (
          select distinct on (a.address) a.address, a.host_id from host_addresses a
          where a.organisation_id = ${org} and a.address in (select src_ip from v union select dst_ip from v)
          order by a.address, a.host_id
        ), ins as (
          insert into flows (organisation_id, bucket_start, daemon_id, src_ip, dst_ip, dst_port, protocol, packets, bytes, source, src_host_id, dst_host_id, dst_service_id)
          select ${org}, v.bucket_start, ${daemon.id}, v.src_ip, v.dst_ip, v.dst_port, v.protocol, v.packets, v.bytes, v.source, sa.host_id, da.host_id, s.id
          from v
          left join addrs sa on sa.address = v.src_ip
          left join addrs da on da.address = v.dst_ip
          left join services s on s.organisation_id = ${org} and s.host_id = da.host_id and s.port = v.dst_port
            and s.protocol = (case when v.protocol in ('tcp', 'udp', 'sctp') then v.protocol else 'tcp' end)
          on conflict do nothing
          returning 1
        )
        select count(*)::int as n from ins`.execute(trx);
      accepted = r.rows[0]!.n;
    }
    if (body.dropped > 0) await sql`update daemons set flows_dropped = flows_dropped + ${body.dropped}, last_seen_at = now() where organisation_id = ${org} and id = ${daemon.id}`.execute(trx);
    return { accepted };
  });
}
