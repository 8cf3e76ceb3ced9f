import { type AiCitation, FindingsQuery, type Role, listQueries, roleAtLeast, snapshotDiffKinds, snapshotDiffSections } from '@surveyor/contract';
import type { Kysely } from 'kysely';
import { z } from 'zod';
import { listDaemons } from '../daemons/daemons.service.js';
import type { DB } from '../db/schema.js';
import { AppError } from '../errors.js';
import { listFindings } from '../findings/findings.service.js';
import { getHostDetail } from '../hosts/hosts.service.js';
import type { CursorCodec } from '../inventory/cursor.js';
import { listCollection, lookup } from '../inventory/inventory.service.js';
import type { JobDefinition } from '../jobs/runner.js';
import { jobStatus, toJobStatus } from '../jobs/status.service.js';
import { sessionHistory } from '../scans/scans.service.js';
import { diffSnapshots } from '../snapshots/snapshots.service.js';
import { hostTopology } from '../topology/topology.service.js';

// The assistant's tools: read-only, and organisation-scoped by construction. Each tool is the
// existing service the API itself calls, with the organisation of the caller's session passed
// in by the chat loop (never an argument the model can set), its arguments checked with the
// API's own query schemas (the same rules, limits and refusals), and its result bounded in rows
// and bytes, said so when cut. Each tool also names the records it returned, as citations.

export interface ToolContext {
  db: Kysely<DB>;
  organisationId: string;
  /** The asker's role: a tool shows only what the API shows that role (job health is admin-only). */
  role: Role;
  cursors: CursorCodec;
  jobs: readonly JobDefinition[];
}

export interface ToolResult {
  /** What the model reads (JSON-serialisable, bounded). */
  content: Record<string, unknown>;
  rows: number;
  truncated: boolean;
  summary: string;
  citations: AiCitation[];
}

interface Tool<A extends z.ZodType> {
  name: string;
  description: string;
  args: A;
  run(ctx: ToolContext, args: z.output<A>): Promise<{ rows: Record<string, unknown>[]; extra?: Record<string, unknown>; summary: string; cite: (row: Record<string, unknown>) => AiCitation | null }>;
}

/** Most rows a tool hands the model, and most bytes of JSON. */
export const MAX_TOOL_ROWS = 50;
export const MAX_TOOL_BYTES = 16_000;

const ROWS = z.number().int().min(1).max(MAX_TOOL_ROWS).default(20).describe(`Rows to return, 1 to ${MAX_TOOL_ROWS}.`);

const str = (v: unknown) => (typeof v === 'string' ? v : v == null ? '' : String(v));
const hostLabel = (h: Record<string, unknown>) => str(h.hostname) || str(h.fqdn) || ((h.addresses as string[] | undefined) ?? [])[0] || str(h.id);
const hostCitation = (h: Record<string, unknown>): AiCitation => ({ type: 'host', id: str(h.id), label: hostLabel(h), href: `/hosts/${str(h.id)}` });

const tool = <A extends z.ZodType>(t: Tool<A>) => t;

const tools = [
  tool({
    name: 'search_hosts',
    description: 'Hosts of the organisation, by the hosts list\'s rules: search (2+ characters: a name or FQDN part, an address or its start, a MAC), siteId, gone (include|exclude|only), source (cloud|daemon). Newest rules of the API apply.',
    args: listQueries.hosts.omit({ cursor: true, limit: true }).extend({ limit: ROWS }),
    async run(ctx, { limit, ...q }) {
      const page = await listCollection(ctx.db, ctx.cursors, ctx.organisationId, 'hosts', { ...q, limit } as never);
      return { rows: page.data as unknown as Record<string, unknown>[], extra: { more: page.hasMore }, summary: `hosts${q.search ? ` matching "${q.search}"` : ''}`, cite: hostCitation };
    },
  }),
  tool({
    name: 'host_detail',
    description: 'One host: its record (names, addresses, MACs, OS, first and last seen), its services present (ports, products, versions), its current certificates, its interfaces and cloud provenance.',
    args: z.strictObject({ hostId: z.uuid() }),
    async run(ctx, { hostId }) {
      const { hosts } = await lookup(ctx.db, ctx.organisationId, { hosts: [hostId] });
      const host = hosts[0] as unknown as Record<string, unknown> | undefined;
      if (!host) throw new AppError('not_found', `No host ${hostId}.`);
      const page = { limit: MAX_TOOL_ROWS };
      const [services, certificates, detail] = await Promise.all([
        listCollection(ctx.db, ctx.cursors, ctx.organisationId, 'services', { ...page, hostId, gone: 'exclude' } as never),
        listCollection(ctx.db, ctx.cursors, ctx.organisationId, 'certificates', { ...page, hostId, current: 'true' } as never),
        getHostDetail(ctx.db, ctx.organisationId, hostId),
      ]);
      const { hostId: _id, portMap: _ports, ...rest } = detail;
      return {
        rows: [host],
        extra: { services: services.data, certificates: certificates.data, ...rest },
        summary: `host ${hostLabel(host)} with ${services.data.length} services`,
        cite: hostCitation,
      };
    },
  }),
  tool({
    name: 'host_topology',
    description: 'A host\'s neighbourhood: its open ports, the peers that talked to it and that it talked to (flows) in the last windowHours (1 to 720), and LLDP/CDP neighbours.',
    args: z.strictObject({ hostId: z.uuid(), windowHours: z.number().int().min(1).max(720).default(24) }),
    async run(ctx, { hostId, windowHours }) {
      const t = await hostTopology(ctx.db, ctx.organisationId, hostId, windowHours);
      const rows = [...t.inbound.map((p) => ({ direction: 'in', ...p })), ...t.outbound.map((p) => ({ direction: 'out', ...p }))] as unknown as Record<string, unknown>[];
      return {
        rows,
        extra: { ports: t.ports, neighbours: t.neighbours, window: t.window },
        summary: `topology of host ${hostId} over ${windowHours} h: ${t.inbound.length} in, ${t.outbound.length} out, ${t.ports.length} ports`,
        cite: (r) => (r.hostId ? { type: 'host', id: str(r.hostId), label: str(r.hostname) || str(r.address) || str(r.hostId), href: `/hosts/${str(r.hostId)}` } : null),
      };
    },
  }),
  tool({
    name: 'search_services',
    description: 'Services (a port of a host and what runs there) by product (2+ characters, substring), version (exact or prefix: "9.3" matches 9.3p1), port, protocol, cpe, hostId, gone, exposed (true: the internet reaches it per a cloud account).',
    args: listQueries.services.omit({ cursor: true, limit: true }).extend({ limit: ROWS }),
    async run(ctx, { limit, ...q }) {
      const page = await listCollection(ctx.db, ctx.cursors, ctx.organisationId, 'services', { ...q, limit } as never);
      return {
        rows: page.data as unknown as Record<string, unknown>[],
        extra: { more: page.hasMore },
        summary: `services${q.product ? ` of ${q.product}` : ''}${q.version ? ` ${q.version}` : ''}${q.port ? ` on port ${q.port}` : ''}`,
        cite: (s) => ({ type: 'service', id: str(s.id), label: `${s.address ? `${str(s.address)}:` : 'port '}${str(s.port)}/${str(s.protocol)} ${str(s.product)} ${str(s.version)}`.trim(), href: `/hosts/${str(s.hostId)}` }),
      };
    },
  }),
  tool({
    name: 'search_vulnerabilities',
    description: 'Findings (a CVE on a service), the actionable ones (open, acknowledged) unless state says otherwise: state (comma-separated), severity (critical|high|medium|low|none), search (CVE id, host, address, product), cveId (exact), exposed. Exposed and severe first.',
    args: FindingsQuery.omit({ cursor: true, limit: true }).extend({ limit: ROWS }),
    async run(ctx, { limit, ...q }) {
      const page = (await listFindings(ctx.db, ctx.cursors, ctx.organisationId, { ...q, limit } as never)) as unknown as { data: Record<string, unknown>[]; total?: number; hasMore: boolean };
      return {
        rows: page.data,
        extra: { total: page.total, more: page.hasMore },
        summary: `findings${q.severity ? ` of severity ${q.severity}` : ''}${q.search ? ` matching "${q.search}"` : ''}${q.cveId ? ` of ${q.cveId}` : ''}`,
        cite: (f) => ({ type: 'vulnerability', id: str(f.id), label: `${str(f.cveId)} on ${hostLabel((f.host as Record<string, unknown> | undefined) ?? {}) || str(f.hostId)}`, href: `/vulnerabilities?search=${encodeURIComponent(str(f.cveId))}` }),
      };
    },
  }),
  tool({
    name: 'expiring_certificates',
    description: 'TLS certificates expiring within a window (expired, 1d, 7d, 14d, 30d), soonest first; current ones only unless current is "false".',
    args: listQueries.certificates.omit({ cursor: true, limit: true }).extend({ limit: ROWS }),
    async run(ctx, { limit, ...q }) {
      const page = await listCollection(ctx.db, ctx.cursors, ctx.organisationId, 'certificates', { ...q, limit } as never);
      return {
        rows: page.data as unknown as Record<string, unknown>[],
        extra: { more: page.hasMore },
        summary: `certificates${q.expiring ? ` expiring within ${q.expiring}` : ''}`,
        cite: (c) => ({ type: 'certificate', id: str(c.id), label: `${str(c.subject)} (until ${str(c.notAfter).slice(0, 10)})`, href: `/hosts/${str(c.hostId)}` }),
      };
    },
  }),
  tool({
    name: 'daemons_and_jobs',
    description: 'The organisation\'s daemons (status, last heartbeat, quiet time, last scan) and, for an admin or owner, the scheduled jobs\' health (last run, outcome, error).',
    args: z.strictObject({}),
    async run(ctx) {
      // Job health is Settings → Jobs, an admin surface: a viewer's or editor's assistant does not read it.
      const admin = roleAtLeast(ctx.role, 'admin');
      const [daemons, jobs] = await Promise.all([listDaemons(ctx.db, ctx.organisationId), admin ? jobStatus(ctx.db, ctx.jobs, ctx.organisationId) : Promise.resolve(null)]);
      return {
        rows: daemons.data as unknown as Record<string, unknown>[],
        extra: jobs ? { jobs: jobs.map(toJobStatus) } : { jobs: [], jobsHidden: 'job health is shown to admins and owners only' },
        summary: `${daemons.data.length} daemons${jobs ? ` and ${ctx.jobs.length} jobs` : ''}`,
        cite: (d) => ({ type: 'daemon', id: str(d.id), label: str(d.name) || str(d.id), href: `/daemons/${str(d.id)}` }),
      };
    },
  }),
  tool({
    name: 'scan_sessions',
    description: 'The latest scan sessions of one network (networkId) or one daemon (daemonId): state, progress, counts, errors.',
    args: z.strictObject({ networkId: z.uuid().optional(), daemonId: z.uuid().optional(), limit: ROWS }).refine((a) => Boolean(a.networkId) !== Boolean(a.daemonId), 'give networkId or daemonId (one of them)'),
    async run(ctx, { networkId, daemonId, limit }) {
      const of = networkId ? { networkId } : { daemonId: daemonId! };
      const rows = (await sessionHistory(ctx.db, ctx.organisationId, of, limit)) as unknown as Record<string, unknown>[];
      return {
        rows,
        summary: `scan sessions of ${networkId ? `network ${networkId}` : `daemon ${daemonId}`}`,
        cite: (s) => ({ type: 'scan', id: str(s.sessionId ?? s.id), label: `scan ${str(s.cidr)} ${str(s.state)}`.trim(), href: s.networkId ? `/networks/${str(s.networkId)}` : `/daemons/${str(s.daemonId)}` }),
      };
    },
  }),
  tool({
    name: 'list_snapshots',
    description: 'Inventory snapshots, newest first (order desc) unless order is asc, with their capture time, reason and stats: to find the ids to compare.',
    args: listQueries.snapshots.omit({ cursor: true, limit: true }).extend({ limit: ROWS }),
    async run(ctx, { limit, ...q }) {
      const page = await listCollection(ctx.db, ctx.cursors, ctx.organisationId, 'snapshots', { order: 'desc', ...q, limit } as never);
      return {
        rows: page.data as unknown as Record<string, unknown>[],
        extra: { more: page.hasMore },
        summary: 'snapshots',
        cite: (s) => ({ type: 'snapshot', id: str(s.id), label: `snapshot of ${str(s.capturedAt).slice(0, 16).replace('T', ' ')}`, href: '/snapshots' }),
      };
    },
  }),
  tool({
    name: 'snapshot_diff',
    description: 'What changed between two snapshots: `id` the later, `against` the earlier; optional section (hosts|services|certificates|vulnerabilities) and kind (added|removed|changed). Counts per section, then the changes.',
    args: z.strictObject({ id: z.uuid(), against: z.uuid(), section: z.enum(snapshotDiffSections).optional(), kind: z.enum(snapshotDiffKinds).optional(), limit: ROWS }),
    async run(ctx, { id, against, section, kind, limit }) {
      const { changes, nextCursor, ...rest } = await diffSnapshots(ctx.db, ctx.organisationId, id, { against, section, kind, limit });
      return {
        rows: changes as unknown as Record<string, unknown>[],
        extra: { ...rest, more: nextCursor !== null },
        summary: `changes from snapshot ${against} to ${id}`,
        cite: (c) => {
          const item = ((c.after ?? c.before) as Record<string, unknown> | null) ?? {};
          if (c.section === 'hosts') return hostCitation({ ...item, id: c.id });
          const hostId = str(item.hostId);
          return hostId ? { type: c.section === 'vulnerabilities' ? 'vulnerability' : c.section === 'certificates' ? 'certificate' : 'service', id: str(c.id), label: `${str(c.kind)} ${str(c.section).replace(/s$/, '')} ${str(item.cveId) || str(item.subject) || `${str(item.port)}/${str(item.protocol)}`}`.trim(), href: `/hosts/${hostId}` } : null;
        },
      };
    },
  }),
];

export type ToolName = (typeof tools)[number]['name'];

/** The tool definitions the provider is told about (OpenAI function tools; parameters as JSON Schema from the same zod schemas). */
export function toolDefinitions() {
  return tools.map((t) => ({
    type: 'function' as const,
    function: { name: t.name, description: t.description, parameters: z.toJSONSchema(t.args, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown> },
  }));
}

/** Cuts rows to what fits the byte bound. */
function bound(rows: Record<string, unknown>[]): { kept: Record<string, unknown>[]; truncated: boolean } {
  const kept: Record<string, unknown>[] = [];
  let bytes = 0;
  for (const r of rows.slice(0, MAX_TOOL_ROWS)) {
    const size = JSON.stringify(r).length;
    if (bytes + size > MAX_TOOL_BYTES && kept.length > 0) return { kept, truncated: true };
    kept.push(size > MAX_TOOL_BYTES ? { id: r.id, note: 'record too large to show whole' } : r);
    bytes += size;
  }
  return { kept, truncated: rows.length > MAX_TOOL_ROWS };
}

/**
 * Runs a tool the model asked for. Never throws: an unknown tool, bad arguments (the API's own
 * validation messages) or a refusal (another organisation's id is "not found") come back as an
 * error the model can read and correct.
 */
export async function runTool(ctx: ToolContext, name: string, rawArguments: string): Promise<ToolResult & { ok: boolean; arguments: Record<string, unknown> }> {
  const t = tools.find((x) => x.name === name);
  let args: Record<string, unknown> = {};
  try {
    const parsed: unknown = rawArguments.trim() ? JSON.parse(rawArguments) : {};
    if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) return failed(name, {}, 'the arguments must be a JSON object');
    args = parsed as Record<string, unknown>;
  } catch {
    return failed(name, {}, 'the arguments are not valid JSON');
  }
  if (!t) return failed(name, args, `no tool named ${name}; the tools are ${tools.map((x) => x.name).join(', ')}`);
  const parsed = (t.args as z.ZodType).safeParse(args);
  if (!parsed.success) return failed(name, args, parsed.error.issues.map((i) => `${i.path.join('.') || 'arguments'}: ${i.message}`).join('; '));
  try {
    const out = await (t.run as (c: ToolContext, a: unknown) => ReturnType<Tool<z.ZodType>['run']>)(ctx, parsed.data);
    const { kept, truncated } = bound(out.rows);
    const citations = kept.map(out.cite).filter((c): c is AiCitation => c !== null && c.id !== '');
    const extraJson = out.extra ? JSON.stringify(out.extra) : '';
    const extra = extraJson.length > MAX_TOOL_BYTES ? { note: 'details cut: too large' } : out.extra;
    const note = truncated ? `Showing ${kept.length} of ${out.rows.length} rows (cut to ${MAX_TOOL_ROWS} rows / ${MAX_TOOL_BYTES} bytes): narrow the filters for the rest.` : undefined;
    return {
      ok: true,
      arguments: args,
      content: { rows: kept, ...(extra ?? {}), ...(note ? { note } : {}) },
      rows: kept.length,
      truncated,
      summary: `${out.summary}: ${kept.length}${truncated ? '+' : ''} found`,
      citations,
    };
  } catch (e) {
    if (e instanceof AppError) return failed(name, args, e.code === 'not_found' ? `not found in this organisation: ${e.message}` : e.message);
    throw e;
  }
}

function failed(name: string, args: Record<string, unknown>, why: string) {
  return { ok: false, arguments: args, content: { error: why }, rows: 0, truncated: false, summary: `${name} failed: ${why}`, citations: [] };
}
