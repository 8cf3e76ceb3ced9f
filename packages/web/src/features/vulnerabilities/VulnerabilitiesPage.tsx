import { severities, roleAtLeast, vulnerabilityPatchMoves, vulnerabilityStates, actionableStates, type VulnerabilityState } from '@surveyor/contract';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import type { ColumnDef } from '@tanstack/react-table';
import { useEffect, useId, useMemo, useState } from 'react';
import { Link, useSearchParams } from 'react-router';
import { DataTable } from '../../components/DataTable';
import { Dialog } from '../../components/Dialog';
import { ErrorAlert } from '../../components/ErrorAlert';
import { Exposure } from '../../components/Exposure';
import { ViewTabs } from '../../components/ViewTabs';
import { DistributionNote } from '../../components/DistributionNote';
import { MoveDialog, type MoveTarget, moveLabels } from '../../components/VulnerabilityTable';
import { ago, dateTime, plural, product, stateLabels } from '../../lib/format';
import { overviewKeys, vulnerabilityKeys } from '../../lib/keys';
import { useMe } from '../../lib/queries';
import { usePageTitle } from '../../lib/usePageTitle';
import { type FindingFilters, advisoryPages, bulkMove, findingPages, useAdvisoryFindings, useFindingHistory, useFindings } from './api';

// Triage (issue 23): the actionable findings first, by severity then score, with the host and
// port/protocol of each; search; the same by advisory; moves of a selection or of every finding of
// a CVE with one note; a finding's history.

type Finding = NonNullable<ReturnType<typeof useFindings>['data']>['pages'][number]['data'][number];
type Advisory = NonNullable<ReturnType<typeof useAdvisoryFindings>['data']>['pages'][number]['data'][number];
type Target = 'acknowledged' | 'false_positive' | 'open';
const TARGETS: Target[] = ['acknowledged', 'false_positive', 'open'];

function Severity({ s }: { s: Finding['severity'] }) {
  return <span className={`badge sev-${s}`}>{s}</span>;
}

/** The service as an operator names it: product and version, the vendor not repeated (its name, or the vendor, when there is no product). */
function serviceText(s: Finding['service']): string {
  return s.product ? product(s) : [s.name ?? s.vendor, s.version].filter(Boolean).join(' ') || '—';
}

/** A move of many findings: a selection or every actionable finding of a CVE, with one note. */

function BulkMove({ title, selection, to, onDone, onCancel }: { title: string; selection: { ids: string[] } | { cveId: string }; to: Target; onDone: (message: string) => void; onCancel: () => void }) {
  const client = useQueryClient();
  const [note, setNote] = useState('');
  const noteId = useId();
  const move = useMutation({
    mutationFn: () => bulkMove({ ...selection, state: to, ...(note.trim() ? { note: note.trim() } : {}) }),
    onSuccess: (r) => {
      void client.invalidateQueries({ queryKey: vulnerabilityKeys.all });
      void client.invalidateQueries({ queryKey: overviewKeys.all });
      const refused = r.refused.length ? ` ${plural(r.refused.length, 'finding')} left as ${plural(r.refused.length, 'it was', 'they were')} (${[...new Set(r.refused.map((x) => stateLabels[x.state]))].join(', ')}: no such move).` : '';
      onDone(`${plural(r.updated, 'finding')} moved to ${stateLabels[to]}${r.unchanged ? `, ${r.unchanged} already there` : ''}.${refused}`);
    },
  });
  const tooLong = note.length > 2000;
  return (
    <Dialog title={title} confirmLabel={move.isPending ? 'Moving…' : moveLabels[to]} busy={move.isPending || tooLong} onConfirm={() => move.mutate()} onCancel={onCancel}>
      <div className="field">
        <label htmlFor={noteId}>Note for every finding (optional)</label>
        <textarea id={noteId} rows={4} value={note} onChange={(e) => setNote(e.target.value)} aria-invalid={tooLong || undefined} autoFocus />
        <span className="hint">{note.length}/2000</span>
      </div>
      <ErrorAlert error={move.error} />
    </Dialog>
  );
}

function HistoryDialog({ finding, onClose }: { finding: Finding; onClose: () => void }) {
  const history = useFindingHistory(finding.id);
  return (
    <Dialog title={`History of ${finding.cveId} on ${finding.host.name ?? finding.host.address ?? 'the host'}`} confirmLabel="Close" cancelLabel="Back" onConfirm={onClose} onCancel={onClose}>
      <ErrorAlert error={history.error} />
      {history.isPending && <p className="loading">Loading…</p>}
      {history.data && history.data.data.length === 0 && <p className="empty">No change since the matcher opened it {ago(finding.firstSeenAt)}.</p>}
      {history.data && history.data.data.length > 0 && (
        <ol className="history">
          {history.data.data.map((h, i) => (
            <li key={i}>
              <time dateTime={h.at} title={dateTime(h.at)}>{dateTime(h.at)}</time> · {h.from ? `${stateLabels[h.from]} → ` : ''}<strong>{h.to ? stateLabels[h.to] : 'note'}</strong> · {h.by}
              {h.note && <q>{h.note}</q>}
            </li>
          ))}
        </ol>
      )}
    </Dialog>
  );
}

function findingColumns(o: { canWrite: boolean; selected: Set<string>; toggle: (id: string) => void; ask: (t: MoveTarget) => void; history: (f: Finding) => void }): ColumnDef<Finding>[] {
  const cols: ColumnDef<Finding>[] = [];
  if (o.canWrite) {
    cols.push({
      id: 'select',
      header: () => <span className="sr-only">Select</span>,
      enableSorting: false,
      enableHiding: false,
      // Named by host and port, described by the CVE (so the row's CVE cell stays the one named by it).
      cell: ({ row }) => (
        <input
          type="checkbox"
          aria-label={`Select ${row.original.host.name ?? row.original.host.address ?? ''} ${row.original.service.port}/${row.original.service.protocol}`}
          aria-describedby={`cve-${row.original.id}`}
          checked={o.selected.has(row.original.id)}
          onChange={() => o.toggle(row.original.id)}
        />
      ),
    });
  }
  cols.push(
    { header: 'CVE', accessorKey: 'cveId', cell: ({ row }) => <span id={`cve-${row.original.id}`} className="mono nowrap">{row.original.cveId}</span> },
    { header: 'Severity', accessorKey: 'severity', enableSorting: false, cell: ({ row }) => <Severity s={row.original.severity} /> },
    { header: 'Score', accessorKey: 'score', cell: ({ row }) => <span className="num">{row.original.score?.toFixed(1) ?? '—'}</span> },
    {
      id: 'host',
      header: 'Host',
      accessorFn: (f) => f.host.name ?? f.host.address ?? '',
      cell: ({ row }) => (
        <Link className="nowrap" to={`/hosts/${row.original.host.id}`} title={row.original.host.address ?? undefined}>
          {row.original.host.name ?? row.original.host.address ?? row.original.host.id}
        </Link>
      ),
    },
    { id: 'address', header: 'Address', accessorFn: (f) => f.host.address ?? '', cell: ({ row }) => <span className="mono">{row.original.host.address ?? '—'}</span> },
    { id: 'port', header: 'Port', accessorFn: (f) => f.service.port, cell: ({ row }) => <span className="mono nowrap">{row.original.service.port}/{row.original.service.protocol}</span> },
    { id: 'service', header: 'Service', accessorFn: (f) => serviceText(f.service), cell: ({ row }) => <span className="nowrap" title={row.original.service.name ?? undefined}>{serviceText(row.original.service)}</span> },
    { id: 'exposed', header: 'Internet', accessorFn: (f) => f.service.exposedVia ?? '', cell: ({ row }) => <Exposure via={row.original.service.exposedVia} /> },
    {
      header: 'State',
      accessorKey: 'state',
      cell: ({ row }) => (
        <span className="nowrap">
          <span title={row.original.note ?? undefined}>{stateLabels[row.original.state]}{row.original.note ? ' ✎' : ''}</span> <DistributionNote distribution={row.original.distribution} />
        </span>
      ),
    },
    { header: 'First seen', accessorKey: 'firstSeenAt', cell: ({ row }) => <time dateTime={row.original.firstSeenAt} title={dateTime(row.original.firstSeenAt)}>{ago(row.original.firstSeenAt)}</time> },
    {
      id: 'actions',
      header: 'Actions',
      enableSorting: false,
      cell: ({ row }) => (
        <span className="row-actions">
          {o.canWrite && vulnerabilityPatchMoves[row.original.state].map((to) => (
            <button key={to} type="button" className="small" onClick={() => o.ask({ finding: row.original, to })}>{moveLabels[to]}</button>
          ))}
          <button type="button" className="small" onClick={() => o.history(row.original)}>History</button>
        </span>
      ),
    },
  );
  return cols;
}

/** Findings with selection, row moves and history; `cveId` narrows them to one advisory. */
function FindingsList({ filters, canWrite, caption, onMoved }: { filters: FindingFilters; canWrite: boolean; caption: string; onMoved: (message: string) => void }) {
  const list = useFindings(filters);
  const rows = useMemo(() => list.data?.pages.flatMap((p) => p.data) ?? [], [list.data]);
  const total = list.data?.pages[0]?.total;
  const [selected, setSelected] = useState<Set<string>>(new Set());
  const [asking, setAsking] = useState<MoveTarget | null>(null);
  const [bulk, setBulk] = useState<Target | null>(null);
  const [history, setHistory] = useState<Finding | null>(null);
  // A new filter starts a new selection.
  const filterKey = JSON.stringify(filters);
  useEffect(() => setSelected(new Set()), [filterKey]);
  const toggle = (id: string) => setSelected((s) => { const n = new Set(s); if (n.has(id)) n.delete(id); else n.add(id); return n; });
  const columns = useMemo(() => findingColumns({ canWrite, selected, toggle, ask: setAsking, history: setHistory }), [canWrite, selected]);
  const allShown = rows.length > 0 && rows.every((r) => selected.has(r.id));
  return (
    <>
      <ErrorAlert error={list.error} />
      {list.isPending && !list.error && <p className="loading">Loading…</p>}
      {total !== undefined && <p className="count" role="status">{plural(total, 'finding')}{rows.length < total ? `, ${rows.length} shown` : ''}</p>}
      {list.data && rows.length === 0 && <p className="empty">No finding matches these filters.</p>}
      {canWrite && rows.length > 0 && (
        <div className="bulk-bar" aria-label="Selection">
          <label className="check"><input type="checkbox" checked={allShown} onChange={() => setSelected(allShown ? new Set() : new Set(rows.map((r) => r.id)))} /> Select all shown</label>
          {selected.size > 0 && (
            <>
              <span>{plural(selected.size, 'finding')} selected:</span>
              {TARGETS.map((to) => <button key={to} type="button" className="small" onClick={() => setBulk(to)}>{moveLabels[to]} selected</button>)}
            </>
          )}
        </div>
      )}
      {rows.length > 0 && <DataTable caption={caption} storageKey="Findings" partial={list.hasNextPage} data={rows} columns={columns} rowKey={(f) => f.id} rowClassName={(f) => `state-${f.state}`} exportRows={(signal) => findingPages(filters, signal)} />}
      {list.hasNextPage && (
        <button type="button" className="more" onClick={() => void list.fetchNextPage()} disabled={list.isFetchingNextPage}>{list.isFetchingNextPage ? 'Loading…' : 'Load more'}</button>
      )}
      {asking && <MoveDialog key={`${asking.finding.id}:${asking.to}`} target={asking} onDone={() => setAsking(null)} />}
      {bulk && (
        <BulkMove
          title={`${moveLabels[bulk]}: ${plural(selected.size, 'selected finding')}`}
          selection={{ ids: [...selected] }}
          to={bulk}
          onCancel={() => setBulk(null)}
          onDone={(m) => { setBulk(null); setSelected(new Set()); onMoved(m); }}
        />
      )}
      {history && <HistoryDialog finding={history} onClose={() => setHistory(null)} />}
    </>
  );
}

const statesText = (states: Advisory['states']) =>
  vulnerabilityStates.filter((s) => states[s] > 0).map((s) => `${states[s]} ${(stateLabels[s] ?? s).toLowerCase()}`).join(' · ');

function StatesText({ states }: { states: Advisory['states'] }) {
  return <span>{statesText(states) || '—'}</span>;
}

/** One row per advisory; "Show" opens its findings; editors move all of them at once. */
function AdvisoriesList({ filters, canWrite, onMoved }: { filters: FindingFilters; canWrite: boolean; onMoved: (message: string) => void }) {
  const list = useAdvisoryFindings(filters);
  const rows = useMemo(() => list.data?.pages.flatMap((p) => p.data) ?? [], [list.data]);
  const total = list.data?.pages[0]?.total;
  const [open, setOpen] = useState<string | null>(null);
  const [bulk, setBulk] = useState<{ cveId: string; count: number; to: Target } | null>(null);
  const columns = useMemo<ColumnDef<Advisory>[]>(() => [
    { header: 'CVE', accessorKey: 'cveId', cell: ({ row }) => <span className="mono nowrap">{row.original.cveId}</span> },
    { header: 'Severity', accessorKey: 'severity', enableSorting: false, cell: ({ row }) => <Severity s={row.original.severity} /> },
    { header: 'Score', accessorKey: 'score', cell: ({ row }) => <span className="num">{row.original.score?.toFixed(1) ?? '—'}</span> },
    { header: () => <span className="num-head">Services</span>, id: 'services', accessorKey: 'services', cell: ({ row }) => <span className="num">{row.original.services}</span> },
    { header: () => <span className="num-head">Hosts</span>, id: 'hosts', accessorKey: 'hosts', cell: ({ row }) => <span className="num">{row.original.hosts}</span> },
    { header: 'States', id: 'states', enableSorting: false, meta: { csv: (a) => statesText(a.states) }, cell: ({ row }) => <StatesText states={row.original.states} /> },
    { header: 'Summary', accessorKey: 'summary', cell: ({ row }) => <span className="summary" title={row.original.summary ?? undefined}>{row.original.summary ?? '—'}</span> },
    {
      id: 'actions',
      header: 'Actions',
      enableSorting: false,
      cell: ({ row }) => {
        const a = row.original;
        const actionable = a.states.open + a.states.acknowledged;
        return (
          <span className="row-actions">
            <button type="button" className="small" aria-expanded={open === a.cveId} onClick={() => setOpen(open === a.cveId ? null : a.cveId)}>{open === a.cveId ? 'Hide findings' : `Show ${plural(a.findings, 'finding')}`}</button>
            {canWrite && actionable > 0 && (['acknowledged', 'false_positive'] as const).map((to) => (
              <button key={to} type="button" className="small" onClick={() => setBulk({ cveId: a.cveId, count: actionable, to })}>{moveLabels[to]} all {actionable}</button>
            ))}
          </span>
        );
      },
    },
  ], [open, canWrite]);
  return (
    <>
      <ErrorAlert error={list.error} />
      {list.isPending && !list.error && <p className="loading">Loading…</p>}
      {total !== undefined && <p className="count" role="status">{plural(total, 'advisory', 'advisories')}</p>}
      {list.data && rows.length === 0 && <p className="empty">No advisory matches these filters.</p>}
      {rows.length > 0 && <DataTable caption="Advisories with findings" partial={list.hasNextPage} data={rows} columns={columns} rowKey={(a) => a.cveId} exportRows={(signal) => advisoryPages(filters, signal)} />}
      {list.hasNextPage && (
        <button type="button" className="more" onClick={() => void list.fetchNextPage()} disabled={list.isFetchingNextPage}>{list.isFetchingNextPage ? 'Loading…' : 'Load more'}</button>
      )}
      {open && (
        <section aria-label={`Findings of ${open}`} className="advisory-findings">
          <h2>Findings of {open}</h2>
          <FindingsList filters={{ ...filters, cveId: open }} canWrite={canWrite} caption={`Findings of ${open}`} onMoved={onMoved} />
        </section>
      )}
      {bulk && (
        <BulkMove
          title={`${moveLabels[bulk.to]}: every open or acknowledged finding of ${bulk.cveId} (${bulk.count})`}
          selection={{ cveId: bulk.cveId }}
          to={bulk.to}
          onCancel={() => setBulk(null)}
          onDone={(m) => { setBulk(null); onMoved(m); }}
        />
      )}
    </>
  );
}

export function VulnerabilitiesPage() {
  usePageTitle('Vulnerabilities');
  const me = useMe();
  const canWrite = me.data ? roleAtLeast(me.data.role, 'editor') : false;
  const [params, setParams] = useSearchParams();
  const view = params.get('view') === 'advisories' ? 'advisories' : 'findings';
  const stateParam = params.get('state');
  const statesInUrl = stateParam === null ? [...actionableStates] : stateParam.split(',').filter((s): s is VulnerabilityState => (vulnerabilityStates as readonly string[]).includes(s));
  // Checked at once; the URL (a navigation, applied in a transition) follows.
  const [states, setStates] = useState<VulnerabilityState[]>(statesInUrl);
  useEffect(() => setStates(statesInUrl), [stateParam]);
  const severityParam = params.get('severity');
  const severity = (severities as readonly string[]).includes(severityParam ?? '') ? (severityParam as (typeof severities)[number]) : undefined;
  const search = params.get('search') ?? '';
  const [typed, setTyped] = useState(search);
  const [message, setMessage] = useState<string | null>(null);
  const ids = { search: useId() };

  const set = (name: string, value: string | null) => {
    const next = new URLSearchParams(params);
    if (value === null || value === '') next.delete(name);
    else next.set(name, value);
    setParams(next, { replace: true });
  };
  // The search applies once typing pauses, and only from 2 characters (the API's minimum).
  useEffect(() => {
    const t = setTimeout(() => {
      const q = typed.trim();
      if (q === search || (q.length === 1)) return;
      set('search', q);
    }, 300);
    return () => clearTimeout(t);
  }, [typed]);
  const toggleState = (s: VulnerabilityState) => {
    const picked = states.includes(s) ? states.filter((x) => x !== s) : [...states, s];
    // None checked means every state; kept in the order of the states.
    const next = picked.length === 0 ? [...vulnerabilityStates] : vulnerabilityStates.filter((x) => picked.includes(x));
    setStates(next);
    set('state', next.join(','));
  };
  const filters: FindingFilters = {
    ...(states.length && states.join(',') !== actionableStates.join(',') ? { state: states.join(',') } : {}),
    ...(severity ? { severity } : {}),
    ...(search.length >= 2 ? { search } : {}),
  };

  return (
    <>
      <h1>Vulnerabilities</h1>
      <ViewTabs views={[['findings', 'Findings'], ['advisories', 'By advisory']]} current={view} />
      <div className="toolbar">
        <label>
          Search
          <input type="search" value={typed} onChange={(e) => setTyped(e.target.value)} placeholder="CVE-2024-6387, web-1, 10.1.0, Apache" aria-describedby={ids.search} />
        </label>
        <fieldset className="inline">
          <legend>State</legend>
          {vulnerabilityStates.map((s) => (
            <label key={s} className="check"><input type="checkbox" checked={states.includes(s)} onChange={() => toggleState(s)} /> {stateLabels[s]}</label>
          ))}
        </fieldset>
        <label>
          Severity
          <select value={severity ?? ''} onChange={(e) => set('severity', e.target.value)}>
            <option value="">Any</option>
            {severities.map((s) => <option key={s} value={s}>{s}</option>)}
          </select>
        </label>
      </div>
      <p id={ids.search} className="hint search-hint">Search by a CVE id or its start, part of a host name or FQDN, the start of an address (10.1.0), or part of a product or vendor; 2 characters or more.</p>
      {message && <p role="status" className="notice">{message}</p>}
      {view === 'findings'
        ? <FindingsList filters={filters} canWrite={canWrite} caption="Vulnerabilities" onMoved={setMessage} />
        : <AdvisoriesList filters={filters} canWrite={canWrite} onMoved={setMessage} />}
    </>
  );
}
