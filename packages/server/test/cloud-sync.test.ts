import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { HTTPMethods, LightMyRequestResponse } from 'fastify';
import { sql } from 'kysely';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { haveTools } from '../../../test/system-tools.js';
import { cloudJob } from '../src/cloud/cloud.jobs.js';
import { collectors } from '../src/cloud/collectors.js';
import { markHostsGone } from '../src/ingest/ingest.repo.js';
import { reconcile } from '../src/ingest/reconcile.js';
import { JobRunner } from '../src/jobs/runner.js';
import { createLogger } from '../src/logger.js';
import { FAKE_KEY, type FakeAws, INTERNAL, UNAUTHORIZED, generateAwsState, startFakeAws } from './fakes/aws.js';
import { fakeNode, fakePod, fakeService, fakeState, startFakeKubernetes } from './fakes/kubernetes.js';
import { type SeededOrg, type TestApp, buildTestApp, expectProblem, login, seedOrg } from './helpers.js';

// Cloud syncs (issue 25) end to end: accounts made through the admin API, synced through
// `POST /api/v1/admin/cloud/{id}/sync` (the job runner's runNow) or the jobs themselves, the real AWS
// SDK and Kubernetes client talking to local fakes of their wire protocols (test/fakes). What lands
// in the inventory is read back with SQL and through the hosts API.

const CLOUD = '/api/v1/admin/cloud';
type Session = { cookie: string; csrfToken: string };

let t: TestApp;
let aws: FakeAws;

const call = (s: Session, method: HTTPMethods, url: string, payload?: unknown): Promise<LightMyRequestResponse> =>
  t.app.inject({ method, url, headers: { cookie: s.cookie, 'x-csrf-token': s.csrfToken }, ...(payload !== undefined ? { payload: payload as Record<string, unknown> } : {}) });

async function newOrg(): Promise<{ org: SeededOrg; s: Session; site: string }> {
  const org = await seedOrg(t.database);
  const s = await login(t.app, org.ownerEmail);
  const site = (await sql<{ id: string }>`insert into sites (organisation_id, code, name) values (${org.organisationId}, 'cloud', 'Cloud') returning id`.execute(t.database.db)).rows[0]!.id;
  return { org, s, site };
}

async function awsAccount(s: Session, site: string, name = 'Production'): Promise<string> {
  const r = await call(s, 'POST', CLOUD, { kind: 'aws', name, siteId: site, settings: { regions: ['eu-west-1'], endpoint: aws.url }, credentials: FAKE_KEY });
  expect(r.statusCode).toBe(201);
  return r.json().id;
}

const hostsOf = async (org: SeededOrg) =>
  (
    await sql<{ id: string; hostname: string | null; device_type: string | null; gone: boolean; addresses: string[] }>`
      select h.id, h.hostname, h.device_type, h.gone_at is not null as gone, array(select host(a.address) from host_addresses a where a.organisation_id = h.organisation_id and a.host_id = h.id order by a.address) as addresses
      from hosts h where h.organisation_id = ${org.organisationId} order by h.hostname`.execute(t.database.db)
  ).rows;

beforeAll(async () => {
  // Every test signs in a fresh organisation's owner or two.
  t = await buildTestApp({ env: { SERVICE_RATE_LIMIT_LOGIN_PER_MINUTE: '1000' } });
  aws = await startFakeAws(generateAwsState({ instances: 0 }));
});
afterAll(async () => {
  await aws.close();
  await t.close();
});
beforeEach(() => {
  Object.assign(aws.state, generateAwsState({ instances: 12 }));
  aws.requests.length = 0;
});

describe('an AWS account synced', () => {
  it('puts its instances in the inventory once, keeps their provenance, and a second sync with nothing changed writes nothing', async () => {
    const { org, s, site } = await newOrg();
    const id = await awsAccount(s, site);
    const first = await call(s, 'POST', `${CLOUD}/${id}/sync`);
    expect(first.statusCode).toBe(200);
    // 12 instances + 1 VPC + 1 subnet; every instance a host.
    expect(first.json()).toMatchObject({ accountId: id, status: 'ok', counts: { resources: 14, hosts: 12, changed: 14, gone: 0 }, warnings: [] });
    const hosts = await hostsOf(org);
    expect(hosts).toHaveLength(12);
    expect(hosts.find((h) => h.hostname === 'host-0')).toMatchObject({ device_type: 'cloud instance', gone: false, addresses: ['10.0.0.10', '203.0.113.10', '2001:db8:1::'] });
    const fp = await sql<{ fingerprint: string }>`select fingerprint from host_fingerprints where organisation_id = ${org.organisationId} order by fingerprint limit 1`.execute(t.database.db);
    expect(fp.rows[0]!.fingerprint).toMatch(new RegExp(`^aws:${id}:i-[0-9a-f]{17}$`));
    const res = await sql<{ data: Record<string, unknown>; labels: Record<string, string>; inbound: unknown[]; host_id: string | null }>`
      select data, labels, inbound, host_id from cloud_resources where organisation_id = ${org.organisationId} and name = 'host-0'`.execute(t.database.db);
    expect(res.rows[0]!.host_id).toBe(hosts.find((h) => h.hostname === 'host-0')!.id);
    expect(res.rows[0]!.labels).toEqual({ Name: 'host-0', env: 'test' });
    expect(res.rows[0]!.data).toMatchObject({ instanceType: 't3.micro', vpcId: expect.stringMatching(/^vpc-/) });
    expect(res.rows[0]!.inbound).toContainEqual(expect.objectContaining({ protocol: 'tcp', fromPort: 443, toPort: 443, cidrs: expect.arrayContaining(['0.0.0.0/0']) }));

    const before = await sql<{ resources: string; hosts: string }>`
      select (select max(last_seen_at)::text from cloud_resources where organisation_id = ${org.organisationId}) as resources,
             (select max(updated_at)::text || max(last_seen_at)::text from hosts where organisation_id = ${org.organisationId}) as hosts`.execute(t.database.db);
    const second = await call(s, 'POST', `${CLOUD}/${id}/sync`);
    expect(second.json()).toMatchObject({ status: 'ok', counts: { resources: 14, hosts: 12, changed: 0, gone: 0 } });
    const after = await sql<{ resources: string; hosts: string }>`
      select (select max(last_seen_at)::text from cloud_resources where organisation_id = ${org.organisationId}) as resources,
             (select max(updated_at)::text || max(last_seen_at)::text from hosts where organisation_id = ${org.organisationId}) as hosts`.execute(t.database.db);
    expect(after.rows[0]).toEqual(before.rows[0]);
    // The VPC and the subnet are networks of the account's site, not scheduled (scanning them is the operator's choice).
    const networks = await sql<{ name: string; cidr: string; site_id: string; scan_interval_minutes: number | null }>`
      select name, cidr::text, site_id, scan_interval_minutes from networks where organisation_id = ${org.organisationId} order by cidr`.execute(t.database.db);
    expect(networks.rows).toEqual([
      { name: 'main-eu-west-1 (AWS VPC eu-west-1)', cidr: '10.0.0.0/8', site_id: site, scan_interval_minutes: null },
      { name: 'app-eu-west-1 (AWS subnet eu-west-1)', cidr: '10.0.0.0/9', site_id: site, scan_interval_minutes: null },
      { name: 'main-eu-west-1 (AWS VPC eu-west-1)', cidr: '2001:db8:1::/56', site_id: site, scan_interval_minutes: null },
      { name: 'app-eu-west-1 (AWS subnet eu-west-1)', cidr: '2001:db8:1::/64', site_id: site, scan_interval_minutes: null },
    ]);
    const listed = (await call(s, 'GET', CLOUD)).json().data[0];
    expect(listed.lastSync).toMatchObject({ status: 'ok', error: null, counts: { resources: 14, changed: 0 } });
  });

  it('merges an instance with the host a daemon saw at the same address in the same site', async () => {
    const { org, s, site } = await newOrg();
    await t.database.db.transaction().execute((trx) =>
      reconcile(trx, { kind: 'daemon', organisationId: org.organisationId, siteId: site, since: new Date(), daemonId: '00000000-0000-4000-8000-000000000001' }, {
        hosts: [{ fingerprint: 'daemon-fp-1', hostname: 'scanned.lab' }], addresses: [{ fingerprint: 'daemon-fp-1', address: '10.0.0.13', mac: '02:00:00:00:00:13' }],
        ports: [{ fingerprint: 'daemon-fp-1', address: '10.0.0.13', protocol: 'tcp', port: 22, state: 'open' }], services: [], certificates: [], neighbours: [], vlans: [], routes: [], lagGroups: [],
      }),
    );
    const id = await awsAccount(s, site);
    expect((await call(s, 'POST', `${CLOUD}/${id}/sync`)).statusCode).toBe(200);
    const hosts = await hostsOf(org);
    expect(hosts).toHaveLength(12); // host-3 (10.0.0.13) is the daemon's host
    const merged = hosts.find((h) => h.addresses.includes('10.0.0.13'))!;
    const fps = await sql<{ fingerprint: string }>`select fingerprint from host_fingerprints where organisation_id = ${org.organisationId} and host_id = ${merged.id} order by fingerprint`.execute(t.database.db);
    expect(fps.rows.map((r) => r.fingerprint)).toEqual([expect.stringMatching(/^aws:/), 'daemon-fp-1']);
  });

  it('marks gone an instance terminated or no longer listed, spares a host a daemon saw since, and a scan does not mark gone what the account lists', async () => {
    const { org, s, site } = await newOrg();
    const id = await awsAccount(s, site);
    await call(s, 'POST', `${CLOUD}/${id}/sync`);
    const hosts = await hostsOf(org);
    const [gone0, gone1, seen] = ['host-0', 'host-1', 'host-2'].map((n) => hosts.find((h) => h.hostname === n)!);
    // host-0 terminated (AWS still lists it a while), host-1 and host-2 no longer listed; a daemon observed host-2 (10.0.0.12).
    aws.state.instances.find((i) => i.tags.Name === 'host-0')!.state = 'terminated';
    aws.state.instances = aws.state.instances.filter((i) => i.tags.Name !== 'host-1' && i.tags.Name !== 'host-2');
    await t.database.db.transaction().execute((trx) =>
      reconcile(trx, { kind: 'daemon', organisationId: org.organisationId, siteId: site, since: new Date(), daemonId: '00000000-0000-4000-8000-000000000003' }, {
        hosts: [{ fingerprint: 'daemon-fp-12' }], addresses: [{ fingerprint: 'daemon-fp-12', address: '10.0.0.12' }],
        ports: [], services: [], certificates: [], neighbours: [], vlans: [], routes: [], lagGroups: [],
      }),
    );
    const sync = await call(s, 'POST', `${CLOUD}/${id}/sync`);
    expect(sync.json().counts).toMatchObject({ resources: 11, gone: 3 });
    const after = new Map((await hostsOf(org)).map((h) => [h.id, h.gone]));
    expect([after.get(gone0!.id), after.get(gone1!.id), after.get(seen!.id)]).toEqual([true, true, false]);
    const goneRows = await sql<{ n: number }>`select count(*)::int as n from cloud_resources where organisation_id = ${org.organisationId} and gone_at is not null`.execute(t.database.db);
    expect(goneRows.rows[0]!.n).toBe(3);

    // A completed scan of 10.0.0.0/24 that saw none of them marks gone only what no account lists.
    const marked = await markHostsGone(t.database.db, org.organisationId, { cidr: '10.0.0.0/24', exclude_cidrs: [], since: new Date(Date.now() + 60_000), site_id: site });
    expect(marked).toEqual([seen!.id]);
  });

  it('keeps resources apart that share an address, and a new instance at an old one\'s address is a new host', async () => {
    const { org, s, site } = await newOrg();
    // Two regions' default VPCs hold the same private range: two instances at 172.31.0.10.
    Object.assign(aws.state, generateAwsState({ instances: 2, regions: ['eu-west-1', 'us-east-1'] }));
    for (const i of aws.state.instances) {
      i.interfaces[0]!.privateIps = ['172.31.0.10'];
      delete i.interfaces[0]!.publicIp;
      i.interfaces[0]!.ipv6 = [];
    }
    const r = await call(s, 'POST', CLOUD, { kind: 'aws', name: 'Two regions', siteId: site, settings: { regions: ['eu-west-1', 'us-east-1'], endpoint: aws.url }, credentials: FAKE_KEY });
    const id = r.json().id as string;
    await call(s, 'POST', `${CLOUD}/${id}/sync`);
    expect((await hostsOf(org)).map((h) => [h.hostname, h.addresses])).toEqual([['host-0', ['172.31.0.10']], ['host-1', ['172.31.0.10']]]);
    // host-0 terminated, and a new instance launched at its address: a new host, host-0's stays gone with its history.
    const old = aws.state.instances[0]!;
    old.state = 'terminated';
    aws.state.instances.push({ ...old, id: 'i-0000000000000beef', state: 'running', tags: { Name: 'host-new' } });
    await call(s, 'POST', `${CLOUD}/${id}/sync`);
    const after = await hostsOf(org);
    expect(after.map((h) => [h.hostname, h.gone])).toEqual([['host-0', true], ['host-1', false], ['host-new', false]]);
  });

  it('is refused with 502 upstream_error when AWS refuses (403 not retried), says why on the account and the job, never with a credential', async () => {
    const { org, s, site } = await newOrg();
    const id = await awsAccount(s, site);
    aws.state.faults.push({ ...UNAUTHORIZED, echoCredentials: true });
    const r = await call(s, 'POST', `${CLOUD}/${id}/sync`);
    expectProblem(r, 502, 'upstream_error');
    expect(r.json().detail).toMatch(/^eu-west-1: UnauthorizedOperation \(403\)/);
    // Refused once, never asked again: no call repeated (neither the SDK's retries nor the job's).
    const calls = aws.requests.filter((q) => q.service === 'ec2').map((q) => q.action);
    expect(calls.length).toBeGreaterThan(0);
    expect(new Set(calls).size).toBe(calls.length);
    const account = (await call(s, 'GET', CLOUD)).json().data[0];
    expect(account.lastSync).toMatchObject({ status: 'failed', error: expect.stringMatching(/UnauthorizedOperation/) });
    const status = await sql<{ outcome: string; error: string; attempts: number }>`select outcome, error, attempts from job_status where job = 'cloud.sync' and organisation_id = ${org.organisationId}`.execute(t.database.db);
    expect(status.rows[0]).toMatchObject({ outcome: 'failed', attempts: 1, error: expect.stringMatching(/UnauthorizedOperation/) });
    const failed = await sql<{ data: unknown }>`select data from events where organisation_id = ${org.organisationId} and kind = 'job.failed'`.execute(t.database.db);
    expect(JSON.stringify(failed.rows)).toMatch(/UnauthorizedOperation/);
    for (const text of [r.body, JSON.stringify(account), JSON.stringify(status.rows), JSON.stringify(failed.rows), t.logs.join('\n')]) {
      expect(text).not.toContain(FAKE_KEY.secretAccessKey);
      expect(text).not.toContain(FAKE_KEY.accessKeyId);
    }
  });

  it('retries a 5xx through the job\'s rules (3 attempts) and records the failure; another organisation\'s accounts are untouched', async () => {
    const { org, s, site } = await newOrg();
    const other = await newOrg();
    const id = await awsAccount(s, site);
    const otherId = await awsAccount(other.s, other.site, 'Other');
    aws.state.faults.push({ ...INTERNAL });
    const waits: number[] = [];
    const runner = new JobRunner({ database: t.database, logger: createLogger('silent'), jobs: [cloudJob('aws', t.secretKey, collectors)], sleep: async (ms) => void waits.push(ms) });
    const r = await runner.runNow('cloud.sync', { organisationId: org.organisationId, subject: id });
    expect(r).toMatchObject({ outcome: 'failed', attempts: 3 });
    expect(waits).toEqual([5_000, 25_000]);
    const accounts = await sql<{ id: string; last_sync_status: string | null }>`select id, last_sync_status from cloud_accounts where id in (${id}, ${otherId}) order by id = ${id} desc`.execute(t.database.db);
    expect(accounts.rows.map((a) => a.last_sync_status)).toEqual(['failed', null]);
    expect(await hostsOf(other.org)).toEqual([]);
  });
});

describe('one sync of an account at a time', () => {
  it('a scheduled tick leaves an account another sync holds; a press waits for it, then syncs', async () => {
    const { org, s, site } = await newOrg();
    const id = await awsAccount(s, site);
    await sql`update cloud_accounts set sync_lease_until = now() + interval '1 minute' where id = ${id}`.execute(t.database.db);
    const runner = new JobRunner({ database: t.database, logger: createLogger('silent'), jobs: [cloudJob('aws', t.secretKey, collectors)] });
    const tick = await runner.runNow('cloud.sync');
    expect(tick.outcome).toBe('ok');
    expect(tick.result?.organisations?.get(org.organisationId)?.detail).toMatchObject({ accounts: 1, busy: 1, resources: 0 });
    expect(await hostsOf(org)).toEqual([]);
    // The other sync ends 600 ms later: the press, waiting meanwhile, then runs.
    const t0 = Date.now();
    setTimeout(() => void sql`update cloud_accounts set sync_lease_until = null where id = ${id}`.execute(t.database.db), 600);
    const press = await call(s, 'POST', `${CLOUD}/${id}/sync`);
    expect(press.statusCode).toBe(200);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(500);
    expect(press.json().counts).toMatchObject({ hosts: 12 });
    const lease = await sql<{ sync_lease_until: Date | null }>`select sync_lease_until from cloud_accounts where id = ${id}`.execute(t.database.db);
    expect(lease.rows[0]!.sync_lease_until).toBeNull();
  });
});

describe('internet exposure and provenance', () => {
  it('marks a service exposed when its instance has a public address and a security group admits its port from anywhere; lists it, filters it, puts its findings first', async () => {
    const { org, s, site } = await newOrg();
    // host-0: public 203.0.113.10, groups web (tcp 443 from 0.0.0.0/0 and ::/0) and admin (tcp 22 from 192.0.2.0/24); host-1: no public address.
    const daemon = { kind: 'daemon' as const, organisationId: org.organisationId, siteId: site, since: new Date(), daemonId: '00000000-0000-4000-8000-000000000002' };
    await t.database.db.transaction().execute((trx) =>
      reconcile(trx, daemon, {
        hosts: [{ fingerprint: 'd-0' }, { fingerprint: 'd-1' }],
        addresses: [{ fingerprint: 'd-0', address: '10.0.0.10' }, { fingerprint: 'd-1', address: '10.0.0.11' }],
        ports: [443, 22].flatMap((port) => [
          { fingerprint: 'd-0', address: '10.0.0.10', protocol: 'tcp', port, state: 'open' },
          { fingerprint: 'd-1', address: '10.0.0.11', protocol: 'tcp', port, state: 'open' },
        ]),
        services: [], certificates: [], neighbours: [], vlans: [], routes: [], lagGroups: [],
      }),
    );
    const before = await call(s, 'GET', '/api/v1/services?exposed=true');
    expect(before.json().data).toEqual([]);
    await call(s, 'POST', `${CLOUD}/${await awsAccount(s, site)}/sync`);

    const all = (await call(s, 'GET', '/api/v1/services?limit=100')).json().data as { id: string; address: string; port: number; exposedVia: string | null }[];
    const exposed = all.filter((x) => x.exposedVia !== null);
    expect(exposed.map((x) => [x.address, x.port, x.exposedVia])).toEqual([['10.0.0.10', 443, expect.stringMatching(/^security group sg-web\w+ admits tcp 443 from 0\.0\.0\.0\/0$/)]]);
    const filtered = await call(s, 'GET', '/api/v1/services?exposed=true');
    expect(filtered.json().data.map((x: { id: string }) => x.id)).toEqual(exposed.map((x) => x.id));
    expect((await call(s, 'GET', '/api/v1/services?exposed=false&limit=100')).json().data).toHaveLength(3);
    expectProblem(await call(s, 'GET', '/api/v1/services?exposed=yes'), 400, 'invalid_filter');

    // Findings: a low one on the exposed service comes before a critical one on a service nobody outside reaches.
    const hidden = all.find((x) => x.address === '10.0.0.11' && x.port === 443)!;
    const open = exposed[0]!;
    const host = async (sv: { id: string }) => (await sql<{ host_id: string }>`select host_id from services where id = ${sv.id}`.execute(t.database.db)).rows[0]!.host_id;
    await sql`insert into vulnerabilities (organisation_id, service_id, host_id, cve_id, severity, score) values
      (${org.organisationId}, ${hidden.id}, ${await host(hidden)}, 'CVE-2026-0001', 'critical', 9.8),
      (${org.organisationId}, ${open.id}, ${await host(open)}, 'CVE-2026-0002', 'low', 3.1)`.execute(t.database.db);
    const findings = (await call(s, 'GET', '/api/v1/findings')).json().data as { cveId: string; service: { exposedVia: string | null } }[];
    expect(findings.map((f) => [f.cveId, f.service.exposedVia !== null])).toEqual([['CVE-2026-0002', true], ['CVE-2026-0001', false]]);
    expect((await call(s, 'GET', '/api/v1/findings?exposed=true')).json().data.map((f: { cveId: string }) => f.cveId)).toEqual(['CVE-2026-0002']);

    // The host page: what AWS lists it as.
    const detail = (await call(s, 'GET', `/api/v1/hosts/${await host(open)}/detail`)).json();
    expect(detail.cloud).toEqual([
      expect.objectContaining({
        accountName: 'Production', provider: 'aws', kind: 'instance', providerId: expect.stringMatching(/^i-/), name: 'host-0', state: 'running', location: 'eu-west-1',
        labels: { Name: 'host-0', env: 'test' }, publicAddresses: expect.arrayContaining(['203.0.113.10']), goneAt: null,
        inbound: expect.arrayContaining([expect.objectContaining({ protocol: 'tcp', fromPort: 22, toPort: 22, cidrs: ['192.0.2.0/24'] })]),
      }),
    ]);
    // The hosts filter by source: 12 instances listed (two of them also a daemon's), 2 hosts a daemon saw.
    const bySource = async (source: string) => (await call(s, 'GET', `/api/v1/hosts?source=${source}&limit=100`)).json().data.length;
    expect([await bySource('cloud'), await bySource('daemon')]).toEqual([12, 2]);
    expect((await call(s, 'GET', '/api/v1/hosts?source=cloud&search=host-1&limit=100')).json().data.map((h: { hostname: string }) => h.hostname).sort()).toEqual(['host-1', 'host-10', 'host-11']);
  });
});

describe('internet exposure stored on the service (migration 0046)', () => {
  /** The organisation's services whose stored exposure differs from the view's (none, when right), and the exposed ones. */
  async function exposure(o: string) {
    const rows = (
      await sql<{ id: string; stored: string | null; computed: string | null }>`
        select s.id, s.exposed_via as stored, (select e.via from service_exposure e where e.organisation_id = s.organisation_id and e.service_id = s.id) as computed
        from services s where s.organisation_id = ${o}`.execute(t.database.db)
    ).rows;
    return { drift: rows.filter((r) => r.stored !== r.computed), exposed: rows.filter((r) => r.stored !== null).length };
  }

  it('follows every write it depends on: a sync that lists it, a security group that stops admitting the port, the group back, the service gone, the instance gone, the account removed', async () => {
    const { org, s, site } = await newOrg();
    const o = org.organisationId;
    // host-0's address seen by a daemon with 443 and 22 open: the daemon's and the cloud's host are one.
    const daemon = { kind: 'daemon' as const, organisationId: o, siteId: site, since: new Date(), daemonId: '00000000-0000-4000-8000-000000000002' };
    const see = (ports: number[], since = new Date()) =>
      t.database.db.transaction().execute((trx) =>
        reconcile(trx, { ...daemon, since }, {
          hosts: [{ fingerprint: 'd-0' }], addresses: [{ fingerprint: 'd-0', address: '10.0.0.10' }],
          ports: ports.map((port) => ({ fingerprint: 'd-0', address: '10.0.0.10', protocol: 'tcp', port, state: 'open' })),
          services: [], certificates: [], neighbours: [], vlans: [], routes: [], lagGroups: [],
        }),
      );
    await see([443, 22]);
    const id = await awsAccount(s, site);
    const sync = async () => expect((await call(s, 'POST', `${CLOUD}/${id}/sync`)).json()).toMatchObject({ status: 'ok' });
    const steps: [string, () => Promise<unknown>, number][] = [
      ['the first sync', sync, 1],
      ['the web group no longer open to the internet', async () => {
        for (const g of aws.state.securityGroups) if (g.name === 'web') g.inbound = [{ ...g.inbound[0]!, cidrs: ['192.0.2.0/24'], ipv6Cidrs: [] }];
        await sync();
      }, 0],
      ['open again', async () => {
        for (const g of aws.state.securityGroups) if (g.name === 'web') g.inbound = [{ ...g.inbound[0]!, cidrs: ['0.0.0.0/0'], ipv6Cidrs: ['::/0'] }];
        await sync();
      }, 1],
      ['443 closed on the host', () => t.database.db.transaction().execute((trx) =>
        reconcile(trx, daemon, {
          hosts: [{ fingerprint: 'd-0' }], addresses: [], ports: [{ fingerprint: 'd-0', address: '10.0.0.10', protocol: 'tcp', port: 443, state: 'closed' }],
          services: [], certificates: [], neighbours: [], vlans: [], routes: [], lagGroups: [],
        })), 0],
      ['443 open again', () => see([443]), 1],
      ['the instance no longer listed', async () => {
        aws.state.instances = aws.state.instances.filter((i) => i.tags.Name !== 'host-0');
        await sync();
      }, 0],
      ['listed again', async () => {
        Object.assign(aws.state, generateAwsState({ instances: 12 }));
        await sync();
      }, 1],
      ['the account removed', async () => expect((await call(s, 'DELETE', `${CLOUD}/${id}`)).statusCode).toBe(204), 0],
    ];
    for (const [name, step, exposed] of steps) {
      await step();
      expect(await exposure(o), name).toEqual({ drift: [], exposed });
    }
  });

  it('the backfill of migration 0046 stores what the view computes', async () => {
    const { org, s, site } = await newOrg();
    const o = org.organisationId;
    await t.database.db.transaction().execute((trx) =>
      reconcile(trx, { kind: 'daemon', organisationId: o, siteId: site, since: new Date(), daemonId: '00000000-0000-4000-8000-000000000002' }, {
        hosts: [{ fingerprint: 'd-0' }], addresses: [{ fingerprint: 'd-0', address: '10.0.0.10' }],
        ports: [{ fingerprint: 'd-0', address: '10.0.0.10', protocol: 'tcp', port: 443, state: 'open' }],
        services: [], certificates: [], neighbours: [], vlans: [], routes: [], lagGroups: [],
      }),
    );
    await call(s, 'POST', `${CLOUD}/${await awsAccount(s, site)}/sync`);
    await sql`update services set exposed_via = null where organisation_id = ${o}`.execute(t.database.db);
    expect((await exposure(o)).drift).toHaveLength(1);
    const file = readFileSync(fileURLToPath(new URL('../migrations/0046_service_exposed_via_column.sql', import.meta.url)), 'utf8');
    await sql.raw(/^UPDATE services s SET[\s\S]*?;$/m.exec(file)![0]).execute(t.database.db);
    expect(await exposure(o)).toEqual({ drift: [], exposed: 1 });
  });
});

describe.skipIf(!haveTools('Kubernetes syncs against a fake API server', ['openssl']))('a Kubernetes cluster synced', () => {
  let k8s: Awaited<ReturnType<typeof startFakeKubernetes>>;
  const TOKEN = 'sa-token-sync-7f2c1e0b9a8d';
  beforeAll(async () => {
    k8s = await startFakeKubernetes(fakeState({ token: TOKEN }));
  });
  afterAll(() => k8s.close());

  it('makes hosts of nodes, pods and services (their ports open), by the job cloud.k8s; each organisation its own', async () => {
    k8s.state.nodes = [fakeNode('node-a', { internalIP: '10.1.0.1' })];
    k8s.state.services = [fakeService('shop', 'front', { clusterIP: '10.96.0.11', type: 'LoadBalancer', lbIP: '198.51.100.7', ports: [{ name: 'https', port: 443, nodePort: 31443 }] })];
    k8s.state.pods = [fakePod('shop', 'web-7c5ddbdf54-x2k4q', { ip: '10.244.0.5', nodeName: 'node-a', deployment: 'web' })];
    const a = await newOrg();
    const b = await newOrg();
    for (const o of [a, b]) {
      const r = await call(o.s, 'POST', CLOUD, { kind: 'kubernetes', name: 'Lab', siteId: o.site, credentials: { kubeconfig: k8s.kubeconfig(TOKEN) } });
      expect(r.statusCode).toBe(201);
      const sync = await call(o.s, 'POST', `${CLOUD}/${r.json().id}/sync`);
      expect(sync.json()).toMatchObject({ status: 'ok', counts: { resources: 3, hosts: 3, gone: 0 } });
    }
    const hosts = await hostsOf(a.org);
    expect(hosts.map((h) => [h.hostname, h.device_type, h.addresses])).toEqual([
      ['node-a', 'kubernetes node', ['10.1.0.1']],
      ['shop/front', 'kubernetes service', ['10.96.0.11', '198.51.100.7']],
      ['shop/web-7c5ddbdf54-x2k4q', 'kubernetes pod', ['10.244.0.5']],
    ]);
    const ports = await sql<{ port: number; state: string; name: string | null }>`
      select s.port, s.state, s.name from services s join hosts h on h.organisation_id = s.organisation_id and h.id = s.host_id
      where s.organisation_id = ${a.org.organisationId} and h.hostname = 'shop/front'`.execute(t.database.db);
    expect(ports.rows).toEqual([{ port: 443, state: 'open', name: 'https' }]);
    const published = (await call(a.s, 'GET', '/api/v1/services?exposed=true')).json().data;
    expect(published.map((x: { port: number; exposedVia: string }) => [x.port, x.exposedVia])).toEqual([[443, 'LoadBalancer']]);
    // The two organisations' hosts are their own rows.
    const ids = new Set((await hostsOf(a.org)).map((h) => h.id));
    for (const h of await hostsOf(b.org)) expect(ids.has(h.id)).toBe(false);
    // A pod that finished (a Job's run) is still listed but no longer a host: its host is gone; deleted, its record is too.
    (k8s.state.pods[0] as unknown as { status: { phase: string } }).status.phase = 'Succeeded';
    const id = (await call(a.s, 'GET', CLOUD)).json().data[0].id;
    const finished = await call(a.s, 'POST', `${CLOUD}/${id}/sync`);
    expect(finished.json().counts).toMatchObject({ resources: 3, hosts: 2, gone: 0 });
    expect((await hostsOf(a.org)).find((h) => h.hostname === 'shop/web-7c5ddbdf54-x2k4q')!.gone).toBe(true);
    k8s.state.pods = [];
    const again = await call(a.s, 'POST', `${CLOUD}/${id}/sync`);
    expect(again.json().counts).toMatchObject({ resources: 2, gone: 1 });
    // Deleting the account marks gone what only it listed.
    expect((await call(a.s, 'DELETE', `${CLOUD}/${id}`)).statusCode).toBe(204);
    expect((await hostsOf(a.org)).every((h) => h.gone)).toBe(true);
  });

  it('tests a connection: the cluster reached, or why not', async () => {
    const { s } = await newOrg();
    const good = (await call(s, 'POST', CLOUD, { kind: 'kubernetes', name: 'Good', credentials: { kubeconfig: k8s.kubeconfig(TOKEN) } })).json().id;
    const bad = (await call(s, 'POST', CLOUD, { kind: 'kubernetes', name: 'Bad', credentials: { kubeconfig: k8s.kubeconfig('wrong-token-0000000000') } })).json().id;
    const ok = await call(s, 'POST', `${CLOUD}/${good}/test`);
    expect(ok.json()).toMatchObject({ ok: true, providerAccount: k8s.url, detail: expect.stringMatching(/^Reached the cluster/) });
    const refused = await call(s, 'POST', `${CLOUD}/${bad}/test`);
    expect(refused.statusCode).toBe(200);
    expect(refused.json()).toMatchObject({ ok: false, providerAccount: null, detail: expect.stringMatching(/401/) });
    expect(refused.body).not.toContain('wrong-token-0000000000');
  });
});
