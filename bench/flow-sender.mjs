// Flow senders for bench/ingest.mjs, in their own thread so the client's work is not charged to
// the web process being measured (a daemon is another machine). Both modes prepare their payloads
// first, then time sending them: `api` posts JSON bodies, one sequential stream per daemon, all
// daemons at once; `copy` runs COPY of the same rows over as many connections, into `table`
// (default `flows`; bench/flow-storage.mjs also copies into a table without indexes).
import http from 'node:http';
import { parentPort, workerData } from 'node:worker_threads';
import pg from 'pg';
import copyStreams from 'pg-copy-streams';
import { mainThreadCpu, postgresCpu, threadCpu } from './cpu.mjs';

const { mode, flows, batch, hosts, day, port, daemons, databaseUrl, schema, baseOrg, baselineDaemon, table = 'flows', shape = 'spread' } = workerData;
const PORTS = [22, 25, 53, 80, 110, 143, 443, 3306, 5432, 8080];
const addr = (i) => `10.20.${i >> 8}.${i & 255}`;
// `spread` (the default): every record its own conversation and minute, over the day before `day`.
// `recurring` (bench/flow-storage.mjs): each daemon's batch is one minute of its own `batch`
// conversations, the same ones every minute, as a sensor sees long-lived traffic.
const rows = (from, to) => {
  const f = [];
  const k = Math.floor(from / batch);
  for (let i = from; i < to; i++) {
    if (shape === 'recurring') {
      const c = (i % batch) + (k % daemons.length) * batch;
      const minute = Math.floor(k / daemons.length);
      f.push({ bucketStart: new Date(day - minute * 60_000).toISOString(), srcIp: `10.30.${(c >> 8) & 255}.${c & 255}`, dstIp: addr(c % hosts), dstPort: PORTS[c % PORTS.length], protocol: 'tcp', packets: 1 + (i % 50), bytes: 100 + (i % 9000), source: 'ebpf' });
      continue;
    }
    f.push({ bucketStart: new Date(day - (i % 1440) * 60_000).toISOString(), srcIp: `10.30.${(i >> 8) & 255}.${i & 255}`, dstIp: addr(i % hosts), dstPort: PORTS[i % PORTS.length], protocol: 'tcp', packets: 1 + (i % 50), bytes: 100 + (i % 9000), source: 'ebpf' });
  }
  return f;
};
const senders = daemons.length;
// Batch k goes to sender k % senders.
const shares = Array.from({ length: senders }, () => []);
for (let from = 0, k = 0; from < flows; from += batch, k++) {
  const r = rows(from, Math.min(flows, from + batch));
  // Bytes, as a daemon's socket sends them (no encoding of a string per send, on either side).
  shares[k % senders].push(
    Buffer.from(
      mode === 'api'
        ? JSON.stringify({ flows: r, dropped: 0 })
        : r.map((x) => `${baseOrg}\t${x.bucketStart}\t${baselineDaemon}\t${x.srcIp}\t${x.dstIp}\t${x.dstPort}\t${x.protocol}\t${x.packets}\t${x.bytes}\t${x.source}\n`).join(''),
    ),
  );
}

// CPU time (s) of this process (web process and sender), of its main thread, of this thread and of
// every PostgreSQL process on the machine, to tell where a record's time goes. What the process used
// beyond the two threads is V8's helper threads (concurrent marking, parallel scavenges) and libuv's.
const cpu = () => {
  const u = process.cpuUsage();
  return { self: (u.user + u.system) / 1e6, main: mainThreadCpu(), sender: threadCpu(), postgres: postgresCpu() };
};
let cpu0;
let cpu1;

let stored = 0;
let seconds;
if (mode === 'api') {
  const agent = new http.Agent({ keepAlive: true, maxSockets: senders });
  const post = (headers, body) =>
    new Promise((resolve, reject) => {
      const req = http.request({ host: '127.0.0.1', port, path: '/api/v1/daemon/flows', method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': body.length, ...headers } }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c) => (text += c));
        res.on('end', () => (res.statusCode === 200 ? resolve(JSON.parse(text)) : reject(new Error(`flows ${res.statusCode} ${text}`))));
      });
      req.on('error', reject);
      req.end(body);
    });
  cpu0 = cpu();
  const t0 = process.hrtime.bigint();
  await Promise.all(
    daemons.map(async (headers, k) => {
      for (const body of shares[k]) {
        const r = await post(headers, body);
        stored += r.accepted;
      }
    }),
  );
  seconds = Number(process.hrtime.bigint() - t0) / 1e9;
} else {
  const clients = [];
  for (let k = 0; k < senders; k++) {
    const c = new pg.Client({ connectionString: databaseUrl, options: `-c search_path=${schema}` });
    await c.connect();
    clients.push(c);
  }
  cpu0 = cpu();
  const t0 = process.hrtime.bigint();
  await Promise.all(
    clients.map(async (c, k) => {
      for (const text of shares[k]) {
        const stream = c.query(copyStreams.from(`copy ${table} (organisation_id, bucket_start, daemon_id, src_ip, dst_ip, dst_port, protocol, packets, bytes, source) from stdin`));
        await new Promise((resolve, reject) => {
          stream.on('finish', resolve);
          stream.on('error', reject);
          stream.end(text);
        });
        for (let i = text.indexOf(10); i !== -1; i = text.indexOf(10, i + 1)) stored++;
      }
    }),
  );
  seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  // Before the connections close: a closed backend's CPU time is gone from /proc.
  cpu1 = cpu();
  for (const c of clients) await c.end();
}
cpu1 ??= cpu();
parentPort.postMessage({ seconds, stored, cpu: { self: cpu1.self - cpu0.self, main: cpu1.main - cpu0.main, sender: cpu1.sender - cpu0.sender, postgres: cpu1.postgres - cpu0.postgres } });
