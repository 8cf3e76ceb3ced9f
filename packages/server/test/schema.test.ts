import { fileURLToPath } from 'node:url';
import { sql } from 'kysely';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../src/db/database.js';
import { type TestDatabase, createTestDatabase } from './helpers.js';

const schemaFile = fileURLToPath(new URL('../src/db/schema.ts', import.meta.url));

/**
 * What each PostgreSQL type is read as, by both drivers: bigint as number (the type parser in
 * database.ts; PGlite does the same below 2^53), numeric as text (neither parses it), arrays of
 * text-like types as string[]. A type missing here is reported, to be added deliberately.
 */
const readAs: Record<string, string> = {
  text: 'string',
  uuid: 'string',
  inet: 'string',
  cidr: 'string',
  macaddr: 'string',
  numeric: 'string',
  smallint: 'number',
  integer: 'number',
  bigint: 'number',
  'double precision': 'number',
  boolean: 'boolean',
  'timestamp with time zone': 'Date',
  date: 'Date',
  bytea: 'Buffer', // on pg; PGlite returns the Uint8Array that Buffer extends
  jsonb: 'json',
  'text[]': 'string[]',
  'cidr[]': 'string[]',
  'inet[]': 'string[]',
};

interface Column {
  /** The PostgreSQL type, or what schema.ts says a select returns (null left out). */
  type: string;
  nullable: boolean;
}
type Tables = Map<string, Map<string, Column>>;

/** The tables of the test's own schema, as the catalog has them: partitions and views left out. */
async function databaseTables(database: Database): Promise<Tables> {
  const { rows } = await sql<{ table: string; column: string; type: string; nullable: boolean }>`
    select c.relname as table, a.attname as column, format_type(a.atttypid, null) as type, not a.attnotnull as nullable
    from pg_class c
    join pg_attribute a on a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped
    where c.relnamespace = current_schema()::regnamespace and c.relkind in ('r', 'p') and not c.relispartition
    order by c.relname, a.attnum`.execute(database.db);
  const tables: Tables = new Map();
  for (const r of rows) {
    if (!tables.has(r.table)) tables.set(r.table, new Map());
    tables.get(r.table)!.set(r.column, { type: r.type, nullable: r.nullable });
  }
  return tables;
}

/**
 * The tables schema.ts declares: each property of `DB`, and each column's select type (the first
 * argument of ColumnType and Generated), resolved by the TypeScript checker so aliases count.
 * A column's type is named 'string', 'number', 'boolean', 'Date', 'Buffer', 'json' (any other
 * object or unknown), or an array of one of them; string literal unions are 'string'.
 */
function declaredTables(): Tables {
  const program = ts.createProgram([schemaFile], { strict: true, noEmit: true, skipLibCheck: true, types: ['node'], module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext, target: ts.ScriptTarget.ES2023 });
  const checker = program.getTypeChecker();
  const source = program.getSourceFile(schemaFile)!;
  const db = source.statements.find((s): s is ts.InterfaceDeclaration => ts.isInterfaceDeclaration(s) && s.name.text === 'DB');
  if (!db) throw new Error(`${schemaFile} declares no interface DB`);

  const nameOf = (t: ts.Type): string => {
    if (t.flags & ts.TypeFlags.StringLike) return 'string';
    if (t.flags & ts.TypeFlags.NumberLike) return 'number';
    if (t.flags & ts.TypeFlags.BooleanLike) return 'boolean';
    if (checker.isArrayType(t)) return `${nameOf(checker.getTypeArguments(t as ts.TypeReference)[0]!)}[]`;
    const symbol = t.getSymbol()?.getName();
    if (symbol === 'Date' || symbol === 'Buffer') return symbol;
    if (t.flags & (ts.TypeFlags.Object | ts.TypeFlags.Unknown)) return 'json';
    return checker.typeToString(t);
  };

  const tables: Tables = new Map();
  for (const table of checker.getTypeAtLocation(db).getProperties()) {
    const columns = new Map<string, Column>();
    for (const column of checker.getTypeOfSymbol(table).getProperties()) {
      const declared = checker.getTypeOfSymbol(column);
      const select = declared.getProperty('__select__'); // ColumnType<Select, Insert, Update>
      const type = select ? checker.getTypeOfSymbol(select) : declared;
      const parts = type.isUnion() ? type.types : [type];
      const names = new Set(parts.filter((p) => !(p.flags & ts.TypeFlags.Null)).map(nameOf));
      columns.set(column.getName(), { type: [...names].join(' | '), nullable: parts.some((p) => p.flags & ts.TypeFlags.Null) });
    }
    tables.set(table.getName(), columns);
  }
  return tables;
}

/** Names in `a` that `b` lacks. */
const missing = <T>(a: Map<string, T>, b: Map<string, unknown>) => [...a.keys()].filter((k) => !b.has(k));

describe('db/schema.ts', () => {
  let t: TestDatabase;
  let actual: Tables;
  let declared: Tables;
  /** Every column present on both sides, with both descriptions. */
  const both = () =>
    [...declared].flatMap(([table, columns]) =>
      [...columns].flatMap(([column, ts]) => {
        const pg = actual.get(table)?.get(column);
        return pg ? [{ at: `${table}.${column}`, ts, pg }] : [];
      }),
    );

  beforeAll(async () => {
    t = await createTestDatabase();
    // A daily partition, as flow ingest creates them: part of flows, not a table of its own.
    await sql`create table flows_20240101 partition of flows for values from ('2024-01-01T00:00:00Z') to ('2024-01-02T00:00:00Z')`.execute(t.database.db);
    actual = await databaseTables(t.database);
    declared = declaredTables();
  });
  afterAll(async () => {
    await t?.drop();
  });

  it('declares every table of a migrated database, and no other', () => {
    const problems = [
      ...missing(actual, declared).map((table) => `table ${table}: in the database, missing from schema.ts`),
      ...missing(declared, actual).map((table) => `table ${table}: in schema.ts, not in the database`),
    ];
    expect(problems).toEqual([]);
  });

  it('declares every column of each table, and no other', () => {
    const problems = [...declared].flatMap(([table, columns]) => {
      const real = actual.get(table);
      if (!real) return [];
      return [
        ...missing(real, columns).map((c) => `${table}.${c}: in the database (${real.get(c)!.type}), missing from schema.ts`),
        ...missing(columns, real).map((c) => `${table}.${c}: in schema.ts (${columns.get(c)!.type}), not in the database`),
      ];
    });
    expect(problems).toEqual([]);
  });

  it('types each column as what the drivers read its PostgreSQL type as', () => {
    const problems = both().flatMap(({ at, ts, pg }) => {
      const expected = readAs[pg.type];
      if (!expected) return [`${at}: the database type ${pg.type} has no entry in readAs (schema.ts has ${ts.type})`];
      return ts.type === expected ? [] : [`${at}: schema.ts reads it as ${ts.type}, the database has ${pg.type} (read as ${expected})`];
    });
    expect(problems).toEqual([]);
  });

  it('marks a column nullable exactly when the database allows null', () => {
    const word = (nullable: boolean) => (nullable ? 'nullable' : 'not null');
    const problems = both()
      .filter(({ ts, pg }) => ts.nullable !== pg.nullable)
      .map(({ at, ts, pg }) => `${at}: schema.ts says ${word(ts.nullable)}, the database says ${word(pg.nullable)}`);
    expect(problems).toEqual([]);
  });
});
