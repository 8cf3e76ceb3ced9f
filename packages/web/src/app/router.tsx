import type { QueryClient } from '@tanstack/react-query';
import { createBrowserRouter, Navigate } from 'react-router';
import { routePath, routes } from '@surveyor/contract';
import { ApiError, call, setCsrfToken, setUnauthorizedHandler } from '../lib/api';
import { sessionKeys } from '../lib/keys';
import { NotFoundPage } from './NotFoundPage';
import { Shell } from './Shell';
import { ActivityPage } from '../features/activity/ActivityPage';
import { AdvisoriesPage } from '../features/advisories/AdvisoriesPage';
import { CertificatesPage } from '../features/certificates/CertificatesPage';
import { DaemonPage } from '../features/daemons/DaemonPage';
import { DaemonsPage } from '../features/daemons/DaemonsPage';
import { HostPage } from '../features/hosts/HostPage';
import { HostsPage } from '../features/hosts/HostsPage';
import { JobsPage } from '../features/settings/JobsPage';
import { KeysPage } from '../features/settings/KeysPage';
import { LoginPage } from '../features/auth/LoginPage';
import { MembersPage } from '../features/settings/MembersPage';
import { NetworkPage } from '../features/networks/NetworkPage';
import { NetworksPage } from '../features/networks/NetworksPage';
import { NotificationsPage } from '../features/settings/NotificationsPage';
import { OverviewPage } from '../features/overview/OverviewPage';
import { PasswordPage } from '../features/auth/PasswordPage';
import { ServicesPage } from '../features/services/ServicesPage';
import { SitePage } from '../features/sites/SitePage';
import { SitesPage } from '../features/sites/SitesPage';
import { SnapshotDiffPage } from '../features/snapshots/SnapshotDiffPage';
import { SnapshotsPage } from '../features/snapshots/SnapshotsPage';
import { TopologyPage } from '../features/topology/TopologyPage';
import { VulnerabilitiesPage } from '../features/vulnerabilities/VulnerabilitiesPage';

// The route table: every screen of the console, each from its feature folder; and what a 401
// means while signed in (the session ended: sign in again and come back).

/** The console's router; a 401 from any call checks the session and, when it has ended, goes to sign-in. */
export function createConsoleRouter(queryClient: QueryClient) {
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
        { path: 'sites/:id', element: <SitePage /> },
        { path: 'topology', element: <TopologyPage /> },
        { path: 'services', element: <ServicesPage /> },
        { path: 'certificates', element: <CertificatesPage /> },
        { path: 'vulnerabilities', element: <VulnerabilitiesPage /> },
        { path: 'daemons', element: <DaemonsPage /> },
        { path: 'daemons/:id', element: <DaemonPage /> },
        { path: 'snapshots', element: <SnapshotsPage /> },
        { path: 'snapshots/:id/diff', element: <SnapshotDiffPage /> },
        { path: 'settings', element: <Navigate to="/settings/keys" replace /> },
        { path: 'settings/keys', element: <KeysPage /> },
        { path: 'settings/advisories', element: <AdvisoriesPage /> },
        { path: 'settings/activity', element: <ActivityPage /> },
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
    if (checking || path === routePath(routes.me) || onLoginPage()) return;
    checking = true;
    call(routes.me, {}, { no401Redirect: true })
      .then((me) => {
        setCsrfToken(me.csrfToken);
        queryClient.setQueryData(sessionKeys.me, me);
      })
      .catch((e: unknown) => {
        if (!(e instanceof ApiError) || e.status !== 401 || onLoginPage()) return;
        const hadSession = queryClient.getQueryData(sessionKeys.me) !== undefined;
        setCsrfToken(null);
        const params = new URLSearchParams({ next: here() });
        if (hadSession) params.set('expired', '1');
        void router.navigate(`/login?${params}`, { replace: true }).then(() => queryClient.removeQueries());
      })
      .finally(() => {
        checking = false;
      });
  });

  return router;
}
