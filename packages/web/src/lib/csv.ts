// CSV export (RFC 4180): what a table's filters select, read page by page over the API's cursors
// and written into a file as it arrives, so an export holds every row and not only the loaded ones.

/** One column of an export: its header and the plain value of a row. */
export interface CsvColumn<T> {
  header: string;
  value: (row: T) => unknown;
}

// A spreadsheet runs a cell starting with one of these as a formula (CSV injection): such text
// gets a leading apostrophe, shown as text. Numbers are written as numbers.
const FORMULA = /^[=+\-@\t\r]/;

/** One field: arrays joined by "; ", null and undefined empty, quoted when it holds a comma, quote or line break. */
export function csvField(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'number' || typeof value === 'bigint') return String(value);
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  let text = Array.isArray(value) ? value.map((v) => (v === null || v === undefined ? '' : String(v))).join('; ') : typeof value === 'object' ? JSON.stringify(value) : String(value);
  if (FORMULA.test(text)) text = `'${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

/** One line, CRLF-terminated as RFC 4180 has it. */
export function csvLine(values: readonly unknown[]): string {
  return `${values.map(csvField).join(',')}\r\n`;
}

/**
 * Writes the header and every row the pages yield into a CSV blob (a UTF-8 byte-order mark first,
 * so spreadsheet programs read accents right). `onRows` hears the running count; an aborted
 * signal stops between pages with an AbortError.
 */
export async function csvBlob<T>(columns: readonly CsvColumn<T>[], pages: AsyncIterable<readonly T[]>, opts: { signal?: AbortSignal; onRows?: (count: number) => void } = {}): Promise<Blob> {
  const parts: string[] = ['\uFEFF', csvLine(columns.map((c) => c.header))];
  let count = 0;
  for await (const page of pages) {
    opts.signal?.throwIfAborted();
    // One string per page: a 100,000-row export stays a few hundred parts.
    parts.push(page.map((row) => csvLine(columns.map((c) => c.value(row)))).join(''));
    count += page.length;
    opts.onRows?.(count);
  }
  return new Blob(parts, { type: 'text/csv;charset=utf-8' });
}

/** The file name of an export: the table's name and the date, e.g. `hosts-2026-11-26.csv`. */
export function csvFileName(name: string, now = new Date()): string {
  const slug = name.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '') || 'export';
  return `${slug}-${now.toISOString().slice(0, 10)}.csv`;
}

/** Hands a blob to the browser as a download. */
export function download(blob: Blob, fileName: string): void {
  const url = URL.createObjectURL(blob);
  const a = document.createElement('a');
  a.href = url;
  a.download = fileName;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}
