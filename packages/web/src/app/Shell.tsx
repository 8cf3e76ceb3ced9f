import { useMutation, useQueryClient } from '@tanstack/react-query';
import { roleAtLeast } from '@surveyor/contract';
import { lazy, Suspense, useEffect, useRef, useState } from 'react';
import { Navigate, NavLink, Outlet, useLocation, useNavigate } from 'react-router';
import { routes } from '@surveyor/contract';
import { ApiError, call, setCsrfToken } from '../lib/api';
import { ErrorAlert } from '../components/ErrorAlert';
import { useLiveUpdates } from './live';
import { SearchBox } from './SearchBox';
import { useMe } from '../lib/queries';

// The assistant's panel loads when first opened (its code stays out of the entry bundle).
const AssistantPanel = lazy(() =>
  import('../features/assistant/AssistantPanel').then(
    (m) => ({ default: m.AssistantPanel }),
    () => ({ default: () => <aside className="assistant"><p className="alert" role="alert">The assistant could not be loaded. Reload the page and try again.</p></aside> }),
  ),
);

/** The signed-in frame: navigation on the left, who you are top right, the page in the middle. */
export function Shell() {
  const me = useMe();
  const location = useLocation();
  const navigate = useNavigate();
  const client = useQueryClient();
  const signedIn = me.data !== undefined && !me.data.user.mustChangePassword;
  useLiveUpdates(signedIn);

  useEffect(() => {
    if (me.data) setCsrfToken(me.data.csrfToken);
  }, [me.data]);

  // Moving to another page puts focus at the start of its content (as a page load would, past the
  // navigation), so a keyboard or screen-reader user is not left on the link they followed. Only the
  // path counts: filters kept in the query string change while the user types in them.
  // On a phone the navigation folds behind the Menu button; following a link folds it again.
  const main = useRef<HTMLElement>(null);
  const shownPath = useRef(location.pathname);
  const [menuOpen, setMenuOpen] = useState(false);
  // The assistant's panel: never opened yet (not loaded), open, or closed (kept, with its conversation).
  const [assistant, setAssistant] = useState<'never' | 'open' | 'closed'>('never');
  const assistantButton = useRef<HTMLButtonElement>(null);
  const closeAssistant = (returnFocus: boolean) => {
    setAssistant('closed');
    if (returnFocus) assistantButton.current?.focus();
  };
  useEffect(() => {
    if (shownPath.current === location.pathname) return;
    shownPath.current = location.pathname;
    setMenuOpen(false);
    main.current?.focus({ preventScroll: true });
  }, [location.pathname]);

  const signOut = useMutation({
    mutationFn: () => call(routes.logout, {}, { no401Redirect: true }),
    onSettled: () => {
      setCsrfToken(null);
      void navigate('/login', { replace: true });
      client.removeQueries();
    },
  });

  const next = location.pathname + location.search;
  if (me.isPending) return <p className="loading">Loading…</p>;
  if (me.error) {
    if (me.error instanceof ApiError && me.error.status === 401) return <Navigate to={`/login?next=${encodeURIComponent(next)}`} replace />;
    return (
      <main className="standalone">
        <h1>Surveyor</h1>
        <ErrorAlert error={me.error} />
        <button type="button" onClick={() => void me.refetch()}>Try again</button>
      </main>
    );
  }
  if (me.data.user.mustChangePassword) return <Navigate to={`/password?next=${encodeURIComponent(next)}`} replace />;

  const { user, organisation, role } = me.data;
  const admin = roleAtLeast(role, 'admin');
  return (
    <div className={['shell', menuOpen && 'menu-open', assistant === 'open' && 'assistant-open'].filter(Boolean).join(' ')}>
      <a className="skip" href="#main">Skip to content</a>
      <header className="topbar">
        <button type="button" className="menu-button" aria-expanded={menuOpen} aria-controls="main-nav" onClick={() => setMenuOpen((o) => !o)}>
          Menu
        </button>
        <span className="brand">Surveyor</span>
        <SearchBox />
        <button
          type="button"
          ref={assistantButton}
          className="assistant-button"
          aria-expanded={assistant === 'open'}
          aria-controls={assistant === 'never' ? undefined : 'assistant-panel'}
          onClick={() => (assistant === 'open' ? closeAssistant(false) : setAssistant('open'))}
        >
          Assistant
        </button>
        <div className="who">
          <span className="email">{user.email}</span>
          <span className="org">{organisation.name}</span>
          <span className={`role role-${role}`}>{role}</span>
          <button type="button" onClick={() => signOut.mutate()} disabled={signOut.isPending}>Sign out</button>
        </div>
      </header>
      <nav className="sidenav" id="main-nav" aria-label="Main">
        <ul>
          <li><NavLink to="/" end>Overview</NavLink></li>
          <li><NavLink to="/hosts">Hosts</NavLink></li>
          <li><NavLink to="/networks">Networks</NavLink></li>
          <li><NavLink to="/sites">Sites</NavLink></li>
          <li><NavLink to="/topology">Topology</NavLink></li>
          <li><NavLink to="/services">Services</NavLink></li>
          <li><NavLink to="/certificates">Certificates</NavLink></li>
          <li><NavLink to="/vulnerabilities">Vulnerabilities</NavLink></li>
          <li><NavLink to="/daemons">Daemons</NavLink></li>
          <li><NavLink to="/snapshots">Snapshots</NavLink></li>
          <li>
            <NavLink to="/settings">Settings</NavLink>
            <ul>
              <li><NavLink to="/settings/keys">API keys</NavLink></li>
              <li><NavLink to="/settings/advisories">Advisories</NavLink></li>
              {admin && <li><NavLink to="/settings/members">Members</NavLink></li>}
              {admin && <li><NavLink to="/settings/jobs">Jobs</NavLink></li>}
              {admin && <li><NavLink to="/settings/notifications">Notifications</NavLink></li>}
              {admin && <li><NavLink to="/settings/cloud">Cloud accounts</NavLink></li>}
              {admin && <li><NavLink to="/settings/scim">SCIM</NavLink></li>}
              {admin && <li><NavLink to="/settings/activity">Activity</NavLink></li>}
            </ul>
          </li>
        </ul>
      </nav>
      <main id="main" className="content" tabIndex={-1} ref={main}>
        <Outlet />
      </main>
      {assistant !== 'never' && (
        <Suspense fallback={<aside className="assistant"><p className="loading">Loading…</p></aside>}>
          <AssistantPanel open={assistant === 'open'} onClose={closeAssistant} />
        </Suspense>
      )}
    </div>
  );
}
