import { type ColumnDef, flexRender, getCoreRowModel, useReactTable } from '@tanstack/react-table';

interface Props<T> {
  caption: string;
  data: T[];
  // biome-ignore lint: column value types vary per column
  columns: ColumnDef<T, any>[];
  rowKey: (row: T) => string;
  onRowOpen?: (row: T) => void;
  rowClassName?: (row: T) => string | undefined;
}

/**
 * A plain `<table>` rendered from TanStack Table column definitions. A row with `onRowOpen` opens on
 * click; keyboard users reach the same place through the link in its first cell.
 */
export function DataTable<T>({ caption, data, columns, rowKey, onRowOpen, rowClassName }: Props<T>) {
  const table = useReactTable({ data, columns, getCoreRowModel: getCoreRowModel(), getRowId: rowKey });
  return (
    <div className="table-wrap">
      <table>
        <caption className="sr-only">{caption}</caption>
        <thead>
          {table.getHeaderGroups().map((g) => (
            <tr key={g.id}>
              {g.headers.map((h) => (
                <th key={h.id} scope="col">{h.isPlaceholder ? null : flexRender(h.column.columnDef.header, h.getContext())}</th>
              ))}
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
  );
}
