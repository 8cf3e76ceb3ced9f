// @vitest-environment happy-dom
import { cleanup, fireEvent, render, screen } from '@testing-library/react';
import type { ColumnDef } from '@tanstack/react-table';
import { useState } from 'react';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ApiError } from '../../src/lib/api';
import { CopyField } from '../../src/components/Copy';
import { DataTable } from '../../src/components/DataTable';
import { Dialog } from '../../src/components/Dialog';
import { ErrorAlert } from '../../src/components/ErrorAlert';
import { useRevealPanel } from '../../src/components/focus';

// The console's shared pieces in happy-dom: the error display, the confirmation dialog's keyboard
// focus, a reveal-once panel's focus, and the table's row opening.

afterEach(cleanup);

describe('ErrorAlert', () => {
  it("shows a problem's detail as an alert", () => {
    render(<ErrorAlert error={new ApiError(409, 'A scan of this network is already queued or running.', { code: 'scan_already_active', status: 409 })} />);
    expect(screen.getByRole('alert').textContent).toBe('A scan of this network is already queued or running.');
  });

  it('shows nothing without an error, and any other thrown value as text', () => {
    const { container, rerender } = render(<ErrorAlert error={null} />);
    expect(container.innerHTML).toBe('');
    rerender(<ErrorAlert error="timed out" />);
    expect(screen.getByRole('alert').textContent).toBe('timed out');
  });
});

/** A page with a main region, a button that opens a dialog, and a way to take that button away. */
function DialogPage({ onConfirm }: { onConfirm: () => void }) {
  const [open, setOpen] = useState(false);
  const [opener, setOpener] = useState(true);
  return (
    <main id="main" tabIndex={-1}>
      {opener && <button type="button" onClick={() => setOpen(true)}>Revoke</button>}
      {open && (
        <Dialog
          title="Revoke key?"
          confirmLabel="Revoke key"
          onConfirm={() => {
            onConfirm();
            setOpener(false);
            setOpen(false);
          }}
          onCancel={() => setOpen(false)}
        >
          <label>
            Note
            <input />
          </label>
        </Dialog>
      )}
    </main>
  );
}

describe('Dialog', () => {
  it('keeps Tab inside, cancels on Escape and gives focus back to the button that opened it', () => {
    render(<DialogPage onConfirm={() => {}} />);
    const revoke = screen.getByRole('button', { name: 'Revoke' });
    revoke.focus();
    fireEvent.click(revoke);
    const dialog = screen.getByRole('dialog', { name: 'Revoke key?' });
    expect((dialog as HTMLDialogElement).open).toBe(true);
    const note = screen.getByLabelText('Note');
    const cancel = screen.getByRole('button', { name: 'Cancel' });
    // Tab on the last control goes round to the first; Shift+Tab on the first to the last.
    cancel.focus();
    fireEvent.keyDown(cancel, { key: 'Tab' });
    expect(document.activeElement).toBe(note);
    fireEvent.keyDown(note, { key: 'Tab', shiftKey: true });
    expect(document.activeElement).toBe(cancel);
    // In between, Tab is the browser's own.
    note.focus();
    expect(fireEvent.keyDown(note, { key: 'Tab' })).toBe(true);
    // Escape (the dialog's cancel event) closes it; focus is back on Revoke.
    fireEvent(dialog, new Event('cancel', { cancelable: true }));
    expect(screen.queryByRole('dialog')).toBeNull();
    expect(document.activeElement).toBe(revoke);
  });

  it('sends focus to the main region when the button that opened it is gone', () => {
    const confirmed = vi.fn();
    render(<DialogPage onConfirm={confirmed} />);
    fireEvent.click(screen.getByRole('button', { name: 'Revoke' }));
    fireEvent.click(screen.getByRole('button', { name: 'Revoke key' }));
    expect(confirmed).toHaveBeenCalledTimes(1);
    expect(screen.queryByRole('dialog')).toBeNull();
    expect(screen.queryByRole('button', { name: 'Revoke' })).toBeNull();
    expect(document.activeElement?.id).toBe('main');
  });
});

function Minted({ onClose }: { onClose: () => void }) {
  return (
    <section aria-label="Key minted" {...useRevealPanel(onClose)}>
      <input aria-label="Token" readOnly value="svk_secret" />
      <button type="button" onClick={onClose}>Done</button>
    </section>
  );
}

function MintPage() {
  const [shown, setShown] = useState(false);
  return (
    <main id="main" tabIndex={-1}>
      <button type="button" onClick={() => setShown(true)}>Mint key</button>
      {shown && <Minted onClose={() => setShown(false)} />}
    </main>
  );
}

describe('a reveal-once panel', () => {
  it('takes focus when shown, closes on Escape, and gives focus back to the button that showed it', () => {
    render(<MintPage />);
    const mint = screen.getByRole('button', { name: 'Mint key' });
    mint.focus();
    fireEvent.click(mint);
    const panel = screen.getByRole('region', { name: 'Key minted' });
    expect(document.activeElement).toBe(panel);
    fireEvent.keyDown(screen.getByLabelText('Token'), { key: 'Escape' });
    expect(screen.queryByRole('region', { name: 'Key minted' })).toBeNull();
    expect(document.activeElement).toBe(mint);
  });
});

interface Row {
  id: string;
  name: string;
}

describe('DataTable', () => {
  const columns: ColumnDef<Row>[] = [
    { header: 'Name', accessorKey: 'name' },
    { id: 'act', header: 'Actions', cell: ({ row }) => <button type="button" aria-label={`Scan ${row.original.name}`}>Scan</button> },
  ];
  const rows = [{ id: 'a', name: 'office LAN' }, { id: 'b', name: 'lab' }];

  it('is a table named by its caption, one row per item, with column headers', () => {
    render(<DataTable caption="Networks" data={rows} columns={columns} rowKey={(r) => r.id} />);
    const table = screen.getByRole('table', { name: 'Networks' });
    expect([...table.querySelectorAll('th[scope="col"]')].map((th) => th.textContent)).toEqual(['Name', 'Actions']);
    expect(table.querySelectorAll('tbody tr')).toHaveLength(2);
  });

  it('opens a row clicked anywhere but on its own controls', () => {
    const opened: string[] = [];
    render(<DataTable caption="Networks" data={rows} columns={columns} rowKey={(r) => r.id} onRowOpen={(r) => opened.push(r.id)} rowClassName={(r) => (r.id === 'b' ? 'gone' : undefined)} />);
    fireEvent.click(screen.getByText('lab'));
    fireEvent.click(screen.getByRole('button', { name: 'Scan office LAN' }));
    expect(opened).toEqual(['b']);
    expect(screen.getByText('lab').closest('tr')?.className).toBe('clickable gone');
    expect(screen.getByText('office LAN').closest('tr')?.className).toBe('clickable');
  });

  interface Host {
    id: string;
    name: string;
    ports: number;
    site: string;
    tags: string[];
  }
  const hostColumns: ColumnDef<Host>[] = [
    { header: 'Name', accessorKey: 'name' },
    { header: 'Open ports', accessorKey: 'ports' },
    { header: 'Site', accessorKey: 'site' },
    { header: 'Tags', accessorKey: 'tags', cell: ({ row }) => row.original.tags.join(', ') },
    { id: 'act', header: 'Actions', cell: () => <button type="button">Scan</button> },
  ];
  const hosts: Host[] = [
    { id: '1', name: 'web-10', ports: 3, site: 'fra', tags: ['dmz'] },
    { id: '2', name: 'web-9', ports: 12, site: 'ber', tags: [] },
    { id: '3', name: 'db-1', ports: 1, site: 'fra', tags: ['db', 'pci'] },
  ];
  const names = () => [...document.querySelectorAll('tbody tr td:first-child')].map((td) => td.textContent);
  const header = (name: string) => screen.getByRole('columnheader', { name });
  const openColumns = () => {
    const menu = screen.getByText('Columns').closest('details')!;
    menu.open = true;
    fireEvent(menu, new Event('toggle'));
  };

  it('sorts by a column on its header button: ascending, descending, then back to the API order', () => {
    window.localStorage.clear();
    render(<DataTable caption="Hosts" data={hosts} columns={hostColumns} rowKey={(r) => r.id} />);
    expect(names()).toEqual(['web-10', 'web-9', 'db-1']);
    const byName = screen.getByRole('button', { name: 'Name' });
    fireEvent.click(byName);
    // Text sorts with numbers in order (web-9 before web-10), as an operator reads host names.
    expect(names()).toEqual(['db-1', 'web-9', 'web-10']);
    expect(header('Name').getAttribute('aria-sort')).toBe('ascending');
    fireEvent.click(byName);
    expect(names()).toEqual(['web-10', 'web-9', 'db-1']);
    expect(header('Name').getAttribute('aria-sort')).toBe('descending');
    fireEvent.click(byName);
    expect(names()).toEqual(['web-10', 'web-9', 'db-1']);
    expect(header('Name').getAttribute('aria-sort')).toBeNull();
    // Numbers sort as numbers; the first click on a number column puts the largest first (TanStack's default for numbers).
    fireEvent.click(screen.getByRole('button', { name: 'Open ports' }));
    expect(names()).toEqual(['web-9', 'web-10', 'db-1']);
    expect(header('Name').getAttribute('aria-sort')).toBeNull();
  });

  it('offers no sort on a column of lists or without values (actions)', () => {
    window.localStorage.clear();
    render(<DataTable caption="Hosts" data={hosts} columns={hostColumns} rowKey={(r) => r.id} />);
    expect(screen.queryByRole('button', { name: 'Tags' })).toBeNull();
    expect(screen.queryByRole('button', { name: 'Actions' })).toBeNull();
    expect(header('Tags').textContent).toBe('Tags');
  });

  it('says a sort covers the loaded rows only when more can be loaded', () => {
    window.localStorage.clear();
    const { rerender } = render(<DataTable caption="Hosts" data={hosts} columns={hostColumns} rowKey={(r) => r.id} partial />);
    expect(screen.queryByRole('status')).toBeNull();
    fireEvent.click(screen.getByRole('button', { name: 'Site' }));
    expect(screen.getByRole('status').textContent).toBe('Sorted by Site among the 3 rows loaded; load more to include the rest.');
    rerender(<DataTable caption="Hosts" data={hosts} columns={hostColumns} rowKey={(r) => r.id} partial={false} />);
    expect(screen.queryByRole('status')).toBeNull();
  });

  it('hides and shows columns, remembered per table in this browser; the first column stays', () => {
    window.localStorage.clear();
    const headers = () => [...document.querySelectorAll('th[scope="col"]')].map((th) => th.textContent);
    const first = render(<DataTable caption="Hosts" data={hosts} columns={hostColumns} rowKey={(r) => r.id} />);
    // Closed, the menu holds no checkbox (no second control named like a column on the page).
    expect(screen.queryAllByRole('checkbox')).toHaveLength(0);
    openColumns();
    expect(screen.queryByRole('checkbox', { name: 'Show column Name' })).toBeNull();
    fireEvent.click(screen.getByRole('checkbox', { name: 'Show column Site' }));
    fireEvent.click(screen.getByRole('checkbox', { name: 'Show column Tags' }));
    expect(headers()).toEqual(['Name', 'Open ports', 'Actions']);
    expect(document.querySelectorAll('tbody tr:first-child td')).toHaveLength(3);
    first.unmount();

    // Another visit: the choice holds; another table keeps its own.
    render(<DataTable caption="Hosts" data={hosts} columns={hostColumns} rowKey={(r) => r.id} />);
    expect(headers()).toEqual(['Name', 'Open ports', 'Actions']);
    cleanup();
    render(<DataTable caption="Services" data={hosts} columns={hostColumns} rowKey={(r) => r.id} />);
    expect(headers()).toEqual(['Name', 'Open ports', 'Site', 'Tags', 'Actions']);
    cleanup();

    // Show all brings every column back and forgets the choice.
    render(<DataTable caption="Hosts" data={hosts} columns={hostColumns} rowKey={(r) => r.id} />);
    openColumns();
    fireEvent.click(screen.getByRole('button', { name: 'Show all' }));
    expect(headers()).toEqual(['Name', 'Open ports', 'Site', 'Tags', 'Actions']);
    expect(window.localStorage.getItem('surveyor.columns.Hosts')).toBeNull();
  });

  it('ignores a remembered choice it cannot read', () => {
    window.localStorage.setItem('surveyor.columns.Hosts', '[not json');
    render(<DataTable caption="Hosts" data={hosts} columns={hostColumns} rowKey={(r) => r.id} />);
    expect(document.querySelectorAll('th[scope="col"]')).toHaveLength(5);
  });
});

describe('CopyField', () => {
  const clipboard = (writeText: (t: string) => Promise<void>) => Object.defineProperty(navigator, 'clipboard', { value: { writeText }, configurable: true });

  it('copies the secret and says so', async () => {
    const written: string[] = [];
    clipboard(async (t) => void written.push(t));
    render(<CopyField label="Token" value="svk_secret" />);
    fireEvent.click(screen.getByRole('button', { name: 'Copy' }));
    await screen.findByRole('button', { name: 'Copied' });
    expect(written).toEqual(['svk_secret']);
  });

  it('selects the secret for Ctrl+C where the clipboard is refused', async () => {
    clipboard(() => Promise.reject(new Error('not allowed')));
    render(<CopyField label="Token" value="svk_secret" copyLabel="Copy token" />);
    const input = screen.getByLabelText('Token') as HTMLInputElement;
    fireEvent.click(screen.getByRole('button', { name: 'Copy token' }));
    await vi.waitFor(() => expect(document.activeElement).toBe(input));
    expect(input.selectionStart).toBe(0);
    expect(input.selectionEnd).toBe('svk_secret'.length);
    expect(screen.getByRole('button', { name: 'Copy token' })).toBeTruthy();
  });
});
