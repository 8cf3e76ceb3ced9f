import { z } from 'zod';
import { Timestamp, Uuid } from './common.js';
import { Snapshot } from './inventory.js';

// Scheduled jobs (spec 1.1) and the administrative endpoints that run some of them now (spec 4.6).

export const JobStatus = z.object({
  job: z.string(),
  organisationId: Uuid.nullable().describe('Null: the job as a whole; set: its last run for this organisation.'),
  intervalSeconds: z.number().int().describe('How often the job runs (spec 1.1). A last run older than 3 × this means the scheduler stopped.'),
  lastRunAt: Timestamp.nullable().describe('The start of the last finished run. Null: no run has finished yet.'),
  durationMs: z.number().int().nullable(),
  outcome: z
    .enum(['ok', 'failed', 'never', 'running', 'interrupted'])
    .describe(
      'The last finished run\'s `ok` or `failed`; `never`: no run recorded yet; `running`: a run started at `startedAt` is in progress; ' +
        '`interrupted`: a run started at `startedAt` never finished and nobody runs it any more (its process died), until the next run starts.',
    ),
  error: z.string().nullable().describe('The failure, redacted.'),
  attempts: z.number().int().describe('1, or up to 3 for jobs whose interval is above 2 minutes (transient failures are retried after 5 s and 25 s); 0 when never run.'),
  detail: z.record(z.string(), z.unknown()),
  lastOkAt: Timestamp.nullable(),
  startedAt: Timestamp.nullable().describe('The start of the run in progress (`running`) or of the one interrupted (`interrupted`); null otherwise. `lastRunAt` and the fields after it describe the last finished run.'),
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

export const CveMatchResponse = z.object({
  full: z.boolean().describe('True when every service was matched (the organisation\'s first run); otherwise only services changed since the last run, and the services of advisories changed since then.'),
  servicesMatched: z.number().int().describe('Services evaluated in this run.'),
  opened: z.number().int().describe('Findings created, or reopened after `resolved`.'),
  resolved: z.number().int().describe('Findings resolved because their service no longer matches.'),
  seen: z.number().int().describe('Findings still matching (their `lastSeenAt` moved).'),
});
