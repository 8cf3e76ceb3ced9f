import { z } from 'zod';
import { Text, Uuid } from '../common.js';
import { Snapshot } from '../inventory.js';
import { type RouteDef, route } from '../route-def.js';

/** The sections of a snapshot's content a diff compares, in the order the content (and a diff) lists them. */
export const snapshotDiffSections = ['hosts', 'services', 'certificates', 'vulnerabilities'] as const;
export const SnapshotDiffSection = z.enum(snapshotDiffSections);
export type SnapshotDiffSection = z.infer<typeof SnapshotDiffSection>;
export const snapshotDiffKinds = ['added', 'removed', 'changed'] as const;
export const SnapshotDiffKind = z.enum(snapshotDiffKinds);
export type SnapshotDiffKind = z.infer<typeof SnapshotDiffKind>;

export const SnapshotDiffQuery = z.strictObject({
  against: Uuid.describe('The snapshot to compare with: the base. `added` is in this snapshot and not in `against`, `removed` the reverse.'),
  section: SnapshotDiffSection.optional().describe('List the changes of this section only (the counts are always of every section).'),
  kind: SnapshotDiffKind.optional().describe('List the changes of this kind only.'),
  limit: z.coerce.number().int().min(1).max(1000).default(100).describe('Changes per page, 1 to 1000 (default 100).'),
  cursor: Text.min(1).max(200).optional().describe('`nextCursor` of the previous page.'),
});

const SectionCounts = z.object({ added: z.number().int(), removed: z.number().int(), changed: z.number().int() });

/** An entity of a snapshot's content, as stored (canonical JSON: hosts with addresses and MACs, services, certificates, vulnerabilities). */
const ContentItem = z.record(z.string(), z.unknown());

export const SnapshotDiffChange = z.object({
  section: SnapshotDiffSection,
  kind: SnapshotDiffKind,
  id: Uuid,
  before: ContentItem.nullable().describe('The entity in `against`; null when added.'),
  after: ContentItem.nullable().describe('The entity in this snapshot; null when removed.'),
  fields: z.array(z.object({ field: z.string(), from: z.unknown(), to: z.unknown() })).describe('For `changed`: each field that differs, old → new; empty otherwise.'),
});

export const SnapshotDiff = z.object({
  snapshot: Snapshot,
  against: Snapshot,
  note: z.string().nullable().describe('Set when the two snapshots cover different scopes (sites): what lies outside the narrower one shows as added or removed.'),
  counts: z.object({ hosts: SectionCounts, services: SectionCounts, certificates: SectionCounts, vulnerabilities: SectionCounts }),
  changes: z.array(SnapshotDiffChange),
  nextCursor: z.string().nullable(),
});

/** Comparing snapshots (internal: the console's). */
export const snapshotRoutes = {
  snapshotDiff: route({
    method: 'GET',
    url: '/api/v1/snapshots/:id/diff',
    operationId: 'snapshotDiff',
    summary: 'What changed between two snapshots: hosts, services, certificates and vulnerabilities added, removed and changed',
    description:
      'Counts per section first (always of the whole diff), then one page of changes in section order (hosts, services, certificates, vulnerabilities) and id order, ' +
      'with `nextCursor` for the next page. Computed from the stored content of both snapshots, streamed: every page reads both contents through once, in bounded memory. ' +
      'Snapshots of different scopes (a site and the whole organisation, or two sites) are compared with a `note`. ' +
      'Either snapshot of another organisation is 404; a missing or malformed `against` 400 `validation_failed`; a snapshot taken before contents were stored 409 `conflict`.',
    tags: ['inventory'],
    internal: true,
    auth: { kind: 'session' },
    params: z.object({ id: Uuid }),
    querystring: SnapshotDiffQuery,
    errors: ['not_found', 'conflict', 'invalid_cursor'],
    response: { 200: SnapshotDiff },
  }),
} as const satisfies Record<string, RouteDef>;
