import { z } from 'zod';
import { Text, Timestamp, Uuid } from './common.js';
import { ExposedFilter, PortProtocol, Severity, Vulnerability, VulnerabilityState, vulnerabilityStates } from './inventory.js';

// Triage (issue 23): the console's findings list (the actionable set first, by severity then
// score, with a total and a search), the same findings grouped by advisory, moves of many findings
// at once, and a finding's history. Internal: the public collection stays as the spec has it.

/** At most this many findings move in one bulk request (ids listed, or every finding of a CVE). */
export const FINDINGS_BULK_MAX = 1000;

/** The states the triage list shows unless asked otherwise: what still needs a decision. */
export const actionableStates = ['open', 'acknowledged'] as const satisfies readonly (typeof vulnerabilityStates)[number][];

const StateList = Text.max(200)
  .transform((s) => s.split(','))
  .pipe(z.array(VulnerabilityState).min(1).max(vulnerabilityStates.length))
  .optional()
  .describe('Comma-separated states; absent: `open,acknowledged` (the actionable set).');

const filters = {
  state: StateList,
  severity: Severity.optional(),
  search: Text.trim()
    .min(2, 'search needs at least 2 characters')
    .max(200)
    .optional()
    .describe('At least 2 characters: a CVE id (or its start), a host name or FQDN (part of it), an address (or its start: `10.1.0`), a product or vendor (part of it); case-insensitive.'),
  exposed: ExposedFilter.describe('`true`: only findings on services the internet reaches, as a cloud account says (`service.exposedVia` set); `false`: only the others. Without it, exposed findings come first.'),
  limit: z.coerce.number().int().min(1).max(500).default(100).describe('Page size, 1 to 500 (default 100).'),
  cursor: Text.min(1).max(512).optional().describe('`nextCursor` of the previous page.'),
};

export const FindingsQuery = z.strictObject({ ...filters, cveId: Text.min(1).max(100).optional().describe('Only the findings of this advisory (exact).') });
export const AdvisoryFindingsQuery = z.strictObject(filters);

/** A finding with what an operator reads it by: the host (name, an address) and the service (port/protocol, product). */
export const Finding = Vulnerability.pick({
  id: true, cveId: true, advisoryId: true, summary: true, severity: true, score: true, state: true, note: true, distribution: true,
  firstSeenAt: true, lastSeenAt: true, stateChangedAt: true,
}).extend({
  host: z.object({ id: Uuid, name: z.string().nullable().describe('Hostname, else FQDN.'), address: z.string().nullable().describe('The lowest of its addresses.') }),
  service: z.object({
    id: Uuid,
    protocol: PortProtocol,
    port: z.number().int(),
    name: z.string().nullable(),
    vendor: z.string().nullable(),
    product: z.string().nullable(),
    version: z.string().nullable(),
    exposedVia: z.string().nullable().describe('Why the internet reaches the service, when a cloud account says so; null otherwise. Exposed findings are listed first.'),
  }),
});

const paged = { total: z.number().int().describe('How many match the filters, on every page.'), nextCursor: z.string().nullable(), hasMore: z.boolean() };
export const FindingPage = z.object({ data: z.array(Finding), ...paged });

/** One advisory with the findings of it that match the filters. */
export const AdvisoryFindings = z.object({
  cveId: z.string(),
  summary: z.string().nullable(),
  severity: Severity,
  score: z.number().nullable(),
  findings: z.number().int(),
  services: z.number().int(),
  hosts: z.number().int(),
  states: z.object({ open: z.number().int(), acknowledged: z.number().int(), resolved: z.number().int(), false_positive: z.number().int() }).describe('Findings per state, every state listed.'),
});
export const AdvisoryFindingsPage = z.object({ data: z.array(AdvisoryFindings), ...paged });

/** The states a person may move findings to (resolved is the matcher's). */
export const BulkTargetState = z.enum(['open', 'acknowledged', 'false_positive']);

export const BulkFindingsRequest = z
  .strictObject({
    ids: z.array(Uuid).min(1).max(FINDINGS_BULK_MAX).optional().describe(`The findings to move, at most ${FINDINGS_BULK_MAX}.`),
    cveId: Text.min(1).max(100).optional().describe(`Every finding of this advisory in the states \`from\` (at most ${FINDINGS_BULK_MAX}).`),
    from: z.array(VulnerabilityState).min(1).max(vulnerabilityStates.length).optional().describe('With `cveId`: the states to take (default `open`, `acknowledged`).'),
    state: BulkTargetState,
    note: Text.max(2000).optional(),
  })
  .refine((b) => (b.ids === undefined) !== (b.cveId === undefined), { message: 'give either ids or cveId', path: ['ids'] })
  .refine((b) => b.from === undefined || b.cveId !== undefined, { message: 'from goes with cveId', path: ['from'] });

export const BulkFindingsResponse = z.object({
  updated: z.number().int().describe('Findings moved (or given the note), one audit row each.'),
  unchanged: z.number().int().describe('Already in that state with that note.'),
  refused: z.array(z.object({ id: Uuid, state: VulnerabilityState, allowed: z.array(VulnerabilityState) })).describe('Findings whose state does not allow the move (a resolved one, for example); left as they were.'),
});

export const FindingHistoryEntry = z.object({
  at: Timestamp,
  from: VulnerabilityState.nullable(),
  to: VulnerabilityState.nullable(),
  note: z.string().nullable(),
  by: z.string().describe('Who: a member\'s email, `API key <prefix>`, `cve.match` (the matcher) or `cli`.'),
});
export const FindingHistory = z.object({ data: z.array(FindingHistoryEntry) });
