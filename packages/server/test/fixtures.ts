import { type Kysely, sql } from 'kysely';
import { type EventKindName, eventKindInfo } from '@surveyor/contract';
import type { DB } from '../src/db/schema.js';
import { refreshHostSummaries } from '../src/inventory/host-summaries.js';

/**
 * Inventory rows written straight into the tables, the way the daemon reconciliation (a later
 * issue) will fill them, so the read API can be tested on known data.
 */
export async function addSite(db: Kysely<DB>, organisationId: string, code: string) {
  return db.insertInto('sites').values({ organisation_id: organisationId, code, name: `Site ${code}` }).returning('id').executeTakeFirstOrThrow();
}

export async function addHost(
  db: Kysely<DB>,
  organisationId: string,
  h: { hostname?: string; fqdn?: string; addresses?: string[]; macs?: string[]; siteId?: string; os?: string } = {},
) {
  const row = await db
    .insertInto('hosts')
    .values({
      organisation_id: organisationId,
      fingerprint: `fp-${Math.random().toString(36).slice(2)}${Date.now()}`,
      hostname: h.hostname ?? null,
      fqdn: h.fqdn ?? null,
      site_id: h.siteId ?? null,
      os: h.os ?? null,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  for (const [i, address] of (h.addresses ?? []).entries()) {
    await sql`insert into host_addresses (organisation_id, host_id, address, mac) values (${organisationId}, ${row.id}, ${address}::inet, ${h.macs?.[i] ?? null}::macaddr)`.execute(db);
  }
  // As the writers do: what the host page shows of these rows, stored on the host.
  await refreshHostSummaries(db, organisationId, [row.id]);
  return row.id;
}

/** Many hosts in one statement (pagination walks). */
export async function addHosts(db: Kysely<DB>, organisationId: string, n: number, prefix = 'bulk') {
  const r = await sql<{ id: string }>`
    insert into hosts (organisation_id, fingerprint, hostname)
    select ${organisationId}, ${prefix} || '-' || g || '-' || gen_random_uuid(), ${prefix} || '-' || g from generate_series(1, ${n}) g
    returning id`.execute(db);
  return r.rows.map((x) => x.id);
}

export async function addService(db: Kysely<DB>, organisationId: string, hostId: string, s: { port: number; protocol?: string; name?: string; product?: string; version?: string; cpe?: string }) {
  const { id } = await db
    .insertInto('services')
    .values({ organisation_id: organisationId, host_id: hostId, port: s.port, protocol: s.protocol ?? 'tcp', name: s.name ?? null, product: s.product ?? null, version: s.version ?? null, cpe: s.cpe ?? null })
    .returning('id')
    .executeTakeFirstOrThrow();
  await refreshHostSummaries(db, organisationId, [hostId]);
  return id;
}

export async function addVulnerability(db: Kysely<DB>, organisationId: string, serviceId: string, hostId: string, v: { cveId: string; severity?: string; score?: number; state?: string }) {
  return (
    await db
      .insertInto('vulnerabilities')
      .values({ organisation_id: organisationId, service_id: serviceId, host_id: hostId, cve_id: v.cveId, severity: v.severity ?? 'high', score: v.score ?? 7.5, state: v.state ?? 'open' })
      .returning('id')
      .executeTakeFirstOrThrow()
  ).id;
}

export async function addCertificate(db: Kysely<DB>, organisationId: string, hostId: string, c: { trustStatus: string; port?: number; sha256?: string }) {
  const id = (
    await db
      .insertInto('certificates')
      .values({
        organisation_id: organisationId,
        host_id: hostId,
        port: c.port ?? 443,
        subject: 'CN=example.test',
        issuer: 'CN=Example CA',
        not_before: new Date('2026-01-01T00:00:00Z'),
        not_after: new Date('2027-01-01T00:00:00Z'),
        sha256: c.sha256 ?? Array.from({ length: 64 }, () => '0123456789abcdef'[Math.floor(Math.random() * 16)]).join(''),
        trust_status: c.trustStatus,
      })
      .returning('id')
      .executeTakeFirstOrThrow()
  ).id;
  // As the writers do: the state of the host's certificates, stored on them.
  await refreshHostSummaries(db, organisationId, [], [hostId]);
  return id;
}

export async function addTopology(db: Kysely<DB>, organisationId: string, t: { kind: string; status?: string; siteId?: string }) {
  return (
    await db
      .insertInto('topologies')
      .values({ organisation_id: organisationId, kind: t.kind, status: t.status ?? 'ready', name: `${t.kind} view`, site_id: t.siteId ?? null, node_count: 3, edge_count: 2 })
      .returning('id')
      .executeTakeFirstOrThrow()
  ).id;
}

/**
 * Every stored event whose `data` does not match its kind's schema in the contract (an emitter
 * drifting from the documented payload), with what was wrong. Empty when all conform.
 */
export async function nonConformingEvents(db: Kysely<DB>): Promise<{ kind: string; data: unknown; issues: string[] }[]> {
  const rows = await sql<{ kind: EventKindName; data: unknown }>`select kind, data from events order by seq`.execute(db);
  return rows.rows.flatMap((r) => {
    const parsed = eventKindInfo[r.kind]?.data.safeParse(r.data);
    if (!parsed) return [{ kind: r.kind, data: r.data, issues: ['unknown kind'] }];
    return parsed.success ? [] : [{ kind: r.kind, data: r.data, issues: parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`) }];
  });
}
