import { createHash } from 'node:crypto';
import { parseCidr } from '@surveyor/contract';
import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.js';
import { logChanges } from '../events/changes.js';
import { refreshHostSummaries } from '../inventory/host-summaries.js';
import { insertNetwork } from '../inventory/inventory.repo.js';
import type { Facts } from '../ingest/facts.js';
import { type CloudSource, reconcile } from '../ingest/reconcile.js';
import { ProviderError } from '../jobs/runner.js';
import { markTopologiesStale } from '../topology/dependencies.js';
import { AppError } from '../errors.js';
import { type OpenedAccount, claimSync, openAccount, recordSync, releaseSync, setProviderAccount } from './accounts.js';
import * as repo from './cloud.repo.js';
import type { CloudInventory, CloudMachine, CloudNetwork } from './inventory.js';

// One sync of one cloud account: collect what the provider lists, reconcile what changed since the
// previous sync into the inventory (through the same `reconcile` as the daemons' observations),
// keep the provider's record of each resource beside its host, and mark gone what it no longer
// lists. A second sync with nothing changed writes nothing to the resources or the inventory (each
// resource's content hash is compared), only its outcome on the account, and once an hour the
// last-seen time of the hosts it still lists.

/** What the collectors of a kind do (cloud/aws.ts, cloud/kubernetes.ts), given an opened account. */
export interface Collector {
  collect(account: OpenedAccount, opts: { signal?: AbortSignal | undefined }): Promise<CloudInventory>;
  test(account: OpenedAccount, opts: { signal?: AbortSignal | undefined }): Promise<{ detail: string; providerAccount: string | null }>;
}
export type Collectors = Record<OpenedAccount['kind'], Collector>;

export interface SyncOutcome {
  accountId: string;
  status: 'ok';
  durationMs: number;
  counts: { resources: number; hosts: number; changed: number; gone: number };
  warnings: string[];
}

/** Resources reconciled per transaction: a 50,000-instance account is not one long transaction. */
const CHUNK = 2_000;
/** Hosts an account still lists have their last-seen time moved at most this often. */
const TOUCH_EVERY_MS = 3_600_000;
/** Machine kinds that are hosts (a Kubernetes ingress is a route to services, not a host). */
const HOST_KINDS = new Set<CloudMachine['kind']>(['instance', 'interface', 'node', 'pod', 'service']);
/** Provider states of a resource that no longer exists, though it is still listed a while (AWS lists a terminated instance for about an hour). */
const ENDED = new Set(['terminated', 'shutting-down']);

const DEVICE_TYPE: Record<CloudMachine['kind'], string> = { instance: 'cloud instance', interface: 'cloud network interface', node: 'kubernetes node', pod: 'kubernetes pod', service: 'kubernetes service', ingress: 'kubernetes ingress' };

/** A resource's key among the host fingerprints: namespaced by account, so no daemon's key collides. */
export const fingerprintOf = (account: Pick<OpenedAccount, 'kind' | 'id'>, providerId: string) => `${account.kind === 'aws' ? 'aws' : 'k8s'}:${account.id}:${providerId}`;

interface ResourceRow {
  providerId: string;
  kind: CloudMachine['kind'] | CloudNetwork['kind'];
  name: string | null;
  state: string;
  location: string | null;
  publicAddresses: string[];
  labels: Record<string, string>;
  data: Record<string, unknown>;
  inbound: unknown[];
  ports: unknown[];
  hash: string;
  machine: CloudMachine | null;
}

const hashOf = (v: unknown) => createHash('sha256').update(JSON.stringify(v)).digest('base64url');

function rowOfMachine(m: CloudMachine): ResourceRow {
  const data = { ...m.details, privateAddresses: m.privateAddresses, os: m.os };
  return {
    providerId: m.providerId, kind: m.kind, name: m.name, state: m.state, location: m.location, publicAddresses: m.publicAddresses, labels: m.labels, data,
    inbound: m.inbound, ports: m.ports, hash: hashOf([m.kind, m.name, m.state, m.location, m.publicAddresses, m.labels, data, m.inbound, m.ports]), machine: m,
  };
}

function rowOfNetwork(n: CloudNetwork): ResourceRow {
  const data = { cidrs: n.cidrs, parentId: n.parentId ?? null };
  return { providerId: n.providerId, kind: n.kind, name: n.name, state: '', location: n.location, publicAddresses: [], labels: {}, data, inbound: [], ports: [], hash: hashOf([n.kind, n.name, n.location, data]), machine: null };
}

/** Whether a machine is a host in the inventory: a kind that is, not ended, with an address. */
const isHost = (m: CloudMachine) => HOST_KINDS.has(m.kind) && !ENDED.has(m.state) && m.privateAddresses.length + m.publicAddresses.length > 0;

/** The facts of machines, for `reconcile`: each a host with its addresses, and a Kubernetes service's ports open. */
export function factsOf(account: Pick<OpenedAccount, 'kind' | 'id'>, machines: CloudMachine[]): Facts {
  const f: Facts = { hosts: [], addresses: [], ports: [], services: [], certificates: [], neighbours: [], vlans: [], routes: [], lagGroups: [] };
  for (const m of machines) {
    const fingerprint = fingerprintOf(account, m.providerId);
    const name = m.name ?? undefined;
    f.hosts.push({ fingerprint, hostname: name, os: m.os ?? undefined, deviceType: DEVICE_TYPE[m.kind] });
    const addresses = [...m.privateAddresses, ...m.publicAddresses];
    for (const address of addresses) f.addresses.push({ fingerprint, address });
    const at = addresses[0];
    if (!at) continue;
    for (const p of m.ports) {
      f.ports.push({ fingerprint, address: at, protocol: p.protocol, port: p.port, state: 'open' });
      if (p.name) f.services.push({ fingerprint, address: at, protocol: p.protocol, port: p.port, name: p.name });
    }
  }
  return f;
}

/**
 * Syncs one account now: the sync's start is the `since` of its reconciliation. A provider failure
 * is recorded on the account (its outcome, the provider's words) and thrown again for the job's
 * retry rules (a 5xx or a timeout is retried, a 4xx is not).
 */
export async function syncAccount(db: Kysely<DB>, key: Buffer, collectors: Collectors, organisationId: string, accountId: string, opts: { now?: Date; signal?: AbortSignal } = {}): Promise<SyncOutcome> {
  const account = await openAccount(db, key, organisationId, accountId); // 404 before any wait
  const lease = await waitForAccount(accountId, () => claimSync(db, organisationId, accountId, LEASE_MS), opts.signal);
  try {
    return await syncOpened(db, collectors, account, opts);
  } finally {
    await releaseSync(db, organisationId, accountId, lease);
  }
}

/** Syncs the account unless another sync holds it now (a scheduled tick leaves it to that one): null then. */
export async function syncIfFree(db: Kysely<DB>, key: Buffer, collectors: Collectors, organisationId: string, accountId: string, opts: { signal?: AbortSignal } = {}): Promise<SyncOutcome | null> {
  const account = await openAccount(db, key, organisationId, accountId);
  const lease = await claimSync(db, organisationId, accountId, LEASE_MS);
  if (!lease) return null;
  try {
    return await syncOpened(db, collectors, account, opts);
  } finally {
    await releaseSync(db, organisationId, accountId, lease);
  }
}

/** How long a sync may hold its account: past it, a sync that died is taken over (a sync of 50,000 instances takes a minute or two). */
const LEASE_MS = 30 * 60_000;
/** How long a sync asked for now waits for one in progress (as `runNow` waits for a job's lock). */
const WAIT_MS = 120_000;

async function waitForAccount(accountId: string, claim: () => Promise<string | null>, signal: AbortSignal | undefined): Promise<string> {
  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    const lease = await claim();
    if (lease) return lease;
    if (Date.now() >= deadline || signal?.aborted) throw new AppError('conflict', `Cloud account ${accountId} is being synced by another run; try again when it has finished.`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

async function syncOpened(db: Kysely<DB>, collectors: Collectors, account: OpenedAccount, opts: { now?: Date; signal?: AbortSignal | undefined }): Promise<SyncOutcome> {
  const { organisationId, id: accountId } = account;
  const started = opts.now ?? new Date();
  const t0 = performance.now();
  let inventory: CloudInventory;
  try {
    inventory = await collectors[account.kind].collect(account, { signal: opts.signal });
  } catch (err) {
    const error = err instanceof ProviderError ? err.message : `the ${account.kind === 'aws' ? 'AWS' : 'Kubernetes'} collection failed: ${String((err as Error)?.message ?? err)}`;
    await recordSync(db, organisationId, accountId, { at: started, ms: Math.round(performance.now() - t0), status: 'failed', error: error.slice(0, 2000), counts: {}, warnings: [] });
    throw err;
  }
  let counts: SyncOutcome['counts'];
  try {
    counts = await store(db, account, inventory, started);
  } catch (err) {
    // What was written stays (each chunk is whole); the account says the sync did not finish.
    await recordSync(db, organisationId, accountId, { at: started, ms: Math.round(performance.now() - t0), status: 'failed', error: `storing what the provider listed failed: ${String((err as Error)?.message ?? err)}`.slice(0, 2000), counts: {}, warnings: inventory.warnings });
    throw err;
  }
  const outcome: SyncOutcome = { accountId, status: 'ok', durationMs: Math.round(performance.now() - t0), counts, warnings: inventory.warnings };
  await recordSync(db, organisationId, accountId, { at: started, ms: outcome.durationMs, status: 'ok', error: null, counts, warnings: inventory.warnings, cursor: inventory.cursor });
  return outcome;
}

/** Tests an account's credentials (one cheap read); records what the provider calls the account. */
export async function testAccount(db: Kysely<DB>, key: Buffer, collectors: Collectors, organisationId: string, accountId: string) {
  const account = await openAccount(db, key, organisationId, accountId);
  try {
    const r = await collectors[account.kind].test(account, {});
    await setProviderAccount(db, organisationId, accountId, r.providerAccount);
    return { ok: true, detail: r.detail, providerAccount: r.providerAccount };
  } catch (err) {
    if (!(err instanceof ProviderError) && !isNetworkError(err)) throw err;
    return { ok: false, detail: String((err as Error).message), providerAccount: null };
  }
}

const isNetworkError = (err: unknown) => typeof (err as { code?: unknown })?.code === 'string' && /^E[A-Z]+$/.test((err as { code: string }).code);

/** Writes what changed since the previous sync, then marks gone what is no longer listed. */
async function store(db: Kysely<DB>, account: OpenedAccount, inventory: CloudInventory, started: Date): Promise<SyncOutcome['counts']> {
  const org = account.organisationId;
  const listed = [...inventory.machines.filter((m) => !ENDED.has(m.state)).map(rowOfMachine), ...inventory.networks.map(rowOfNetwork)];
  const known = new Map((await repo.knownResources(db, org, account.id)).map((r) => [r.provider_id, r]));
  // New, changed, back from gone, or a host that was deleted meanwhile (its row lost its host_id).
  const changed = listed.filter((r) => {
    const k = known.get(r.providerId);
    return !k || k.content_hash !== r.hash || k.gone || (r.machine !== null && isHost(r.machine) && k.host_id === null);
  });
  const changedIds = new Set(changed.map((r) => r.providerId));
  const hostIds = new Set<string>();
  for (const r of listed) {
    const h = known.get(r.providerId)?.host_id;
    if (h && !changedIds.has(r.providerId)) hostIds.add(h);
  }
  // A resource still listed that is no longer a host (a pod that finished, a service made headless) leaves its host behind.
  const leftBehind = new Set(changed.flatMap((r) => {
    const h = known.get(r.providerId)?.host_id;
    return h && !(r.machine && isHost(r.machine)) ? [h] : [];
  }));
  for (let i = 0; i < changed.length; i += CHUNK) {
    for (const h of await writeChunk(db, account, changed.slice(i, i + CHUNK), started, (id) => !known.has(id))) hostIds.add(h);
  }
  const listedIds = new Set(listed.map((r) => r.providerId));
  const goneIds = inventory.partial?.all ? [] : [...known.values()].filter((k) => !k.gone && !listedIds.has(k.provider_id) && !unlisted(inventory, k)).map((k) => k.provider_id);
  for (const h of hostIds) leftBehind.delete(h);
  if (goneIds.length > 0 || leftBehind.size > 0) await markGone(db, account, goneIds, [...leftBehind]);
  await repo.touchListedHosts(db, org, [...hostIds], TOUCH_EVERY_MS);
  return { resources: listed.length, hosts: hostIds.size, changed: changed.length, gone: goneIds.length };
}

/** Whether a resource lies where the collection was partial (a region skipped, a kind not readable): its absence proves nothing. */
function unlisted(inventory: CloudInventory, r: { kind: string; location: string | null }): boolean {
  const p = inventory.partial;
  return !!p && ((!!r.location && !!p.locations?.includes(r.location)) || !!p.kinds?.includes(r.kind as CloudMachine['kind']));
}

/** One transaction: the chunk's hosts reconciled, its resource rows written with their hosts. Returns the host ids. */
async function writeChunk(db: Kysely<DB>, account: OpenedAccount, rows: ResourceRow[], started: Date, isNew: (providerId: string) => boolean): Promise<string[]> {
  const org = account.organisationId;
  return db.transaction().execute(async (trx) => {
    const machines = rows.flatMap((r) => (r.machine && isHost(r.machine) ? [r.machine] : []));
    const source: CloudSource = { kind: 'cloud', organisationId: org, siteId: account.siteId, since: started, accountId: account.id };
    const reconciled = machines.length > 0 ? await reconcile(trx, source, factsOf(account, machines)) : { changedHostIds: [] };
    const fingerprints = machines.map((m) => fingerprintOf(account, m.providerId));
    const hostOf = await repo.hostsOfFingerprints(trx, org, fingerprints);
    const values = rows.map((r) => ({
      provider_id: r.providerId, kind: r.kind, host_id: r.machine && isHost(r.machine) ? (hostOf.get(fingerprintOf(account, r.providerId)) ?? null) : null, name: r.name, state: r.state, location: r.location,
      public_addresses: r.publicAddresses, labels: r.labels, data: r.data, inbound: r.inbound, ports: r.ports, content_hash: r.hash,
    }));
    // The exposure of the services of the hosts these resources are, or were, stored on them.
    await refreshHostSummaries(trx, org, [], await repo.upsertResources(trx, org, account.id, values));
    // A VPC or subnet first listed becomes a network of the account's site (unscheduled: scanning it
    // stays the operator's choice); a CIDR the organisation already has is left as it is, and one
    // the operator deleted is not made again (only a resource new to the account creates one).
    for (const r of rows) {
      if ((r.kind !== 'vpc' && r.kind !== 'subnet') || !isNew(r.providerId)) continue;
      for (const cidr of ((r.data.cidrs as string[] | undefined) ?? []).filter((c) => parseCidr(c)?.hostBitsZero)) {
        const name = `${r.name ?? r.providerId} (AWS ${r.kind === 'vpc' ? 'VPC' : 'subnet'}${r.location ? ` ${r.location}` : ''})`.slice(0, 200);
        await insertNetwork(trx, { organisationId: org, siteId: account.siteId, name, cidr, excludeCidrs: [], scanIntervalMinutes: null, topPortsTcp: 1000, topPortsUdp: 0, nmapEnabled: false, nmapScripts: [] });
      }
    }
    if (reconciled.changedHostIds.length > 0) await markTopologiesStale(trx, org, { hostIds: reconciled.changedHostIds, serviceIds: [] });
    return [...new Set(values.flatMap((v) => (v.host_id ? [v.host_id] : [])))];
  });
}

/**
 * Resources no longer listed are gone; so are their hosts (and `leftBehind`, hosts of resources that
 * stopped being hosts), unless another account still lists them or a daemon observed them: a sync
 * never removes what a daemon saw (a completed scan decides for those).
 */
async function markGone(db: Kysely<DB>, account: OpenedAccount, providerIds: string[], leftBehind: string[]): Promise<void> {
  const org = account.organisationId;
  await db.transaction().execute(async (trx) => {
    const candidates = [...new Set([...(providerIds.length > 0 ? await repo.markResourcesGone(trx, org, account.id, providerIds) : []), ...leftBehind])];
    if (candidates.length === 0) return;
    const ids = await repo.markHostsGone(trx, org, candidates);
    await logChanges(trx, org, 'host', ids, 'updated');
    // Their services are no longer exposed through the resources gone.
    await refreshHostSummaries(trx, org, [], candidates);
    if (ids.length > 0) await markTopologiesStale(trx, org, { hostIds: ids, serviceIds: [] });
  });
}

/** The hosts an account still lists were seen now: their last-seen time moves, at most once an hour (a sync every few minutes does not rewrite them). */
