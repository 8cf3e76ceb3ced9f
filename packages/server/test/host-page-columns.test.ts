import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mergeDuplicateHosts } from '../src/admin/duplicates.service.js';
import { addCertificate, addHost, addService } from './fixtures.js';
import { type TestApp, bearer, buildTestApp } from './helpers.js';
import { type Json, type Scanning, createNetwork, ingest, scanningOrg, startSession } from './scanning.js';

// Issue 30: what a host page shows of a host's other rows (addresses, MACs, open services) is
// stored on the host by the writers, and a certificate's state (current, replaced, gone) on the
// certificate. Whatever sequence of writes happens, the stored columns equal what the rows say,
// computed from scratch here (the page's SQL before migration 0038; the view certificate_states).

const ENV = { SERVICE_RATE_LIMIT_DAEMON_PER_MINUTE: '1000000', SERVICE_RATE_LIMIT_KEY_PER_MINUTE: '1000000' };
const CIDR = '10.9.0.0/24';
const PORTS = [22, 80, 443, 8080];
const STATES = ['open', 'open', 'closed', 'filtered'];

/** A small deterministic random source (mulberry32), so a failing sequence can be replayed by its seed. */
function random(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let x = Math.imul(a ^ (a >>> 15), 1 | a);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
  const int = (n: number) => Math.floor(next() * n);
  return { next, int, pick: <T>(xs: readonly T[]) => xs[int(xs.length)]!, some: <T>(xs: readonly T[]) => xs.filter(() => next() < 0.5) };
}

const mac = (host: number, k: number) => `00:16:3e:09:${String(host).padStart(2, '0')}:${String(k).padStart(2, '0')}`;
/** A host's k-th address: where text order and address order differ (10.9.0.9 < 10.9.0.10), and IPv6 after IPv4. */
const address = (host: number, k: number) => [`10.9.0.${host + 4}`, `10.9.0.${host * 10 + 10}`, `10.9.0.${100 + host}`, `fd00:9::${host + 1}`][k]!;

/** One of three certificates an endpoint rotates between (a later session may present an earlier one again). */
const certificate = (host: number, address: string, port: number, k: number): Json => ({
  fingerprint: `fp-${host}`, address, port, subject: `CN=host-${host}-${k}`, issuer: 'CN=Test CA',
  notBefore: '2026-01-01T00:00:00.000Z', notAfter: '2027-06-01T00:00:00.000Z', sha256: `${host}${k}`.padStart(64, String(port % 10)),
});

/**
 * A batch of a session seeing some of hosts 0..5: addresses with or without (other) MACs,
 * interfaces, ports in any state, services, certificates on some ports (rotating).
 */
function randomBatch(r: ReturnType<typeof random>, sessionId: string, final: boolean): Json {
  const batch = { sessionId, final, hosts: [] as Json[], ips: [] as Json[], ports: [] as Json[], services: [] as Json[], tls: [] as Json[] };
  const seen = r.some([0, 1, 2, 3, 4, 5]);
  for (const h of seen.length > 0 ? seen : [r.int(6)]) {
    const fingerprint = `fp-${h}`;
    const addrs = r.some([0, 1, 2, 3]).map((k) => address(h, k));
    const at = addrs[0] ?? address(h, 0);
    batch.hosts.push({ fingerprint, hostname: `host-${h}`, ...(r.next() < 0.4 ? { interfaces: r.some(['eth0', 'eth1']).map((name) => ({ name, mac: mac(h, 10 + r.int(3)) })) } : {}) });
    for (const a of addrs) batch.ips.push({ hostFingerprint: fingerprint, address: a, ...(r.next() < 0.5 ? { mac: mac(h, r.int(3)) } : {}) });
    for (const number of r.some(PORTS)) batch.ports.push({ fingerprint, address: at, protocol: 'tcp', number, state: r.pick(STATES) });
    for (const port of r.some(PORTS).slice(0, 1)) batch.services.push({ fingerprint, address: at, protocol: 'tcp', port, name: 'svc' });
    for (const port of r.some(PORTS).slice(0, 2)) batch.tls.push(certificate(h, at, port, r.int(3)));
  }
  return batch;
}

describe('what a host page shows is stored on the host and stays equal to its rows after every kind of write (issue 30)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await buildTestApp({ env: ENV });
  });
  afterAll(() => t.close());

  /** Hosts whose stored page columns differ from those computed from their rows (none, when right). */
  async function drift(organisationId: string) {
    const { rows } = await sql<Json>`
      select h.id, h.addresses, h.macs, h.open_port_count,
        array(select host(a.address) from host_addresses a where a.organisation_id = h.organisation_id and a.host_id = h.id order by a.address) as computed_addresses,
        array(select distinct m.mac::text from (
            select mac from host_addresses a where a.organisation_id = h.organisation_id and a.host_id = h.id
            union all select mac from host_interfaces i where i.organisation_id = h.organisation_id and i.host_id = h.id
          ) m where m.mac is not null order by 1) as computed_macs,
        (select count(*)::int from services s where s.organisation_id = h.organisation_id and s.host_id = h.id and s.state = 'open' and s.gone_at is null) as computed_open_port_count
      from hosts h where h.organisation_id = ${organisationId}`.execute(t.database.db);
    expect(rows.length).toBeGreaterThan(0);
    const certificates = await sql<Json>`
      select c.id, c.state, v.state as computed_state from certificates c join certificate_states v on v.organisation_id = c.organisation_id and v.id = c.id
      where c.organisation_id = ${organisationId} and c.state <> v.state`.execute(t.database.db);
    return [
      ...rows.filter((x) => JSON.stringify([x.addresses, x.macs, x.open_port_count]) !== JSON.stringify([x.computed_addresses, x.computed_macs, x.computed_open_port_count])),
      ...certificates.rows,
    ];
  }

  /** The states the organisation's certificates are in. */
  const certificateStates = async (organisationId: string) =>
    (await sql<{ state: string }>`select distinct state from certificates where organisation_id = ${organisationId}`.execute(t.database.db)).rows.map((x) => x.state);

  /** Applies `steps` random writes of the seed's sequence, checking the stored columns after each. */
  async function run(seed: number, steps: number) {
    const r = random(seed);
    const s: Scanning = await scanningOrg(t);
    const o = s.org.organisationId;
    const net = await createNetwork(t, s, CIDR);
    let session = await startSession(t, s, net);
    const kinds: string[] = [];
    const states = new Set<string>();
    for (let i = 0; i < steps; i++) {
      const kind = i === 0 ? 'batch' : r.pick(['batch', 'batch', 'batch', 'complete', 'merge']);
      kinds.push(kind);
      if (kind === 'batch') await ingest(t, s.daemon, randomBatch(r, session, false));
      else if (kind === 'complete') {
        // The final batch completes the session: what it did not see goes (services, and hosts).
        await ingest(t, s.daemon, randomBatch(r, session, true));
        session = await startSession(t, s, net);
      } else {
        // A duplicate of a host (one of its addresses, other rows of its own), then merged into it.
        const existing = (await sql<{ address: string }>`select host(address) as address from host_addresses where organisation_id = ${o} order by address`.execute(t.database.db)).rows;
        if (existing.length === 0) continue;
        const dup = await addHost(t.database.db, o, { hostname: `dup-${i}`, addresses: [r.pick(existing).address, `10.9.0.${200 + i}`], macs: [mac(60 + i, 0)] });
        for (const port of r.some(PORTS)) await addService(t.database.db, o, dup, { port });
        await addCertificate(t.database.db, o, dup, { trustStatus: 'trusted', port: r.pick(PORTS) });
        await mergeDuplicateHosts(t.database.db, { type: 'cli' }, { org: o, dryRun: false });
      }
      expect(await drift(o), `seed ${seed}, after ${kinds.join(' → ')}`).toEqual([]);
      for (const x of await certificateStates(o)) states.add(x);
    }
    return { s, kinds, states };
  }

  it('after random sequences of batches (new addresses, MAC changes, interfaces, ports opening and closing), completed scans (services and hosts gone, and back) and host merges', async () => {
    const seen = new Set<string>();
    const states = new Set<string>();
    for (const seed of [1, 2, 3, 4]) {
      const done = await run(seed, 14);
      for (const k of done.kinds) seen.add(k);
      for (const x of done.states) states.add(x);
    }
    // Every kind of write took part, and certificates were in every state.
    expect([...seen].sort()).toEqual(['batch', 'complete', 'merge']);
    expect([...states].sort()).toEqual(['current', 'gone', 'replaced']);
  });

  it('and the backfill of migration 0045 stores the state the view computes', async () => {
    const { s } = await run(5, 10);
    const o = s.org.organisationId;
    const file = readFileSync(fileURLToPath(new URL('../migrations/0045_certificate_state_column.sql', import.meta.url)), 'utf8');
    const backfill = /^UPDATE certificates c SET[\s\S]*?;$/m.exec(file)![0];
    await sql`update certificates set state = 'current' where organisation_id = ${o}`.execute(t.database.db);
    expect((await drift(o)).length).toBeGreaterThan(0);
    await sql.raw(backfill).execute(t.database.db);
    expect(await drift(o)).toEqual([]);
  });

  it('and the backfill of migration 0038 computes the same values from the rows written before it', async () => {
    const { s } = await run(11, 8);
    const o = s.org.organisationId;
    const file = readFileSync(fileURLToPath(new URL('../migrations/0038_host_page_columns.sql', import.meta.url)), 'utf8');
    const backfill = /^UPDATE hosts h SET[\s\S]*?;$/m.exec(file)![0];
    await sql`update hosts set addresses = '{}', macs = '{}', open_port_count = 0 where organisation_id = ${o}`.execute(t.database.db);
    expect((await drift(o)).length).toBeGreaterThan(0);
    await sql.raw(backfill).execute(t.database.db);
    expect(await drift(o)).toEqual([]);
  });

  it('and two batches writing to the same hosts at once (two sessions) both count in what is stored', async () => {
    const s: Scanning = await scanningOrg(t);
    const o = s.org.organisationId;
    const [a, b] = [await createNetwork(t, s, '10.9.0.0/24'), await createNetwork(t, s, '10.9.1.0/24')];
    const [sa, sb] = [await startSession(t, s, a), await startSession(t, s, b)];
    await ingest(t, s.daemon, { sessionId: sa, hosts: [0, 1, 2].map((h) => ({ fingerprint: `fp-${h}` })) });
    for (let round = 0; round < 5; round++) {
      const batch = (sessionId: string, net: number) => ({
        sessionId,
        ips: [0, 1, 2].map((h) => ({ hostFingerprint: `fp-${h}`, address: `10.9.${net}.${h * 10 + round + 1}`, mac: mac(h, net * 10 + round) })),
        ports: [0, 1, 2].map((h) => ({ fingerprint: `fp-${h}`, address: `10.9.${net}.${h * 10 + round + 1}`, protocol: 'tcp', number: 1000 + net * 100 + round, state: 'open' })),
        // One endpoint per host, each session presenting its own certificate there: one of them replaces the other.
        tls: [0, 1, 2].map((h) => certificate(h, `10.9.0.${h * 10 + 1}`, 443, net * 10 + round)),
      });
      await Promise.all([ingest(t, s.daemon, batch(sa, 0)), ingest(t, s.daemon, batch(sb, 1))]);
      expect(await drift(o)).toEqual([]);
    }
    const counts = (await sql<{ n: number }>`select open_port_count as n from hosts where organisation_id = ${o}`.execute(t.database.db)).rows.map((x) => x.n);
    expect(counts).toEqual([10, 10, 10]);
    expect((await certificateStates(o)).sort()).toEqual(['current', 'replaced']);
  });

  it('and the hosts collection shows the stored values', async () => {
    const { s } = await run(7, 6);
    const res = await t.app.inject({ method: 'GET', url: '/api/v1/hosts?limit=500', headers: bearer(s.api) });
    expect(res.statusCode, res.body).toBe(200);
    const stored = new Map(
      (await sql<Json>`select id, addresses, macs, open_port_count from hosts where organisation_id = ${s.org.organisationId}`.execute(t.database.db)).rows.map((x) => [x.id, x]),
    );
    const page = res.json().data as Json[];
    expect(page.length).toBe(stored.size);
    for (const h of page) expect({ addresses: h.addresses, macs: h.macs, openPortCount: h.openPortCount }).toEqual({ addresses: stored.get(h.id)!.addresses, macs: stored.get(h.id)!.macs, openPortCount: stored.get(h.id)!.open_port_count });
  });
});
