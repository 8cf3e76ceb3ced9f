// A child `surveyor serve` for the benchmarks, so that the web process's RSS and CPU are its own:
// on PostgreSQL at `url`, in `schema`, with the jobs off and `env` on top. It never outlives the
// benchmark, even when the benchmark fails.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';

/** A port free on 127.0.0.1 now. */
function freePort() {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

export async function startServe({ url, schema, env = {} }) {
  // The log stays at warn (request records would cost the benchmark); the start-up record is at
  // info, so the port is chosen here and readiness read from /api/health.
  const port = await freePort();
  // BENCH_SERVE_NODE_ARGS: node options for the child only (e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`,
  // which NODE_OPTIONS refuses); the child exits on SIGTERM, so its profile is written.
  const nodeArgs = (process.env.BENCH_SERVE_NODE_ARGS || '').split(' ').filter(Boolean);
  const child = spawn(process.execPath, [...nodeArgs, fileURLToPath(new URL('../packages/server/bin/surveyor.js', import.meta.url)), 'serve'], {
    env: {
      ...process.env,
      DATABASE_URL: `${url}${url.includes('?') ? '&' : '?'}options=-c%20search_path%3D${schema}`,
      SERVICE_SECRET_KEY: randomBytes(32).toString('hex'),
      SERVICE_HOST: '127.0.0.1',
      SERVICE_PORT: String(port),
      SERVICE_LOG_LEVEL: 'warn',
      SERVICE_JOBS_IN_WEB: 'false',
      ...env,
    },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  process.on('exit', () => child.kill('SIGKILL'));
  const base = `http://127.0.0.1:${port}`;
  let exited = null;
  child.on('exit', (code) => (exited = code ?? -1));
  for (const deadline = Date.now() + 60_000; ; ) {
    if (exited !== null) throw new Error(`serve exited ${exited}`);
    if (Date.now() > deadline) throw new Error('serve did not answer /api/health within 60 s');
    const ok = await fetch(`${base}/api/health`).then((r) => r.ok, () => false);
    if (ok) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    child,
    base,
    port,
    /** Resident memory of the web process, in MB. */
    rssMb: () => Math.round(Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))[1]) / 1024),
  };
}
