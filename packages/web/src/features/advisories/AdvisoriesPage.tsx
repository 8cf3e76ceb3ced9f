import { roleAtLeast } from '@surveyor/contract';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useId, useState } from 'react';
import { ErrorAlert } from '../../components/ErrorAlert';
import { Figure } from '../../components/Figure';
import { ago, dateTime, plural } from '../../lib/format';
import { vulnerabilityKeys } from '../../lib/keys';
import { useMe } from '../../lib/queries';
import { usePageTitle } from '../../lib/usePageTitle';
import { advisoryKeys, importAdvisoryDocument, readAdvisoryFile, useAdvisoryMirror } from './api';

// Settings → Advisories (issue 23): the mirror every organisation's findings are matched against,
// its feed's state, and (admins, where the deployment allows it) an upload of NVD or OSV files.

function When({ at }: { at: string | null }) {
  return at ? <time dateTime={at} title={dateTime(at)}>{ago(at)}</time> : <span className="muted">never</span>;
}

function Upload() {
  const client = useQueryClient();
  const inputId = useId();
  const [file, setFile] = useState<File | null>(null);
  const upload = useMutation({
    mutationFn: async (f: File) => importAdvisoryDocument((await readAdvisoryFile(f)) as never),
    onSuccess: () => {
      void client.invalidateQueries({ queryKey: advisoryKeys.mirror });
      void client.invalidateQueries({ queryKey: vulnerabilityKeys.all });
    },
  });
  const r = upload.data;
  return (
    <section aria-labelledby="upload-title">
      <h2 id="upload-title">Import a file</h2>
      <form
        className="mint"
        onSubmit={(e) => {
          e.preventDefault();
          if (file) upload.mutate(file);
        }}
      >
        <div className="field">
          <label htmlFor={inputId}>NVD CVE API 2.0 or OSV file (JSON, or gzip)</label>
          <input id={inputId} type="file" accept=".json,.gz,application/json,application/gzip" onChange={(e) => { setFile(e.target.files?.[0] ?? null); upload.reset(); }} />
        </div>
        <button type="submit" className="primary" disabled={!file || upload.isPending}>{upload.isPending ? 'Importing…' : 'Import'}</button>
      </form>
      <p className="hint">A page of the NVD API (<code>{'{ "vulnerabilities": [...] }'}</code>), one NVD record, one OSV record or an array of them. Importing again changes nothing; a newer record replaces the older. Findings follow at the next <code>cve.match</code> run (every 5 minutes). For whole feeds use <code>surveyor advisories import</code> or <code>SERVICE_ADVISORY_FEED_URL</code>.</p>
      <ErrorAlert error={upload.error} />
      {r && (
        <div role="status" className="notice">
          <p>{file?.name}: {r.new} new, {r.updated} updated, {r.unchanged} unchanged{r.skippedCount ? `, ${plural(r.skippedCount, 'record')} skipped` : ''}.</p>
          {r.skipped.length > 0 && (
            <ul className="skipped">
              {r.skipped.map((s, i) => <li key={i}><span className="mono">{s.id ?? '(no id)'}</span>: {s.reason}</li>)}
            </ul>
          )}
        </div>
      )}
    </section>
  );
}

export function AdvisoriesPage() {
  usePageTitle('Advisories');
  const me = useMe();
  const mirror = useAdvisoryMirror();
  const admin = me.data ? roleAtLeast(me.data.role, 'admin') : false;
  const m = mirror.data;
  return (
    <>
      <h1>Advisories</h1>
      <p className="muted">The mirror of NVD and OSV advisories that every organisation's services are matched against (by CPE 2.3 and version ranges).</p>
      <ErrorAlert error={mirror.error} />
      {mirror.isPending && !mirror.error && <p className="loading">Loading…</p>}
      {m && (
        <>
          <ul className="figures">
            <Figure label="Advisories" value={m.advisories} />
            <Figure label="From NVD" value={m.nvd} />
            <Figure label="From OSV" value={m.osv} />
            <Figure label="Withdrawn or rejected" value={m.withdrawn} hint="kept, matching nothing" />
          </ul>
          {m.advisories === 0 && <p className="empty">No advisories yet, so no findings: {admin && m.uploadsAllowed ? 'import a file below, ' : ''}run <code>surveyor advisories import FILE…</code>, or set <code>SERVICE_ADVISORY_FEED_URL</code>.</p>}
          <h2>Feed</h2>
          <dl className="fields">
            <dt>Source</dt>
            <dd>{m.feed.url ? <span className="mono">{m.feed.url}</span> : <span className="muted">none pulled: imports only (set SERVICE_ADVISORY_FEED_URL for a feed)</span>}</dd>
            <dt>Current as of</dt>
            <dd><When at={m.feed.confirmedAt} /></dd>
            <dt>Last pull</dt>
            <dd><When at={m.feed.lastAttemptAt} /></dd>
            <dt>Last error</dt>
            <dd>{m.feed.lastError ? <span className="error-text">{m.feed.lastError}</span> : <span className="muted">none</span>}</dd>
          </dl>
          {admin && (m.uploadsAllowed ? <Upload /> : <p className="notice">Uploads are turned off on this deployment (<code>SERVICE_ADVISORY_UPLOAD=deny</code>): the mirror is shared by every organisation. Import with <code>surveyor advisories import</code> or the feed.</p>)}
        </>
      )}
    </>
  );
}
