import type { SnapshotDiff as SnapshotDiffSchema, SnapshotDiffKind, SnapshotDiffSection } from '@surveyor/contract';
import { productLabel, snapshotDiffKinds, snapshotDiffSections } from '@surveyor/contract';
import { type FormEvent, useId, useMemo, useState } from 'react';
import { Link, useNavigate, useParams, useSearchParams } from 'react-router';
import type { z } from 'zod';
import { snapshotDiffPages, useSnapshotDiff } from './api';
import { ExportButton, useCsvExport } from '../../components/CsvExport';
import type { CsvColumn } from '../../lib/csv';
import { ErrorAlert } from '../../components/ErrorAlert';
import { dateTime, plural } from '../../lib/format';
import { useHostNames, useSites } from '../../lib/queries';
import type { Host, Site, Snapshot } from '../../lib/types';
import { usePageTitle } from '../../lib/usePageTitle';

// Snapshot diff (issue 15): what changed between two snapshots, counts first (per section and kind,
// each a filter), then the changes page by page, each changed field old → new.

type Diff = z.infer<typeof SnapshotDiffSchema>;
type Change = Diff['changes'][number];
type Item = Record<string, unknown>;

const sectionLabels: Record<SnapshotDiffSection, string> = { hosts: 'Hosts', services: 'Services', certificates: 'Certificates', vulnerabilities: 'Vulnerabilities' };
const kindLabels: Record<SnapshotDiffKind, string> = { added: 'Added', removed: 'Removed', changed: 'Changed' };
const kindClass: Record<SnapshotDiffKind, string> = { added: 'outcome-ok', removed: 'outcome-failed', changed: 'sev-medium' };
const fieldLabels: Record<string, string> = {
  siteId: 'site', fingerprint: 'fingerprint', hostname: 'hostname', fqdn: 'FQDN', vendor: 'vendor', os: 'OS', deviceType: 'device type', addresses: 'addresses', macs: 'MACs',
  hostId: 'host', protocol: 'protocol', port: 'port', state: 'state', name: 'name', product: 'product', version: 'version', cpe: 'CPE', gone: 'gone',
  sha256: 'SHA-256', subject: 'subject', issuer: 'issuer', notAfter: 'expires', trustStatus: 'trust', serviceId: 'service', cve: 'CVE', severity: 'severity',
};

/** One line naming a snapshot: when, why, which scope. */
export function snapshotLabel(s: Snapshot, sites: Map<string, Site>): string {
  const scope = s.siteId ? (sites.get(s.siteId)?.name ?? 'one site') : 'all sites';
  return `${dateTime(s.capturedAt)} · ${s.reason.replace('_', ' ')} · ${scope} · ${plural(s.stats.hosts, 'host')}`;
}

/**
 * On the Snapshots page: pick two snapshots (rows oldest first) and open their diff. Defaults to
 * the latest against the one before it.
 */
/** Two snapshots to compare, from a list the newest first (the Snapshots page's order). */
export function CompareSnapshots({ snapshots, sites }: { snapshots: Snapshot[]; sites: Map<string, Site> }) {
  const navigate = useNavigate();
  const latest = snapshots[0]?.id ?? '';
  const previous = snapshots[1]?.id ?? '';
  const [picked, setPicked] = useState<{ id: string; against: string } | null>(null);
  const id = picked?.id ?? latest;
  const against = picked?.against ?? previous;
  const idField = useId();
  const againstField = useId();
  if (snapshots.length < 2) return null;
  const submit = (e: FormEvent) => {
    e.preventDefault();
    void navigate(`/snapshots/${id}/diff?against=${against}`);
  };
  const options = snapshots.map((s) => (
    <option key={s.id} value={s.id}>{snapshotLabel(s, sites)}</option>
  ));
  return (
    <section aria-labelledby="compare-title">
      <h2 id="compare-title">Compare two snapshots</h2>
      <form className="toolbar" onSubmit={submit}>
        <div className="field">
          <label htmlFor={idField}>Snapshot</label>
          <select id={idField} value={id} onChange={(e) => setPicked({ id: e.target.value, against })}>{options}</select>
        </div>
        <div className="field">
          <label htmlFor={againstField}>Against (the base)</label>
          <select id={againstField} value={against} onChange={(e) => setPicked({ id, against: e.target.value })}>{options}</select>
        </div>
        <button type="submit" className="primary" disabled={id === against}>Compare</button>
        <span className="hint">{id === against ? 'Pick two different snapshots.' : 'Added and removed are as seen from the base.'}</span>
      </form>
    </section>
  );
}

function hostName(h: Item | Host | undefined): string | null {
  if (!h) return null;
  const addresses = h.addresses as string[] | undefined;
  return (h.hostname as string | null) ?? (h.fqdn as string | null) ?? addresses?.[0] ?? null;
}

/** A value of a content field as a short text. */
function show(field: string, v: unknown, names: (hostId: string) => string): string {
  if (v === null || v === undefined) return '—';
  if (Array.isArray(v)) return v.length ? v.join(', ') : 'none';
  if (field === 'hostId' && typeof v === 'string') return names(v);
  if (field === 'notAfter' && typeof v === 'string') return dateTime(v);
  if (typeof v === 'boolean') return v ? 'yes' : 'no';
  return String(v);
}

/** What a change is about, in words: the host, port, certificate or CVE. */
/** What changed, in words ("22/tcp ssh OpenSSH 9.2p1 on web-1"). */
function entityText(c: Change, names: (hostId: string) => string): string {
  const it = (c.after ?? c.before ?? {}) as Item;
  const on = typeof it.hostId === 'string' ? ` on ${names(it.hostId)}` : '';
  switch (c.section) {
    case 'hosts':
      return hostName(it) ?? `${c.id.slice(0, 8)}…`;
    case 'services':
      return `${it.port}/${it.protocol}${it.name || it.product ? ` ${[it.name, productLabel(it)].filter(Boolean).join(' ')}` : ''}${on}`;
    case 'certificates':
      return `${it.subject ?? 'certificate'} (port ${it.port})${on}`;
    case 'vulnerabilities':
      return `${it.cve} (${it.severity})${on}`;
  }
}

/** What changed, a host linked to its page while it exists. */
function entity(c: Change, names: (hostId: string) => string) {
  const text = entityText(c, names);
  return c.section === 'hosts' && c.kind !== 'removed' ? <Link to={`/hosts/${c.id}`}>{text}</Link> : text;
}

/** The changes as CSV: section, change, id, what, and each changed field old → new. */
function diffCsvColumns(names: (hostId: string) => string): CsvColumn<Change>[] {
  const value = (v: unknown) => (v === null || v === undefined ? '' : typeof v === 'object' ? JSON.stringify(v) : String(v));
  return [
    { header: 'Section', value: (c) => c.section },
    { header: 'Change', value: (c) => c.kind },
    { header: 'Id', value: (c) => c.id },
    { header: 'What', value: (c) => entityText(c, names) },
    { header: 'Fields', value: (c) => c.fields.map((f) => `${f.field}: ${value(f.from)} → ${value(f.to)}`).join('; ') },
  ];
}

function Details({ c, names }: { c: Change; names: (hostId: string) => string }) {
  if (c.kind !== 'changed') {
    const it = (c.after ?? c.before ?? {}) as Item;
    const facts =
      c.section === 'hosts'
        ? [show('addresses', it.addresses, names), it.os ? String(it.os) : null]
        : c.section === 'services'
          ? [it.state ? String(it.state) : null]
          : c.section === 'certificates'
            ? [`trust ${it.trustStatus}`, `expires ${show('notAfter', it.notAfter, names)}`]
            : [String(it.state)];
    return <span className="muted">{facts.filter(Boolean).join(' · ')}</span>;
  }
  return (
    <ul className="diff-fields">
      {c.fields.map((f) => (
        <li key={f.field}>
          {fieldLabels[f.field] ?? f.field}: <span className="chip off">{show(f.field, f.from, names)}</span> → <span className="chip on">{show(f.field, f.to, names)}</span>
        </li>
      ))}
    </ul>
  );
}

export function SnapshotDiffPage() {
  usePageTitle('Snapshot diff');
  const { id = '' } = useParams();
  const [params] = useSearchParams();
  const against = params.get('against') ?? '';
  const rawSection = params.get('section');
  const rawKind = params.get('kind');
  const section = (snapshotDiffSections as readonly string[]).includes(rawSection ?? '') ? (rawSection as SnapshotDiffSection) : undefined;
  const kind = (snapshotDiffKinds as readonly string[]).includes(rawKind ?? '') ? (rawKind as SnapshotDiffKind) : undefined;
  const sites = useSites();
  const diff = useSnapshotDiff(id, against, section, kind);
  const first = diff.data?.pages[0];
  const changes = useMemo(() => diff.data?.pages.flatMap((p) => p.changes) ?? [], [diff.data]);
  // Hosts of the services, certificates and findings shown, looked up by id (those still in the inventory).
  const hosts = useHostNames(changes.flatMap((c) => (c.section === 'hosts' ? [] : [String(((c.after ?? c.before) as Item).hostId ?? '')])));
  // Names of hosts: the current inventory's, then the hosts in this diff (removed ones too).
  const names = useMemo(() => {
    const fromDiff = new Map<string, string>();
    for (const c of changes) if (c.section === 'hosts') fromDiff.set(c.id, hostName((c.after ?? c.before) as Item) ?? '');
    return (hostId: string) => hostName(hosts.get(hostId)) ?? (fromDiff.get(hostId) || `host ${hostId.slice(0, 8)}…`);
  }, [changes, hosts]);

  const exporter = useCsvExport(`snapshot changes ${section ?? ''} ${kind ?? ''}`, (signal) => snapshotDiffPages(id, against, section, kind, signal));

  const filterUrl = (s?: SnapshotDiffSection, k?: SnapshotDiffKind) => {
    const q = new URLSearchParams({ against });
    if (s) q.set('section', s);
    if (k) q.set('kind', k);
    return `/snapshots/${id}/diff?${q}`;
  };
  const total = first ? snapshotDiffSections.reduce((n, s) => n + first.counts[s].added + first.counts[s].removed + first.counts[s].changed, 0) : 0;
  const filtered = section || kind;

  return (
    <>
      <p className="crumbs"><Link to="/snapshots">Snapshots</Link> /</p>
      <h1>Snapshot diff</h1>
      {!against && <p role="alert" className="alert">Pick the snapshot to compare against on the Snapshots page.</p>}
      <ErrorAlert error={diff.error} />
      {diff.isPending && against && !diff.error && <p className="loading">Comparing… (both snapshots are read through once)</p>}
      {first && (
        <>
          <dl className="fields">
            <dt>Snapshot</dt>
            <dd>{snapshotLabel(first.snapshot, sites)}</dd>
            <dt>Against (base)</dt>
            <dd>
              {snapshotLabel(first.against, sites)} · <Link to={`/snapshots/${first.against.id}/diff?against=${first.snapshot.id}`}>swap</Link>
            </dd>
          </dl>
          {first.note && <p className="warning">{first.note}</p>}
          <section aria-labelledby="counts-title">
            <h2 id="counts-title">{total === 0 ? 'No differences' : `${plural(total, 'difference')}`}</h2>
            {total === 0 ? (
              <p className="empty">The two snapshots hold the same hosts, services, certificates and vulnerabilities.</p>
            ) : (
              <div className="table-wrap diff-counts">
                <table>
                  <caption className="sr-only">Differences per section and kind; each count lists those changes</caption>
                  <thead>
                    <tr>
                      <th scope="col">Section</th>
                      {snapshotDiffKinds.map((k) => (
                        <th key={k} scope="col"><span className="num-head">{kindLabels[k]}</span></th>
                      ))}
                    </tr>
                  </thead>
                  <tbody>
                    {snapshotDiffSections.map((s) => (
                      <tr key={s}>
                        <th scope="row">{sectionLabels[s]}</th>
                        {snapshotDiffKinds.map((k) => {
                          const n = first.counts[s][k];
                          const on = section === s && kind === k;
                          return (
                            <td key={k}>
                              <span className="num">
                                {n === 0 ? <span className="muted">0</span> : on ? <strong>{n}</strong> : <Link to={filterUrl(s, k)} aria-label={`${kindLabels[k]} ${sectionLabels[s].toLowerCase()}: ${n}`}>{n}</Link>}
                              </span>
                            </td>
                          );
                        })}
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            )}
          </section>
          {total > 0 && (
            <section aria-labelledby="changes-title">
              <div className="section-head">
                <h2 id="changes-title">{filtered ? `${kind ? kindLabels[kind] : 'All changes'}${section ? ` · ${sectionLabels[section]}` : ''}` : 'Changes'}</h2>
                {filtered && <Link to={filterUrl()}>Show all changes</Link>}
                <ExportButton exporter={exporter} columns={() => diffCsvColumns(names)} />
              </div>
              {changes.length === 0 ? (
                <p className="empty">None of this kind.</p>
              ) : (
                <div className="table-wrap">
                  <table>
                    <caption className="sr-only">Changes, by section then id</caption>
                    <thead>
                      <tr>
                        <th scope="col">Section</th>
                        <th scope="col">Change</th>
                        <th scope="col">What</th>
                        <th scope="col">Details</th>
                      </tr>
                    </thead>
                    <tbody>
                      {changes.map((c) => (
                        <tr key={`${c.section}:${c.id}`}>
                          <td>{sectionLabels[c.section]}</td>
                          <td><span className={`badge ${kindClass[c.kind]}`}>{kindLabels[c.kind].toLowerCase()}</span></td>
                          <td>{entity(c, names)}</td>
                          <td><Details c={c} names={names} /></td>
                        </tr>
                      ))}
                    </tbody>
                  </table>
                </div>
              )}
              {diff.hasNextPage && (
                <button type="button" className="more" onClick={() => void diff.fetchNextPage()} disabled={diff.isFetchingNextPage}>
                  {diff.isFetchingNextPage ? 'Loading…' : 'Load more'}
                </button>
              )}
            </section>
          )}
        </>
      )}
    </>
  );
}
