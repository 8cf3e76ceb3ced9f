import { z } from 'zod';
import { Timestamp, Uuid } from './common.js';
import { Snapshot } from './inventory.js';

// Scheduled jobs (spec 1.1) and the administrative endpoints that run some of them now (spec 4.6).

export const JobStatus = z.object({
  job: z.string(),
  organisationId: Uuid.nullable().describe('Null: the job as a whole; set: its last run for this organisation.'),
  intervalSeconds: z.number().int().describe('How often the job runs (spec 1.1). A last run older than 3 × this means the scheduler stopped.'),
  lastRunAt: Timestamp.nullable().describe('Null: the job has never run.'),
  durationMs: z.number().int().nullable(),
  outcome: z.enum(['ok', 'failed', 'never']).describe('`never`: no run recorded yet.'),
  error: z.string().nullable().describe('The failure, redacted.'),
  attempts: z.number().int().describe('1, or up to 3 for jobs whose interval is above 2 minutes (transient failures are retried after 5 s and 25 s); 0 when never run.'),
  detail: z.record(z.string(), z.unknown()),
  lastOkAt: Timestamp.nullable(),
});

export const JobStatusList = z.object({ data: z.array(JobStatus) });

export const AdminSnapshotResponse = z.object({
  created: z.boolean().describe('False when today\'s scheduled snapshot already existed: it is returned.'),
  snapshot: Snapshot,
});

export const DependencyTickResponse = z.object({
  windowHours: z.number().int().describe('Flows of this many hours make the edges.'),
  from: Timestamp,
  builtAt: Timestamp,
  edges: z.number().int().describe('Edges (calling host → called service) in the rebuilt application topology.'),
  topologies: z.array(
    z.object({
      topologyId: Uuid,
      siteId: Uuid.nullable().describe('Null: the hosts without a site.'),
      status: z.literal('ready'),
      nodeCount: z.number().int(),
      edgeCount: z.number().int(),
    }),
  ),
});
