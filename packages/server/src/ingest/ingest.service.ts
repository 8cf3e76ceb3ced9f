import type { ObservationsRequest } from '@surveyor/contract';
import type { Kysely } from 'kysely';
import type { z } from 'zod';
import type { DaemonPrincipal } from '../daemons/daemons.service.js';
import { ownDaemon } from '../daemons/daemons.service.js';
import type { DB } from '../db/schema.js';
import { AppError } from '../errors.js';
import { assessChain, trustFromDates } from './certificates.js';
import { isIdentifyingMac } from './identity.js';
import * as repo from './ingest.repo.js';

type Batch = z.output<typeof ObservationsRequest>;

/** Keeps the last row per key, merging fields so a later absent value never erases an earlier one. */
function mergeBy<T extends object>(items: T[], key: (t: T) => string): T[] {
  const out = new Map<string, T>();
  for (const item of items) {
    const k = key(item);
    const prev = out.get(k);
    out.set(k, prev ? ({ ...prev, ...Object.fromEntries(Object.entries(item).filter(([, v]) => v !== undefined && v !== null)) } as T) : item);
  }
  return [...out.values()];
}

const orNull = <T>(v: T | undefined): T | null => (v === undefined ? null : v);

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
      const links: { fingerprint: string; hostId: string }[] = [];
      const fresh: string[] = [];
      for (const f of unknown) {
        const viaMac = [...(macsOf.get(f) ?? [])].filter(isIdentifyingMac).sort().map((m) => byMac.get(m)).find(Boolean);
        const match = viaMac ?? [...(addrsOf.get(f) ?? [])].sort().map((a) => byAddr.get(a)).find(Boolean);
        if (match) links.push({ fingerprint: f, hostId: match });
        else fresh.push(f);
      }
      await repo.linkFingerprints(trx, org, links);
      for (const h of await repo.createHosts(trx, org, session.site_id, fresh)) createdHosts.add(h.id);
      for (const r of await repo.knownFingerprints(trx, org, unknown)) hostOf.set(r.fingerprint, r.host_id);
    }
    const host = (f: string) => hostOf.get(f)!;

    // 2. Facts, each a set-based upsert that writes only what changed (or was not yet seen this session).
    let written = 0;
    const hostFacts = mergeBy(b.hosts, (h) => h.fingerprint).map((h) => ({
      id: host(h.fingerprint),
      hostname: orNull(h.hostname),
      fqdn: orNull(h.fqdn),
      vendor: orNull(h.vendor),
      os: orNull(h.os),
      deviceType: orNull(h.deviceType),
      parentId: h.parentFingerprint ? host(h.parentFingerprint) : null,
    }));
    const updatedHosts = await repo.updateHosts(trx, org, since, mergeBy(hostFacts, (h) => h.id));
    written += updatedHosts.length;

    const addresses = mergeBy(
      [
        ...b.ips.map((x) => ({ hostId: host(x.hostFingerprint), address: x.address, mac: orNull(x.mac) })),
        ...b.hosts.flatMap((h) => (h.interfaces ?? []).flatMap((i) => (i.addresses ?? []).map((a) => ({ hostId: host(h.fingerprint), address: a, mac: orNull(i.mac) })))),
        ...[...b.ports, ...b.services, ...b.tls].map((x) => ({ hostId: host(x.fingerprint), address: x.address, mac: null })),
      ],
      (a) => `${a.hostId}|${a.address.toLowerCase()}`,
    );
    const addressWrites = await repo.upsertAddresses(trx, org, since, addresses);
    const interfaces = mergeBy(
      b.hosts.flatMap((h) => (h.interfaces ?? []).map((i) => ({ hostId: host(h.fingerprint), name: i.name, mac: orNull(i.mac) }))),
      (i) => `${i.hostId}|${i.name}`,
    );
    written += addressWrites;
    written += await repo.upsertInterfaces(trx, org, since, interfaces);

    const services = mergeBy(
      [
        ...b.ports.map((x) => ({ hostId: host(x.fingerprint), protocol: x.protocol, port: x.number, address: x.address, state: x.state, banner: orNull(x.banner) })),
        ...b.services.map((x) => ({
          hostId: host(x.fingerprint), protocol: x.protocol, port: x.port, address: x.address, name: orNull(x.name), product: orNull(x.product), vendor: orNull(x.vendor),
          version: orNull(x.version), cpe: orNull(x.cpe), signatureId: orNull(x.signatureId), signatureSource: orNull(x.signatureSource), confidence: orNull(x.confidence), evidence: orNull(x.evidence),
        })),
      ],
      (s) => `${s.hostId}|${s.protocol}|${s.port}`,
    ).map((s) => ({
      state: null, banner: null, name: null, product: null, vendor: null, version: null, cpe: null, signatureId: null, signatureSource: null, confidence: null, evidence: null,
      ...s,
    })) as repo.ServiceFacts[];
    const serviceRows = await repo.upsertServices(trx, org, since, services);
    written += serviceRows.length;

    const now = new Date();
    const certs = mergeBy(
      b.tls.flatMap((t) => {
        const assessed = t.chainPem?.length ? assessChain(t.chainPem, now) : null;
        const notBefore = assessed?.notBefore ?? (t.notBefore ? new Date(t.notBefore) : null);
        const notAfter = assessed?.notAfter ?? (t.notAfter ? new Date(t.notAfter) : null);
        if (!notBefore || !notAfter) return [];
        return [{
          hostId: host(t.fingerprint), address: t.address, port: t.port,
          subject: assessed?.subject ?? t.subject ?? '', issuer: assessed?.issuer ?? t.issuer ?? '', notBefore, notAfter,
          sha256: t.sha256, chainPem: t.chainPem ?? [], trustStatus: assessed?.trustStatus ?? trustFromDates(notBefore, notAfter, now),
        }];
      }),
      (c) => `${c.hostId}|${c.port}|${c.sha256}`,
    );
    written += await repo.upsertCertificates(trx, org, since, certs);

    written += await repo.upsertNeighbors(trx, org, since, mergeBy(b.neighbors.map((n) => ({
      hostId: host(n.fingerprint), localInterface: n.localInterface, remoteChassisId: n.remoteChassisId, remotePortId: orNull(n.remotePortId),
      remoteSystemName: orNull(n.remoteSystemName), managementAddress: orNull(n.managementAddress), protocol: n.protocol,
    })), (n) => `${n.hostId}|${n.localInterface}|${n.remoteChassisId}`));
    written += await repo.upsertVlans(trx, org, since, mergeBy(b.vlans.map((v) => ({ hostId: host(v.fingerprint), vlanId: v.vlanId, name: orNull(v.name), tagged: [...(v.tagged ?? [])].sort(), untagged: [...(v.untagged ?? [])].sort() })), (v) => `${v.hostId}|${v.vlanId}`));
    written += await repo.upsertRoutes(trx, org, since, mergeBy(b.routes.map((r) => ({ hostId: host(r.fingerprint), destination: r.destination, nextHop: orNull(r.nextHop), iface: r.interface ?? '', metric: orNull(r.metric) })), (r) => `${r.hostId}|${r.destination}|${r.iface}`));
    written += await repo.upsertLagGroups(trx, org, since, mergeBy(b.lagGroups.map((l) => ({ hostId: host(l.fingerprint), name: l.name, protocol: orNull(l.protocol), members: [...l.members].sort() })), (l) => `${l.hostId}|${l.name}`));

    // 3. The session: progress, state; a session completing now marks absent what it did not see.
    const state = await repo.advanceSession(trx, org, b.sessionId, { final: b.final, ...b.stats });
    const gone = session.state !== 'completed' && session.state !== 'failed' && state === 'completed' ? await repo.markAbsent(trx, org, session) : [];

    await repo.logChanges(trx, org, 'host', [
      ...[...createdHosts].map((id) => ({ id, action: 'created' as const })),
      ...updatedHosts.filter((h) => h.changed && !createdHosts.has(h.id)).map((h) => ({ id: h.id, action: 'updated' as const })),
    ]);
    await repo.logChanges(trx, org, 'service', [
      ...serviceRows.map((s) => ({ id: s.id, action: s.inserted ? ('created' as const) : ('updated' as const) })),
      ...gone.map((id) => ({ id, action: 'updated' as const })),
    ]);

    // dedupHits: the batch's rows less the rows it wrote; a replay writes nothing, so all are hits.
    const accepted = b.hosts.length + b.ips.length + b.ports.length + b.services.length + b.neighbors.length + b.vlans.length + b.routes.length + b.lagGroups.length + b.tls.length;
    return { accepted, dedupHits: Math.max(0, accepted - written) };
  });
}
