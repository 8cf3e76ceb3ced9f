/**
 * Collection pages written straight from the repository's rows as JSON text (issue 30).
 *
 * A page of 50 hosts is 800 values; building an item object per row and handing the page to the
 * route's serializer cost the web process more than reading the rows. A writer emits the same
 * text `JSON.stringify` gives for the contract's item (the service's `toHost`…) in one pass over
 * the rows: the contract's keys in the contract's order, each value as the kind of its column says.
 * `page-json.test.ts` holds every writer to that, for arbitrary values and on the real database.
 */

/**
 * How a column is written. `uuid` and `time` are emitted without escaping: PostgreSQL's text of a
 * uuid is hex digits and dashes, and `time` columns are `rfc3339()` (db/sql.ts) text, digits and
 * `-:.TZ`; neither can hold a character JSON escapes. `text` is escaped as JSON.stringify does.
 * `json` is JSON text PostgreSQL wrote (`array_to_json(…)::text`), emitted as it is. `int` is a
 * number, `bool` a boolean.
 */
export type FieldKind = 'uuid' | 'time' | 'text' | 'int' | 'bool' | 'json';

export interface Field {
  /** The key of the contract's item. */
  key: string;
  /** The row's column holding its value. */
  column: string;
  kind: FieldKind;
  /** The column may be null (written `null`). */
  nullable?: boolean;
}

/** Writes a page: the collection envelope (spec 2.1) with one item per row. */
type PageWriter<R> = (rows: readonly R[], nextCursor: string | null, hasMore: boolean) => string;

// The characters JSON.stringify escapes in a string: `"`, `\`, controls, and (lone) surrogates.
// A string with none of them is written as it is; any other goes through JSON.stringify.
const ESCAPED = /["\\\u0000-\u001f\ud800-\udfff]/;

/** A string as JSON text, exactly as JSON.stringify writes it. */
export function jsonString(s: string): string {
  return ESCAPED.test(s) ? JSON.stringify(s) : `"${s}"`;
}

/** Writes a page from rows of values in the order of `columns` (Database.preparedArrays). */
export type ArrayPageWriter = (columns: readonly string[], rows: readonly (readonly unknown[])[], nextCursor: string | null, hasMore: boolean) => string;

/**
 * A page writer for rows as arrays: each value read by its column's position in `columns` (no
 * object per row). Its code is generated (as fast-json-stringify does) so that each value read is a
 * plain indexed access of one row shape; fields are static tables of this module's callers, never
 * input. Compiled for the columns of the last call: a statement's columns stay the same from page to page.
 */
export function arrayPageWriter(fields: readonly Field[]): ArrayPageWriter {
  let compiledFor = '';
  let write: PageWriter<readonly unknown[]> = () => '';
  return (columns, rows, nextCursor, hasMore) => {
    if (rows.length === 0) return `{"data":[${envelopeEnd(nextCursor, hasMore)}`; // a search that matched nothing may have no columns
    const key = columns.join(',');
    if (key !== compiledFor) {
      write = compile<readonly unknown[]>(fields, (f) => {
        const i = columns.indexOf(f.column);
        if (i < 0) throw new Error(`The page has no column ${f.column}`);
        return String(i);
      });
      compiledFor = key;
    }
    return write(rows, nextCursor, hasMore);
  };
}

/** Compiles a writer reading each field's value as `r[at(field)]`. */
function compile<R>(fields: readonly Field[], at: (f: Field) => string): PageWriter<R> {
  const value = (f: Field) => {
    const v = `r[${at(f)}]`;
    const written =
      f.kind === 'uuid' || f.kind === 'time'
        ? `'"' + ${v} + '"'`
        : f.kind === 'text'
          ? `str(${v})`
          : f.kind === 'int'
            ? `num(${v})`
            : f.kind === 'bool'
              ? `(${v} ? 'true' : 'false')`
              : `${v}`;
    return f.nullable ? `(${v} === null ? 'null' : ${written})` : written;
  };
  const item = fields.map((f, i) => `${JSON.stringify(`${i === 0 ? '{' : ','}${JSON.stringify(f.key)}:`)} + ${value(f)}`).join(' + ');
  const body = `
    let s = '{"data":[';
    for (let i = 0; i < rows.length; i++) {
      const r = rows[i];
      if (i > 0) s += ',';
      s += ${item} + '}';
    }
    return s + end(nextCursor, hasMore);`;
  const compiled = new Function('str', 'num', 'end', 'rows', 'nextCursor', 'hasMore', body) as (
    str: (s: string) => string,
    num: (n: number) => string,
    end: typeof envelopeEnd,
    rows: readonly R[],
    nextCursor: string | null,
    hasMore: boolean,
  ) => string;
  return (rows, nextCursor, hasMore) => compiled(jsonString, writeNumber, envelopeEnd, rows, nextCursor, hasMore);
}

/** The envelope after the items: the end of `data`, the cursor and whether more follow. */
function envelopeEnd(nextCursor: string | null, hasMore: boolean): string {
  return `],"nextCursor":${nextCursor === null ? 'null' : jsonString(nextCursor)},"hasMore":${hasMore ? 'true' : 'false'}}`;
}

/** A number as JSON.stringify writes it (a non-finite one as null). */
function writeNumber(n: number): string {
  return Number.isFinite(n) ? `${n}` : 'null';
}
