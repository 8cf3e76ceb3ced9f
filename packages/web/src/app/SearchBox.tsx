import { routes, vulnerabilityStates } from '@surveyor/contract';
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { type KeyboardEvent, type ReactNode, useEffect, useId, useMemo, useRef, useState } from 'react';
import { useLocation, useNavigate } from 'react-router';
import { hostLabel } from '../components/hostLabel';
import { call } from '../lib/api';
import { plural } from '../lib/format';
import { searchKeys } from '../lib/keys';
import { useDebounced } from '../lib/useDebounced';

// The header's one search box (issue 23): hosts, services, CVEs and networks for what is typed, a
// few of each with "see all N" into the list that shows them all. `/` focuses it from anywhere but
// another field; arrows move through the results, Enter opens one, Escape closes the list.

type Item = { id: string; to: string; label: string; detail?: ReactNode; all?: boolean };
type Group = { name: string; items: Item[] };

/** The findings of a CVE in every state, as the search counts them (resolved ones included). */
const EVERY_STATE = vulnerabilityStates.join(',');

/** "apache" → "?product=apache": the services list with the filter the search applied. */
const query = (o: Record<string, string | undefined>) => `?${new URLSearchParams(Object.entries(o).filter((e): e is [string, string] => !!e[1])).toString()}`;

/** True when a key press belongs to a field the user is typing in. */
const typingIn = (t: EventTarget | null) => t instanceof HTMLElement && (t.isContentEditable || !!t.closest('input, textarea, select'));

export function SearchBox() {
  const [text, setText] = useState('');
  const [open, setOpen] = useState(false);
  const [active, setActive] = useState(-1);
  const input = useRef<HTMLInputElement>(null);
  const navigate = useNavigate();
  const location = useLocation();
  const listId = useId();
  const hintId = useId();
  const q = useDebounced(text.trim(), 200);
  const result = useQuery({
    queryKey: searchKeys.term(q),
    queryFn: ({ signal }) => call(routes.search, { query: { q } }, { signal }),
    enabled: q.length >= 2,
    placeholderData: keepPreviousData,
    staleTime: 15_000,
  });

  useEffect(() => {
    const onKey = (e: globalThis.KeyboardEvent) => {
      if (e.key !== '/' || e.ctrlKey || e.metaKey || e.altKey || typingIn(e.target)) return;
      e.preventDefault();
      input.current?.focus();
      input.current?.select();
    };
    document.addEventListener('keydown', onKey);
    return () => document.removeEventListener('keydown', onKey);
  }, []);
  // Going to another page closes the list; a page rewriting its own query string (a filter applied
  // as typing paused) does not.
  useEffect(() => setOpen(false), [location.pathname]);

  // Results of an earlier term are not shown (Enter would open one of them): "Searching…" until this one's arrive.
  const data = result.data && result.data.q === text.trim() ? result.data : undefined;
  const groups = useMemo<Group[]>(() => {
    if (!data) return [];
    const seeAll = (n: number, capped: boolean, what: string, to: string): Item[] =>
      n > 0 ? [{ id: `all-${what}`, to, label: `See all ${n}${capped ? '+' : ''} ${what}`, all: true }] : [];
    const s = data.services.filter;
    return [
      {
        name: 'Hosts',
        items: [
          ...data.hosts.data.map((h) => ({ id: `h-${h.id}`, to: `/hosts/${h.id}`, label: hostLabel(h), detail: h.addresses.slice(0, 2).join(', ') })),
          ...seeAll(data.hosts.total, data.hosts.capped, 'hosts', `/hosts${query({ search: data.q })}`),
        ],
      },
      {
        name: 'Services',
        items: [
          ...data.services.data.map((v) => ({
            id: `s-${v.id}`,
            to: `/hosts/${v.hostId}`,
            label: [v.product ?? v.name ?? 'service', v.version].filter(Boolean).join(' '),
            detail: `${v.address ?? ''} ${v.port}/${v.protocol}`.trim(),
          })),
          ...seeAll(data.services.total, false, 'services', `/services${query({ product: s.product, version: s.version, cpe: s.cpe })}`),
        ],
      },
      {
        name: 'CVEs',
        items: [
          ...data.cves.data.map((c) => ({ id: `c-${c.cveId}`, to: `/vulnerabilities${query({ search: c.cveId, state: EVERY_STATE })}`, label: c.cveId, detail: <><span className={`sev-${c.severity}`}>{c.severity}</span> · {plural(c.findings, 'finding')} on {plural(c.hosts, 'host')}</> })),
          ...seeAll(data.cves.total, false, 'CVEs', `/vulnerabilities${query({ view: 'advisories', search: data.q, state: EVERY_STATE })}`),
        ],
      },
      {
        name: 'Networks',
        items: [
          ...data.networks.data.map((n) => ({ id: `n-${n.id}`, to: `/networks/${n.id}`, label: n.name, detail: n.cidr })),
          ...(data.networks.total > data.networks.data.length ? seeAll(data.networks.total, false, 'networks', '/networks') : []),
        ],
      },
    ].filter((g) => g.items.length > 0);
  }, [data]);
  const items = groups.flatMap((g) => g.items);
  useEffect(() => setActive(-1), [data]);
  const shown = open && text.trim().length >= 2;

  const go = (item: Item | undefined) => {
    if (!item) return;
    setOpen(false);
    input.current?.blur();
    void navigate(item.to);
  };
  const onKeyDown = (e: KeyboardEvent<HTMLInputElement>) => {
    if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
      e.preventDefault();
      setOpen(true);
      if (items.length === 0) return;
      const step = e.key === 'ArrowDown' ? 1 : -1;
      setActive((a) => (a < 0 && step < 0 ? items.length - 1 : (a + step + items.length) % items.length));
    } else if (e.key === 'Enter') {
      e.preventDefault();
      go(items[active < 0 ? 0 : active]);
    } else if (e.key === 'Escape') {
      e.preventDefault(); // a search field would clear itself: the first Escape only closes the list
      if (shown) setOpen(false);
      else if (text) setText('');
      else input.current?.blur();
    }
  };

  const activeId = active >= 0 && items[active] ? `${listId}-${items[active].id}` : undefined;
  let index = -1;
  return (
    <div className="global-search">
      <input
        ref={input}
        type="search"
        role="combobox"
        aria-label="Find a host, service, CVE or network"
        aria-expanded={shown}
        aria-controls={listId}
        aria-autocomplete="list"
        aria-activedescendant={shown ? activeId : undefined}
        aria-describedby={hintId}
        placeholder="Search  /"
        value={text}
        onChange={(e) => {
          setText(e.target.value);
          setOpen(true);
        }}
        onFocus={() => setOpen(true)}
        onBlur={() => setOpen(false)}
        onKeyDown={onKeyDown}
      />
      <span id={hintId} hidden>Host name, address or CIDR, product and version, CPE, CVE id, network. Press / to come here.</span>
      <div id={listId} role="listbox" aria-label="Found" className="search-results" hidden={!shown}>
        {shown && !data && !result.error && <p className="hint">Searching…</p>}
        {shown && result.error && <p className="error-text">{result.error.message}</p>}
        {shown && data && items.length === 0 && <p className="hint">Nothing matches “{data.q}”.</p>}
        {shown &&
          groups.map((g) => (
            <div role="group" aria-label={g.name} key={g.name}>
              <div className="search-group" aria-hidden="true">{g.name}</div>
              {g.items.map((item) => {
                index += 1;
                const i = index;
                return (
                  <div
                    key={item.id}
                    id={`${listId}-${item.id}`}
                    role="option"
                    aria-selected={i === active}
                    className={`search-item${item.all ? ' see-all' : ''}${i === active ? ' active' : ''}`}
                    onMouseDown={(e) => e.preventDefault()}
                    onMouseEnter={() => setActive(i)}
                    onClick={() => go(item)}
                  >
                    <span className="search-label">{item.label}</span>
                    {item.detail && <span className="search-detail">{item.detail}</span>}
                  </div>
                );
              })}
            </div>
          ))}
      </div>
    </div>
  );
}
