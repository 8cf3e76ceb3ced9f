import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { jobDefinitions } from '../../server/src/main.js';
import { JobRunner } from '../../server/src/jobs/runner.js';
import { createLogger as serverLogger } from '../../server/src/logger.js';
import { type SeededOrg, type TestApp, bearer, buildTestApp, login, seedMemberWithKey, seedOrg } from '../../server/test/helpers.js';
import { type DaemonConfig, parseCommandLine } from '../src/config.js';
import { Daemon } from '../src/daemon.js';
import { createLogger } from '../src/log.js';
import { type Lab, buildLab, describeLab, fetchFrom, nmapRunningOn } from './lab.js';

// The daemon end to end: the real server listening on a port, the daemon started with the command
// line the console's enrolment hands out, scanning a lab of network namespaces through the protocol.

const WAIT = { timeout: 120_000, interval: 250 };
const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
type Json = Record<string, any>;

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

describeLab('the daemon against the real server, scanning the lab', () => {
  let lab: Lab;
  let t: TestApp;
  let org: SeededOrg;
  let session: { cookie: string; csrfToken: string };
  let api: string;
  let siteId: string;
  let config: DaemonConfig;
  let stateDir: string;
  let daemonArgs: string[];
  const logs: Json[] = [];
  let daemon: Daemon;
  let running: Promise<number>;

  const start = () => {
    daemon = new Daemon(config, createLogger('debug', (l) => void logs.push(JSON.parse(l))));
    running = daemon.run();
  };
  const get = async (url: string) => {
    const res = await t.app.inject({ method: 'GET', url, headers: bearer(api) });
    expect(res.statusCode, res.body).toBe(200);
    return res.json();
  };
  const consoleGet = async (url: string) => (await t.app.inject({ method: 'GET', url, headers: { cookie: session.cookie } })).json();
  const daemonRow = async () => (await consoleGet('/api/v1/daemons')).data.find((d: Json) => d.name === 'lab-daemon');
  const scan = async (networkId: string, nmap: Json) => {
    const res = await t.app.inject({ method: 'POST', url: '/api/v1/scans', headers: bearer(api), payload: { networkId, nmap } });
    expect(res.statusCode, res.body).toBe(202);
    return res.json().sessionId as string;
  };
  const network = async (cidr: string, topPortsTcp: number) => {
    const res = await t.app.inject({ method: 'POST', url: '/api/v1/networks', headers: bearer(api), payload: { name: `lab ${cidr}`, cidr, siteId, topPortsTcp } });
    expect(res.statusCode, res.body).toBe(201);
    return res.json().id as string;
  };
  const stateOf = async (id: string) => (await get(`/api/v1/scans/${id}`)).state as string;

  beforeAll(async () => {
    lab = await buildLab([{ services: ['http:80', 'tls:443', 'ssh:22'], cn: 'web.lab.test' }, { services: ['http:8080'] }], { lldp: true });
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    t = await buildTestApp({ env: { SERVICE_BASE_URL: url, SERVICE_DAEMON_HEARTBEAT_SECONDS: '5', SERVICE_DAEMON_POLL_TIMEOUT_SECONDS: '2' } });
    await t.app.listen({ host: '127.0.0.1', port });
    org = await seedOrg(t.database);
    session = await login(t.app, org.ownerEmail);
    api = (await seedMemberWithKey(t.database, org, 'editor', ['scan:run', 'inventory:write', 'inventory:read'])).token;
    const csrf = { cookie: session.cookie, 'x-csrf-token': session.csrfToken };
    const site = await t.app.inject({ method: 'POST', url: '/api/v1/sites', headers: csrf, payload: { code: 'lab', name: 'Lab' } });
    expect(site.statusCode, site.body).toBe(201);
    siteId = site.json().id;
    // Enrol as an admin does in the console, and start the daemon with the line it hands out.
    const enrol = await t.app.inject({ method: 'POST', url: '/api/v1/daemons/enrol', headers: csrf, payload: { siteId } });
    expect(enrol.statusCode, enrol.body).toBe(201);
    const [cmd, ...args] = (enrol.json().command as string).split(' ');
    expect(cmd).toBe('surveyor-daemon');
    stateDir = mkdtempSync(join(tmpdir(), 'surveyor-daemon-state-'));
    daemonArgs = [...args, '--name', 'lab-daemon', '--state', stateDir, '--log-level', 'debug', '--lldp-socket', lab.lldpSocket!];
    const cli = parseCommandLine(daemonArgs, {});
    config = { ...cli.config!, scan: { ...cli.config!.scan, connectTimeoutMs: 1000 }, flows: { listen: '127.0.0.1:0', maxBuckets: 10_000, flushSeconds: 1 } };
    expect(config).toMatchObject({ server: url, site: 'lab' });
    start();
  });

  afterAll(async () => {
    daemon?.stop();
    await running?.catch(() => undefined);
    lab?.close();
    await t?.close();
    if (stateDir) rmSync(stateDir, { recursive: true, force: true });
  });

  it('registers into its site with truthful capabilities, heartbeats online, and keeps its id in the state folder', async () => {
    await expect.poll(async () => (await daemonRow())?.status, WAIT).toBe('online');
    const row = await daemonRow();
    expect(row).toMatchObject({ siteId, capabilities: { nmap: true, lldp: true, netflow: true, ebpf: false }, heartbeatIntervalSeconds: 5 });
    expect(row.networkCidrs).toContain(lab.v4Cidr);
    expect(row.networkCidrs).toContain(lab.v6Cidr);
    expect(JSON.parse(readFileSync(join(stateDir, 'state.json'), 'utf8'))).toMatchObject({ daemonId: row.id, name: 'lab-daemon' });
    expect(daemon.daemonId).toBe(row.id);
  });

  let webHostId: string;
  it('takes a scan posted to /api/v1/scans: the lab hosts, ports, services with CPEs, certificates, and the routes and LLDP neighbours of the daemon host appear in the inventory', async () => {
    const [web, alt] = lab.hosts;
    const networkId = await network(lab.v4Cidr, 20);
    const sessionId = await scan(networkId, { enabled: true, scripts: ['default'] });
    await expect.poll(() => stateOf(sessionId), WAIT).toBe('completed');
    const done = await get(`/api/v1/scans/${sessionId}`);
    // The lab's two hosts and the bridge's own address (this machine).
    expect(done.progress).toMatchObject({ hostsTotal: 3, hostsScanned: 3, percent: 100 });
    // The daemon logs once the server answered the final batch, which completed the session first.
    await expect.poll(() => logs.some((l) => l.msg === 'scan completed' && l.sessionId === sessionId), WAIT).toBe(true);

    const hosts = (await get(`/api/v1/hosts?siteId=${siteId}&limit=50`)).data as Json[];
    const webHost = hosts.find((h) => h.addresses.includes(web!.v4))!;
    expect(webHost).toMatchObject({ macs: [web!.mac], openPortCount: 3 });
    webHostId = webHost.id;
    expect(hosts.find((h) => h.addresses.includes(alt!.v4))).toMatchObject({ macs: [alt!.mac], openPortCount: 1 });

    const services = (await get(`/api/v1/services?hostId=${webHost.id}`)).data as Json[];
    expect(services.map((s) => s.port).sort((a, b) => a - b)).toEqual([22, 80, 443]);
    const ssh = services.find((s) => s.port === 22)!;
    expect(ssh).toMatchObject({ name: 'ssh', product: 'OpenSSH', cpe: 'cpe:2.3:a:openbsd:openssh:9.2p1:*:*:*:*:*:*:*', signatureSource: 'nmap', banner: 'SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u3' });
    expect(services.find((s) => s.port === 443)).toMatchObject({ name: 'https' });

    // The daemon's own host (the bridge address is one of its): its routes, from `ip -json route`.
    const self = hosts.find((h) => h.addresses.includes(lab.v4Cidr.replace('.0/28', '.1')))!;
    const routes = await t.database.db.selectFrom('host_routes').select(['destination', 'interface']).where('host_id', '=', self.id).execute();
    expect(routes).toContainEqual({ destination: lab.v4Cidr, interface: expect.stringMatching(/^svbr/) });

    // Its LLDP neighbours (lldpd on each lab host), resolved to the lab hosts by management address.
    const topology = await get(`/api/v1/hosts/${self.id}/topology`);
    expect(topology.sources.neighbours).toBe(true);
    const neighbour = topology.neighbours.find((n: Json) => n.remoteSystemName === 'lab-h0');
    expect(neighbour).toMatchObject({ remoteChassisId: web!.mac, managementAddress: web!.v4, hostId: webHost.id, protocol: 'lldp', localInterface: expect.stringMatching(/^sv/) });
    expect(topology.neighbours.find((n: Json) => n.remoteSystemName === 'lab-h1')).toMatchObject({ managementAddress: alt!.v4 });

    const certs = (await get(`/api/v1/certificates?hostId=${webHost.id}`)).data as Json[];
    expect(certs).toHaveLength(1);
    expect(certs[0]).toMatchObject({ port: 443, subject: 'CN=web.lab.test, O=Surveyor Lab', trustStatus: 'self_signed' });
  }, 180_000);

  it('collects what softflowd exports from the bridge: the host topology of a lab host shows its callers', async () => {
    const [web, alt] = lab.hosts;
    const listening = logs.find((l) => l.msg === 'flow collector listening (NetFlow v9, IPFIX)')!;
    await lab.exportFlows(`127.0.0.1:${listening.port}`, 9);
    const altHost = (await get(`/api/v1/hosts?search=${alt!.v4}`)).data[0];
    await expect
      .poll(async () => {
        await fetchFrom(alt!.ns, `http://${web!.v4}/`);
        return (await get(`/api/v1/hosts/${webHostId}/topology`)).inbound.find((p: Json) => p.address === alt!.v4);
      }, WAIT)
      .toMatchObject({ hostId: altHost.id, ports: [80], protocols: ['tcp'] });
    const topology = await get(`/api/v1/hosts/${webHostId}/topology`);
    expect(topology.sources.flows).toBe(true);
    // Conversations point client to server: the web host never shows the caller as a destination.
    expect((await get(`/api/v1/hosts/${altHost.id}/topology`)).outbound.find((p: Json) => p.address === web!.v4)).toMatchObject({ hostId: webHostId, ports: [80] });
    expect(topology.outbound.find((p: Json) => p.address === alt!.v4)).toBeUndefined();
    const row = await daemonRow();
    expect(row.flowsDropped).toBe(0);
  }, 120_000);

  it('stops a running scan when it is cancelled, and takes the next job afterwards', async () => {
    const [web] = lab.hosts;
    const networkId = await network(lab.v6Cidr, 1000);
    const sessionId = await scan(networkId, { enabled: true, scripts: ['default'] });
    await expect.poll(() => stateOf(sessionId), WAIT).toBe('running');
    await expect.poll(() => nmapRunningOn(web!.v6), WAIT).toBe(true);
    const res = await t.app.inject({ method: 'POST', url: `/api/v1/scans/${sessionId}/cancel`, headers: bearer(api) });
    expect(res.statusCode, res.body).toBe(200);
    await expect.poll(() => logs.some((l) => l.msg === 'scan cancelled' && l.sessionId === sessionId), WAIT).toBe(true);
    expect(nmapRunningOn(web!.v6)).toBe(false);
    expect(await stateOf(sessionId)).toBe('cancelled');
    expect(logs.some((l) => l.msg === 'scan completed' && l.sessionId === sessionId)).toBe(false);

    // Still taking jobs: a small scan without nmap completes.
    const next = await scan(await network(`${lab.hosts[1]!.v6}/128`, 20), { enabled: false, scripts: [] });
    await expect.poll(() => stateOf(next), WAIT).toBe('completed');
    expect((await get(`/api/v1/scans/${next}`)).progress).toMatchObject({ hostsTotal: 1, hostsScanned: 1 });
  }, 240_000);

  it('killed with SIGKILL mid-scan (the command, same name and state folder): the session is marked stalled, and what the last completed scan found is not taken away', async () => {
    // The in-process daemon makes way for the command; with its name and state folder it is the same daemon.
    daemon.stop();
    expect(await running).toBe(0);
    const before = await daemonRow();
    execFileSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-b', 'packages/contract', 'packages/daemon'], { cwd: ROOT });
    const child = spawn(process.execPath, [join(ROOT, 'packages/daemon/bin/surveyor-daemon.js'), ...daemonArgs], { stdio: ['ignore', 'pipe', 'ignore'] });
    let out = '';
    child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise((r) => child.once('exit', (_code, signal) => r(signal)));
    await expect.poll(async () => (await daemonRow())?.restartCount, WAIT).toBe(before.restartCount + 1);
    expect((await daemonRow()).id).toBe(before.id);

    const networkId = (await get(`/api/v1/networks?siteId=${siteId}`)).data.find((n: Json) => n.cidr === lab.v4Cidr).id;
    const sessionId = await scan(networkId, { enabled: true, scripts: ['default'] });
    await expect.poll(() => stateOf(sessionId), WAIT).toBe('running');
    child.kill('SIGKILL');
    expect(await exited).toBe('SIGKILL');
    expect(out).toContain(`"msg":"scan started","sessionId":"${sessionId}"`);
    // Its nmap, orphaned, ends on its own (systemd's control group would end it with the daemon).
    await expect.poll(() => nmapRunningOn(lab.hosts[0]!.v4), WAIT).toBe(false);

    // scan.stall, a minute later: the daemon has not heartbeated for 3 × 5 s.
    const runner = new JobRunner({ database: t.database, logger: serverLogger('silent'), jobs: jobDefinitions({ config: t.config, secretKey: t.secretKey }), now: () => new Date(Date.now() + 60_000) });
    expect(await runner.tick('scan.stall')).toMatchObject({ ran: true, outcome: 'ok' });
    expect(await stateOf(sessionId)).toBe('stalled');
    const services = (await get(`/api/v1/services?hostId=${webHostId}`)).data as Json[];
    expect(services.map((s) => [s.port, s.goneAt])).toEqual(expect.arrayContaining([[22, null], [80, null], [443, null]]));
    expect(services).toHaveLength(3);
  }, 180_000);

  it('restarted, keeps its identity (a new bootId counts a restart) and goes back online', async () => {
    const before = await daemonRow();
    start();
    await expect.poll(async () => (await daemonRow())?.restartCount, WAIT).toBe(before.restartCount + 1);
    await expect.poll(async () => (await daemonRow())?.status, WAIT).toBe('online');
    const after = await daemonRow();
    expect(after.id).toBe(before.id);
    expect(daemon.daemonId).toBe(before.id);
    expect((await consoleGet('/api/v1/daemons')).data.filter((d: Json) => d.name === 'lab-daemon')).toHaveLength(1);
  });
}, ['nmap', 'lldpd', 'lldpcli', 'softflowd', 'gcc']);
