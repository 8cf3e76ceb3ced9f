import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mergeDuplicateHosts } from '../src/admin/duplicates.service.js';
import { adminVerb } from '../src/admin/admin.cli.js';
import { loadConfig } from '../src/config.js';
import { TEST_DATABASE_URL, type TestApp, buildTestApp } from './helpers.js';
import { type Json, type Scanning, createNetwork, ingest, scanningOrg, startSession } from './scanning.js';

// One host per address within a site, whatever the timing (issue 18, section 2, item 1): two scan
// sessions of one site (here two overlapping networks of one daemon) reporting the same new
// addresses under different fingerprints at the same moment. Only PostgreSQL runs two
// transactions at once (PGlite is one connection), so the race is tested there (CI).

/** Hosts holding each address of the organisation: address → host ids. */
async function hostsPerAddress(t: TestApp, organisationId: string): Promise<Map<string, string[]>> {
  const rows = (
    await sql<{ address: string; hosts: string[] }>`
      select host(address) as address, array_agg(host_id::text order by host_id) as hosts from host_addresses
      where organisation_id = ${organisationId} group by address`.execute(t.database.db)
  ).rows;
  return new Map(rows.map((r) => [r.address, r.hosts]));
}

/** A batch of `n` hosts with addresses 10.1.<round>.<i>, named `<prefix>-<round>-<i>`, each with a service. */
function batch(sessionId: string, prefix: string, round: number, n: number): Json {
  const ips = Array.from({ length: n }, (_, i) => ({ hostFingerprint: `${prefix}-${round}-${i}`, address: `10.1.${round}.${i + 1}` }));
  return {
    sessionId,
    final: false,
    hosts: ips.map((x) => ({ fingerprint: x.hostFingerprint })),
    ips,
    ports: ips.map((x) => ({ fingerprint: x.hostFingerprint, address: x.address, protocol: 'tcp', number: prefix === 'a' ? 22 : 443, state: 'open' })),
  };
}

if (TEST_DATABASE_URL) {
  describe('host identity under concurrent batches of one site (PostgreSQL)', () => {
    let t: TestApp;
    let s: Scanning;
    let sessions: [string, string];

    beforeAll(async () => {
      t = await buildTestApp({ env: { SERVICE_DB_POOL_MAX: '10' } });
      s = await scanningOrg(t, { siteCode: 'race', networkCidrs: ['10.0.0.0/8'] });
      const wide = await createNetwork(t, s, '10.1.0.0/16');
      const narrow = await createNetwork(t, s, '10.1.0.0/17');
      sessions = [await startSession(t, s, wide), await startSession(t, s, narrow)];
    });
    afterAll(async () => {
      await t?.close();
    });

    it('two sessions posting the same 100 new addresses at once under different fingerprints make one host per address, round after round', async () => {
      const rounds = 5;
      for (let round = 1; round <= rounds; round++) {
        const [a, b] = await Promise.all([ingest(t, s.daemon, batch(sessions[0], 'a', round, 100)), ingest(t, s.daemon, batch(sessions[1], 'b', round, 100))]);
        expect(a.accepted + b.accepted).toBeGreaterThan(0);
      }
      const perAddress = await hostsPerAddress(t, s.org.organisationId);
      expect(perAddress.size).toBe(100 * rounds);
      const shared = [...perAddress].filter(([, hosts]) => hosts.length > 1);
      expect(shared, `addresses held by more than one host: ${shared.length}`).toEqual([]);
      // Both fingerprints name that one host, and it carries both services.
      const hosts = (await sql<{ n: number }>`select count(*)::int as n from hosts where organisation_id = ${s.org.organisationId}`.execute(t.database.db)).rows[0]!.n;
      expect(hosts).toBe(100 * rounds);
      const fps = (await sql<{ n: number }>`select count(distinct host_id)::int as n from host_fingerprints where organisation_id = ${s.org.organisationId}`.execute(t.database.db)).rows[0]!.n;
      expect(fps).toBe(100 * rounds);
      const services = (await sql<{ n: number }>`select count(*)::int as n from services where organisation_id = ${s.org.organisationId}`.execute(t.database.db)).rows[0]!.n;
      expect(services).toBe(2 * 100 * rounds);
    });
  });
}

describe('surveyor admin merge-duplicate-hosts: hosts of one site sharing an address merged into the oldest', () => {
  let t: TestApp;
  let s: Scanning;
  let session: string;
  const db = () => t.database.db;
  const org = () => s.org.organisationId;
  const q = async <T>(text: ReturnType<typeof sql<T>>) => (await text.execute(db())).rows;

  /** A host made the way a lost race made them: same site, same address, another fingerprint. */
  async function duplicate(fingerprint: string, addresses: string[], siteId: string | null, services: number[]) {
    const [h] = await q(sql<{ id: string }>`insert into hosts (organisation_id, fingerprint, site_id, hostname, created_at) values (${org()}, ${fingerprint}, ${siteId}::uuid, ${`name-${fingerprint}`}, now() + interval '1 minute') returning id`);
    await sql`insert into host_fingerprints (organisation_id, fingerprint, host_id) values (${org()}, ${fingerprint}, ${h!.id})`.execute(db());
    for (const a of addresses) await sql`insert into host_addresses (organisation_id, host_id, address) values (${org()}, ${h!.id}, ${a}::inet)`.execute(db());
    for (const port of services) {
      const [svc] = await q(sql<{ id: string }>`insert into services (organisation_id, host_id, address, protocol, port, product) values (${org()}, ${h!.id}, ${addresses[0]}::inet, 'tcp', ${port}, 'dup') returning id`);
      await sql`insert into vulnerabilities (organisation_id, service_id, host_id, cve_id, severity) values (${org()}, ${svc!.id}, ${h!.id}, ${`CVE-2024-${1000 + port}`}, 'medium')`.execute(db());
    }
    return h!.id;
  }

  const hostsOf = (address: string) =>
    q(sql<{ id: string }>`select host_id as id from host_addresses where organisation_id = ${org()} and address = ${address}::inet order by host_id`).then((r) => r.map((x) => x.id));

  beforeAll(async () => {
    t = await buildTestApp();
    s = await scanningOrg(t, { siteCode: 'dup', networkCidrs: ['10.0.0.0/8'] });
    session = await startSession(t, s, await createNetwork(t, s, '10.2.0.0/16'));
    await ingest(t, s.daemon, {
      sessionId: session, final: false,
      hosts: [1, 2, 3].map((i) => ({ fingerprint: `a-${i}` })),
      ips: [1, 2, 3].map((i) => ({ hostFingerprint: `a-${i}`, address: `10.2.0.${i}` })),
      ports: [1, 2, 3].map((i) => ({ fingerprint: `a-${i}`, address: `10.2.0.${i}`, protocol: 'tcp', number: 22, state: 'open' })),
    });
    for (const i of [1, 2, 3]) await duplicate(`b-${i}`, [`10.2.0.${i}`, `10.2.1.${i}`], s.siteId, [22, 80]);
    // c-1 shares only b-1's second address: the same host, transitively.
    await duplicate('c-1', ['10.2.1.1'], s.siteId, [8080]);
    // The same address in another site (or none) is another host: never merged.
    await duplicate('elsewhere-1', ['10.2.0.1'], null, [22]);
  });
  afterAll(async () => {
    await t?.close();
  });

  it('reports the merges on --dry-run and changes nothing', async () => {
    const r = await mergeDuplicateHosts(db(), { type: 'cli' }, { org: s.org.name, dryRun: true });
    expect(r).toMatchObject({ dryRun: true, organisations: 1, hostsMerged: 4 });
    expect(r.merges.map((m) => m.mergedHostIds.length).sort()).toEqual([1, 1, 2]);
    expect(await hostsOf('10.2.0.1')).toHaveLength(3);
  });

  it('merges, oldest first, moving addresses, services, findings and fingerprints, with an audit row per merged host', async () => {
    const [a1] = await q(sql<{ id: string }>`select host_id as id from host_fingerprints where organisation_id = ${org()} and fingerprint = 'a-1'`);
    const r = await mergeDuplicateHosts(db(), { type: 'cli' }, { org: org(), dryRun: false });
    expect(r).toMatchObject({ dryRun: false, hostsMerged: 4 });
    expect(r.merges.find((m) => m.mergedHostIds.length === 2)!.survivorId).toBe(a1!.id);
    // One host per address within the site; the other site's host stays.
    for (const i of [1, 2, 3]) expect(await hostsOf(`10.2.1.${i}`)).toHaveLength(1);
    expect(await hostsOf('10.2.0.1')).toHaveLength(2);
    // a-1 holds every fingerprint of its group, its addresses, the services 22 (merged), 80 and 8080, and the findings.
    const fps = await q(sql<{ fingerprint: string }>`select fingerprint from host_fingerprints where organisation_id = ${org()} and host_id = ${a1!.id} order by fingerprint`);
    expect(fps.map((f) => f.fingerprint)).toEqual(['a-1', 'b-1', 'c-1']);
    const services = await q(sql<{ port: number; product: string | null }>`select port, product from services where organisation_id = ${org()} and host_id = ${a1!.id} order by port`);
    expect(services).toEqual([{ port: 22, product: 'dup' }, { port: 80, product: 'dup' }, { port: 8080, product: 'dup' }]);
    const vulns = await q(sql<{ cve_id: string; ok: boolean }>`
      select v.cve_id, (v.service_id = s.id) as ok from vulnerabilities v join services s on s.organisation_id = v.organisation_id and s.id = v.service_id
      where v.organisation_id = ${org()} and v.host_id = ${a1!.id} order by cve_id`);
    expect(vulns.map((v) => v.cve_id)).toEqual(['CVE-2024-1022', 'CVE-2024-1080', 'CVE-2024-9080']);
    const [host] = await q(sql<{ hostname: string | null }>`select hostname from hosts where organisation_id = ${org()} and id = ${a1!.id}`);
    expect(host!.hostname).toBe('name-b-1');
    const audit = await q(sql<{ target_id: string; changes: { mergedHostId: string; fingerprints: string[] } }>`
      select target_id, changes from audit_log where organisation_id = ${org()} and action = 'host.merged'`);
    expect(audit).toHaveLength(4);
    expect(audit.filter((a) => a.target_id === a1!.id).flatMap((a) => a.changes.fingerprints).sort()).toEqual(['b-1', 'c-1']);
    // Nothing left to merge; the merged fingerprints resolve to the survivor.
    expect((await mergeDuplicateHosts(db(), { type: 'cli' }, { dryRun: false })).hostsMerged).toBe(0);
    await ingest(t, s.daemon, { sessionId: session, final: false, hosts: [{ fingerprint: 'b-1' }], ips: [{ hostFingerprint: 'b-1', address: '10.2.0.1' }] });
    expect(await hostsOf('10.2.0.1')).toHaveLength(2);
  });

  it('is the admin verb merge-duplicate-hosts', async () => {
    const err: string[] = [];
    await expect(adminVerb.run(['merge-duplicate-hosts', '--site', 'x'], { out: () => {}, err: (l: string) => void err.push(l), env: {} }, loadConfig({}))).rejects.toThrow('--site');
    expect(adminVerb.usage.join('\n')).toContain('admin merge-duplicate-hosts [--org ORG] [--dry-run] [--json]');
  });
});
