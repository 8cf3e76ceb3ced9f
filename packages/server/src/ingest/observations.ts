import { createHash } from 'node:crypto';
import { logChanges } from '../events/changes.js';
import type { ObservationsRequest } from '@surveyor/contract';
import type { Kysely, Transaction } from 'kysely';
import type { z } from 'zod';
import type { DaemonPrincipal } from '../daemons/daemons.service.js';
import { ownDaemon } from '../daemons/daemons.service.js';
import type { DB } from '../db/schema.js';
import { AppError } from '../errors.js';
import { refreshHostSummaries } from '../inventory/host-summaries.js';
import { markTopologiesStale } from '../topology/dependencies.js';
import { type Facts, rowsOf } from './facts.js';
import { prepareFlows, storeFlows } from './flows.js';
import * as repo from './ingest.repo.js';
import { type DaemonSource, reconcile } from './reconcile.js';

// The daemon's side of ingest: a scan session's observation batches (spec 4.4), turned into facts
// for `reconcile`, with what only a scan session has: its lock, replayed batches, progress,
// completion and the absence a completed session declares.

type Batch = z.output<typeof ObservationsRequest>;
type Session = NonNullable<Awaited<ReturnType<typeof repo.lockSession>>>;

interface Outcome {
  accepted: number;
  dedupHits: number;
}

/**
 * Takes one observation batch of a daemon's scan session, flows included, in one transaction: a
 * failure anywhere leaves nothing of it. Idempotent: a replayed, split or duplicated batch
 * converges on the state of one clean delivery; only the final batch of a session that completes
 * marks things absent within its CIDR. Returns the rows taken and those that changed nothing.
 */
export async function ingestObservationBatch(db: Kysely<DB>, p: DaemonPrincipal, b: Batch): Promise<Outcome & { outOfWindow: number }> {
  const daemon = await ownDaemon(db, p);
  const org = p.organisationId;
  const flows = b.flows.length > 0 ? await prepareFlows(db, b.flows, 0) : null;
  return db.transaction().execute(async (trx) => {
    const session = await lockOpenSession(trx, org, b.sessionId, daemon.id);
    const observed = await applyObservations(trx, org, daemon.id, session, b);
    const stored = flows ? await storeFlows(trx, org, daemon.id, flows) : { accepted: 0 };
    const inWindow = flows?.records ?? 0;
    return { accepted: observed.accepted + inWindow, dedupHits: observed.dedupHits + (inWindow - stored.accepted), outOfWindow: flows?.outOfWindow ?? 0 };
  });
}

/** The batch's session, locked until commit so one session's batches apply one at a time; 404 when not this daemon's, 409 when cancelled. */
async function lockOpenSession(trx: Transaction<DB>, org: string, sessionId: string, daemonId: string): Promise<Session> {
  const session = await repo.lockSession(trx, org, sessionId, daemonId);
  if (!session) throw new AppError('not_found', `No scan session ${sessionId} for this daemon.`);
  if (session.state === 'cancelled') throw new AppError('session_cancelled', 'The scan session was cancelled; stop sending its batches.');
  return session;
}

/**
 * The batch's observations: all dedupHits at once when the session already applied this very
 * batch (a retry after a lost answer changes nothing by construction), else reconciled into the
 * inventory within the daemon's site, the session moved on, and stale topologies marked.
 */
async function applyObservations(trx: Transaction<DB>, org: string, daemonId: string, session: Session, b: Batch): Promise<Outcome> {
  const facts = factsOf(b);
  const accepted = rowsOf(facts);
  if (await alreadyApplied(trx, org, b, accepted)) return { accepted, dedupHits: accepted };
  const source: DaemonSource = { kind: 'daemon', organisationId: org, siteId: session.site_id, since: session.since, daemonId };
  const reconciled = await reconcile(trx, source, facts);
  const gone = await advanceSession(trx, org, daemonId, session, b);
  // Built topologies of the changed hosts' sites no longer describe the inventory.
  const hostIds = [...reconciled.changedHostIds, ...gone.hosts];
  if (hostIds.length > 0 || gone.services.length > 0) await markTopologiesStale(trx, org, { hostIds, serviceIds: gone.services });
  return { accepted, dedupHits: reconciled.unchanged };
}

/** The batch's observations as facts: the wire names of spec 4.5 mapped (flows are not facts: they are stored as sent). */
function factsOf(b: Batch): Facts {
  return {
    hosts: b.hosts,
    addresses: b.ips.map((x) => ({ fingerprint: x.hostFingerprint, address: x.address, mac: x.mac })),
    ports: b.ports.map((x) => ({ fingerprint: x.fingerprint, address: x.address, protocol: x.protocol, port: x.number, state: x.state, banner: x.banner })),
    services: b.services,
    certificates: b.tls,
    neighbours: b.neighbors,
    vlans: b.vlans,
    routes: b.routes,
    lagGroups: b.lagGroups,
  };
}

/** Whether the session already applied an identical batch (by the digest of the validated batch, flows aside); records this one otherwise. */
async function alreadyApplied(trx: Transaction<DB>, org: string, b: Batch, rows: number): Promise<boolean> {
  const digest = createHash('sha256').update(JSON.stringify({ ...b, flows: [] })).digest('hex');
  if (await repo.batchSeen(trx, org, b.sessionId, digest)) return true;
  await repo.recordBatch(trx, org, b.sessionId, digest, rows);
  return false;
}

/**
 * Records the batch on its session: progress, first batch → running, final → completed. A session
 * completing now marks absent what it did not see inside its CIDR (services, and hosts all of
 * whose addresses it covered), logs them as updated and announces itself (scan.completed).
 * Returns the ids of the services and hosts gone.
 */
async function advanceSession(trx: Transaction<DB>, org: string, daemonId: string, session: Session, b: Batch): Promise<{ services: string[]; hosts: string[] }> {
  const state = await repo.advanceSession(trx, org, b.sessionId, { final: b.final, ...b.stats });
  const completedNow = session.state !== 'completed' && session.state !== 'failed' && state === 'completed';
  if (!completedNow) return { services: [], hosts: [] };
  const absent = await repo.markAbsent(trx, org, session);
  const services = absent.map((s) => s.id);
  // The hosts' open-port counts no longer count them.
  await refreshHostSummaries(trx, org, absent.map((s) => s.host_id));
  const hosts = await repo.markHostsGone(trx, org, session);
  await repo.announceScanCompleted(trx, org, b.sessionId, { cidr: session.cidr, daemonId, goneServices: services.length, ...b.stats });
  await logChanges(trx, org, 'service', services, 'updated');
  await logChanges(trx, org, 'host', hosts, 'updated');
  return { services, hosts };
}
