import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.js';
import { type Facts, mergeBy, orNull } from './facts.js';
import * as repo from './ingest.repo.js';

/**
 * Whether a MAC may identify a host on its own. Virtual-router MACs (VRRP and CARP
 * 00:00:5e:00:01:xx / 00:00:5e:00:02:xx, HSRP 00:00:0c:07:ac:xx and 00:00:0c:9f:fx:xx) move between
 * routers, and locally administered (randomised) or multicast MACs are not a device's own.
 */
export function isIdentifyingMac(mac: string): boolean {
  const m = mac.toLowerCase();
  const first = parseInt(m.slice(0, 2), 16);
  if (Number.isNaN(first) || first & 0x01 || first & 0x02) return false;
  if (m.startsWith('00:00:5e:00:01:') || m.startsWith('00:00:5e:00:02:')) return false;
  if (m.startsWith('00:00:0c:07:ac:') || m.startsWith('00:00:0c:9f:f')) return false;
  return m !== '00:00:00:00:00:00';
}

/**
 * Where host identity is matched: an organisation, and within it one site (null: hosts of no site).
 * `kind: 'cloud'` (a cloud account's sync): each resource is its own host unless a daemon saw its
 * address: resources sharing an address (a reused pod IP, 172.31.0.0/16 in every default VPC, a
 * shared load balancer) are not one host, and a new instance does not take over the host of one
 * that held its address before.
 */
export interface IdentityScope {
  organisationId: string;
  siteId: string | null;
  kind?: 'daemon' | 'cloud';
}

export interface ResolvedHosts {
  /** The host each fingerprint of the facts names. */
  hostOf: Map<string, string>;
  /** Hosts this call created (with their facts, logged and announced). */
  created: Set<string>;
}

/** The MACs and addresses the facts show for each fingerprint: what identifies a new fingerprint's host. */
interface Evidence {
  macsOf: Map<string, Set<string>>;
  addrsOf: Map<string, Set<string>>;
}

/**
 * Which host each fingerprint names: a known fingerprint its host; an unknown one the host of the
 * scope holding one of its identifying MACs, else one of its addresses; else a new host. Unknown
 * fingerprints of the same facts sharing an identifying MAC (else an address) become one host,
 * whether they arrive together or apart, and whatever the timing of concurrent batches of the scope.
 */
export async function resolveHosts(tx: Kysely<DB>, scope: IdentityScope, facts: Facts): Promise<ResolvedHosts> {
  const org = scope.organisationId;
  const fingerprints = fingerprintsOf(facts);
  const hostOf = new Map((await repo.knownFingerprints(tx, org, fingerprints)).map((r) => [r.fingerprint, r.host_id]));
  const created = new Set<string>();
  if (fingerprints.every((f) => hostOf.has(f))) return { hostOf, created };

  // Unknown fingerprints may become new hosts. Two transactions of one scope (two sessions of a
  // site, two daemons) matching the same new addresses under different fingerprints would each
  // see no host and each create one: identity is resolved one transaction at a time per scope,
  // under a lock held until commit, and the fingerprints are looked up again once it is held
  // (the transaction that held it may have bound some). Batches naming only known fingerprints,
  // the steady state, never wait.
  await repo.lockIdentityScope(tx, org, scope.siteId);
  for (const r of await repo.knownFingerprints(tx, org, fingerprints.filter((f) => !hostOf.has(f)))) hostOf.set(r.fingerprint, r.host_id);
  const unknown = fingerprints.filter((f) => !hostOf.has(f)).sort();
  if (unknown.length === 0) return { hostOf, created };

  const evidence = evidenceOf(facts);
  const cloud = scope.kind === 'cloud';
  const groups = cloud ? new Map(unknown.map((f) => [f, [f]])) : groupByEvidence(unknown, evidence);
  const known = await knownHostsByEvidence(tx, scope, unknown, evidence, cloud);
  const { links, fresh, followers } = matchGroups(groups, evidence, known);
  await repo.linkFingerprints(tx, org, links);
  for (const h of await repo.createHosts(tx, org, scope.siteId, newHosts(fresh, groups, facts))) created.add(h.id);
  await repo.linkToLeaders(tx, org, followers);
  for (const r of await repo.knownFingerprints(tx, org, unknown)) hostOf.set(r.fingerprint, r.host_id);
  return { hostOf, created };
}

/** Every fingerprint the facts name, parents included. */
function fingerprintsOf(f: Facts): string[] {
  const out = new Set<string>();
  for (const h of f.hosts) {
    out.add(h.fingerprint);
    if (h.parentFingerprint) out.add(h.parentFingerprint);
  }
  for (const arr of [f.addresses, f.ports, f.services, f.neighbours, f.vlans, f.routes, f.lagGroups, f.certificates]) for (const x of arr) out.add(x.fingerprint);
  return [...out];
}

/** The MACs and addresses each fingerprint shows: its address rows, its interfaces, and the addresses its ports, services and certificates were seen on. */
function evidenceOf(f: Facts): Evidence {
  const macsOf = new Map<string, Set<string>>();
  const addrsOf = new Map<string, Set<string>>();
  const add = (m: Map<string, Set<string>>, fp: string, v: string | undefined) => {
    if (v) (m.get(fp) ?? m.set(fp, new Set()).get(fp)!).add(v);
  };
  for (const x of f.addresses) {
    add(macsOf, x.fingerprint, x.mac);
    add(addrsOf, x.fingerprint, x.address);
  }
  for (const h of f.hosts) for (const i of h.interfaces ?? []) {
    add(macsOf, h.fingerprint, i.mac);
    for (const a of i.addresses ?? []) add(addrsOf, h.fingerprint, a);
  }
  for (const arr of [f.ports, f.services, f.certificates]) for (const x of arr) add(addrsOf, x.fingerprint, x.address);
  return { macsOf, addrsOf };
}

/** Unknown fingerprints grouped by a shared identifying MAC, then a shared address: leader → members (sorted, leader first). */
function groupByEvidence(unknown: string[], { macsOf, addrsOf }: Evidence): Map<string, string[]> {
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
  return members;
}

/** Hosts of the scope already holding an identifying MAC or an address of the unknown fingerprints (the lowest host id wins a tie). */
async function knownHostsByEvidence(tx: Kysely<DB>, scope: IdentityScope, unknown: string[], { macsOf, addrsOf }: Evidence, daemonHostsOnly: boolean) {
  const unknownSet = new Set(unknown);
  const valuesOf = (m: Map<string, Set<string>>) => [...new Set([...m].filter(([f]) => unknownSet.has(f)).flatMap(([, v]) => [...v]))];
  const firstHost = <K extends string>(rows: ({ host_id: string } & Record<K, string>)[], key: K) => {
    const out = new Map<string, string>();
    for (const r of rows.sort((x, y) => x.host_id.localeCompare(y.host_id))) if (!out.has(r[key])) out.set(r[key], r.host_id);
    return out;
  };
  return {
    byMac: firstHost(await repo.hostsByMac(tx, scope.organisationId, scope.siteId, valuesOf(macsOf).filter(isIdentifyingMac)), 'mac'),
    byAddr: firstHost(await repo.hostsByAddress(tx, scope.organisationId, scope.siteId, valuesOf(addrsOf), daemonHostsOnly), 'address'),
  };
}

/** Each group joins the known host its MACs (else its addresses) point to, or becomes a new host under its leader. */
function matchGroups(groups: Map<string, string[]>, { macsOf, addrsOf }: Evidence, known: { byMac: Map<string, string>; byAddr: Map<string, string> }) {
  const links: { fingerprint: string; hostId: string }[] = [];
  const fresh: string[] = [];
  const followers: { fingerprint: string; leader: string }[] = [];
  for (const [leader, fs] of groups) {
    const macs = fs.flatMap((f) => [...(macsOf.get(f) ?? [])]).filter(isIdentifyingMac).sort();
    const addrs = fs.flatMap((f) => [...(addrsOf.get(f) ?? [])]).sort();
    const match = macs.map((m) => known.byMac.get(m)).find(Boolean) ?? addrs.map((a) => known.byAddr.get(a)).find(Boolean);
    if (match) for (const f of fs) links.push({ fingerprint: f, hostId: match });
    else {
      fresh.push(leader);
      for (const f of fs) if (f !== leader) followers.push({ fingerprint: f, leader });
    }
  }
  return { links, fresh, followers };
}

/**
 * The new hosts, one per fresh leader, with the facts of all its group's fingerprints merged (later
 * rows winning), so a new host is written once rather than inserted and then updated.
 */
function newHosts(fresh: string[], groups: Map<string, string[]>, f: Facts) {
  const leaderOf = new Map<string, string>();
  for (const leader of fresh) for (const fp of groups.get(leader)!) leaderOf.set(fp, leader);
  return mergeBy(
    [
      ...fresh.map((leader) => ({ fingerprint: leader, hostname: null, fqdn: null, vendor: null, os: null, deviceType: null })),
      ...f.hosts.filter((h) => leaderOf.has(h.fingerprint)).map((h) => ({
        fingerprint: leaderOf.get(h.fingerprint)!, hostname: orNull(h.hostname), fqdn: orNull(h.fqdn), vendor: orNull(h.vendor), os: orNull(h.os), deviceType: orNull(h.deviceType),
      })),
    ],
    (h) => h.fingerprint,
  );
}
