import { execFileSync, spawn } from 'node:child_process';
import dgram from 'node:dgram';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as admin from '../../server/src/admin/admin.service.js';
import { type SeededOrg, type TestApp, bearer, buildTestApp, seedMemberWithKey, seedOrg } from '../../server/test/helpers.js';
import { ConfigError, type DaemonConfig, parseCommandLine } from '../src/config.js';
import { Daemon, FatalError } from '../src/daemon.js';
import { createLogger } from '../src/log.js';
import { FIELDS, ipfix, record, set, template } from './export-packets.js';

// The daemon's protocol client and command against the real server (no lab: nothing here needs
// root). The daemon talks to the server through a TCP relay the test can cut and tap.

type Json = Record<string, any>;
const WAIT = { timeout: 60_000, interval: 100 };
const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const BIN = join(ROOT, 'packages/daemon/bin/surveyor-daemon.js');

/** A relay to the server that can refuse connections, and that records what clients sent. */
async function relay(port: number) {
  let down = false;
  const sockets = new Set<net.Socket>();
  const sent: Buffer[] = [];
  const server = net.createServer((client) => {
    if (down) return client.destroy();
    const upstream = net.connect(port, '127.0.0.1');
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => {});
    }
    client.on('data', (d: Buffer) => sent.push(d));
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`,
    sent,
    down() {
      down = true;
      for (const s of sockets) s.destroy();
    },
    up() {
      down = false;
    },
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

interface Seen {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
  /** The server's answer, once it came. */
  status?: number;
}
/** What the HTTP proxy does with a request: forward it (its headers replaced), hold it unanswered, or cut the connection. */
type Action = 'forward' | 'hold' | 'cut' | { headers: http.IncomingHttpHeaders };

const jsonOf = (r: Seen) => JSON.parse((r.headers['content-encoding'] === 'gzip' ? gunzipSync(r.body) : r.body).toString()) as Json;

/** An HTTP proxy to the server that records every request and its answer, and lets a test hold, cut or alter requests. */
async function httpProxy(port: number) {
  const seen: Seen[] = [];
  const held = new Set<http.ServerResponse>();
  const proxy = {
    seen,
    route: (_r: Seen): Action | Promise<Action> => 'forward',
    url: '',
    /** The request bodies of `path`, decompressed and parsed. */
    bodies: (path: string) => seen.filter((r) => r.url === path).map(jsonOf),
    close: () => {
      for (const res of held) res.destroy();
      return new Promise<void>((r) => server.close(() => r()));
    },
  };
  const server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const r: Seen = { method: req.method!, url: req.url!, headers: req.headers, body: Buffer.concat(chunks) };
    seen.push(r);
    const action = await proxy.route(r);
    if (action === 'cut') return req.socket.destroy();
    if (action === 'hold') {
      held.add(res);
      res.on('close', () => held.delete(res));
      return;
    }
    const up = http.request({ host: '127.0.0.1', port, method: r.method, path: r.url, headers: action === 'forward' ? r.headers : action.headers }, (answer) => {
      r.status = answer.statusCode;
      res.writeHead(answer.statusCode!, answer.headers);
      answer.pipe(res);
    });
    up.on('error', () => res.destroy());
    up.end(r.body);
  });
  server.keepAliveTimeout = 1000;
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  proxy.url = `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
  return proxy;
}

/** Sends one IPFIX packet with a template and a record per destination port (10.0.0.2 -> 10.0.0.1, TCP), stamped now. */
async function exportFlows(port: number, dstPorts: number[]) {
  const packet = ipfix(Math.floor(Date.now() / 1000), 1, set(2, template(256, FIELDS)), set(256, Buffer.concat(dstPorts.map((p) => record('10.0.0.2', '10.0.0.1', p)))));
  const socket = dgram.createSocket('udp4');
  await new Promise<void>((resolve, reject) => socket.send(packet, port, '127.0.0.1', (e) => (e ? reject(e) : resolve())));
  socket.close();
}

describe('the daemon protocol client against the real server', () => {
  let t: TestApp;
  let org: SeededOrg;
  let api: string;
  let proxy: Awaited<ReturnType<typeof relay>>;
  let hp: Awaited<ReturnType<typeof httpProxy>>;
  const dirs: string[] = [];
  const stateDir = () => {
    const d = mkdtempSync(join(tmpdir(), 'surveyor-daemon-test-'));
    dirs.push(d);
    return d;
  };
  const configFor = (key: string, extra: Partial<DaemonConfig> = {}): DaemonConfig => ({
    ...parseCommandLine(['--server', proxy.url, '--key', key, '--state', stateDir(), '--no-nmap', '--network', '127.0.0.1/32'], {}).config!,
    ...extra,
  });
  const daemonsOf = async () => (await t.database.db.selectFrom('daemons').selectAll().where('organisation_id', '=', org.organisationId).execute()) as Json[];

  beforeAll(async () => {
    t = await buildTestApp({ env: { SERVICE_DAEMON_HEARTBEAT_SECONDS: '5', SERVICE_DAEMON_POLL_TIMEOUT_SECONDS: '1' } });
    await t.app.listen({ host: '127.0.0.1', port: 0 });
    proxy = await relay((t.app.server.address() as net.AddressInfo).port);
    hp = await httpProxy((t.app.server.address() as net.AddressInfo).port);
    org = await seedOrg(t.database);
    api = (await seedMemberWithKey(t.database, org, 'editor', ['scan:run', 'inventory:write', 'inventory:read'])).token;
  });
  afterAll(async () => {
    await proxy?.close();
    await hp?.close();
    await t?.close();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it('retries registration with backoff while the server cannot be reached, then registers and heartbeats online', async () => {
    const key = (await admin.createDaemonKey(t.database.db, { type: 'cli' }, { org: org.organisationId })).token;
    const logs: Json[] = [];
    proxy.down();
    const d = new Daemon({ ...configFor(key), name: 'retrying' }, createLogger('debug', (l) => void logs.push(JSON.parse(l))));
    const run = d.run();
    await expect.poll(() => logs.filter((l) => l.msg === 'server call failed; retrying' && l.path === '/api/v1/daemon/register').length, WAIT).toBeGreaterThanOrEqual(2);
    const retries = logs.filter((l) => l.msg === 'server call failed; retrying');
    expect(retries.map((l) => l.attempt).slice(0, 2)).toEqual([1, 2]);
    for (const r of retries) expect(r.retryInMs).toBeLessThanOrEqual(Math.min(30_000, 500 * 2 ** (r.attempt - 1)));
    proxy.up();
    await expect.poll(async () => (await daemonsOf()).find((x) => x.name === 'retrying')?.status, WAIT).toBe('online');
    expect(logs.find((l) => l.msg === 'registered')).toMatchObject({ daemonId: d.daemonId, capabilities: { nmap: false, netflow: false, ebpf: false } });
    d.stop();
    expect(await run).toBe(0);
  });

  it('reports degraded, with the reason, when the nmap it was told to use is not there', async () => {
    const key = (await admin.createDaemonKey(t.database.db, { type: 'cli' }, { org: org.organisationId })).token;
    const d = new Daemon({ ...configFor(key), name: 'no-nmap-here', nmap: '/nonexistent/nmap' }, createLogger('error', () => {}));
    expect(d.health()).toEqual({ status: 'degraded', reason: 'nmap not found at /nonexistent/nmap' });
    const run = d.run();
    await expect.poll(async () => (await daemonsOf()).find((x) => x.name === 'no-nmap-here')?.status, WAIT).toBe('degraded');
    expect((await daemonsOf()).find((x) => x.name === 'no-nmap-here')!.capabilities).toMatchObject({ nmap: false });
    d.stop();
    await run;
  });

  it('stops with a fatal error when the server refuses its key', async () => {
    const key = await admin.createDaemonKey(t.database.db, { type: 'cli' }, { org: org.organisationId });
    await admin.revokeKey(t.database.db, { type: 'cli' }, { id: key.id });
    const d = new Daemon({ ...configFor(key.token), name: 'revoked' }, createLogger('error', () => {}));
    await expect(d.run()).rejects.toBeInstanceOf(FatalError);
  });

  it('--once: the command takes one job, logs JSON lines and exits 0; a large body goes gzip-compressed', async () => {
    execFileSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-b', 'packages/contract', 'packages/daemon'], { cwd: ROOT });
    const key = (await admin.createDaemonKey(t.database.db, { type: 'cli' }, { org: org.organisationId })).token;
    const config = join(stateDir(), 'config.json');
    // Sixty more networks make the registration body larger than 1 KiB: it goes gzip-compressed.
    const networks = ['127.0.0.1/32', ...Array.from({ length: 60 }, (_, i) => `198.18.${i}.0/24`)];
    writeFileSync(config, JSON.stringify({ server: proxy.url, name: 'once', networks, nmap: false, scan: { connectTimeoutMs: 1000 } }));
    const child = spawn(process.execPath, [BIN, '--config', config, '--state', stateDir(), '--once'], { env: { ...process.env, SURVEYOR_DAEMON_KEY: key }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    await expect.poll(async () => (await daemonsOf()).find((x) => x.name === 'once')?.status, WAIT).toBe('online');

    const network = await t.app.inject({ method: 'POST', url: '/api/v1/networks', headers: bearer(api), payload: { name: 'loopback', cidr: '127.0.0.1/32', topPortsTcp: 100 } });
    expect(network.statusCode, network.body).toBe(201);
    const scan = await t.app.inject({ method: 'POST', url: '/api/v1/scans', headers: bearer(api), payload: { networkId: network.json().id } });
    expect(scan.statusCode, scan.body).toBe(202);
    expect(await exited).toBe(0);

    const lines = out.trim().split('\n').map((l) => JSON.parse(l) as Json);
    for (const l of lines) expect(l).toEqual(expect.objectContaining({ time: expect.any(String), level: expect.any(String), msg: expect.any(String) }));
    expect(lines.map((l) => l.msg)).toEqual(expect.arrayContaining(['starting', 'registered', 'job received', 'scan completed']));
    expect(out).not.toContain(key);
    const session = await t.app.inject({ method: 'GET', url: `/api/v1/scans/${scan.json().sessionId}`, headers: bearer(api) });
    expect(session.json()).toMatchObject({ state: 'completed', progress: { hostsTotal: 1, hostsScanned: 1 } });
    // The registration went compressed, and the server took it.
    expect(Buffer.concat(proxy.sent).toString('latin1')).toMatch(/POST \/api\/v1\/daemon\/register HTTP\/1\.1\r\n[^]*?content-encoding: gzip/i);
    expect((await daemonsOf()).find((x) => x.name === 'once')!.network_cidrs).toEqual(expect.arrayContaining(networks));
  });

  it('a server that refuses gzip bodies with 415 gets them plain from then on', async () => {
    const key = (await admin.createDaemonKey(t.database.db, { type: 'cli' }, { org: org.organisationId })).token;
    hp.seen.length = 0;
    // The real server takes gzip; told the body is `x-gzip` it refuses it as a server without gzip does: 415 unsupported_media_type.
    hp.route = (r) => (r.headers['content-encoding'] === 'gzip' ? { headers: { ...r.headers, 'content-encoding': 'x-gzip' } } : 'forward');
    const logs: Json[] = [];
    // Sixty more networks make the registration body larger than 1 KiB.
    const networks = ['127.0.0.1/32', ...Array.from({ length: 60 }, (_, i) => `198.18.${i}.0/24`)];
    const d = new Daemon({ ...configFor(key), server: hp.url, name: 'no-gzip', networks, flows: { listen: '127.0.0.1:0', maxBuckets: 1000, flushSeconds: 1 } }, createLogger('debug', (l) => void logs.push(JSON.parse(l))));
    const run = d.run();
    try {
      await expect.poll(async () => (await daemonsOf()).find((x) => x.name === 'no-gzip')?.status, WAIT).toBe('online');
      const registers = hp.seen.filter((r) => r.url === '/api/v1/daemon/register');
      expect(registers.map((r) => [r.headers['content-encoding'], r.status])).toEqual([['gzip', 415], [undefined, 200]]);
      expect(hp.bodies('/api/v1/daemon/register')[1]).toMatchObject({ name: 'no-gzip', networkCidrs: expect.arrayContaining(networks) });
      expect(logs.filter((l) => l.msg === 'the server refuses gzip request bodies; sending them uncompressed')).toHaveLength(1);
      // A later large body (forty flows) goes plain at once.
      await exportFlows(logs.find((l) => l.msg === 'flow collector listening (NetFlow v9, IPFIX)')!.port as number, Array.from({ length: 40 }, (_, i) => 1000 + i));
      await expect.poll(() => hp.seen.find((r) => r.url === '/api/v1/daemon/flows' && r.status !== undefined)?.status, WAIT).toBe(200);
      const flows = hp.seen.filter((r) => r.url === '/api/v1/daemon/flows');
      expect(flows[0]!.body.length).toBeGreaterThan(1024);
      expect(flows.map((r) => r.headers['content-encoding'])).toEqual(flows.map(() => undefined));
      expect(hp.bodies('/api/v1/daemon/flows')[0]!.flows).toHaveLength(40);
    } finally {
      hp.route = () => 'forward';
      d.stop();
      await run;
    }
  });

  it('sends the dropped count with the flows, and keeps a failed delivery for the next one', async () => {
    const key = (await admin.createDaemonKey(t.database.db, { type: 'cli' }, { org: org.organisationId })).token;
    hp.seen.length = 0;
    let cut = true;
    hp.route = (r) => (r.url === '/api/v1/daemon/flows' && cut ? 'cut' : 'forward');
    const logs: Json[] = [];
    const d = new Daemon({ ...configFor(key), server: hp.url, name: 'flows-dropped', flows: { listen: '127.0.0.1:0', maxBuckets: 2, flushSeconds: 1 } }, createLogger('debug', (l) => void logs.push(JSON.parse(l))));
    const run = d.run();
    try {
      await expect.poll(async () => (await daemonsOf()).find((x) => x.name === 'flows-dropped')?.status, WAIT).toBe('online');
      // Four conversations, room for two buckets: two are dropped.
      await exportFlows(logs.find((l) => l.msg === 'flow collector listening (NetFlow v9, IPFIX)')!.port as number, [22, 80, 443, 8080]);
      await expect.poll(() => logs.filter((l) => l.msg === 'flow delivery failed; kept for the next one').length, WAIT).toBeGreaterThanOrEqual(2);
      cut = false;
      await expect.poll(() => hp.seen.some((r) => r.url === '/api/v1/daemon/flows' && r.status === 200), WAIT).toBe(true);
      // Every attempt, the failed ones and the one delivered, carried the same two buckets and the two dropped.
      const attempts = hp.bodies('/api/v1/daemon/flows');
      expect(attempts.length).toBeGreaterThanOrEqual(3);
      for (const a of attempts) {
        expect(a.dropped).toBe(2);
        expect(a.flows.map((f: Json) => [f.srcIp, f.dstIp, f.dstPort, f.protocol, f.packets, f.bytes])).toEqual([['10.0.0.2', '10.0.0.1', 22, 'tcp', 3, 300], ['10.0.0.2', '10.0.0.1', 80, 'tcp', 3, 300]]);
      }
      const row = (await daemonsOf()).find((x) => x.name === 'flows-dropped')!;
      expect(Number(row.flows_dropped)).toBe(2);
      const stored = await t.database.db.selectFrom('flows').select(['dst_port', 'packets', 'bytes']).where('organisation_id', '=', org.organisationId).where('daemon_id', '=', row.id).orderBy('dst_port').execute();
      expect(stored.map((f) => [f.dst_port, Number(f.packets), Number(f.bytes)])).toEqual([[22, 3, 300], [80, 3, 300]]);
    } finally {
      hp.route = () => 'forward';
      d.stop();
      await run;
    }
  }, 90_000);

  it('stops a scan when the server answers a batch with 409 session_cancelled', async () => {
    const key = (await admin.createDaemonKey(t.database.db, { type: 'cli' }, { org: org.organisationId })).token;
    const network = await t.app.inject({ method: 'POST', url: '/api/v1/networks', headers: bearer(api), payload: { name: 'loopback cancelled', cidr: '127.0.0.2/32', topPortsTcp: 10 } });
    expect(network.statusCode, network.body).toBe(201);
    hp.seen.length = 0;
    hp.route = async (r) => {
      // Once a poll has handed out the job, polls are held: the cancel reaches the daemon only as the answer to its batch.
      if (r.url === '/api/v1/daemon/jobs/poll') return hp.seen.some((x) => x.url === r.url && x.status === 200) ? 'hold' : 'forward';
      if (r.url === '/api/v1/daemon/observations') {
        const cancel = await t.app.inject({ method: 'POST', url: `/api/v1/scans/${jsonOf(r).sessionId}/cancel`, headers: bearer(api) });
        expect(cancel.statusCode, cancel.body).toBeLessThan(300);
      }
      return 'forward';
    };
    const logs: Json[] = [];
    const d = new Daemon({ ...configFor(key), server: hp.url, name: 'cancelled-by-409', networks: ['127.0.0.2/32'] }, createLogger('debug', (l) => void logs.push(JSON.parse(l))), { once: true });
    const run = d.run();
    try {
      await expect.poll(async () => (await daemonsOf()).find((x) => x.name === 'cancelled-by-409')?.status, WAIT).toBe('online');
      const scan = await t.app.inject({ method: 'POST', url: '/api/v1/scans', headers: bearer(api), payload: { networkId: network.json().id } });
      expect(scan.statusCode, scan.body).toBe(202);
      const sessionId = scan.json().sessionId as string;
      expect(await run).toBe(1);
      const batches = hp.seen.filter((r) => r.url === '/api/v1/daemon/observations');
      expect(batches.map((r) => r.status)).toEqual([409]);
      expect(logs.some((l) => l.msg === 'scan cancelled' && l.sessionId === sessionId)).toBe(true);
      expect(logs.some((l) => l.msg === 'scan failed')).toBe(false);
      expect(d.health()).toEqual({ status: 'online' });
      const session = await t.app.inject({ method: 'GET', url: `/api/v1/scans/${sessionId}`, headers: bearer(api) });
      expect(session.json()).toMatchObject({ state: 'cancelled' });
    } finally {
      hp.route = () => 'forward';
      d.stop();
      await run;
    }
  });

  it('logs the server it starts with without the userinfo of its URL', async () => {
    execFileSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-b', 'packages/contract', 'packages/daemon'], { cwd: ROOT });
    const server = hp.url.replace('http://', 'http://surveyor:s3cret@');
    const child = spawn(process.execPath, [BIN, '--server', server, '--key', 'svd_not_a_key', '--state', stateDir(), '--no-nmap', '--no-lldp', '--name', 'userinfo'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    // Its calls fail (fetch refuses a URL with credentials, naming it): the retry lines log the URL too.
    await expect.poll(() => out.includes('"msg":"server call failed; retrying"'), WAIT).toBe(true);
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    const lines = out.trim().split('\n').map((l) => JSON.parse(l) as Json);
    expect(lines.find((l) => l.msg === 'starting')).toMatchObject({ server: hp.url, name: 'userinfo' });
    expect(out).not.toContain('s3cret');
    expect(out).not.toContain('surveyor:');
  });

  it('--help, --version and a bad command line', () => {
    const run = (...args: string[]) => {
      try {
        return { code: 0, out: execFileSync(process.execPath, [BIN, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }) };
      } catch (e) {
        return { code: (e as { status: number }).status, out: String((e as { stderr: string }).stderr) };
      }
    };
    expect(run('--help')).toMatchObject({ code: 0, out: expect.stringContaining('Usage: surveyor-daemon --server URL --key DAEMON_KEY') });
    expect(run('--version')).toMatchObject({ code: 0, out: expect.stringMatching(/^surveyor-daemon \d+\.\d+\.\d+/) });
    expect(run('--server', 'http://x')).toMatchObject({ code: 2, out: expect.stringContaining('--key DAEMON_KEY is required') });
    expect(run('--bogus')).toMatchObject({ code: 2, out: expect.stringContaining("Unknown option '--bogus'") });
  });
});

describe('configuration', () => {
  it('takes the command line over the config file over defaults', () => {
    const dir = mkdtempSync(join(tmpdir(), 'surveyor-daemon-config-'));
    try {
      const file = join(dir, 'c.json');
      writeFileSync(join(dir, 'key'), 'svd_fromfile\n');
      writeFileSync(file, JSON.stringify({ server: 'https://a.example/', keyFile: join(dir, 'key'), site: 'ams1', name: 'n1', networks: ['10.0.0.0/8'], scan: { concurrency: 8 } }));
      const c = parseCommandLine(['--config', file, '--site', 'fra1', '--network', '192.0.2.0/24'], {}).config!;
      expect(c).toMatchObject({ server: 'https://a.example', key: 'svd_fromfile', site: 'fra1', name: 'n1', networks: ['10.0.0.0/8', '192.0.2.0/24'], nmap: 'nmap', scan: { concurrency: 8, connectTimeoutMs: 1500 } });
      expect(parseCommandLine(['--server', 'http://s', '--key', 'k'], { STATE_DIRECTORY: '/var/lib/x:/var/lib/y' }).config!.stateDir).toBe('/var/lib/x');
      // nmap's OS detection: on by default as root only; the command line over the file.
      expect(parseCommandLine(['--server', 'http://s', '--key', 'k'], {}).config!.nmapOs).toBe(process.getuid?.() === 0);
      expect(parseCommandLine(['--server', 'http://s', '--key', 'k', '--no-nmap-os'], {}).config!.nmapOs).toBe(false);
      expect(parseCommandLine(['--server', 'http://s', '--key', 'k', '--nmap-os'], {}).config!.nmapOs).toBe(true);
      writeFileSync(file, JSON.stringify({ server: 'https://a.example', key: 'k', nmapOs: false }));
      expect(parseCommandLine(['--config', file], {}).config!.nmapOs).toBe(false);
      expect(parseCommandLine(['--config', file, '--nmap-os'], {}).config!.nmapOs).toBe(true);
      writeFileSync(file, JSON.stringify({ server: 'https://a.example', key: 'k', nmapOs: 'yes' }));
      expect(() => parseCommandLine(['--config', file], {})).toThrow(/nmapOs/);
      expect(parseCommandLine(['--server', 'http://s'], { SURVEYOR_DAEMON_KEY: 'k2' }).config!.key).toBe('k2');

      writeFileSync(file, JSON.stringify({ server: 'https://a.example', key: 'k', networks: ['10.0.0.1/8'], extra: 1 }));
      expect(() => parseCommandLine(['--config', file], {})).toThrow(ConfigError);
      expect(() => parseCommandLine(['--config', file], {})).toThrow(/networks\.0: expected a CIDR with zero host bits.*extra|Unrecognized key/);
      writeFileSync(file, '{');
      expect(() => parseCommandLine(['--config', file], {})).toThrow(/is not JSON/);
      expect(() => parseCommandLine(['--server', 'ftp://x', '--key', 'k'], {})).toThrow(/http\(s\) URL/);
      expect(() => parseCommandLine(['--server', 'http://x', '--key', 'k', '--network', '10.0.0.1/8'], {})).toThrow(/zero host bits/);
      expect(() => parseCommandLine(['--server', 'http://x', '--key', 'k', '--log-level', 'loud'], {})).toThrow(/--log-level/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
