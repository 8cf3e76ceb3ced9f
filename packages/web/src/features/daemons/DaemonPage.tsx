import { roleAtLeast } from '@surveyor/contract';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useEffect, useMemo, useState } from 'react';
import { Link, useNavigate, useParams } from 'react-router';
import { Dialog } from '../../components/Dialog';
import { ErrorAlert } from '../../components/ErrorAlert';
import { SessionTable } from '../../components/SessionTable';
import { ApiError } from '../../lib/api';
import { ago, dateTime } from '../../lib/format';
import { daemonKeys, overviewKeys, scanKeys } from '../../lib/keys';
import { useMe, useSiteNames, useSites } from '../../lib/queries';
import type { DaemonDetail } from '../../lib/types';
import { usePageTitle } from '../../lib/usePageTitle';
import { CAPABILITIES, DaemonStatus, QUIET_LIMIT_SECONDS, SiteCell, quietText, quietTooLong } from './DaemonsPage';
import { removeDaemon, setDaemonEnabled, useDaemon } from './api';

/** Disable (confirmed: it takes no more scans) or enable a daemon again; what happened is said under the buttons. */
function useEnable(d: DaemonDetail | undefined) {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (enabled: boolean) => setDaemonEnabled(d!.id, enabled),
    onSuccess: () => {
      void client.invalidateQueries({ queryKey: daemonKeys.all });
      void client.invalidateQueries({ queryKey: scanKeys.all });
      void client.invalidateQueries({ queryKey: overviewKeys.all });
    },
  });
}

/** A daemon: status and why, quiet time counting on, facts, capabilities, networks, site, flows dropped, key prefix, its recent sessions. */
export function DaemonPage() {
  const { id = '' } = useParams();
  const navigate = useNavigate();
  const client = useQueryClient();
  const me = useMe();
  const admin = me.data ? roleAtLeast(me.data.role, 'admin') : false;
  const daemon = useDaemon(id);
  const d = daemon.data;
  const sites = useSites();
  const siteNames = useSiteNames([d?.siteId ?? null]);
  const known = useMemo(() => new Map([...sites, ...siteNames]), [sites, siteNames]);
  usePageTitle(d ? `Daemon ${d.name}` : 'Daemon');
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(t);
  }, []);
  const [confirm, setConfirm] = useState<'disable' | 'remove' | null>(null);
  const [said, setSaid] = useState<string | null>(null);
  const enable = useEnable(d);
  const remove = useMutation({
    mutationFn: () => removeDaemon(id),
    onSuccess: () => {
      client.removeQueries({ queryKey: daemonKeys.one(id) });
      void client.invalidateQueries({ queryKey: daemonKeys.all });
      void client.invalidateQueries({ queryKey: scanKeys.all });
      void navigate('/daemons', { state: { removed: d?.name ?? id } });
    },
  });

  const notFound = daemon.error instanceof ApiError && daemon.error.status === 404;
  const shown = d ? { ...d, quietNow: d.quietSeconds + Math.max(0, Math.floor((now - daemon.dataUpdatedAt) / 1000)) } : undefined;
  const site = d?.siteId ? known.get(d.siteId) : undefined;
  const title = shown?.lastHeartbeatAt ? `last heartbeat ${dateTime(shown.lastHeartbeatAt)} (every ${shown.heartbeatIntervalSeconds} s)` : 'no heartbeat yet: quiet since registration';

  return (
    <>
      <p className="crumbs"><Link to="/daemons">Daemons</Link> /</p>
      <h1>{d ? d.name : 'Daemon'}</h1>
      {notFound ? <p className="empty">No daemon {id} in this organisation (it may have been removed).</p> : <ErrorAlert error={daemon.error} />}
      {daemon.isPending && <p className="loading">Loading…</p>}
      {shown && (
        <>
          <dl className="fields">
            <dt>Status</dt>
            <dd><DaemonStatus daemon={shown} />{shown.disabledAt && <span className="muted"> since {ago(shown.disabledAt)}: takes no scan, never alerted as silent</span>}</dd>
            <dt>Quiet for</dt>
            <dd><span className={quietTooLong(shown) ? 'error-text' : ''} title={title} data-testid="quiet">{quietText(shown.quietNow)}</span>{quietTooLong(shown) && <span className="error-text"> (more than {QUIET_LIMIT_SECONDS / 60} min while online)</span>}</dd>
            <dt>Version</dt>
            <dd><span className="mono">{shown.version || '—'}</span> <span className="muted">{[shown.os, shown.arch].filter(Boolean).join('/') || ''}</span></dd>
            <dt>Capabilities</dt>
            <dd>
              <span className="chips">
                {[...new Set([...CAPABILITIES, ...Object.keys(shown.capabilities)])].map((c) => {
                  const on = shown.capabilities[c] === true;
                  return <span key={c} className={`chip ${on ? 'on' : 'off'}`}>{c}{!on && <span className="sr-only"> (not available)</span>}</span>;
                })}
              </span>
            </dd>
            <dt>Networks reported</dt>
            <dd className="mono">{shown.networkCidrs.join(', ') || '—'}</dd>
            <dt>Site</dt>
            <dd>{admin ? <SiteCell daemon={shown} sites={known} admin /> : site ? <Link to={`/sites/${site.id}`}>{site.name}</Link> : '—'}{admin && site && <> <Link to={`/sites/${site.id}`}>open site</Link></>}</dd>
            <dt>Flows dropped</dt>
            <dd className={shown.flowsDropped > 0 ? 'error-text num' : 'num'}>{shown.flowsDropped}</dd>
            <dt>Restarts</dt>
            <dd className="num">{shown.restartCount}</dd>
            <dt>Signatures</dt>
            <dd>{Object.entries(shown.loadedSignatures).map(([k, v]) => `${v} ${k}`).join(', ') || '—'}</dd>
            <dt>Key</dt>
            <dd><span className="mono">{shown.keyPrefix}…</span></dd>
            <dt>Registered</dt>
            <dd><time dateTime={shown.registeredAt} title={dateTime(shown.registeredAt)}>{ago(shown.registeredAt)}</time></dd>
          </dl>
          {admin && (
            <p className="page-actions">
              {shown.disabledAt ? (
                <button type="button" className="small" disabled={enable.isPending} onClick={() => enable.mutate(true, { onSuccess: (x) => setSaid(`Daemon ${x.name} enabled: it takes scans again.`) })}>Enable daemon</button>
              ) : (
                <button type="button" className="small" onClick={() => { enable.reset(); setConfirm('disable'); }}>Disable daemon</button>
              )}
              <button type="button" className="small danger" onClick={() => { remove.reset(); setConfirm('remove'); }}>Remove daemon</button>
            </p>
          )}
          {said && <p role="status" className="notice">{said}</p>}
          {!confirm && <ErrorAlert error={enable.error} />}
          {confirm === 'disable' && (
            <Dialog
              title={`Disable daemon ${shown.name}?`}
              confirmLabel={enable.isPending ? 'Disabling…' : 'Disable daemon'}
              busy={enable.isPending}
              onConfirm={() => enable.mutate(false, { onSuccess: (x) => { setConfirm(null); setSaid(`Daemon ${x.name} disabled: it takes no scan until enabled again.`); } })}
              onCancel={() => setConfirm(null)}
            >
              <p>It keeps its key and may keep reporting, but no scan is handed to it: scans of its site go to another online daemon, or are refused. Scans queued for it and not yet taken fail now; one it is running may finish. It is never alerted as silent while disabled.</p>
              <ErrorAlert error={enable.error} />
            </Dialog>
          )}
          {confirm === 'remove' && (
            <Dialog
              title={`Remove daemon ${shown.name}?`}
              danger
              confirmLabel={remove.isPending ? 'Removing…' : 'Remove daemon'}
              cancelLabel={remove.error ? 'Close' : 'Keep it'}
              busy={remove.isPending}
              onConfirm={() => remove.mutate()}
              onCancel={() => setConfirm(null)}
            >
              <p>
                Its key <span className="mono">{shown.keyPrefix}…</span> is revoked at once: its next request (and that of any other daemon started with the same key) is refused. Scans it has not finished fail. It leaves the list; its past sessions keep their history.
                To bring it back, enrol it again with a new key.
              </p>
              <ErrorAlert error={remove.error} />
            </Dialog>
          )}
          <section aria-labelledby="daemon-sessions">
            <h2 id="daemon-sessions">Recent sessions</h2>
            {shown.recentSessions.length === 0 ? <p className="empty">No scan handed to this daemon yet.</p> : <SessionTable caption={`Sessions of ${shown.name}`} sessions={shown.recentSessions} show="network" />}
          </section>
        </>
      )}
    </>
  );
}
