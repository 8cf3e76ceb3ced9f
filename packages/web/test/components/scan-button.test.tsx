// @vitest-environment happy-dom
import { QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { cleanup, fireEvent, render, screen, waitFor } from '@testing-library/react';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ScanButton } from '../../src/features/networks/components/ScanButton';

// "Scan now" (issue 23): disabled while the network's session is under way, and a refusal shown
// after a click is forgotten once that session ends (the live stream refreshes the network).

afterEach(() => {
  cleanup();
  vi.unstubAllGlobals();
});

const problem = { type: 'http://x/problems#scan_already_active', title: 'Conflict', status: 409, code: 'scan_already_active', detail: 'The network already has a scan session in progress (s-1).' };

describe('ScanButton', () => {
  it('shows a refusal, keeps it while the session runs (button disabled), and forgets it when the session ends', async () => {
    vi.stubGlobal('fetch', vi.fn(async () => new Response(JSON.stringify(problem), { status: 409, headers: { 'content-type': 'application/problem+json' } })));
    const client = new QueryClient();
    const ui = (active: string | null) => (
      <QueryClientProvider client={client}>
        <ScanButton networkId="n-1" active={active} label="Scan lab now" />
      </QueryClientProvider>
    );
    const { rerender } = render(ui(null));
    fireEvent.click(screen.getByRole('button', { name: 'Scan lab now' }));
    await waitFor(() => expect(screen.getByRole('alert').textContent).toBe(problem.detail));

    // The page learns of the session under way: the button waits, the refusal still explains why.
    rerender(ui('s-1'));
    expect((screen.getByRole('button', { name: 'Scan lab now' }) as HTMLButtonElement).disabled).toBe(true);
    expect(screen.getByRole('button', { name: 'Scan lab now' }).textContent).toBe('Scanning…');
    expect(screen.getByRole('alert').textContent).toBe(problem.detail);

    // The session ends: the refusal goes, the button is back.
    rerender(ui(null));
    await waitFor(() => expect(screen.queryByRole('alert')).toBeNull());
    expect((screen.getByRole('button', { name: 'Scan lab now' }) as HTMLButtonElement).disabled).toBe(false);
    expect(screen.getByRole('button', { name: 'Scan lab now' }).textContent).toBe('Scan now');
  });
});
