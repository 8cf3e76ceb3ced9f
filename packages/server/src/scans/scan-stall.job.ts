import type { Config } from '../config.js';
import { markQuietDaemonsOffline } from '../daemons/daemons.repo.js';
import type { JobDefinition, OrganisationOutcome } from '../jobs/runner.js';
import { markStalledSessions } from './scans.repo.js';

/**
 * scan.stall (1 min, decisions.md): a session in a running state (`dispatched`, `running`) is
 * `stalled` when its daemon has not heartbeated for 3 × the heartbeat interval it was handed, or the session
 * received no batch for SERVICE_SCAN_STALL_SECONDS. A later batch moves it back to `running`.
 * The same minute it announces daemons gone quiet (`daemon.offline`).
 */
export function scanStall(config: Pick<Config, 'jobs'>): JobDefinition {
  return {
    name: 'scan.stall',
    intervalMs: 60_000,
    async run({ db, now }) {
      const at = now();
      const stalled = await markStalledSessions(db, at, new Date(at.getTime() - config.jobs.scanStallSeconds * 1000));
      const offline = await markQuietDaemonsOffline(db, at);
      const organisations = new Map<string, OrganisationOutcome>();
      const count = (org: string, what: 'stalled' | 'offline') => {
        const o = organisations.get(org) ?? { ok: true, detail: { stalled: 0, offline: 0 } };
        (o.detail as Record<typeof what, number>)[what]++;
        organisations.set(org, o);
      };
      for (const r of stalled) count(r.organisation_id, 'stalled');
      for (const r of offline) count(r.organisation_id, 'offline');
      return { detail: { stalled: stalled.length, sessions: stalled.map((r) => r.id), offline: offline.length, daemons: offline.map((r) => r.id) }, organisations };
    },
  };
}
