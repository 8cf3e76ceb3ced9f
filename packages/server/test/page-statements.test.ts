import { DummyDriver, Kysely, PostgresAdapter, PostgresIntrospector, PostgresQueryCompiler } from 'kysely';
import { describe, expect, it } from 'vitest';
import type { DB } from '../src/db/schema.js';
import * as repo from '../src/inventory/inventory.repo.js';

// Issue 30: a collection page of a fixed shape is compiled once per shape (its values as
// placeholders) and run as a prepared statement with each call's values bound. Whatever the
// filters, the order and the position, the statement run must be exactly the text and the values
// Kysely compiles for that call from scratch.

/** Compiles without a database; every query it runs is recorded. */
function recorder() {
  const compiled: { sql: string; parameters: readonly unknown[] }[] = [];
  const db = new Kysely<DB>({
    dialect: {
      createAdapter: () => new PostgresAdapter(),
      createDriver: () => new DummyDriver(),
      createIntrospector: (k) => new PostgresIntrospector(k),
      createQueryCompiler: () => new PostgresQueryCompiler(),
    },
    log: (e) => {
      if (e.level === 'query') compiled.push({ sql: e.query.sql, parameters: e.query.parameters });
    },
  });
  return { db, compiled };
}

const uuid = (n: number) => `0190f0e4-0000-7000-8000-${String(n).padStart(12, '0')}`;
const combos = <T extends Record<string, readonly unknown[]>>(axes: T): { [K in keyof T]: T[K][number] }[] =>
  Object.entries(axes).reduce<Record<string, unknown>[]>((acc, [k, vs]) => acc.flatMap((a) => vs.map((v) => ({ ...a, [k]: v }))), [{}]) as never;

type Lister = (db: Kysely<DB>, p: repo.PageArgs, f: never) => Promise<unknown[]>;

/** Runs `list` as the web process does (prepared) and through Kysely, for two organisations, positions and values of every filter set. */
async function expectSameStatements(list: Lister, filters: Record<string, unknown>[], desc = false) {
  const { db, compiled } = recorder();
  const runs: { name: string; text: string; values: unknown[] }[] = [];
  const prepared = async (name: string, text: string, values: unknown[]) => {
    runs.push({ name, text, values });
    return [];
  };
  for (const f of filters) {
    for (const [i, after] of [0, 17, 4242].entries()) {
      const page = { organisationId: uuid(100 + i), after, take: 1 + i * 50, desc };
      // The same filters with other values (a uuid, a port, a date, a number of days…).
      const other = Object.fromEntries(Object.entries(f).map(([k, v]) => [k, typeof v === 'string' && v.length === 36 ? uuid(i) : typeof v === 'number' ? v + i : v instanceof Date ? new Date(v.getTime() + i * 1000) : v]));
      for (const g of [f, other]) {
        compiled.length = 0;
        runs.length = 0;
        await list(db, page, g as never);
        await list(db, { ...page, prepared }, g as never);
        expect(compiled, JSON.stringify(g)).toHaveLength(1);
        expect(runs, JSON.stringify(g)).toHaveLength(1);
        expect(runs[0]!.text).toBe(compiled[0]!.sql);
        expect(runs[0]!.values).toEqual(compiled[0]!.parameters);
        expect(runs[0]!.name).toMatch(/^surveyor_page_[0-9a-f]{24}$/);
      }
    }
  }
}

describe('page statements (issue 30): compiled once per shape, the same text and values as Kysely compiles per call', () => {
  it('hosts, under every combination of siteId, gone and source', async () => {
    await expectSameStatements(repo.listHosts as Lister, combos({ siteId: [undefined, uuid(1)], gone: [undefined, 'include', 'exclude', 'only'], source: [undefined, 'cloud', 'daemon'] }));
  });

  it('services, under every combination of hostId, port, protocol, gone and exposed', async () => {
    await expectSameStatements(
      repo.listServices as Lister,
      combos({ hostId: [undefined, uuid(2)], port: [undefined, 443], protocol: [undefined, 'udp'], gone: [undefined, 'exclude', 'only'], exposed: [undefined, 'true', 'false'] }),
    );
  });

  it('certificates, under every combination of hostId, trustStatus, current and expiry window', async () => {
    const now = new Date('2026-11-27T10:00:00Z');
    await expectSameStatements(
      repo.listCertificates as Lister,
      combos({
        hostId: [undefined, uuid(3)],
        trustStatus: [undefined, 'expired'],
        current: [undefined, true, false],
        expiring: [undefined, { kind: 'expired', now }, { kind: 'within', now, days: 7 }, { kind: 'within', now, days: 30 }],
      }),
    );
  });

  it('sites, networks, vulnerabilities, topologies; snapshots newest first from the end and from a position', async () => {
    await expectSameStatements(repo.listSites as Lister, [{}]);
    await expectSameStatements(repo.listNetworks as Lister, combos({ siteId: [undefined, uuid(4)] }));
    await expectSameStatements(repo.listVulnerabilities as Lister, combos({ serviceId: [undefined, uuid(5)], state: [undefined, 'open'], severity: [undefined, 'critical'] }));
    await expectSameStatements(repo.listTopologies as Lister, combos({ siteId: [undefined, uuid(6)], kind: [undefined, 'network'], status: [undefined, 'ready'] }));
    for (const desc of [false, true]) await expectSameStatements(repo.listSnapshots as Lister, combos({ siteId: [undefined, uuid(7)], reason: [undefined, 'manual'] }), desc);
  });

  it('a search, an id list or a LIKE pattern is never prepared: its text depends on its value', async () => {
    const { db } = recorder();
    const runs: string[] = [];
    const prepared = async (name: string) => {
      runs.push(name);
      return [];
    };
    const p = { organisationId: uuid(1), after: 0, take: 51, prepared };
    await repo.listHosts(db, p, { search: { kind: 'id', id: uuid(2) } });
    await repo.listHosts(db, p, { ids: [uuid(3)] });
    await repo.listSites(db, p, { ids: [uuid(4)] });
    await repo.listServices(db, p, { product: 'nginx' });
    await repo.listServices(db, p, { version: '1.2' });
    await repo.listServices(db, p, { cpe: 'cpe:2.3:a:x' });
    expect(runs).toEqual([]);
  });
});
