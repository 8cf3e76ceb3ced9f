import { type Kysely, type Transaction, sql } from 'kysely';
import { logChanges } from '../events/changes.js';
import { canonicalIp, parseCidr } from '@surveyor/contract';
import type { DB } from '../db/schema.js';
import { assessChain, trustFromDates } from './certificates.js';
import { type Facts, mergeBy, orNull } from './facts.js';
import { type NewHostSummary, refreshHostSummaries, storeNewHostSummaries } from '../inventory/host-summaries.js';
import { resolveHosts } from './identity.js';
import * as repo from './ingest.repo.js';

/**
 * Who observed the facts, and so where they belong: a daemon, or a cloud account's sync
 * (`{ kind: 'cloud', accountId, ... }`), with the same common fields:
 *
 * - `organisationId`: the tenant of every row written.
 * - `siteId`: the identity scope. An unknown fingerprint joins a host of this site holding one of
 *   its MACs or addresses (overlapping private ranges of other sites never match), and new hosts
 *   are created in it. A cloud account passes the site its resources belong to, or null.
 * - `since`: the start of the observation round the facts belong to (a scan session's start; for
 *   a cloud sync, the start of the sync run). A row already seen since then is not rewritten, and
 *   every row the facts hold is left with `last_seen_at >= since`, so a caller that marks absent
 *   what it did not see (as a completed scan session does) compares against the same moment.
 * - `daemonId` (the daemon variant) / `accountId` (the cloud one): who observed, for the caller's
 *   events and records; reconcile itself writes nothing per observer.
 *
 * A cloud sync must also namespace its fingerprints (for example `aws:<account>:<instance id>`):
 * they are unique per organisation, shared with the daemons' keys.
 */
export type Source = DaemonSource | CloudSource;

interface SourceScope {
  organisationId: string;
  siteId: string | null;
  since: Date;
}

export interface DaemonSource extends SourceScope {
  kind: 'daemon';
  daemonId: string;
}

/** A cloud account's sync (issue 25): its fingerprints are `aws:<account>:<id>` or `k8s:<account>:<uid>`. */
export interface CloudSource extends SourceScope {
  kind: 'cloud';
  accountId: string;
}

export interface Reconciled {
  /** Rows of the facts that changed nothing in the inventory (a batch's dedupHits). */
  unchanged: number;
  /** Hosts that were created or had a fact created or changed (their sites' topologies are stale). */
  changedHostIds: string[];
}

/** What one step of the reconciliation did. */
interface Step {
  unchanged: number;
  changedHostIds: string[];
}

type HostOf = (fingerprint: string) => string;

/**
 * Reconciles observed facts into the inventory, inside the caller's transaction, with set-based
 * statements: host identity first (fingerprint, then MAC, then address, within the source's site),
 * then each kind of fact, as an upsert that writes only what changed or was not yet seen since
 * `source.since`. Idempotent: the same facts again, split or repeated, converge on the state of one
 * delivery; an absent field never erases. It never marks anything absent: that is the caller's rule.
 */
export async function reconcile(tx: Transaction<DB>, source: Source, facts: Facts): Promise<Reconciled> {
  await planByKeys(tx);
  const { hostOf, created } = await resolveHosts(tx, source, facts);
  const host: HostOf = (f) => hostOf.get(f)!;
  const hosts = await reconcileHosts(tx, source, facts, host, created);
  const addresses = await reconcileAddresses(tx, source, facts, host, created);
  const services = await reconcileServices(tx, source, facts, host, created);
  const certificates = await reconcileCertificates(tx, source, facts, host);
  // What a host page shows of the addresses, MACs and services just changed, stored on their hosts:
  // a new host's from the rows just inserted (all it has), the others' recomputed from their rows;
  // and, for those hosts and every host a certificate was written for, the state of their
  // certificates and the exposure of their services.
  await storeNewHostSummaries(tx, source.organisationId, newHostSummaries(created, addresses.fresh, services.fresh));
  await refreshHostSummaries(tx, source.organisationId, [...addresses.summaryHostIds, ...services.changedHostIds].filter((id) => !created.has(id)), certificates.writtenHostIds);
  const steps: Step[] = [
    hosts,
    addresses,
    services,
    certificates,
    await reconcileNeighbours(tx, source, facts, host),
    await reconcileVlans(tx, source, facts, host),
    await reconcilePlatformCpes(tx, source, facts, host),
    await reconcileRoutes(tx, source, facts, host),
    await reconcileLagGroups(tx, source, facts, host),
  ];
  // Every host the facts name was seen (a gone one is back): after the steps, which compare last-seen times with `since`.
  const back = await repo.touchHosts(tx, source.organisationId, source.since, [...new Set(hostOf.values())].sort());
  // (createHosts and upsertServices logged their own changes.)
  await logChanges(tx, source.organisationId, 'host', [...new Set([...hosts.updated, ...back])], 'updated');
  return {
    unchanged: steps.reduce((n, s) => n + s.unchanged, 0),
    changedHostIds: [...new Set([...steps.flatMap((s) => s.changedHostIds), ...back])],
  };
}

/**
 * Rows of hosts this reconciliation created (a first sighting: every row of theirs is new, and no
 * other transaction can write any before this one commits) apart from the rest, which need an upsert.
 */
function partitionByNewHost<T extends { hostId: string }>(rows: T[], created: Set<string>): [T[], T[]] {
  if (created.size === 0) return [[], rows];
  const fresh: T[] = [];
  const known: T[] = [];
  for (const r of rows) (created.has(r.hostId) ? fresh : known).push(r);
  return [fresh, known];
}

/**
 * Plans the rest of the transaction for rows in memory (or on SSD): a batch names up to a few
 * thousand hosts by key, and at PostgreSQL's default random_page_cost (4, a disk that seeks) the
 * planner prefers reading every host of the organisation (a scan of 65,536 hosts for each batch of
 * a /16 sweep, growing with the inventory) to a thousand primary-key probes; at 1.1, the usual
 * setting for SSD, it probes the keys. SET LOCAL: it ends with the transaction.
 */
async function planByKeys(tx: Transaction<DB>): Promise<void> {
  await sql`set local random_page_cost = 1.1`.execute(tx);
}

/**
 * What the page of each host created just now shows, from the rows inserted for it (all it has):
 * its addresses, its MACs (addresses' and interfaces'; a row with a null address carries only a
 * MAC) and its open services, as storeNewHostSummaries takes them.
 */
function newHostSummaries(created: Set<string>, addresses: { hostId: string; address: string | null; mac: string | null }[], services: repo.ServiceRow[]): NewHostSummary[] {
  const of = new Map<string, NewHostSummary>([...created].map((id) => [id, { hostId: id, addresses: [], macs: [], openPortCount: 0 }]));
  for (const a of addresses) {
    const h = of.get(a.hostId)!;
    if (a.address !== null) h.addresses.push(a.address);
    if (a.mac !== null) h.macs.push(a.mac);
  }
  for (const x of services) if ((x.state ?? 'open') === 'open') of.get(x.hostId)!.openPortCount++;
  return [...of.values()];
}

/** The keys of the written rows that were created or changed. */
function changedKeys<R extends { changed: boolean }>(written: R[], key: (r: R) => string): Set<string> {
  const out = new Set<string>();
  for (const r of written) if (r.changed) out.add(key(r));
  return out;
}

/** How many input rows map to a key (the row they were merged into) that did not change. */
function unchangedRows<T>(rows: T[], key: (row: T) => string, changed: Set<string>): number {
  if (changed.size === 0) return rows.length; // the steady state (a rescan): no key to build
  let n = 0;
  for (const r of rows) if (!changed.has(key(r))) n++;
  return n;
}

/** The hosts of changed keys: every changed key starts with its host id. */
const hostsOf = (changed: Set<string>) => [...changed].map((k) => k.split('|')[0]!);

/** A step's outcome over one kind of input rows. */
function step<T>(rows: T[], key: (row: T) => string, changed: Set<string>): Step {
  return { unchanged: unchangedRows(rows, key, changed), changedHostIds: hostsOf(changed) };
}

/** Host facts (names, OS, vendor, type, parent) filled in; returns also the existing hosts whose facts changed, to log. */
async function reconcileHosts(tx: Kysely<DB>, s: Source, f: Facts, host: HostOf, created: Set<string>): Promise<Step & { updated: string[] }> {
  const rows = mergeBy(
    f.hosts.map((h) => ({
      id: host(h.fingerprint), hostname: orNull(h.hostname), fqdn: orNull(h.fqdn), vendor: orNull(h.vendor), os: orNull(h.os), deviceType: orNull(h.deviceType),
      parentId: h.parentFingerprint ? host(h.parentFingerprint) : null,
    })),
    (h) => h.id,
  );
  // A host created just now already holds its facts; only its parent is still to set.
  const updated = await repo.updateHosts(tx, s.organisationId, s.since, rows.filter((h) => !(created.has(h.id) && h.parentId === null)));
  const changed = new Set([...updated.filter((h) => h.changed).map((h) => h.id), ...created]);
  return { ...step(f.hosts, (h) => host(h.fingerprint), changed), updated: updated.filter((h) => h.changed && !created.has(h.id)).map((h) => h.id) };
}

/**
 * Addresses (with MACs) from every fact that names one, and interfaces; only address rows count as
 * rows. `summaryHostIds`: the hosts with an address or interface created or given a MAC.
 */
async function reconcileAddresses(tx: Kysely<DB>, s: Source, f: Facts, host: HostOf, created: Set<string>): Promise<Step & { summaryHostIds: string[]; fresh: { hostId: string; address: string | null; mac: string | null }[] }> {
  const addresses = mergeBy(
    [
      ...f.addresses.map((x) => ({ hostId: host(x.fingerprint), address: x.address, mac: orNull(x.mac) })),
      ...f.hosts.flatMap((h) => (h.interfaces ?? []).flatMap((i) => (i.addresses ?? []).map((a) => ({ hostId: host(h.fingerprint), address: a, mac: orNull(i.mac) })))),
      ...addressesNamed([f.ports, f.services, f.certificates], host),
    ],
    (a) => `${a.hostId}|${a.address}`,
  );
  const [fresh, known] = partitionByNewHost(addresses, created);
  await repo.insertNewAddresses(tx, s.organisationId, fresh);
  const changed = changedKeys(await repo.upsertAddresses(tx, s.organisationId, s.since, known), (r) => `${r.host_id}|${canonicalIp(r.address)}`);
  for (const a of fresh) changed.add(`${a.hostId}|${a.address}`);
  const interfaces = mergeBy(f.hosts.flatMap((h) => (h.interfaces ?? []).map((i) => ({ hostId: host(h.fingerprint), name: i.name, mac: orNull(i.mac) }))), (i) => `${i.hostId}|${i.name}`);
  const changedInterfaces = (await repo.upsertInterfaces(tx, s.organisationId, s.since, interfaces)).filter((r) => r.changed).map((r) => r.host_id);
  const freshMacs = interfaces.filter((i) => i.mac !== null && created.has(i.hostId)).map((i) => ({ hostId: i.hostId, address: null, mac: i.mac }));
  return {
    ...step(f.addresses, (x) => `${host(x.fingerprint)}|${x.address}`, changed),
    summaryHostIds: [...hostsOf(changed), ...changedInterfaces],
    // The new hosts' address rows and interface MACs: all they have.
    fresh: [...fresh, ...freshMacs],
  };
}

/**
 * The address rows of the facts that only name an address (ports, services, certificates), one per
 * (host, address): a host's ten ports name one address, and a row without a MAC adds nothing to
 * the first (mergeBy), so the other nine are not built at all.
 */
function addressesNamed(kinds: { fingerprint: string; address: string }[][], host: HostOf): { hostId: string; address: string; mac: null }[] {
  const seen = new Set<string>();
  const out: { hostId: string; address: string; mac: null }[] = [];
  for (const rows of kinds) {
    for (const x of rows) {
      const k = `${x.fingerprint}|${x.address}`;
      if (seen.has(k)) continue;
      seen.add(k);
      out.push({ hostId: host(x.fingerprint), address: x.address, mac: null });
    }
  }
  return out;
}

/** Ports (state, banner) and what runs on them, merged per (host, protocol, port). */
async function reconcileServices(tx: Kysely<DB>, s: Source, f: Facts, host: HostOf, created: Set<string>): Promise<Step & { fresh: repo.ServiceRow[] }> {
  const key = (hostId: string, protocol: string, port: number) => `${hostId}|${protocol}|${port}`;
  const rows = mergeBy(
    [
      ...f.ports.map((x) => ({ hostId: host(x.fingerprint), protocol: x.protocol, port: x.port, address: x.address, state: x.state, banner: orNull(x.banner) })),
      ...f.services.map((x) => ({
        hostId: host(x.fingerprint), protocol: x.protocol, port: x.port, address: x.address, name: orNull(x.name), product: orNull(x.product), vendor: orNull(x.vendor),
        version: orNull(x.version), cpe: orNull(x.cpe), signatureId: orNull(x.signatureId), signatureSource: orNull(x.signatureSource), confidence: orNull(x.confidence), evidence: orNull(x.evidence),
      })),
    ],
    (x) => key(x.hostId, x.protocol, x.port),
  ).map((x) => ({
    state: null, banner: null, name: null, product: null, vendor: null, version: null, cpe: null, signatureId: null, signatureSource: null, confidence: null, evidence: null,
    ...x,
  })) as repo.ServiceRow[];
  const [fresh, known] = partitionByNewHost(rows, created);
  await repo.insertNewServices(tx, s.organisationId, fresh);
  const changed = new Set(await repo.upsertServices(tx, s.organisationId, s.since, known));
  for (const x of fresh) changed.add(key(x.hostId, x.protocol, x.port));
  const ofRow = (x: { fingerprint: string; protocol: string; port: number }) => key(host(x.fingerprint), x.protocol, x.port);
  return { unchanged: unchangedRows(f.ports, ofRow, changed) + unchangedRows(f.services, ofRow, changed), changedHostIds: hostsOf(changed), fresh };
}

/**
 * Certificates, read from their chain when there is one (subject, validity, trust), else from the
 * dates given. `writtenHostIds`: the hosts of every certificate inserted, changed or seen again (a
 * later last-seen may replace another certificate of its endpoint).
 */
async function reconcileCertificates(tx: Kysely<DB>, s: Source, f: Facts, host: HostOf): Promise<Step & { writtenHostIds: string[] }> {
  const now = new Date();
  const key = (hostId: string, port: number, sha256: string) => `${hostId}|${port}|${sha256}`;
  const rows = mergeBy(
    f.certificates.map((t) => {
      const assessed = t.chainPem?.length ? assessChain(t.chainPem, now) : null;
      const notBefore = assessed?.notBefore ?? new Date(t.notBefore!);
      const notAfter = assessed?.notAfter ?? new Date(t.notAfter!);
      return {
        hostId: host(t.fingerprint), address: t.address, port: t.port,
        subject: assessed?.subject ?? t.subject ?? '', issuer: assessed?.issuer ?? t.issuer ?? '', notBefore, notAfter,
        sha256: t.sha256, chainPem: t.chainPem ?? [], trustStatus: assessed?.trustStatus ?? trustFromDates(notBefore, notAfter, now),
      };
    }),
    (c) => key(c.hostId, c.port, c.sha256),
  );
  const written = await repo.upsertCertificates(tx, s.organisationId, s.since, rows);
  const changed = changedKeys(written, (r) => key(r.host_id, r.port, r.sha256));
  return { ...step(f.certificates, (x) => key(host(x.fingerprint), x.port, x.sha256), changed), writtenHostIds: [...new Set(written.map((r) => r.host_id))] };
}

/** Neighbours seen over LLDP or CDP, one row per (host, local interface, remote chassis). */
async function reconcileNeighbours(tx: Kysely<DB>, s: Source, f: Facts, host: HostOf): Promise<Step> {
  const key = (hostId: string, localInterface: string, remoteChassisId: string) => `${hostId}|${localInterface}|${remoteChassisId}`;
  const rows = mergeBy(f.neighbours.map((n) => ({
    hostId: host(n.fingerprint), localInterface: n.localInterface, remoteChassisId: n.remoteChassisId, remotePortId: orNull(n.remotePortId),
    remoteSystemName: orNull(n.remoteSystemName), managementAddress: orNull(n.managementAddress), protocol: orNull(n.protocol),
  })), (n) => key(n.hostId, n.localInterface, n.remoteChassisId));
  const changed = changedKeys(await repo.upsertNeighbors(tx, s.organisationId, s.since, rows), (r) => key(r.host_id, r.local_interface, r.remote_chassis_id));
  return step(f.neighbours, (x) => key(host(x.fingerprint), x.localInterface, x.remoteChassisId), changed);
}

/** The host's own CPEs (operating system, hardware): added to its set; those it stopped naming a month ago leave it. */
async function reconcilePlatformCpes(tx: Kysely<DB>, s: Source, f: Facts, host: HostOf): Promise<Step> {
  const reporting = f.hosts.filter((h) => h.cpes !== undefined);
  if (reporting.length === 0) return { unchanged: 0, changedHostIds: [] };
  const hostIds = [...new Set(reporting.map((h) => host(h.fingerprint)))];
  const rows = mergeBy(reporting.flatMap((h) => h.cpes!.map((c) => ({ hostId: host(h.fingerprint), cpe: c.toLowerCase() }))), (r) => `${r.hostId}|${r.cpe}`);
  const changed = await repo.reportPlatformCpes(tx, s.organisationId, rows, hostIds);
  if (changed.length > 0) {
    // What the host's services run on changed: cve.match matches them again (it reads changed services from the change log).
    const services = await tx.selectFrom('services').select('id').where('organisation_id', '=', s.organisationId).where('host_id', 'in', changed).where('gone_at', 'is', null).execute();
    await logChanges(tx, s.organisationId, 'service', services.map((x) => x.id), 'updated');
  }
  // Counted with the host rows (reconcileHosts): a changed set makes the host changed.
  return { unchanged: 0, changedHostIds: changed };
}

/** VLANs and their tagged and untagged members. */
async function reconcileVlans(tx: Kysely<DB>, s: Source, f: Facts, host: HostOf): Promise<Step> {
  const key = (hostId: string, vlanId: number) => `${hostId}|${vlanId}`;
  const rows = mergeBy(f.vlans.map((v) => ({ hostId: host(v.fingerprint), vlanId: v.vlanId, name: orNull(v.name), tagged: v.tagged ?? null, untagged: v.untagged ?? null })), (v) => key(v.hostId, v.vlanId));
  const changed = changedKeys(await repo.upsertVlans(tx, s.organisationId, s.since, rows), (r) => key(r.host_id, r.vlan_id));
  return step(f.vlans, (x) => key(host(x.fingerprint), x.vlanId), changed);
}

/** The network of a CIDR as PostgreSQL prints it (`10.1.2.3/8` → `10.0.0.0/8`): part of a route's key. */
function networkOf(cidr: string): string {
  const c = parseCidr(cidr)!;
  const bytes = c.bytes.map((b, i) => {
    const bits = Math.max(0, Math.min(8, c.prefix - i * 8));
    return b & (0xff << (8 - bits)) & 0xff;
  });
  const text = c.family === 4 ? bytes.join('.') : canonicalIp(Array.from({ length: 8 }, (_, i) => ((bytes[i * 2]! << 8) | bytes[i * 2 + 1]!).toString(16)).join(':'))!;
  return `${text}/${c.prefix}`;
}

/** Routes, one row per (host, destination network, interface). */
async function reconcileRoutes(tx: Kysely<DB>, s: Source, f: Facts, host: HostOf): Promise<Step> {
  const key = (hostId: string, destination: string, iface: string) => `${hostId}|${networkOf(destination)}|${iface}`;
  const rows = mergeBy(f.routes.map((r) => ({ hostId: host(r.fingerprint), destination: r.destination, nextHop: orNull(r.nextHop), iface: r.interface ?? '', metric: orNull(r.metric) })), (r) => key(r.hostId, r.destination, r.iface));
  const changed = changedKeys(await repo.upsertRoutes(tx, s.organisationId, s.since, rows), (r) => key(r.host_id, r.destination, r.interface));
  return step(f.routes, (x) => key(host(x.fingerprint), x.destination, x.interface ?? ''), changed);
}

/** Link aggregation groups and their members. */
async function reconcileLagGroups(tx: Kysely<DB>, s: Source, f: Facts, host: HostOf): Promise<Step> {
  const key = (hostId: string, name: string) => `${hostId}|${name}`;
  const rows = mergeBy(f.lagGroups.map((l) => ({ hostId: host(l.fingerprint), name: l.name, protocol: orNull(l.protocol), members: l.members ?? null })), (l) => key(l.hostId, l.name));
  const changed = changedKeys(await repo.upsertLagGroups(tx, s.organisationId, s.since, rows), (r) => key(r.host_id, r.name));
  return step(f.lagGroups, (x) => key(host(x.fingerprint), x.name), changed);
}
