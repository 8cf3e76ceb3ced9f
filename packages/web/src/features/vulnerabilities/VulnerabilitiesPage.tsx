import { severities, vulnerabilityStates } from '@surveyor/contract';
import { useMemo } from 'react';
import { useSearchParams } from 'react-router';
import { ErrorAlert } from '../../components/ErrorAlert';
import { VulnerabilityTable } from '../../components/VulnerabilityTable';
import { stateLabels } from '../../lib/format';
import { useCollection } from '../../lib/queries';
import type { Vulnerability } from '../../lib/types';
import { usePageTitle } from '../../lib/usePageTitle';

type State = Vulnerability['state'];
type Severity = Vulnerability['severity'];

export function VulnerabilitiesPage() {
  usePageTitle('Vulnerabilities');
  const [params, setParams] = useSearchParams();
  const stateParam = params.get('state');
  const severityParam = params.get('severity');
  const state = (vulnerabilityStates as readonly string[]).includes(stateParam ?? '') ? (stateParam as State) : undefined;
  const severity = (severities as readonly string[]).includes(severityParam ?? '') ? (severityParam as Severity) : undefined;

  const setFilter = (name: 'state' | 'severity', value: string) => {
    const next = new URLSearchParams(params);
    if (value) next.set(name, value);
    else next.delete(name);
    setParams(next, { replace: true });
  };

  const list = useCollection('vulnerabilities', { limit: 100, state, severity });
  const rows = useMemo(() => list.data?.pages.flatMap((p) => p.data) ?? [], [list.data]);
  const filtered = state !== undefined || severity !== undefined;

  return (
    <>
      <h1>Vulnerabilities</h1>
      <div className="toolbar">
        <label>
          State
          <select value={state ?? ''} onChange={(e) => setFilter('state', e.target.value)}>
            <option value="">Any</option>
            {vulnerabilityStates.map((s) => <option key={s} value={s}>{stateLabels[s]}</option>)}
          </select>
        </label>
        <label>
          Severity
          <select value={severity ?? ''} onChange={(e) => setFilter('severity', e.target.value)}>
            <option value="">Any</option>
            {severities.map((s) => <option key={s} value={s}>{s}</option>)}
          </select>
        </label>
      </div>
      <ErrorAlert error={list.error} />
      {list.isPending && !list.error && <p className="loading">Loading…</p>}
      {list.data && rows.length === 0 && (
        <p className="empty">
          {filtered
            ? 'No finding matches these filters.'
            : 'No findings yet: they appear when a scan finds services and the cve.match job matches them against the advisories (import some with surveyor advisories import).'}
        </p>
      )}
      {rows.length > 0 && <VulnerabilityTable data={rows} partial={list.hasNextPage} />}
      {list.hasNextPage && (
        <button type="button" className="more" onClick={() => void list.fetchNextPage()} disabled={list.isFetchingNextPage}>
          {list.isFetchingNextPage ? 'Loading…' : 'Load more'}
        </button>
      )}
    </>
  );
}
