import {
  type ColumnDef,
  type SortingFn,
  type SortingState,
  type VisibilityState,
  flexRender,
  getCoreRowModel,
  getSortedRowModel,
  useReactTable,
} from '@tanstack/react-table';
import { useEffect, useId, useState } from 'react';
import type { CsvColumn } from '../lib/csv';
import { ExportButton, useCsvExport } from './CsvExport';

declare module '@tanstack/react-table' {
  // biome-ignore lint: the generic names are TanStack's
  interface ColumnMeta<TData, TValue> {
    /** The column's value in a CSV export, when the accessor's value is not what a reader wants (an id → a name). */
    csv?: (row: TData) => unknown;
  }
}

interface Props<T> {
  caption: string;
  data: T[];
  // biome-ignore lint: column value types vary per column
  columns: ColumnDef<T, any>[];
  rowKey: (row: T) => string;
  onRowOpen?: (row: T) => void;
  rowClassName?: (row: T) => string | undefined;
  /** More rows exist than are loaded ("Load more"): a sort then orders the loaded rows only, and says so. */
  partial?: boolean;
  /** Where the choice of columns is remembered (localStorage); defaults to the caption. */
  storageKey?: string;
  /**
   * Every row the table's filters select, page by page over the API's cursors, for "Export CSV".
   * Absent, the export holds `data`; a `partial` table without it offers no export (it would miss rows).
   */
  exportRows?: (signal: AbortSignal) => AsyncIterable<readonly T[]>;
}

const STORAGE_PREFIX = 'surveyor.columns.';

// Text as an operator reads it: numbers inside names in order (web-9 before web-10), case aside.
const collator = new Intl.Collator(undefined, { numeric: true, sensitivity: 'base' });

/** Orders plain values: numbers as numbers, the rest as text (an empty value sorts as empty text, first when ascending). */
const plainOrder: SortingFn<unknown> = (a, b, columnId) => {
  const x = a.getValue(columnId);
  const y = b.getValue(columnId);
  if (typeof x === 'number' && typeof y === 'number') return x - y;
  return collator.compare(String(x ?? ''), String(y ?? ''));
};

function columnKey<T>(c: ColumnDef<T>): string | undefined {
  return c.id ?? ('accessorKey' in c && typeof c.accessorKey === 'string' ? c.accessorKey : undefined);
}

function headerText<T>(c: ColumnDef<T>): string {
  return typeof c.header === 'string' ? c.header : (columnKey(c) ?? '');
}

function loadHidden(key: string): VisibilityState {
  try {
    const raw = window.localStorage.getItem(STORAGE_PREFIX + key);
    const parsed: unknown = raw ? JSON.parse(raw) : {};
    if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) return {};
    return Object.fromEntries(Object.entries(parsed).filter(([, v]) => v === false)) as VisibilityState;
  } catch {
    return {}; // storage unavailable or a value from elsewhere: all columns
  }
}

/**
 * A plain `<table>` rendered from TanStack Table column definitions, with sorting (click or Enter on
 * a column's header button; `aria-sort` tells assistive technology) and a choice of columns remembered
 * per table in this browser. Sorting orders the rows loaded so far: the API pages by its keyset, so a
 * table with more to load says that the order covers the loaded rows. The first column cannot be
 * hidden. A row with `onRowOpen` opens on click; keyboard users reach the same place through the link
 * in its first cell.
 */
export function DataTable<T>({ caption, data, columns, rowKey, onRowOpen, rowClassName, partial, storageKey, exportRows }: Props<T>) {
  const key = storageKey ?? caption;
  const [sorting, setSorting] = useState<SortingState>([]);
  const [visibility, setVisibility] = useState<VisibilityState>(() => loadHidden(key));
  const menuId = useId();
  // The checkboxes exist only while the menu is open: closed, the page has no second control named like a column.
  const [menuOpen, setMenuOpen] = useState(false);
  useEffect(() => {
    try {
      const hidden = Object.fromEntries(Object.entries(visibility).filter(([, v]) => v === false));
      if (Object.keys(hidden).length) window.localStorage.setItem(STORAGE_PREFIX + key, JSON.stringify(hidden));
      else window.localStorage.removeItem(STORAGE_PREFIX + key);
    } catch {
      // private mode or storage full: the choice lasts for this page only
    }
  }, [key, visibility]);

  const table = useReactTable({
    data,
    columns,
    getRowId: rowKey,
    state: { sorting, columnVisibility: visibility },
    onSortingChange: setSorting,
    onColumnVisibilityChange: setVisibility,
    getCoreRowModel: getCoreRowModel(),
    getSortedRowModel: getSortedRowModel(),
    enableSortingRemoval: true,
    defaultColumn: { sortingFn: plainOrder as SortingFn<T>, sortUndefined: 'last' },
  });
  // A column sorts when its values are plain (text, numbers, dates as text); lists and objects do not.
  const first = table.getCoreRowModel().rows[0];
  const sortable = (columnId: string) => {
    const v = first?.getValue(columnId);
    return v === undefined || v === null || ['string', 'number', 'boolean'].includes(typeof v);
  };
  const hideable = table.getAllLeafColumns().filter((c, i) => i > 0 && c.getCanHide());
  const sortedBy = sorting[0] ? table.getColumn(sorting[0].id) : undefined;
  const exporter = useCsvExport(caption, exportRows ?? (partial ? null : async function* () {
    yield data;
  }));
  // The export writes the visible columns that carry data (an accessor or `meta.csv`); a selection
  // or actions column carries none.
  const csvColumns = (): CsvColumn<T>[] =>
    table.getVisibleLeafColumns().flatMap((c) => {
      const def = c.columnDef;
      const accessor =
        def.meta?.csv ??
        ('accessorFn' in def && def.accessorFn ? (row: T) => def.accessorFn(row, 0) : 'accessorKey' in def ? (row: T) => (row as Record<string, unknown>)[def.accessorKey as string] : null);
      if (!accessor) return [];
      return [{ header: typeof def.header === 'string' ? def.header : c.id.charAt(0).toUpperCase() + c.id.slice(1), value: accessor }];
    });

  return (
    <div className="data-table">
      {(hideable.length > 1 || (partial && sortedBy) || exporter.available) && (
        <div className="table-tools">
          {exporter.available && <ExportButton exporter={exporter} columns={csvColumns} />}
          {partial && sortedBy && (
            <span className="hint" role="status">
              Sorted by {headerText(sortedBy.columnDef)} among the {data.length} rows loaded; load more to include the rest.
            </span>
          )}
          {hideable.length > 1 && (
            <details className="columns-menu" open={menuOpen} onToggle={(e) => setMenuOpen(e.currentTarget.open)}>
              <summary>Columns</summary>
              {menuOpen && (
                <fieldset id={menuId}>
                  <legend className="sr-only">Columns of {caption}</legend>
                  {hideable.map((c) => (
                    <label key={c.id} className="check">
                      {/* Named "Show column X", so it never shares a name with a form's field X on the same page. */}
                      <input type="checkbox" aria-label={`Show column ${headerText(c.columnDef)}`} checked={c.getIsVisible()} onChange={c.getToggleVisibilityHandler()} />
                      {headerText(c.columnDef)}
                    </label>
                  ))}
                  {hideable.some((c) => !c.getIsVisible()) && (
                    <button type="button" className="small" onClick={() => table.resetColumnVisibility(true)}>
                      Show all
                    </button>
                  )}
                </fieldset>
              )}
            </details>
          )}
        </div>
      )}
      <div className="table-wrap">
        <table>
          <caption className="sr-only">{caption}</caption>
          <thead>
            {table.getHeaderGroups().map((g) => (
              <tr key={g.id}>
                {g.headers.map((h) => {
                  const dir = h.column.getIsSorted();
                  const label = h.isPlaceholder ? null : flexRender(h.column.columnDef.header, h.getContext());
                  return (
                    <th key={h.id} scope="col" aria-sort={dir === 'asc' ? 'ascending' : dir === 'desc' ? 'descending' : undefined}>
                      {h.column.getCanSort() && sortable(h.column.id) && !h.isPlaceholder ? (
                        <button
                          type="button"
                          className="sort"
                          onClick={h.column.getToggleSortingHandler()}
                          title={dir === 'asc' ? 'Sorted ascending; click for descending' : dir === 'desc' ? 'Sorted descending; click for the API order' : 'Sort by this column'}
                        >
                          {label}
                        </button>
                      ) : (
                        label
                      )}
                    </th>
                  );
                })}
              </tr>
            ))}
          </thead>
          <tbody>
            {table.getRowModel().rows.map((row) => (
              <tr
                key={row.id}
                className={[onRowOpen ? 'clickable' : undefined, rowClassName?.(row.original)].filter(Boolean).join(' ') || undefined}
                onClick={
                  onRowOpen
                    ? (e) => {
                        // Buttons and links in the row do their own thing.
                        if ((e.target as HTMLElement).closest('a,button,input,select,textarea,dialog')) return;
                        onRowOpen(row.original);
                      }
                    : undefined
                }
              >
                {row.getVisibleCells().map((cell) => (
                  <td key={cell.id}>{flexRender(cell.column.columnDef.cell, cell.getContext())}</td>
                ))}
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </div>
  );
}

