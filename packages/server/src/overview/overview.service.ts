import type { Overview } from '@surveyor/contract';
import type { Kysely } from 'kysely';
import { feedConfirmation } from '../advisories/advisories.repo.js';
import type { DB } from '../db/schema.js';
import { certificatesExpiring, hostCounts, latestSnapshot, sessionCounts } from './overview.repo.js';

const age = (v: number) => Math.max(0, v);

/** The overview's figures for one organisation: a fixed number of queries, none per host. */
export async function getOverview(db: Kysely<DB>, organisationId: string, now: Date = new Date()): Promise<Overview> {
  const [hosts, sessions, snapshot, feed, certificates] = await Promise.all([
    hostCounts(db, organisationId),
    sessionCounts(db, organisationId),
    latestSnapshot(db, organisationId, now),
    feedConfirmation(db, now),
    certificatesExpiring(db, organisationId, now),
  ]);
  return {
    hosts,
    sessions,
    lastSnapshotAt: snapshot.at ? snapshot.at.toISOString() : null,
    lastSnapshotAgeSeconds: snapshot.ageSeconds === null ? null : age(snapshot.ageSeconds),
    advisoryFeed: feed && { confirmedAt: feed.confirmedAt.toISOString(), ageSeconds: age(feed.ageSeconds) },
    certificatesExpiring: certificates,
  };
}
