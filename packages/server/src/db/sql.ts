import { type Expression, sql } from 'kysely';

/**
 * A timestamp as RFC 3339 text (UTC, milliseconds), formatted by PostgreSQL: list and detail
 * reads skip parsing dates into Date objects only to print them again.
 */
export function rfc3339<T extends string | null = string>(column: string | Expression<unknown>) {
  const ref = typeof column === 'string' ? sql.ref(column) : column;
  return sql<T>`to_char(${ref} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
}

/** `text` as a literal inside a LIKE pattern: `\`, `%` and `_` escaped with the default escape `\`. */
export function likeLiteral(text: string): string {
  return text.replace(/[\\%_]/g, (c) => `\\${c}`);
}
