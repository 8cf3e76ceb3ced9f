// SSE benchmark (issue 6): 1,000 concurrent GET /api/sse clients on one web process (a child
// `surveyor serve` on PostgreSQL, BENCH_DATABASE_URL); each change is committed by another
// connection (as a worker or another web process would) and timed from just before its INSERT is
// sent to its arrival at every client. Target: p99 under 200 ms; RSS of the web process reported.
// Baseline in the same run: the same measurement with one client. The clients run in worker
// threads of this script, so their parsing is not charged to the web process.
import http from 'node:http';
import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import { startServe } from './serve.mjs';

const now = () => performance.timeOrigin + performance.now();

if (!isMainThread) {
  // --- a client thread: `count` streams, recording when each change id arrives -------------------
  const { port, cookie, count } = workerData;
  const arrivals = new Map(); // id → arrival times
  let open = 0;
  for (let i = 0; i < count; i++) {
    const req = http.get({ host: '127.0.0.1', port, path: '/api/sse', headers: { cookie, accept: 'text/event-stream' }, agent: false }, (res) => {
      if (res.statusCode !== 200) throw new Error(`sse ${res.statusCode}`);
      res.setEncoding('utf8');
      let buf = '';
      let counted = false;
      res.on('data', (chunk) => {
        const at = now();
        if (!counted) {
          counted = true;
          if (++open === count) parentPort.postMessage({ type: 'open' });
        }
        buf += chunk;
        let end;
        while ((end = buf.indexOf('\n\n')) >= 0) {
          const frame = buf.slice(0, end);
          buf = buf.slice(end + 2);
          const m = /^id: (\d+)$/m.exec(frame);
          if (m) (arrivals.get(m[1]) ?? arrivals.set(m[1], []).get(m[1])).push(at);
        }
      });
    });
    req.on('error', (e) => parentPort.postMessage({ type: 'error', message: e.message }));
  }
  parentPort.on('message', (m) => {
    if (m === 'report') parentPort.postMessage({ type: 'report', arrivals: [...arrivals] });
  });
} else {
  const { sql } = await import('kysely');
  const pg = (await import('pg')).default;
  const admin = await import('../packages/server/dist/admin/admin.service.js');
  const { openDatabase } = await import('../packages/server/dist/db/database.js');
  const { migrate } = await import('../packages/server/dist/db/migrate.js');

  const URL_ = process.env.BENCH_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/postgres';
  const SCHEMA = 'bench_sse';
  const CLIENTS = Number(process.env.BENCH_SSE_CLIENTS || 1000);
  const THREADS = 2;
  const CHANGES = 100;
  const GAP_MS = 100;

  const root = new pg.Client({ connectionString: URL_ });
  await root.connect();
  await root.query(`drop schema if exists ${SCHEMA} cascade`);
  await root.query(`create schema ${SCHEMA}`);
  await root.end();
  const database = await openDatabase({ url: URL_, poolMax: 4, searchPath: SCHEMA });
  await migrate(database);
  const password = randomBytes(12).toString('hex');
  const { organisationId: org } = await admin.createOrganisation(database.db, { type: 'cli' }, { name: 'sse', ownerEmail: 'sse@bench.test', ownerPassword: password });
  await database.close();

  const { child, base, port, rssMb } = await startServe({ url: URL_, schema: SCHEMA, env: { SERVICE_RATE_LIMIT_ANON_PER_MINUTE: '1000000' } });
  const login = await fetch(`${base}/api/v1/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'sse@bench.test', password }) });
  if (login.status !== 200) throw new Error(`login ${login.status}`);
  const cookie = login.headers.get('set-cookie').split(';')[0];
  const rssIdle = rssMb();

  const writer = new pg.Client({ connectionString: URL_, options: `-c search_path=${SCHEMA}` });
  await writer.connect();

  /** Opens `clients` streams over THREADS threads, commits CHANGES changes, returns latencies (ms). */
  async function round(clients) {
    const threads = Math.min(THREADS, clients);
    const workers = Array.from({ length: threads }, (_, i) => {
      const count = Math.floor(clients / threads) + (i < clients % threads ? 1 : 0);
      return new Worker(new URL(import.meta.url), { workerData: { port, cookie, count } });
    });
    await Promise.all(
      workers.map(
        (w) =>
          new Promise((resolve, reject) => {
            w.on('message', (m) => (m.type === 'open' ? resolve() : m.type === 'error' ? reject(new Error(m.message)) : null));
            w.on('error', reject);
          }),
      ),
    );
    await new Promise((r) => setTimeout(r, 500));
    const rssOpen = rssMb();
    const sent = new Map();
    for (let i = 0; i < CHANGES; i++) {
      const t0 = now();
      const r = await writer.query(`insert into change_log (organisation_id, entity_type, entity_id, action) values ($1, 'host', gen_random_uuid(), 'updated') returning id`, [org]);
      sent.set(String(r.rows[0].id), t0);
      await new Promise((r2) => setTimeout(r2, GAP_MS));
    }
    await new Promise((r) => setTimeout(r, 1000));
    const rssAfter = rssMb();
    const reports = await Promise.all(
      workers.map(
        (w) =>
          new Promise((resolve) => {
            w.on('message', (m) => m.type === 'report' && resolve(m.arrivals));
            w.postMessage('report');
          }),
      ),
    );
    await Promise.all(workers.map((w) => w.terminate()));
    const latencies = [];
    let missing = 0;
    for (const [id, t0] of sent) {
      let got = 0;
      for (const arrivals of reports) {
        const times = new Map(arrivals).get(id) ?? [];
        got += times.length;
        for (const at of times) latencies.push(at - t0);
      }
      missing += clients - got;
    }
    latencies.sort((a, b) => a - b);
    const q = (p) => latencies[Math.ceil((p / 100) * latencies.length) - 1];
    return { clients, samples: latencies.length, missing, p50: q(50), p99: q(99), max: latencies.at(-1), rssOpen, rssAfter };
  }

  const one = await round(1);
  await new Promise((r) => setTimeout(r, 1000)); // the first round's streams are gone
  const many = await round(CLIENTS);
  await writer.end();
  child.kill('SIGTERM');
  await new Promise((r) => child.once('exit', r));
  const cleanup = new pg.Client({ connectionString: URL_ });
  await cleanup.connect();
  await cleanup.query(`drop schema if exists ${SCHEMA} cascade`);
  await cleanup.end();

  const row = (r) => `| ${r.clients.toLocaleString('en')} | ${r.samples.toLocaleString('en')} | ${r.missing} | ${r.p50.toFixed(1)} | **${r.p99.toFixed(1)}** | ${r.max.toFixed(1)} | ${r.rssOpen} / ${r.rssAfter} |`;
  const out = [
    '## Live change stream (issue 6)',
    '',
    `\`GET /api/sse\` clients on one web process (\`surveyor serve\`, a child process, PostgreSQL); ${CHANGES} changes committed one every ${GAP_MS} ms by another connection, each timed from just before its INSERT was sent to its arrival at every client (clients in ${THREADS} threads of the benchmark; ${new Date().toISOString().slice(0, 10)}). RSS of the web process idle: ${rssIdle} MB.`,
    '',
    '| clients | deliveries | missing | p50 ms | p99 ms | max ms | RSS MB (streams open / after the changes) |',
    '|---|---|---|---|---|---|---|',
    row(one),
    row(many),
    '',
    `Ratio of p99 with ${CLIENTS.toLocaleString('en')} clients to p99 with one (the baseline): **${(many.p99 / one.p99).toFixed(2)}**; target p99 < 200 ms. ` +
      'One LISTEN connection feeds every stream of the process; each notified range of change ids is read once per organisation and the same frame text is written to every stream of that organisation.',
  ];
  console.log(out.join('\n'));
  const doc = fileURLToPath(new URL('../docs/benchmarks.md', import.meta.url));
  const text = readFileSync(doc, 'utf8');
  const at = text.indexOf('\n## Live change stream (issue 6)');
  let rest = '';
  let kept = text;
  if (at >= 0) {
    kept = text.slice(0, at);
    const next = text.indexOf('\n## ', at + 5);
    rest = next >= 0 ? text.slice(next) : '';
  }
  writeFileSync(doc, `${kept.trimEnd()}\n\n${out.join('\n')}\n${rest ? `${rest.trimEnd()}\n` : ''}`);
  process.exit(0);
}
