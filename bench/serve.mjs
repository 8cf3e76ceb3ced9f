// A child `surveyor serve` for the benchmarks, so that the web process's RSS and CPU are its own:
// on PostgreSQL at `url`, in `schema`, with the jobs off and `env` on top. It never outlives the
// benchmark, even when the benchmark fails.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export async function startServe({ url, schema, env = {} }) {
  const child = spawn(process.execPath, [fileURLToPath(new URL('../packages/server/bin/surveyor.js', import.meta.url)), 'serve'], {
    env: {
      ...process.env,
      DATABASE_URL: `${url}${url.includes('?') ? '&' : '?'}options=-c%20search_path%3D${schema}`,
      SERVICE_SECRET_KEY: randomBytes(32).toString('hex'),
      SERVICE_PORT: '0',
      SERVICE_LOG_LEVEL: 'warn',
      SERVICE_JOBS_IN_WEB: 'false',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  process.on('exit', () => child.kill('SIGKILL'));
  const base = await new Promise((resolve, reject) => {
    let text = '';
    child.stdout.on('data', (d) => {
      text += d;
      const m = /listening on (http:\/\/\S+)/.exec(text);
      if (m) resolve(m[1]);
    });
    child.on('exit', (code) => reject(new Error(`serve exited ${code}`)));
  });
  return {
    child,
    base,
    port: Number(new URL(base).port),
    /** Resident memory of the web process, in MB. */
    rssMb: () => Math.round(Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))[1]) / 1024),
  };
}
