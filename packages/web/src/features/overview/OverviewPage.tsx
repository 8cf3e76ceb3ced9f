import { certificateExpiryWindows, roleAtLeast } from '@surveyor/contract';
import { Link } from 'react-router';
import { ErrorAlert } from '../../components/ErrorAlert';
import { Figure } from '../../components/Figure';
import { countOf, seconds } from '../../lib/format';
import { useDaemons, useJobs, useMe, usePage } from '../../lib/queries';
import { useDaemonCounts, useOverview } from './api';
import { expiryLabels } from '../../components/certificates';
import { jobHealthy } from '../../lib/jobs';
import { usePageTitle } from '../../lib/usePageTitle';

const SEVERITIES = ['critical', 'high', 'medium', 'low'] as const;

function SeverityFigure({ severity }: { severity: (typeof SEVERITIES)[number] }) {
  const q = usePage('vulnerabilities', { state: 'open', severity, limit: 500 });
  const n = q.data ? q.data.data.length : 0;
  return (
    <Figure
      label={severity}
      value={q.error ? '?' : countOf(q.data)}
      to={`/vulnerabilities?state=open&severity=${severity}`}
      tone={n > 0 ? `sev-${severity}` : undefined}
    />
  );
}

/** Expired and within a day: red; within a week: amber; later windows stay plain. */
const EXPIRY_TONES: Record<(typeof certificateExpiryWindows)[number], string | undefined> = { expired: 'bad', '1d': 'bad', '7d': 'amber', '14d': undefined, '30d': undefined };

const HOUR = 3600;
const DAY = 86_400;

/** Amber above `amber` seconds, red above `red`. */
function ageTone(age: number, amber: number, red: number): string | undefined {
  if (age > red) return 'bad';
  if (age > amber) return 'amber';
  return undefined;
}

/** The daemons online the longest without a heartbeat (the list comes quietest first). */
function QuietestDaemons() {
  const daemons = useDaemons();
  const online = (daemons.data?.data ?? []).filter((d) => d.status === 'online' && !d.disabledAt).slice(0, 3);
  // (silent ones first: the list comes quietest first)
  if (online.length === 0) return null;
  return (
    <>
      <p id="ov-quiet" className="figure-hint">Quietest online daemons</p>
      <ol className="quiet-list" aria-labelledby="ov-quiet">
        {online.map((d) => (
          <li key={d.id}>
            <Link to={`/daemons/${d.id}`}>{d.name}</Link>: <span className={d.silent ? 'bad' : undefined}>quiet {seconds(d.quietSeconds)}{d.silent ? ' (silent)' : ''}</span>
          </li>
        ))}
      </ol>
    </>
  );
}

export function OverviewPage() {
  usePageTitle('Overview');
  const me = useMe();
  const admin = me.data ? roleAtLeast(me.data.role, 'admin') : false;
  const critical = usePage('vulnerabilities', { state: 'open', severity: 'critical', limit: 500 });
  const daemons = useDaemonCounts();
  const jobs = useJobs(admin);
  const overview = useOverview();
  const o = overview.data;

  const wholeJobs = jobs.data?.data.filter((j) => j.organisationId === null) ?? [];
  const failing = jobs.data ? jobs.data.data.filter((j) => !jobHealthy(j)) : [];
  const failingNames = [...new Set(failing.map((j) => j.job))];
  // Never run at all: the scheduler ticks every job within seconds of starting, so none is running jobs.
  const neverNames = wholeJobs.filter((j) => j.outcome === 'never').map((j) => j.job);
  const healthy = wholeJobs.filter((j) => !failingNames.includes(j.job) && !neverNames.includes(j.job)).length;

  return (
    <>
      <h1>Overview</h1>
      <section aria-labelledby="ov-hosts">
        <h2 id="ov-hosts">Inventory</h2>
        <ul className="figures">
          {/* Hosts present: what the Hosts screen lists by default; the gone ones behind its "Show gone hosts". */}
          <Figure label="hosts" value={o ? o.hosts.present : overview.error ? '?' : '…'} to="/hosts" hint={o && o.hosts.gone > 0 ? `${o.hosts.gone} gone` : undefined} />
        </ul>
        {o && o.hosts.present + o.hosts.gone === 0 && <p className="empty">No hosts yet: enrol a daemon and scan a network.</p>}
      </section>

      <section aria-labelledby="ov-findings">
        <h2 id="ov-findings">Open findings by severity</h2>
        <ErrorAlert error={critical.error} />
        <ul className="figures">
          {SEVERITIES.map((s) => <SeverityFigure key={s} severity={s} />)}
        </ul>
      </section>

      <section aria-labelledby="ov-activity">
        <h2 id="ov-activity">Scanning and data</h2>
        <ErrorAlert error={overview.error} />
        {o && (
          <ul className="figures">
            <Figure label="scan sessions running" value={o.sessions.dispatched + o.sessions.running} to="/networks" hint={`${o.sessions.queued} queued`} />
            <Figure label="scan sessions stalled" value={o.sessions.stalled} to="/networks" tone={o.sessions.stalled > 0 ? 'bad' : undefined} />
            <Figure
              label="last snapshot"
              value={o.lastSnapshotAgeSeconds === null ? 'none yet' : `${seconds(o.lastSnapshotAgeSeconds)} ago`}
              to="/snapshots"
              tone={o.lastSnapshotAgeSeconds === null ? undefined : ageTone(o.lastSnapshotAgeSeconds, 25 * HOUR, 49 * HOUR)}
            />
            <Figure
              label="advisory feed"
              value={o.advisoryFeed ? `${seconds(o.advisoryFeed.ageSeconds)} old` : 'none'}
              to="/vulnerabilities"
              tone={o.advisoryFeed ? ageTone(o.advisoryFeed.ageSeconds, DAY, 2 * DAY) : 'amber'}
              hint={o.advisoryFeed ? undefined : 'No advisories loaded: import with `surveyor advisories import` or set SERVICE_ADVISORY_FEED_URL'}
            />
          </ul>
        )}
      </section>

      <section aria-labelledby="ov-certs">
        <h2 id="ov-certs">Certificates expiring</h2>
        {o && (
          <ul className="figures">
            {certificateExpiryWindows.map((w) => {
              const n = o.certificatesExpiring[w];
              return <Figure key={w} label={expiryLabels[w].toLowerCase()} value={n} to={`/certificates?expiring=${w}`} tone={n > 0 ? EXPIRY_TONES[w] : undefined} />;
            })}
          </ul>
        )}
      </section>

      <section aria-labelledby="ov-daemons">
        <h2 id="ov-daemons">Daemons</h2>
        <ErrorAlert error={daemons.error} />
        {daemons.data && (
          Object.values(daemons.data).every((n) => n === 0) ? (
            <p className="empty">No daemons yet: create a daemon key (<code>surveyor admin create-daemon-key</code>) and start a daemon inside the network. <Link to="/daemons">How to enrol one</Link></p>
          ) : (
            <ul className="figures">
              {Object.entries(daemons.data).map(([status, n]) => (
                <Figure key={status} label={status} value={n} to="/daemons" tone={n > 0 && status !== 'online' ? (status === 'silent' ? 'bad' : 'warn') : undefined} hint={status === 'silent' ? 'online, no heartbeat for over 5 min' : undefined} />
              ))}
            </ul>
          )
        )}
        <QuietestDaemons />
      </section>

      {admin && (
        <section aria-labelledby="ov-jobs">
          <h2 id="ov-jobs">Job health</h2>
          <ErrorAlert error={jobs.error} />
          {jobs.data && (
            <ul className="figures">
              <Figure label="jobs healthy" value={`${healthy}/${wholeJobs.length}`} to="/settings/jobs" tone={healthy === wholeJobs.length ? 'ok' : undefined} />
              {failingNames.length > 0 && <Figure label="jobs failing or overdue" value={failingNames.length} to="/settings/jobs" tone="bad" hint={failingNames.join(', ')} />}
              {neverNames.length > 0 && (
                <Figure label="jobs never run" value={neverNames.length} to="/settings/jobs" tone="warn" hint="Not run yet. If it lasts beyond a few minutes, no process runs the jobs: start `surveyor worker`, or unset SERVICE_JOBS_IN_WEB=false" />
              )}
            </ul>
          )}
        </section>
      )}
    </>
  );
}
