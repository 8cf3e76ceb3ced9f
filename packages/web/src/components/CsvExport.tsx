import { useEffect, useRef, useState } from 'react';
import { type CsvColumn, csvBlob, csvFileName, download } from '../lib/csv';

// Export CSV: one export at a time, every page the rows give, a running count and Cancel, the file
// downloaded at the end. DataTable offers it on every table; a screen with its own table (the
// snapshot diff) uses it directly.
export interface Exporter<T> {
  available: boolean;
  running: boolean;
  rows: number;
  error: string | null;
  start(columns: CsvColumn<T>[]): void;
  cancel(): void;
}

/** Runs one export at a time: reads the pages, counts the rows, downloads the file at the end. */
export function useCsvExport<T>(name: string, rows: ((signal: AbortSignal) => AsyncIterable<readonly T[]>) | null): Exporter<T> {
  const [state, setState] = useState<{ running: boolean; rows: number; error: string | null }>({ running: false, rows: 0, error: null });
  const abort = useRef<AbortController | null>(null);
  useEffect(() => () => abort.current?.abort(), []);
  return {
    available: rows !== null,
    ...state,
    start(columns) {
      if (!rows || abort.current) return;
      const controller = new AbortController();
      abort.current = controller;
      setState({ running: true, rows: 0, error: null });
      csvBlob(columns, rows(controller.signal), { signal: controller.signal, onRows: (n) => setState((s) => ({ ...s, rows: n })) })
        .then((blob) => {
          download(blob, csvFileName(name));
          setState((s) => ({ ...s, running: false }));
        })
        .catch((e: unknown) => {
          const aborted = controller.signal.aborted;
          setState((s) => ({ ...s, running: false, error: aborted ? null : `The export stopped: ${e instanceof Error ? e.message : String(e)}` }));
        })
        .finally(() => {
          abort.current = null;
        });
    },
    cancel() {
      abort.current?.abort();
    },
  };
}

export function ExportButton<T>({ exporter, columns }: { exporter: Exporter<T>; columns: () => CsvColumn<T>[] }) {
  return (
    <span className="export">
      {exporter.running ? (
        <>
          <span role="status">Exporting… {exporter.rows.toLocaleString('en')} rows</span>{' '}
          <button type="button" className="small" onClick={() => exporter.cancel()}>Cancel export</button>
        </>
      ) : (
        <button type="button" className="small" onClick={() => exporter.start(columns())} title="Every row the filters select (not only those loaded), as CSV">
          Export CSV
        </button>
      )}
      {exporter.error && <span role="alert" className="error-text"> {exporter.error}</span>}
    </span>
  );
}
