import { type Kysely, sql } from 'kysely';

/**
 * Rows for COPY … FROM STDIN, sent through Kysely like any statement (issue 30: flow deliveries
 * are stored by COPY, PostgreSQL's bulk path, instead of an INSERT … SELECT FROM unnest). The
 * statement is compiled as `copy <table> (<columns>) from stdin $1` with this as its only
 * parameter; both drivers recognise it (database.ts on PostgreSQL streams it with pg-copy-streams,
 * the PGlite dialect hands it over as a blob), in the caller's transaction.
 */
export class CopyData {
  constructor(readonly data: string | Uint8Array) {}
}

/** COPY's text format: a value with a backslash, tab, newline or carriage return escaped. */
export function copyText(value: string): string {
  return /[\\\t\n\r]/.test(value) ? value.replace(/[\\\t\n\r]/g, (c) => (c === '\\' ? '\\\\' : c === '\t' ? '\\t' : c === '\n' ? '\\n' : '\\r')) : value;
}

/**
 * Copies `data` into `table`'s `columns`: rows in COPY's text format (each ending in a newline; as
 * a string or its UTF-8 bytes), or with `binary` the whole of COPY's binary format (header, tuples,
 * trailer), which PostgreSQL reads without parsing text (issue 30: a third of a flow record's cost).
 */
// Any database's Kysely or transaction.
export function copyRows(db: Kysely<any>, table: string, columns: readonly string[], data: string | Uint8Array, binary = false) {
  // `copy binary <table>` (the older spelling of the format option) keeps `from stdin` the statement's end, where the drivers look for it.
  return sql`${sql.raw(`copy ${binary ? 'binary ' : ''}${table} (${columns.join(', ')}) from stdin`)} ${new CopyData(data)}`.execute(db);
}

/** The COPY statement (without its parameter) and data of a copyRows statement, null for any other. */
export function copyOf(text: string, parameters: readonly unknown[]): { statement: string; data: string | Uint8Array } | null {
  if (parameters.length !== 1 || !(parameters[0] instanceof CopyData)) return null;
  return { statement: text.replace(/ \$1$/, ''), data: parameters[0].data };
}
