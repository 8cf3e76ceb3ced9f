import { AppError } from '../errors.js';
import { perOrganisation } from '../jobs/per-organisation.js';
import type { JobDefinition } from '../jobs/runner.js';
import * as repo from './scans.repo.js';
import { createScan } from './scans.service.js';

/** Refusals of POST /api/v1/scans that make the scheduler skip a network (and say why). */
const SKIP_CODES = new Set(['no_daemon_online', 'nmap_unavailable', 'scan_already_active']);

/**
 * scan.schedule (30 s): every network with a `scanIntervalMinutes` whose last session started
 * longer ago than that (or never) gets a scan queued exactly as POST /api/v1/scans would. A
 * refusal (no daemon online, nmap unavailable, a scan already active) skips the network; its
 * schedule status says why.
 */
export function scanSchedule(): JobDefinition {
  return {
    name: 'scan.schedule',
    intervalMs: 30_000,
    async run({ db, now }) {
      const at = now();
      const due = await repo.dueNetworks(db, at);
      const byOrg = new Map<string, string[]>();
      for (const r of due) (byOrg.get(r.organisation_id) ?? byOrg.set(r.organisation_id, []).get(r.organisation_id)!).push(r.id);
      let queued = 0;
      let skipped = 0;
      const result = await perOrganisation([...byOrg.keys()], async (org) => {
        const counts = { queued: 0, skipped: 0 };
        let unexpected: unknown;
        for (const networkId of byOrg.get(org)!) {
          let outcome: 'queued' | 'skipped' = 'queued';
          let detail: string | null = null;
          let queued: { sessionId: string; daemonId: string } | null = null;
          try {
            const session = await createScan(db, { type: 'system', organisationId: org }, { networkId });
            detail = `session ${session.sessionId} on daemon ${session.daemonId}`;
            queued = { sessionId: session.sessionId, daemonId: session.daemonId };
          } catch (err) {
            // Any other failure fails the organisation's run, after its other networks had their turn.
            if (!(err instanceof AppError) || !SKIP_CODES.has(err.code)) {
              unexpected ??= err;
              continue;
            }
            outcome = 'skipped';
            detail = `${err.code}: ${err.message}`;
          }
          counts[outcome]++;
          await repo.recordScheduleOutcome(db, org, networkId, at, outcome, detail, queued);
        }
        queued += counts.queued;
        skipped += counts.skipped;
        if (unexpected) throw unexpected;
        return { detail: counts };
      });
      return { ...result, detail: { ...result.detail, due: due.length, queued, skipped } };
    },
  };
}
