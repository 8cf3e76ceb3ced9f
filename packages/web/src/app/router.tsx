import type { QueryClient } from '@tanstack/react-query';
import type { ComponentType } from 'react';
import { createBrowserRouter, Navigate, type RouteObject } from 'react-router';
import { routePath, routes } from '@surveyor/contract';
import { ApiError, call, setCsrfToken, setUnauthorizedHandler } from '../lib/api';
import { sessionKeys } from '../lib/keys';
import { NotFoundPage } from './NotFoundPage';
import { Shell } from './Shell';

// The route table: every screen of the console, each from its feature folder and loaded when first
// visited (the entry bundle holds the shell, the client and the libraries: its 250 KB gzip budget
// is checked by test/components/bundle.test.ts); and what a 401 means while signed in (the
// session ended: sign in again and come back).

/**
 * A route whose screen (a named export of a feature module) loads on first visit. A console open
 * across an upgrade asks for chunks the new release no longer has: the first such failure reloads
 * the page (the new release's entry), a second one shows the error.
 */
function screen(load: () => Promise<Record<string, unknown>>, name: string): Pick<RouteObject, 'lazy'> {
  return {
    lazy: async () => {
      try {
        const module = await load();
        sessionStorage.removeItem(RELOADED);
        return { Component: module[name] as ComponentType };
      } catch (e) {
        if (!sessionStorage.getItem(RELOADED)) {
          sessionStorage.setItem(RELOADED, '1');
          window.location.reload();
        }
        throw e;
      }
    },
  };
}
const RELOADED = 'surveyor.reloaded-for-chunk';

/** The console's router; a 401 from any call checks the session and, when it has ended, goes to sign-in. */
export function createConsoleRouter(queryClient: QueryClient) {
  const router = createBrowserRouter([
    { path: '/login', ...screen(() => import('../features/auth/LoginPage'), 'LoginPage') },
    { path: '/password', ...screen(() => import('../features/auth/PasswordPage'), 'PasswordPage') },
    {
      path: '/',
      element: <Shell />,
      hydrateFallbackElement: <p className="muted" role="status">Loading…</p>,
      children: [
        { index: true, ...screen(() => import('../features/overview/OverviewPage'), 'OverviewPage') },
        { path: 'hosts', ...screen(() => import('../features/hosts/HostsPage'), 'HostsPage') },
        { path: 'hosts/:id', ...screen(() => import('../features/hosts/HostPage'), 'HostPage') },
        { path: 'networks', ...screen(() => import('../features/networks/NetworksPage'), 'NetworksPage') },
        { path: 'networks/:id', ...screen(() => import('../features/networks/NetworkPage'), 'NetworkPage') },
        { path: 'sites', ...screen(() => import('../features/sites/SitesPage'), 'SitesPage') },
        { path: 'sites/:id', ...screen(() => import('../features/sites/SitePage'), 'SitePage') },
        { path: 'topology', ...screen(() => import('../features/topology/TopologyPage'), 'TopologyPage') },
        { path: 'services', ...screen(() => import('../features/services/ServicesPage'), 'ServicesPage') },
        { path: 'certificates', ...screen(() => import('../features/certificates/CertificatesPage'), 'CertificatesPage') },
        { path: 'vulnerabilities', ...screen(() => import('../features/vulnerabilities/VulnerabilitiesPage'), 'VulnerabilitiesPage') },
        { path: 'daemons', ...screen(() => import('../features/daemons/DaemonsPage'), 'DaemonsPage') },
        { path: 'daemons/:id', ...screen(() => import('../features/daemons/DaemonPage'), 'DaemonPage') },
        { path: 'snapshots', ...screen(() => import('../features/snapshots/SnapshotsPage'), 'SnapshotsPage') },
        { path: 'snapshots/:id/diff', ...screen(() => import('../features/snapshots/SnapshotDiffPage'), 'SnapshotDiffPage') },
        { path: 'settings', element: <Navigate to="/settings/keys" replace /> },
        { path: 'settings/keys', ...screen(() => import('../features/settings/KeysPage'), 'KeysPage') },
        { path: 'settings/advisories', ...screen(() => import('../features/advisories/AdvisoriesPage'), 'AdvisoriesPage') },
        { path: 'settings/activity', ...screen(() => import('../features/activity/ActivityPage'), 'ActivityPage') },
        { path: 'settings/members', ...screen(() => import('../features/settings/MembersPage'), 'MembersPage') },
        { path: 'settings/jobs', ...screen(() => import('../features/settings/JobsPage'), 'JobsPage') },
        { path: 'settings/notifications', ...screen(() => import('../features/settings/NotificationsPage'), 'NotificationsPage') },
        { path: 'settings/cloud', ...screen(() => import('../features/cloud/CloudAccountsPage'), 'CloudAccountsPage') },
        { path: 'settings/scim', ...screen(() => import('../features/scim/ScimPage'), 'ScimPage') },
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
