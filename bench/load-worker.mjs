// Load generator for bench/inventory.mjs and bench/host-pages.mjs, in its own thread so its work is not charged to the
// process being measured. Runs `concurrency` loops for `seconds`; posts the completed count a second
// (with `reportCpu`, that as `rate` and the thread's CPU µs an operation as `clientUs`).
import http from 'node:http';
import { parentPort, workerData } from 'node:worker_threads';
import pg from 'pg';
import { threadCpu } from './cpu.mjs';

const { mode, seconds, concurrency, url, token, databaseUrl, schema, sql, parameters, rawValues, statementName } = workerData;
let one;
let pool;
if (mode === 'api') {
  // Plain http with keep-alive: a lighter client than fetch, so the figure is the server's.
  const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
  const headers = { authorization: `Bearer ${token}` };
  one = () =>
    new Promise((resolve, reject) => {
      http
        .get(url, { agent, headers }, (res) => {
          if (res.statusCode !== 200) reject(new Error(`API answered ${res.statusCode}`));
          res.on('data', () => {});
          res.on('end', resolve);
        })
        .on('error', reject);
    });
} else {
  // rawValues: every column as the text the server sent (no Date or array parsing in this thread),
  // so the figure is the database's and the protocol's, whatever the columns' types.
  const raw = rawValues ? { types: { getTypeParser: () => (v) => v } } : {};
  pool = new pg.Pool({ connectionString: databaseUrl, max: concurrency, options: `-c search_path=${schema}`, ...raw });
  // statementName: sent as the server sends its page reads, a statement prepared once per connection.
  one = statementName ? () => pool.query({ name: statementName, text: sql, values: parameters }) : () => pool.query(sql, parameters);
}
// reportCpu: also the CPU µs an operation of this thread alone (the client's share).
const cpu0 = threadCpu();
let n = 0;
const end = Date.now() + seconds * 1000;
await Promise.all(
  Array.from({ length: concurrency }, async () => {
    while (Date.now() < end) {
      await one();
      n++;
    }
  }),
);
const clientUs = ((threadCpu() - cpu0) * 1e6) / n;
await pool?.end();
parentPort.postMessage(workerData.reportCpu ? { rate: n / seconds, clientUs } : n / seconds);
