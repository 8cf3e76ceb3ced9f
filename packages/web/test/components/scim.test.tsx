// @vitest-environment happy-dom
import { QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { cleanup, fireEvent, render, screen, waitFor } from '@testing-library/react';
import { MemoryRouter } from 'react-router';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ScimPage } from '../../src/features/scim/ScimPage';
import { MembersPage } from '../../src/features/settings/MembersPage';
import type { Member, ScimSettings, SessionInfo } from '../../src/lib/types';

// Settings → SCIM in happy-dom, the server's answers stubbed: the owner edits the group-to-role
// mapping and a 400 naming a row's group puts the message on that row's field; an admin sees the
// mapping read-only, with who may change it.

afterEach(() => {
  cleanup();
  vi.unstubAllGlobals();
});

const ID = (n: number) => `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`;
const NOW = new Date().toISOString();

const session = (role: SessionInfo['role']): SessionInfo => ({
  user: { id: ID(1), email: 'olive@example.com', mustChangePassword: false },
  organisation: { id: ID(2), name: 'Example' },
  role,
  memberships: [],
  csrfToken: 'csrf',
  expiresAt: NOW,
});

const settings: ScimSettings = {
  baseUrl: 'https://surveyor.example.com/api/scim/v2',
  tokens: [],
  mappings: [{ group: 'Network Admins', role: 'editor' }],
  groups: [{ id: ID(3), displayName: 'Network Admins', externalId: 'okta-00g1', members: 3, role: 'editor', updatedAt: NOW }],
  users: { managed: 3, deactivated: 1 },
  lastChangeAt: NOW,
};

const json = (status: number, body: unknown, type = 'application/json') => new Response(JSON.stringify(body), { status, headers: { 'content-type': type } });

const member = (n: number, email: string, o: Partial<Member> = {}): Member => ({
  userId: ID(n), email, role: 'viewer', mustChangePassword: false, createdAt: NOW, lastSignInAt: null, active: true, managedBy: null, ...o,
});
const members = [
  member(1, 'olive@example.com', { role: 'owner' }),
  member(4, 'alice@example.com', { role: 'editor', managedBy: 'scim', active: false }),
  member(5, 'bruno@example.com', { managedBy: 'scim' }),
];

/** The server: GET /auth/me, GET /admin/scim, GET /admin/members, and PUT /admin/scim/mappings answered by `put`. */
function serve(role: SessionInfo['role'], put: (body: unknown) => Response = () => json(200, settings), page = <ScimPage />) {
  const sent: unknown[] = [];
  vi.stubGlobal(
    'fetch',
    vi.fn(async (url: string, init: RequestInit) => {
      if (url.endsWith('/auth/me')) return json(200, session(role));
      if (url.endsWith('/admin/scim') && init.method === 'GET') return json(200, settings);
      if (url.endsWith('/admin/members') && init.method === 'GET') return json(200, { data: members });
      if (url.endsWith('/admin/scim/mappings') && init.method === 'PUT') {
        const body = JSON.parse(String(init.body));
        sent.push(body);
        return put(body);
      }
      return json(404, { status: 404, code: 'not_found', detail: `no ${url}` }, 'application/problem+json');
    }),
  );
  render(
    <QueryClientProvider client={new QueryClient({ defaultOptions: { queries: { retry: false } } })}>
      <MemoryRouter>{page}</MemoryRouter>
    </QueryClientProvider>,
  );
  return sent;
}

describe('Settings → SCIM', () => {
  it("lets an owner add a row and shows the server's refusal of the same group twice on that row", async () => {
    const sent = serve('owner', () =>
      json(400, { status: 400, code: 'validation_failed', detail: 'The group “network admins” is mapped twice.', issues: [{ path: 'body.mappings.1.group', message: 'mapped twice' }] }, 'application/problem+json'),
    );
    const first = await screen.findByLabelText('Group 1');
    expect((first as HTMLInputElement).value).toBe('Network Admins');
    expect((screen.getByLabelText('Role 1') as HTMLSelectElement).value).toBe('editor');
    // Nothing changed yet: nothing to save.
    expect((screen.getByRole('button', { name: 'Save mapping' }) as HTMLButtonElement).disabled).toBe(true);

    fireEvent.click(screen.getByRole('button', { name: 'Add mapping' }));
    fireEvent.input(screen.getByLabelText('Group 2'), { target: { value: 'network admins' } });
    fireEvent.change(screen.getByLabelText('Role 2'), { target: { value: 'admin' } });
    fireEvent.click(screen.getByRole('button', { name: 'Save mapping' }));

    await waitFor(() => expect(screen.getByLabelText('Group 2').getAttribute('aria-invalid')).toBe('true'));
    const described = screen.getByLabelText('Group 2').getAttribute('aria-describedby')!;
    expect(document.getElementById(described)?.textContent).toBe('mapped twice');
    expect(screen.getByRole('alert').textContent).toBe('The group “network admins” is mapped twice.');
    expect(sent).toEqual([{ mappings: [{ group: 'Network Admins', role: 'editor' }, { group: 'network admins', role: 'admin' }] }]);
  });

  it('checks a row with the contract before sending: an empty group is refused on its field', async () => {
    const sent = serve('owner');
    await screen.findByLabelText('Group 1');
    fireEvent.click(screen.getByRole('button', { name: 'Add mapping' }));
    fireEvent.click(screen.getByRole('button', { name: 'Save mapping' }));
    await waitFor(() => expect(screen.getByLabelText('Group 2').getAttribute('aria-invalid')).toBe('true'));
    expect(sent).toEqual([]);
  });

  it('shows an admin the mapping read-only, and who may change it', async () => {
    serve('admin');
    await screen.findByText('Only an owner can change the mapping. You are admin.');
    expect(screen.getByRole('table', { name: 'Group-to-role mapping' }).textContent).toContain('Network Admins');
    expect(screen.queryByRole('button', { name: 'Save mapping' })).toBeNull();
    expect(screen.queryByLabelText('Group 1')).toBeNull();
    // Tokens are theirs to mint.
    expect(screen.getByRole('button', { name: 'Mint token' })).toBeTruthy();
  });
});

describe('Settings → Members', () => {
  it('marks the members the identity provider manages (SCIM) and those it deactivated (Deactivated, the row muted)', async () => {
    serve('owner', undefined, <MembersPage />);
    const alice = (await screen.findByText('alice@example.com')).closest('tr')!;
    expect(alice.className).toBe('deactivated');
    expect([...alice.querySelectorAll('.badge')].map((b) => [b.textContent, b.getAttribute('title')?.includes('identity provider')])).toEqual([
      ['SCIM', true],
      ['Deactivated', true],
    ]);
    const bruno = screen.getByText('bruno@example.com').closest('tr')!;
    expect(bruno.className).toBe('');
    expect([...bruno.querySelectorAll('.badge')].map((b) => b.textContent)).toEqual(['SCIM']);
    expect(screen.getByText('olive@example.com').closest('tr')!.querySelectorAll('.badge')).toHaveLength(0);
  });
});
