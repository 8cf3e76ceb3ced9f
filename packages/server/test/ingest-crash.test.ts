import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { daemonHeaders } from './daemon-client.js';
import { TEST_DATABASE_URL, type TestApp, type TestDatabase, buildTestApp, createTestDatabase } from './helpers.js';
import { type Scanning, createNetwork, scanningOrg, startSession } from './scanning.js';

// A batch with flows is all or nothing (issue 18, section 2, item 2), proven on the real server:
// `surveyor serve` as a child process on PostgreSQL is SIGKILLed while it takes a large gzip batch
// (30,000 flows and 300 hosts) at several points: as the request starts, at fractions of the time
// a batch takes, and the moment the batch's rows become visible from another connection (just
// after the commit). After each kill the server is started again and the batch is either wholly
// stored or not at all; a resend of every batch then converges on one clean delivery each.

const root = fileURLToPath(new URL('../../..', import.meta.url));
const bin = path.join(root, 'packages/server/bin/surveyor.js');
const FLOWS = 30_000;
const HOSTS = 300;

interface Server {
  child: ChildProcess;
  base: string;
  exited: Promise<unknown>;
}

{
  describe.skipIf(!TEST_DATABASE_URL)('a batch with flows under SIGKILL of the server (PostgreSQL)', () => {
    let testDb: TestDatabase;
    let t: TestApp;
    let s: Scanning;
    let session: string;
    let server: Server | undefined;
    /** One minute of today for every batch, so a resend is the same batch. */
    const bucketStart = new Date(Math.floor(Date.now() / 60_000) * 60_000).toISOString();
    const env = () => ({
      PATH: process.env.PATH,
      DATABASE_URL: `${TEST_DATABASE_URL}${TEST_DATABASE_URL!.includes('?') ? '&' : '?'}options=-c%20search_path%3D${testDb.schema}`,
      SERVICE_SECRET_KEY: randomBytes(32).toString('hex'),
      SERVICE_PORT: '0',
      SERVICE_JOBS_IN_WEB: 'false',
      SERVICE_LOG_LEVEL: 'info', // the `listening on` record is at info
      SERVICE_RATE_LIMIT_DAEMON_PER_MINUTE: '1000000',
    });

    async function startServer(): Promise<Server> {
      const child = spawn(process.execPath, [bin, 'serve'], { cwd: root, env: env(), stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      // Only until it listens: the request log of a large run need not be kept.
      const take = (d: Buffer) => void (out.length < 1_000_000 && (out += d));
      child.stdout!.on('data', take);
      child.stderr!.on('data', take);
      const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve(signal ?? code)));
      const until = Date.now() + 20_000;
      let m: RegExpExecArray | null = null;
      while (!(m = /listening on (http:\/\/[^\s"]+)/.exec(out)) && Date.now() < until) await new Promise((r) => setTimeout(r, 25));
      if (!m) throw new Error(`the server did not start:\n${out}`);
      return { child, base: m[1]!, exited };
    }

    async function kill(srv: Server) {
      srv.child.kill('SIGKILL');
      await srv.exited;
    }

    /** Batch `n`: its own hosts (10.7.<n>.x), and flows to its own port range, in today's bucket. */
    function batch(n: number) {
      const ips = Array.from({ length: HOSTS }, (_, i) => ({ hostFingerprint: `crash-${n}-${i}`, address: `10.7.${n * 2 + Math.floor(i / 250)}.${(i % 250) + 1}` }));
      const flows = Array.from({ length: FLOWS }, (_, i) => ({
        bucketStart, srcIp: `10.8.${Math.floor(i / 250) % 250}.${(i % 250) + 1}`, dstIp: `10.7.${n * 2}.1`, dstPort: 20_000 + n * 1000 + (i % 1000), protocol: 'tcp', packets: 1 + (i % 7), bytes: 100 + i, source: 'crash-test',
      }));
      const body = { sessionId: session, final: false, stats: { hostsTotal: HOSTS }, hosts: ips.map((x) => ({ fingerprint: x.hostFingerprint })), ips, flows };
      return gzipSync(JSON.stringify(body));
    }

    const post = (srv: Server, body: Buffer) =>
      fetch(`${srv.base}/api/v1/daemon/observations`, {
        method: 'POST', body, headers: { ...daemonHeaders(s.daemon.token, s.daemon.id), 'content-type': 'application/json', 'content-encoding': 'gzip' },
      });

    /** What batch `n` left: its flows and its hosts. */
    async function stored(n: number) {
      const o = s.org.organisationId;
      const flows = (await sql<{ n: number }>`select count(*)::int as n from flows where organisation_id = ${o} and dst_port between ${20_000 + n * 1000} and ${20_999 + n * 1000}`.execute(t.database.db)).rows[0]!.n;
      const hosts = (await sql<{ n: number }>`select count(*)::int as n from host_fingerprints where organisation_id = ${o} and fingerprint like ${`crash-${n}-%`}`.execute(t.database.db)).rows[0]!.n;
      return { flows, hosts };
    }

    beforeAll(async () => {
      testDb = await createTestDatabase();
      t = await buildTestApp({ testDb });
      s = await scanningOrg(t, { networkCidrs: ['10.0.0.0/8'] });
      session = await startSession(t, s, await createNetwork(t, s, '10.7.0.0/16'));
    });
    afterAll(async () => {
      if (server) await kill(server).catch(() => {});
      await t?.close();
      await testDb?.drop();
    });

    it('stores each batch wholly or not at all wherever the server dies, and a resend converges on one delivery', async () => {
      server = await startServer();
      // Batch 0, undisturbed: how long a batch takes.
      const t0 = Date.now();
      const first = await post(server, batch(0));
      expect(first.status, await first.clone().text()).toBe(200);
      const took = Date.now() - t0;
      expect(await stored(0)).toEqual({ flows: FLOWS, hosts: HOSTS });

      // Kill points: as the request starts, at fractions of a batch's time, and once rows are visible.
      const points: ({ afterMs: number } | { visible: true })[] = [{ afterMs: 0 }, ...[0.2, 0.5, 0.8, 0.95, 1.1].map((f) => ({ afterMs: Math.round(f * took) })), { visible: true }];
      const outcomes: string[] = [];
      for (const [i, point] of points.entries()) {
        const n = i + 1;
        const body = batch(n);
        const answer = post(server, body).then((r) => r.status, () => 'cut');
        if ('afterMs' in point) await new Promise((r) => setTimeout(r, point.afterMs));
        else {
          const until = Date.now() + 30_000;
          while ((await stored(n)).flows === 0 && Date.now() < until) await new Promise((r) => setImmediate(r));
        }
        await kill(server);
        const status = await answer;
        server = await startServer();
        const left = await stored(n);
        // All or nothing: every flow and every host of the batch, or none of either.
        expect([{ flows: 0, hosts: 0 }, { flows: FLOWS, hosts: HOSTS }], `kill point ${JSON.stringify(point)} (answer ${status})`).toContainEqual(left);
        if (status === 200) expect(left.flows).toBe(FLOWS);
        outcomes.push(left.flows === 0 ? 'nothing' : 'everything');
      }
      // The aim is honest: at least one kill came before the commit, and the last one after it.
      expect(outcomes).toContain('nothing');
      expect(outcomes.at(-1)).toBe('everything');

      // The daemon resends every batch (it never got an answer): each ends as one clean delivery.
      for (let n = 0; n <= points.length; n++) {
        const res = await post(server, batch(n));
        expect(res.status, await res.clone().text()).toBe(200);
        expect(await stored(n)).toEqual({ flows: FLOWS, hosts: HOSTS });
      }
      const again = await post(server, batch(1));
      expect(again.status).toBe(200);
      expect(await stored(1)).toEqual({ flows: FLOWS, hosts: HOSTS });
    }, 120_000);
  });
}
