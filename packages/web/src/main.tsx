import { QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { createBrowserRouter, Navigate } from 'react-router';
import { RouterProvider } from 'react-router/dom';
import { ApiError, api, setCsrfToken, setUnauthorizedHandler } from './api';
import { Shell } from './Shell';
import { meKey } from './queries';
import { CertificatesPage } from './pages/CertificatesPage';
import { DaemonsPage } from './pages/DaemonsPage';
import { HostPage } from './pages/HostPage';
import { HostsPage } from './pages/HostsPage';
import { JobsPage } from './pages/JobsPage';
import { KeysPage } from './pages/KeysPage';
import { LoginPage } from './pages/LoginPage';
import { MembersPage } from './pages/MembersPage';
import { NetworkPage } from './pages/NetworkPage';
import { NetworksPage } from './pages/NetworksPage';
import { NotFoundPage } from './pages/NotFoundPage';
import { NotificationsPage } from './pages/NotificationsPage';
import { OverviewPage } from './pages/OverviewPage';
import { PasswordPage } from './pages/PasswordPage';
import { ServicesPage } from './pages/ServicesPage';
import { SitesPage } from './pages/SitesPage';
import { SnapshotDiffPage } from './pages/SnapshotDiffPage';
import { SnapshotsPage } from './pages/SnapshotsPage';
import { TopologyPage } from './pages/TopologyPage';
import { VulnerabilitiesPage } from './pages/VulnerabilitiesPage';
import type { SessionInfo } from './types';
import './styles.css';

const queryClient = new QueryClient({
  defaultOptions: {
    queries: {
      staleTime: 15_000,
      refetchOnWindowFocus: true,
      // A refusal (4xx) will not change on retry; a network failure or 5xx may.
      retry: (count, error) => count < 2 && !(error instanceof ApiError && error.status >= 400 && error.status < 500),
    },
  },
});

const router = createBrowserRouter([
  { path: '/login', element: <LoginPage /> },
  { path: '/password', element: <PasswordPage /> },
  {
    path: '/',
    element: <Shell />,
    children: [
      { index: true, element: <OverviewPage /> },
      { path: 'hosts', element: <HostsPage /> },
      { path: 'hosts/:id', element: <HostPage /> },
      { path: 'networks', element: <NetworksPage /> },
      { path: 'networks/:id', element: <NetworkPage /> },
      { path: 'sites', element: <SitesPage /> },
      { path: 'topology', element: <TopologyPage /> },
      { path: 'services', element: <ServicesPage /> },
      { path: 'certificates', element: <CertificatesPage /> },
      { path: 'vulnerabilities', element: <VulnerabilitiesPage /> },
      { path: 'daemons', element: <DaemonsPage /> },
      { path: 'snapshots', element: <SnapshotsPage /> },
      { path: 'snapshots/:id/diff', element: <SnapshotDiffPage /> },
      { path: 'settings', element: <Navigate to="/settings/keys" replace /> },
      { path: 'settings/keys', element: <KeysPage /> },
      { path: 'settings/members', element: <MembersPage /> },
      { path: 'settings/jobs', element: <JobsPage /> },
      { path: 'settings/notifications', element: <NotificationsPage /> },
      { path: '*', element: <NotFoundPage /> },
    ],
  },
]);

/** Where we are, to come back to after signing in again. */
function here(): string {
  const { pathname, search } = window.location;
  return pathname + search;
}

let checking = false;
// A 401 from a call: when the session itself is gone (GET /auth/me is 401 too), sign in again and
// come back here; otherwise the 401 concerns that endpoint only and its page shows the detail.
// GET /auth/me itself is the Shell's to handle (it sends to sign-in).
const onLoginPage = () => window.location.pathname === '/login' || window.location.pathname === '/password';
setUnauthorizedHandler((path) => {
  if (checking || path === '/api/v1/auth/me' || onLoginPage()) return;
  checking = true;
  api<SessionInfo>('/api/v1/auth/me', { no401Redirect: true })
    .then((me) => {
      setCsrfToken(me.csrfToken);
      queryClient.setQueryData(meKey, me);
    })
    .catch((e: unknown) => {
      if (!(e instanceof ApiError) || e.status !== 401 || onLoginPage()) return;
      const hadSession = queryClient.getQueryData(meKey) !== undefined;
      setCsrfToken(null);
      const params = new URLSearchParams({ next: here() });
      if (hadSession) params.set('expired', '1');
      void router.navigate(`/login?${params}`, { replace: true }).then(() => queryClient.removeQueries());
    })
    .finally(() => {
      checking = false;
    });
});

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <QueryClientProvider client={queryClient}>
      <RouterProvider router={router} />
    </QueryClientProvider>
  </StrictMode>,
);
