import { createHash } from 'node:crypto';
import type { ObservationsRequest } from '@surveyor/contract';
import type { Kysely } from 'kysely';
import type { z } from 'zod';
import type { DaemonPrincipal } from '../daemons/daemons.service.js';
import { ownDaemon } from '../daemons/daemons.service.js';
import type { DB } from '../db/schema.js';
import { AppError } from '../errors.js';
import { canonicalIp, parseCidr } from '@surveyor/contract';
import { assessChain, trustFromDates } from './certificates.js';
import { ingestFlows } from './flows.js';
import { isIdentifyingMac } from './identity.js';
import * as repo from './ingest.repo.js';
import { markTopologiesStale } from '../topology/dependencies.js';
import { emitEvents } from '../events/events.js';

type Batch = z.output<typeof ObservationsRequest>;

/**
 * Keeps one row per key, merging later rows into the first so a later absent value never erases
 * an earlier one. Rows are the caller's own freshly mapped objects: they are merged in place.
 */
function mergeBy<T extends object>(items: T[], key: (t: T) => string): T[] {
  const out = new Map<string, T>();
  for (const item of items) {
    const k = key(item);
    const prev = out.get(k) as Record<string, unknown> | undefined;
    if (prev === undefined) {
      out.set(k, item);
      continue;
    }
    const next = item as Record<string, unknown>;
    for (const f in next) {
      const v = next[f];
      if (v !== undefined && v !== null) prev[f] = v;
    }
  }
  return [...out.values()];
}

const orNull = <T>(v: T | undefined): T | null => (v === undefined ? null : v);

/** The network of a CIDR as PostgreSQL prints it (`10.1.2.3/8` → `10.0.0.0/8`). */
function networkOf(cidr: string): string {
  const c = parseCidr(cidr)!;
  const bytes = c.bytes.map((b, i) => {
    const bits = Math.max(0, Math.min(8, c.prefix - i * 8));
    return b & (0xff << (8 - bits)) & 0xff;
  });
  const text = c.family === 4 ? bytes.join('.') : canonicalIp(Array.from({ length: 8 }, (_, i) => ((bytes[i * 2]! << 8) | bytes[i * 2 + 1]!).toString(16)).join(':'))!;
  return `${text}/${c.prefix}`;
}

/**
 * Reconciles one batch of observations into the inventory, in one transaction, with set-based
 * statements. Idempotent: a replayed, split or duplicated batch converges on the state of one
 * clean delivery; absent fields never erase; only the final batch of a session that completes
 * marks things absent within its CIDR. Returns the rows taken and those that changed nothing.
 */
export async function ingestObservations(db: Kysely<DB>, p: DaemonPrincipal, b: Batch): Promise<{ accepted: number; dedupHits: number }> {
  const daemon = await ownDaemon(db, p);
  const org = p.organisationId;
  return db.transaction().execute(async (trx) => {
    const session = await repo.lockSession(trx, org, b.sessionId, daemon.id);
    if (!session) throw new AppError('not_found', `No scan session ${b.sessionId} for this daemon.`);
    if (session.state === 'cancelled') throw new AppError('session_cancelled', 'The scan session was cancelled; stop sending its batches.');
    const since = session.since;

    // An identical batch this session already applied (a retry after a lost answer) changes
    // nothing by construction: answer it at once. The digest covers the validated, normalised batch.
    const rowsInBatch = b.hosts.length + b.ips.length + b.ports.length + b.services.length + b.neighbors.length + b.vlans.length + b.routes.length + b.lagGroups.length + b.tls.length;
    const digest = createHash('sha256').update(JSON.stringify({ ...b, flows: [] })).digest('hex');
    if (await repo.batchSeen(trx, org, b.sessionId, digest)) return { accepted: rowsInBatch, dedupHits: rowsInBatch };
    await repo.recordBatch(trx, org, b.sessionId, digest, rowsInBatch);

    // 1. Which host each fingerprint names: known, or matched by MAC then address within the site, or new.
    const fingerprints = new Set<string>();
    for (const h of b.hosts) {
      fingerprints.add(h.fingerprint);
      if (h.parentFingerprint) fingerprints.add(h.parentFingerprint);
    }
    for (const x of b.ips) fingerprints.add(x.hostFingerprint);
    for (const arr of [b.ports, b.services, b.neighbors, b.vlans, b.routes, b.lagGroups, b.tls]) for (const x of arr) fingerprints.add(x.fingerprint);
    const hostOf = new Map((await repo.knownFingerprints(trx, org, [...fingerprints])).map((r) => [r.fingerprint, r.host_id]));
    const unknown = [...fingerprints].filter((f) => !hostOf.has(f)).sort();
    const createdHosts = new Set<string>();
    if (unknown.length) {
      const macsOf = new Map<string, Set<string>>();
      const addrsOf = new Map<string, Set<string>>();
      const add = (m: Map<string, Set<string>>, f: string, v: string | undefined) => {
        if (v) (m.get(f) ?? m.set(f, new Set()).get(f)!).add(v);
      };
      for (const x of b.ips) {
        add(macsOf, x.hostFingerprint, x.mac);
        add(addrsOf, x.hostFingerprint, x.address);
      }
      for (const h of b.hosts) for (const i of h.interfaces ?? []) {
        add(macsOf, h.fingerprint, i.mac);
        for (const a of i.addresses ?? []) add(addrsOf, h.fingerprint, a);
      }
      for (const arr of [b.ports, b.services, b.tls]) for (const x of arr) add(addrsOf, x.fingerprint, x.address);
      const unknownSet = new Set(unknown);
      const macs = [...new Set([...macsOf].filter(([f]) => unknownSet.has(f)).flatMap(([, m]) => [...m]))].filter(isIdentifyingMac);
      const addrs = [...new Set([...addrsOf].filter(([f]) => unknownSet.has(f)).flatMap(([, a]) => [...a]))];
      const byMac = new Map<string, string>();
      for (const r of (await repo.hostsByMac(trx, org, session.site_id, macs)).sort((x, y) => x.host_id.localeCompare(y.host_id))) if (!byMac.has(r.mac)) byMac.set(r.mac, r.host_id);
      const byAddr = new Map<string, string>();
      for (const r of (await repo.hostsByAddress(trx, org, session.site_id, addrs)).sort((x, y) => x.host_id.localeCompare(y.host_id))) if (!byAddr.has(r.address)) byAddr.set(r.address, r.host_id);
      // Unknown fingerprints of this batch that share an identifying MAC (else an address) are one host,
      // whether they arrive together or apart.
      const group = new Map<string, string>(unknown.map((f) => [f, f]));
      const find = (f: string): string => (group.get(f) === f ? f : find(group.get(f)!));
      const unite = (index: Map<string, Set<string>>, usable: (v: string) => boolean) => {
        const firstOf = new Map<string, string>();
        for (const f of unknown) {
          for (const v of [...(index.get(f) ?? [])].filter(usable).sort()) {
            const other = firstOf.get(v);
            if (other) {
              const [a, b] = [find(f), find(other)].sort() as [string, string];
              group.set(b, a);
            } else firstOf.set(v, f);
          }
        }
      };
      unite(macsOf, isIdentifyingMac);
      unite(addrsOf, () => true);
      const members = new Map<string, string[]>();
      for (const f of unknown) (members.get(find(f)) ?? members.set(find(f), []).get(find(f))!).push(f);
      const links: { fingerprint: string; hostId: string }[] = [];
      const fresh: string[] = [];
      const followers: { fingerprint: string; leader: string }[] = [];
      for (const [leader, fs] of members) {
        const macs = fs.flatMap((f) => [...(macsOf.get(f) ?? [])]).filter(isIdentifyingMac).sort();
        const addrs = fs.flatMap((f) => [...(addrsOf.get(f) ?? [])]).sort();
        const match = macs.map((m) => byMac.get(m)).find(Boolean) ?? addrs.map((a) => byAddr.get(a)).find(Boolean);
        if (match) for (const f of fs) links.push({ fingerprint: f, hostId: match });
        else {
          fresh.push(leader);
          for (const f of fs) if (f !== leader) followers.push({ fingerprint: f, leader });
        }
      }
      await repo.linkFingerprints(trx, org, links);
      // A new host is inserted with its facts (merged over its fingerprints, later rows winning),
      // so it is written once rather than inserted and then updated.
      const leaderOf = new Map<string, string>();
      for (const leader of fresh) for (const f of members.get(leader)!) leaderOf.set(f, leader);
      const newHosts = mergeBy(
        [
          ...fresh.map((leader) => ({ fingerprint: leader, hostname: null, fqdn: null, vendor: null, os: null, deviceType: null })),
          ...b.hosts.filter((h) => leaderOf.has(h.fingerprint)).map((h) => ({
            fingerprint: leaderOf.get(h.fingerprint)!, hostname: orNull(h.hostname), fqdn: orNull(h.fqdn), vendor: orNull(h.vendor), os: orNull(h.os), deviceType: orNull(h.deviceType),
          })),
        ],
        (h) => h.fingerprint,
      );
      for (const h of await repo.createHosts(trx, org, session.site_id, newHosts)) createdHosts.add(h.id);
      await repo.linkToLeaders(trx, org, followers);
      for (const r of await repo.knownFingerprints(trx, org, unknown)) hostOf.set(r.fingerprint, r.host_id);
    }
    const host = (f: string) => hostOf.get(f)!;

    // 2. Facts, each a set-based upsert that writes only what changed (or was not yet seen this
    //    session). Each input row is a dedup hit unless the row it maps to was created or changed.
    const changed = new Map<string, Set<string>>();
    const mark = (kind: string, key: string) => (changed.get(kind) ?? changed.set(kind, new Set()).get(kind)!).add(key);
    const hits = <T>(kind: string, items: T[], key: (x: T) => string) => {
      const keys = changed.get(kind);
      if (!keys) return items.length;
      let n = 0;
      for (const x of items) if (!keys.has(key(x))) n++;
      return n;
    };

    const hostFacts = mergeBy(
      b.hosts.map((h) => ({
        id: host(h.fingerprint),
        hostname: orNull(h.hostname),
        fqdn: orNull(h.fqdn),
        vendor: orNull(h.vendor),
        os: orNull(h.os),
        deviceType: orNull(h.deviceType),
        parentId: h.parentFingerprint ? host(h.parentFingerprint) : null,
      })),
      (h) => h.id,
    );
    const updatedHosts = await repo.updateHosts(trx, org, since, hostFacts.filter((h) => !(createdHosts.has(h.id) && h.parentId === null)));
    for (const h of updatedHosts) if (h.changed) mark('host', h.id);
    for (const id of createdHosts) mark('host', id);

    const addresses = mergeBy(
      [
        ...b.ips.map((x) => ({ hostId: host(x.hostFingerprint), address: x.address, mac: orNull(x.mac) })),
        ...b.hosts.flatMap((h) => (h.interfaces ?? []).flatMap((i) => (i.addresses ?? []).map((a) => ({ hostId: host(h.fingerprint), address: a, mac: orNull(i.mac) })))),
        ...[...b.ports, ...b.services, ...b.tls].map((x) => ({ hostId: host(x.fingerprint), address: x.address, mac: null })),
      ],
      (a) => `${a.hostId}|${a.address}`,
    );
    for (const r of await repo.upsertAddresses(trx, org, since, addresses)) if (r.changed) mark('ip', `${r.host_id}|${canonicalIp(r.address)}`);
    await repo.upsertInterfaces(
      trx, org, since,
      mergeBy(b.hosts.flatMap((h) => (h.interfaces ?? []).map((i) => ({ hostId: host(h.fingerprint), name: i.name, mac: orNull(i.mac) }))), (i) => `${i.hostId}|${i.name}`),
    );

    const serviceKey = (hostId: string, protocol: string, port: number) => `${hostId}|${protocol}|${port}`;
    const services = mergeBy(
      [
        ...b.ports.map((x) => ({ hostId: host(x.fingerprint), protocol: x.protocol, port: x.number, address: x.address, state: x.state, banner: orNull(x.banner) })),
        ...b.services.map((x) => ({
          hostId: host(x.fingerprint), protocol: x.protocol, port: x.port, address: x.address, name: orNull(x.name), product: orNull(x.product), vendor: orNull(x.vendor),
          version: orNull(x.version), cpe: orNull(x.cpe), signatureId: orNull(x.signatureId), signatureSource: orNull(x.signatureSource), confidence: orNull(x.confidence), evidence: orNull(x.evidence),
        })),
      ],
      (x) => serviceKey(x.hostId, x.protocol, x.port),
    ).map((x) => ({
      state: null, banner: null, name: null, product: null, vendor: null, version: null, cpe: null, signatureId: null, signatureSource: null, confidence: null, evidence: null,
      ...x,
    })) as repo.ServiceFacts[];
    const changedServices = await repo.upsertServices(trx, org, since, services);
    for (const key of changedServices) mark('service', key);

    const now = new Date();
    const certs = mergeBy(
      b.tls.map((t) => {
        const assessed = t.chainPem?.length ? assessChain(t.chainPem, now) : null;
        const notBefore = assessed?.notBefore ?? new Date(t.notBefore!);
        const notAfter = assessed?.notAfter ?? new Date(t.notAfter!);
        return {
          hostId: host(t.fingerprint), address: t.address, port: t.port,
          subject: assessed?.subject ?? t.subject ?? '', issuer: assessed?.issuer ?? t.issuer ?? '', notBefore, notAfter,
          sha256: t.sha256, chainPem: t.chainPem ?? [], trustStatus: assessed?.trustStatus ?? trustFromDates(notBefore, notAfter, now),
        };
      }),
      (c) => `${c.hostId}|${c.port}|${c.sha256}`,
    );
    for (const r of await repo.upsertCertificates(trx, org, since, certs)) if (r.changed) mark('tls', `${r.host_id}|${r.port}|${r.sha256}`);

    const neighbours = mergeBy(b.neighbors.map((n) => ({
      hostId: host(n.fingerprint), localInterface: n.localInterface, remoteChassisId: n.remoteChassisId, remotePortId: orNull(n.remotePortId),
      remoteSystemName: orNull(n.remoteSystemName), managementAddress: orNull(n.managementAddress), protocol: orNull(n.protocol),
    })), (n) => `${n.hostId}|${n.localInterface}|${n.remoteChassisId}`);
    for (const r of await repo.upsertNeighbors(trx, org, since, neighbours)) if (r.changed) mark('neighbor', `${r.host_id}|${r.local_interface}|${r.remote_chassis_id}`);
    const vlans = mergeBy(b.vlans.map((v) => ({ hostId: host(v.fingerprint), vlanId: v.vlanId, name: orNull(v.name), tagged: v.tagged ?? null, untagged: v.untagged ?? null })), (v) => `${v.hostId}|${v.vlanId}`);
    for (const r of await repo.upsertVlans(trx, org, since, vlans)) if (r.changed) mark('vlan', `${r.host_id}|${r.vlan_id}`);
    const routeKey = (hostId: string, destination: string, iface: string) => `${hostId}|${networkOf(destination)}|${iface}`;
    const routes = mergeBy(b.routes.map((r) => ({ hostId: host(r.fingerprint), destination: r.destination, nextHop: orNull(r.nextHop), iface: r.interface ?? '', metric: orNull(r.metric) })), (r) => routeKey(r.hostId, r.destination, r.iface));
    for (const r of await repo.upsertRoutes(trx, org, since, routes)) if (r.changed) mark('route', routeKey(r.host_id, r.destination, r.interface));
    const lags = mergeBy(b.lagGroups.map((l) => ({ hostId: host(l.fingerprint), name: l.name, protocol: orNull(l.protocol), members: l.members ?? null })), (l) => `${l.hostId}|${l.name}`);
    for (const r of await repo.upsertLagGroups(trx, org, since, lags)) if (r.changed) mark('lag', `${r.host_id}|${r.name}`);

    // 3. The session: progress, state; a session completing now marks absent what it did not see.
    const state = await repo.advanceSession(trx, org, b.sessionId, { final: b.final, ...b.stats });
    const completedNow = session.state !== 'completed' && session.state !== 'failed' && state === 'completed';
    const gone = completedNow ? await repo.markAbsent(trx, org, session) : [];
    if (completedNow) {
      await emitEvents(trx, org, [{ kind: 'scan.completed', severity: 'info', subjectType: 'scan_session', subjectId: b.sessionId, data: { cidr: session.cidr, daemonId: daemon.id, goneServices: gone.length, ...b.stats } }]);
    }

    // (createHosts and upsertServices logged their own changes.)
    await repo.logChanges(trx, org, 'host', updatedHosts.filter((h) => h.changed && !createdHosts.has(h.id)).map((h) => ({ id: h.id, action: 'updated' as const })));
    await repo.logChanges(trx, org, 'service', gone.map((id) => ({ id, action: 'updated' as const })));

    // Built topologies of the changed hosts' sites no longer describe the inventory. Every change
    // key starts with its host id.
    if (changed.size > 0 || gone.length > 0) {
      const hostIds = [...changed.values()].flatMap((keys) => [...keys].map((k) => k.split('|')[0]!));
      await markTopologiesStale(trx, org, { hostIds, serviceIds: gone });
    }

    const dedupHits =
      hits('host', b.hosts, (h) => host(h.fingerprint)) +
      hits('ip', b.ips, (x) => `${host(x.hostFingerprint)}|${x.address}`) +
      hits('service', b.ports, (x) => serviceKey(host(x.fingerprint), x.protocol, x.number)) +
      hits('service', b.services, (x) => serviceKey(host(x.fingerprint), x.protocol, x.port)) +
      hits('tls', b.tls, (x) => `${host(x.fingerprint)}|${x.port}|${x.sha256}`) +
      hits('neighbor', b.neighbors, (x) => `${host(x.fingerprint)}|${x.localInterface}|${x.remoteChassisId}`) +
      hits('vlan', b.vlans, (x) => `${host(x.fingerprint)}|${x.vlanId}`) +
      hits('route', b.routes, (x) => routeKey(host(x.fingerprint), x.destination, x.interface ?? '')) +
      hits('lag', b.lagGroups, (x) => `${host(x.fingerprint)}|${x.name}`);
    return { accepted: rowsInBatch, dedupHits };
  });
}

/** A whole observation batch: the reconciliation above, then its `flows` through the flow path. */
export async function ingestObservationBatch(db: Kysely<DB>, p: DaemonPrincipal, b: Batch): Promise<{ accepted: number; dedupHits: number }> {
  const result = await ingestObservations(db, p, b);
  if (b.flows.length === 0) return result;
  const flows = await ingestFlows(db, p, { flows: b.flows, dropped: 0 });
  return { accepted: result.accepted + b.flows.length, dedupHits: result.dedupHits + (b.flows.length - flows.accepted) };
}
