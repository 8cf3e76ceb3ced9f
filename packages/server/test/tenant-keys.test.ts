import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../src/db/database.js';
import { type TestDatabase, createTestDatabase } from './helpers.js';

// Distribution by organisation (issue 28, docs/citus.md). On Citus a distributed table's primary
// key and unique indexes must contain the distribution column, and a foreign key between two
// distributed tables must join on it; leading with `organisation_id` keeps every key and every
// organisation's reads on one shard. This test reads the migrated schema from the catalog (the same
// query on PostgreSQL and on the embedded PGlite) and holds it to that rule, and holds
// docs/citus.md to the catalog: every table has exactly one statement there.

type Plan = 'reference' | 'local';

/**
 * Tables without an `organisation_id` column: deployment-wide, never distributed. A new table
 * without the column fails the test until it is placed here, with the reason.
 */
const GLOBAL_TABLES: Record<string, { citus: Plan; why: string }> = {
  // The tenants themselves: every tenant table's foreign key to organisations(id) needs it on every node.
  organisations: { citus: 'reference', why: 'the tenants; referenced by every tenant table' },
  // One row per person, shared by their organisations; read by e-mail at sign-in before any organisation is known.
  users: { citus: 'reference', why: 'identity across organisations, looked up by e-mail at sign-in' },
  // The advisory feed is one for the deployment and joined by every organisation's findings (cve.match).
  advisories: { citus: 'reference', why: 'one advisory feed for every organisation' },
  advisory_products: { citus: 'reference', why: 'index of the advisory feed by product, joined with every organisation\'s services' },
  advisory_feed: { citus: 'reference', why: 'the feed\'s state: one row for the deployment' },
  // The attestation signing key signs every organisation's snapshots.
  service_signing_keys: { citus: 'reference', why: 'the deployment\'s signing keys' },
  // The scheduler's slots (spec 1.1): one row per job for the whole deployment, claimed under an advisory lock on the coordinator.
  job_slots: { citus: 'local', why: 'deployment-wide scheduler state, written only by the coordinator\'s sessions' },
};

/**
 * Tenant tables that break the key rule today: each exact violation, why the table is built so,
 * where it stays on Citus and the migration it would need to be distributed. The test fails when a
 * table breaks the rule without being listed, and when a listed table no longer breaks it (or
 * breaks it differently): then this list, and docs/citus.md, are updated with it.
 */
const BREAKS_RULE: Record<string, { violations: string[]; citus: Plan | 'distributed'; why: string; fix: string }> = {
  // API, daemon, metrics and SCIM keys are found by the SHA-256 of the presented token, before the organisation is known.
  keys: {
    violations: ['primary key keys_pkey does not lead with organisation_id', 'unique index keys_token_hash_key does not lead with organisation_id'],
    citus: 'reference',
    why: 'credential lookup by token hash across organisations',
    fix: 'to distribute, would need migration: key (organisation_id, id), unique (organisation_id, token_hash), and a token that names its organisation',
  },
  // Console sessions, found by the cookie's token hash before the organisation is known.
  sessions: {
    violations: ['primary key sessions_pkey does not lead with organisation_id', 'unique index sessions_token_hash_key does not lead with organisation_id'],
    citus: 'reference',
    why: 'credential lookup by token hash across organisations',
    fix: 'to distribute, would need migration: key (organisation_id, id), unique (organisation_id, token_hash), and a cookie that names its organisation',
  },
  // A public share link is opened by its token alone (no session, no organisation in the URL).
  // The table references topologies (distributed), so it cannot be a reference table: it must be
  // distributed, and Citus cannot enforce a unique index without the distribution column.
  topology_shares: {
    violations: ['unique index topology_shares_token_key does not lead with organisation_id'],
    citus: 'distributed',
    why: 'share links are resolved by token hash alone, across organisations',
    fix: 'would need migration: unique (organisation_id, token_hash) and a share URL that names its organisation (or a reference table token_hash -> organisation_id)',
  },
  // Job runs: deployment-wide rows (organisation_id null) beside per-organisation ones, one row per (job, organisation).
  job_status: {
    violations: ['organisation_id is nullable', 'unique index job_status_key does not lead with organisation_id'],
    citus: 'local',
    why: 'deployment-wide job rows have no organisation; written by the scheduler on the coordinator',
    fix: 'to distribute, would need migration: deployment-wide rows in a table of their own, organisation_id not null, key (organisation_id, job)',
  },
};

/** Tenant tables that keep the rule and still are not distributed. */
const TENANT_NOT_DISTRIBUTED: Record<string, { citus: Plan; why: string }> = {
  // keys (a reference table) references memberships, and Citus allows no foreign key from a
  // reference table to a distributed one; sign-in also reads a user's memberships across organisations.
  memberships: { citus: 'reference', why: 'referenced by keys (a reference table); read by user across organisations at sign-in' },
};

interface Catalog {
  /** Table name → whether it has organisation_id, and whether that is NOT NULL. */
  tables: Map<string, { tenant: boolean; notNull: boolean }>;
  /** Foreign keys between tables of this schema (partitions excluded). */
  foreignKeys: { name: string; table: string; references: string; leads: boolean }[];
  uniqueIndexes: { name: string; table: string; primary: boolean; leads: boolean }[];
}

/** The schema as the catalog has it: pg_catalog, the same on PostgreSQL and PGlite. */
async function readCatalog(database: Database): Promise<Catalog> {
  const tables = await sql<{ table: string; tenant: boolean; not_null: boolean | null }>`
    select c.relname as table, a.attnum is not null as tenant, a.attnotnull as not_null
    from pg_class c
    left join pg_attribute a on a.attrelid = c.oid and a.attname = 'organisation_id' and not a.attisdropped
    where c.relnamespace = current_schema()::regnamespace and c.relkind in ('r', 'p') and not c.relispartition
      and c.relname <> 'schema_migrations'
    order by c.relname`.execute(database.db);
  const uniqueIndexes = await sql<{ name: string; table: string; primary: boolean; leads: boolean }>`
    select i.relname as name, t.relname as table, x.indisprimary as primary, coalesce(x.indkey[0] = a.attnum, false) as leads
    from pg_index x
    join pg_class i on i.oid = x.indexrelid
    join pg_class t on t.oid = x.indrelid
    join pg_attribute a on a.attrelid = t.oid and a.attname = 'organisation_id' and not a.attisdropped
    where x.indisunique and t.relnamespace = current_schema()::regnamespace and not t.relispartition
    order by t.relname, i.relname`.execute(database.db);
  // A foreign key between two tenant tables leads with organisation_id on both sides: its first
  // column is organisation_id and it references the other table's organisation_id.
  const foreignKeys = await sql<{ name: string; table: string; references: string; leads: boolean }>`
    select k.conname as name, t.relname as table, r.relname as references,
      coalesce(k.conkey[1] = a.attnum and k.confkey[1] = ra.attnum, false) as leads
    from pg_constraint k
    join pg_class t on t.oid = k.conrelid
    join pg_class r on r.oid = k.confrelid
    join pg_attribute a on a.attrelid = t.oid and a.attname = 'organisation_id' and not a.attisdropped
    join pg_attribute ra on ra.attrelid = r.oid and ra.attname = 'organisation_id' and not ra.attisdropped
    where k.contype = 'f' and t.relnamespace = current_schema()::regnamespace and not t.relispartition
    order by t.relname, k.conname`.execute(database.db);
  return {
    tables: new Map(tables.rows.map((r) => [r.table, { tenant: r.tenant, notNull: r.not_null === true }])),
    uniqueIndexes: uniqueIndexes.rows,
    foreignKeys: foreignKeys.rows,
  };
}

/** Each tenant table's breaks of the rule, as the sentences BREAKS_RULE lists. */
function violations(catalog: Catalog): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  const add = (table: string, v: string) => (out[table] ??= []).push(v);
  for (const [table, t] of catalog.tables) if (t.tenant && !t.notNull) add(table, 'organisation_id is nullable');
  for (const ix of catalog.uniqueIndexes) {
    if (!ix.leads) add(ix.table, `${ix.primary ? 'primary key' : 'unique index'} ${ix.name} does not lead with organisation_id`);
  }
  for (const fk of catalog.foreignKeys) if (!fk.leads) add(fk.table, `foreign key ${fk.name} to ${fk.references} does not lead with organisation_id`);
  for (const v of Object.values(out)) v.sort();
  return out;
}

/** What docs/citus.md says of each table: the statement that places it, in the order written. */
function docStatements(): { table: string; kind: 'distributed' | Plan; colocateWith?: string }[] {
  const text = readFileSync(fileURLToPath(new URL('../../../docs/citus.md', import.meta.url)), 'utf8');
  const out: { table: string; kind: 'distributed' | Plan; colocateWith?: string }[] = [];
  const re = /select (create_distributed_table|create_reference_table|citus_add_local_table_to_metadata)\('([a-z_]+)'(?:, 'organisation_id'(?:, colocate_with => '([a-z_]+)')?)?\);/g;
  for (const m of text.matchAll(re)) {
    const kind = m[1] === 'create_distributed_table' ? 'distributed' : m[1] === 'create_reference_table' ? 'reference' : 'local';
    out.push({ table: m[2]!, kind, ...(m[3] ? { colocateWith: m[3] } : {}) });
  }
  return out;
}

describe('tenant keys lead with organisation_id (distribution by organisation, docs/citus.md)', () => {
  let testDb: TestDatabase;
  let catalog: Catalog;
  beforeAll(async () => {
    testDb = await createTestDatabase();
    catalog = await readCatalog(testDb.database);
  });
  afterAll(async () => {
    await testDb.drop();
  });

  it('reads a real schema: the inventory tables are tenant tables with keys and foreign keys', () => {
    // Guards the checks below from passing on an empty or misread catalog.
    expect(catalog.tables.get('hosts')).toEqual({ tenant: true, notNull: true });
    expect(catalog.tables.get('organisations')).toEqual({ tenant: false, notNull: false });
    expect([...catalog.tables.values()].filter((t) => t.tenant).length).toBeGreaterThan(30);
    expect(catalog.uniqueIndexes).toContainEqual({ name: 'hosts_pkey', table: 'hosts', primary: true, leads: true });
    expect(catalog.foreignKeys.find((k) => k.table === 'services' && k.references === 'hosts')?.leads).toBe(true);
    // Flows are partitioned by day; the partitions are the parent's, not tables of their own.
    expect(catalog.tables.get('flows')).toEqual({ tenant: true, notNull: true });
  });

  it('the tables without organisation_id are exactly the listed global ones', () => {
    const global = [...catalog.tables].filter(([, t]) => !t.tenant).map(([name]) => name).sort();
    expect(global).toEqual(Object.keys(GLOBAL_TABLES).sort());
  });

  it('every tenant table keeps the rule, but for the listed ones, which break it exactly as listed', () => {
    const expected = Object.fromEntries(Object.entries(BREAKS_RULE).map(([t, b]) => [t, [...b.violations].sort()]));
    expect(violations(catalog)).toEqual(expected);
    for (const t of Object.keys(BREAKS_RULE)) expect(catalog.tables.get(t)?.tenant, t).toBe(true);
  });

  it('the check catches a table that breaks the rule (a probe table in this test database)', async () => {
    await sql`create table zz_probe_parent (organisation_id uuid not null, id uuid primary key)`.execute(testDb.database.db);
    await sql`create table zz_probe (organisation_id uuid, id uuid not null, parent_id uuid references zz_probe_parent (id), code text,
      primary key (id))`.execute(testDb.database.db);
    await sql`create unique index zz_probe_code_key on zz_probe (code, organisation_id)`.execute(testDb.database.db);
    try {
      const found = violations(await readCatalog(testDb.database));
      expect(found.zz_probe_parent).toEqual(['primary key zz_probe_parent_pkey does not lead with organisation_id']);
      expect(found.zz_probe).toEqual([
        'foreign key zz_probe_parent_id_fkey to zz_probe_parent does not lead with organisation_id',
        'organisation_id is nullable',
        'primary key zz_probe_pkey does not lead with organisation_id',
        'unique index zz_probe_code_key does not lead with organisation_id',
      ]);
    } finally {
      await sql`drop table zz_probe, zz_probe_parent`.execute(testDb.database.db);
    }
  });

  it('docs/citus.md places every table exactly once, as planned here', () => {
    const doc = docStatements();
    const named = doc.map((s) => s.table);
    expect(named.filter((t, i) => named.indexOf(t) !== i), 'tables placed twice').toEqual([]);
    expect([...named].sort()).toEqual([...catalog.tables.keys()].sort());
    const planned = (t: string): 'distributed' | Plan => {
      const p = GLOBAL_TABLES[t]?.citus ?? BREAKS_RULE[t]?.citus ?? TENANT_NOT_DISTRIBUTED[t]?.citus;
      return p ?? 'distributed';
    };
    for (const s of doc) expect(`${s.table}: ${s.kind}`).toBe(`${s.table}: ${planned(s.table)}`);
  });

  it('docs/citus.md distributes in an order Citus accepts: one colocation group, referenced tables first', () => {
    const doc = docStatements();
    const distributed = doc.filter((s) => s.kind === 'distributed');
    const anchor = distributed[0]!;
    expect(anchor.colocateWith).toBeUndefined();
    for (const s of distributed.slice(1)) expect(`${s.table} colocated with ${s.colocateWith}`).toBe(`${s.table} colocated with ${anchor.table}`);
    // Reference tables come before the distributed tables whose foreign keys point at them, and a
    // distributed table after every distributed table it references.
    const position = new Map(doc.map((s, i) => [s.table, i]));
    const kindOf = new Map(doc.map((s) => [s.table, s.kind]));
    // (Foreign keys to the global tables are not in catalog.foreignKeys: every reference table comes first anyway.)
    for (const { table, references } of catalog.foreignKeys) {
      if (table === references || kindOf.get(table) !== 'distributed') continue;
      expect(position.get(references)!, `${table} -> ${references}`).toBeLessThan(position.get(table)!);
    }
    expect(Math.max(...doc.filter((s) => s.kind === 'reference').map((s) => position.get(s.table)!))).toBeLessThan(position.get(anchor.table)!);
  });
});
