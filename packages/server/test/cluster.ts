import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chownSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { skipOrFail } from '../../../test/system-tools.js';

// A deployment of the real build on one machine, as deploy/compose.yaml runs it: a PostgreSQL
// cluster of its own (initdb, so it can be stopped and started without touching the suite's
// shared server), web processes and workers of `packages/server/bin/surveyor.js`, and Debian's
// nginx with deploy/nginx/nginx.conf in front (upstream names pointed at the processes' ports).

const root = fileURLToPath(new URL('../../..', import.meta.url));
const bin = path.join(root, 'packages/server/bin/surveyor.js');

/** The folder of PostgreSQL's server programs (initdb, pg_ctl), newest major first, or null. */
export function postgresBinDir(): string | null {
  const fromConfig = spawnSync('pg_config', ['--bindir'], { encoding: 'utf8' });
  const candidates = fromConfig.status === 0 ? [fromConfig.stdout.trim()] : [];
  try {
    const majors = readdirSync('/usr/lib/postgresql').sort((a, b) => Number(b) - Number(a));
    candidates.push(...majors.map((m) => `/usr/lib/postgresql/${m}/bin`));
  } catch {
    // not Debian's layout
  }
  return candidates.find((d) => existsSync(path.join(d, 'initdb')) && existsSync(path.join(d, 'pg_ctl'))) ?? null;
}

/** Whether this machine can run the cluster: PostgreSQL's server programs and nginx (else skipped, saying why). */
export function canRunCluster(what: string): boolean {
  if (!postgresBinDir()) return skipOrFail(what, 'PostgreSQL\'s server programs (initdb, pg_ctl) are not installed (apt-get install postgresql)', ['postgresql']);
  if (spawnSync('nginx', ['-v']).error) return skipOrFail(what, 'nginx is not on PATH (apt-get install nginx)', ['nginx']);
  return true;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A PostgreSQL cluster in a temporary folder, run as the `postgres` user when the tests run as root (initdb refuses root). */
export class PgCluster {
  private constructor(
    readonly dir: string,
    readonly port: number,
    private readonly binDir: string,
  ) {}

  get url(): string {
    return `postgres://postgres@127.0.0.1:${this.port}/postgres`;
  }

  static async create(): Promise<PgCluster> {
    const binDir = postgresBinDir();
    if (!binDir) throw new Error('PostgreSQL server programs not found');
    const dir = mkdtempSync(path.join(tmpdir(), 'surveyor-pg-'));
    const cluster = new PgCluster(dir, await freePort(), binDir);
    if (process.getuid?.() === 0) chownSync(dir, uid('postgres'), gid('postgres'));
    cluster.run('initdb', ['-D', path.join(dir, 'data'), '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8']);
    // A deployment's server, sized for the processes under test (4 × 10 + LISTEN + locks), fsync off: a test's data.
    writeFileSync(
      path.join(dir, 'data', 'postgresql.auto.conf'),
      [`port = ${cluster.port}`, "listen_addresses = '127.0.0.1'", `unix_socket_directories = '${dir}'`, 'max_connections = 120', 'fsync = off', 'synchronous_commit = off', 'full_page_writes = off', ''].join('\n'),
    );
    if (process.getuid?.() === 0) execFileSync('chown', ['postgres:postgres', path.join(dir, 'data', 'postgresql.auto.conf')]);
    await cluster.start();
    return cluster;
  }

  private run(program: string, args: string[]): string {
    const file = path.join(this.binDir, program);
    const [cmd, argv] = process.getuid?.() === 0 ? ['runuser', ['-u', 'postgres', '--', file, ...args]] : [file, args];
    return execFileSync(cmd, argv as string[], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  }

  async start(): Promise<void> {
    this.run('pg_ctl', ['-D', path.join(this.dir, 'data'), '-l', path.join(this.dir, 'server.log'), '-w', '-t', '60', 'start']);
  }

  /** `fast`: the server ends every session and stops; `immediate`: as a crash. */
  async stop(mode: 'fast' | 'immediate' = 'fast'): Promise<void> {
    this.run('pg_ctl', ['-D', path.join(this.dir, 'data'), '-m', mode, '-w', 'stop']);
  }

  async destroy(): Promise<void> {
    try {
      await this.stop('immediate');
    } catch {
      // already stopped
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}

function uid(user: string): number {
  return Number(execFileSync('id', ['-u', user], { encoding: 'utf8' }).trim());
}
function gid(user: string): number {
  return Number(execFileSync('id', ['-g', user], { encoding: 'utf8' }).trim());
}

/** A process of the build (`serve` or `worker`) with its JSON log lines kept. */
export class SurveyorProcess {
  readonly lines: Record<string, unknown>[] = [];
  readonly exited: Promise<number | null>;
  private readonly child: ChildProcess;

  constructor(
    readonly name: string,
    readonly command: 'serve' | 'worker',
    readonly port: number | null,
    env: Record<string, string>,
  ) {
    this.child = spawn(process.execPath, [bin, command], { cwd: root, env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let rest = '';
    const take = (d: Buffer) => {
      rest += d.toString('utf8');
      const parts = rest.split('\n');
      rest = parts.pop()!;
      for (const l of parts) {
        if (!l.startsWith('{')) continue;
        try {
          this.lines.push(JSON.parse(l) as Record<string, unknown>);
        } catch {
          // not a log line
        }
      }
    };
    this.child.stdout!.on('data', take);
    this.child.stderr!.on('data', take);
    this.exited = new Promise((resolve) => this.child.on('exit', (code) => resolve(code)));
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  get pid(): number {
    return this.child.pid!;
  }

  kill(signal: NodeJS.Signals): void {
    this.child.kill(signal);
  }

  /** Resolves once GET /api/health answers 200 (a web process) or the worker says it runs. */
  async ready(timeoutMs = 60_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (this.command === 'worker' ? this.lines.some((l) => / worker running /.test(String(l.msg))) : await healthy(this.url)) return;
      if (this.child.exitCode !== null) break;
      await sleep(100);
    }
    throw new Error(`${this.name} did not start: ${JSON.stringify(this.lines.slice(-5))}`);
  }
}

export async function healthy(url: string): Promise<boolean> {
  try {
    const r = await fetch(`${url}/api/health`, { signal: AbortSignal.timeout(3_000) });
    await r.arrayBuffer();
    return r.status === 200;
  } catch {
    return false;
  }
}

/** Debian's nginx running deploy/nginx/nginx.conf, its upstream servers pointed at `webs`, its access log (JSON lines) kept. */
export class Nginx {
  private constructor(
    readonly dir: string,
    readonly port: number,
  ) {}

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  static async start(webs: SurveyorProcess[]): Promise<Nginx> {
    const dir = mkdtempSync(path.join(tmpdir(), 'surveyor-nginx-'));
    const nginx = new Nginx(dir, await freePort());
    const conf = readFileSync(path.join(root, 'deploy/nginx/nginx.conf'), 'utf8');
    const servers = webs.map((w) => `    server 127.0.0.1:${w.port} max_fails=3 fail_timeout=10s;`).join('\n');
    const local = conf
      .replace(/( {4}server web-[ab]:8080[^\n]*\n)+/g, `${servers}\n`)
      .replace('listen 80;', `listen 127.0.0.1:${nginx.port};`)
      .replace('worker_processes auto;', 'worker_processes 1;\nuser root;')
      .replace('error_log /dev/stderr', `error_log ${dir}/error.log`)
      .replace('access_log /dev/stdout', `access_log ${dir}/access.log`)
      .replace('pid /tmp/nginx.pid', `pid ${dir}/nginx.pid`);
    if (local.includes('web-a:') || !local.includes(`127.0.0.1:${webs[0]!.port}`)) throw new Error('deploy/nginx/nginx.conf changed shape: its upstream servers were not replaced');
    // Running as root here, nginx would otherwise hand its workers to `nobody`, who cannot write the logs.
    const text = process.getuid?.() === 0 ? local : local.replace('user root;\n', '');
    writeFileSync(path.join(dir, 'nginx.conf'), text);
    execFileSync('nginx', ['-p', `${dir}/`, '-c', path.join(dir, 'nginx.conf'), '-e', path.join(dir, 'error.log')], { stdio: 'pipe' });
    const deadline = Date.now() + 10_000;
    while (!existsSync(path.join(dir, 'nginx.pid')) && Date.now() < deadline) await sleep(50);
    if (!existsSync(path.join(dir, 'nginx.pid'))) throw new Error(`nginx did not start: ${readFileSync(path.join(dir, 'error.log'), 'utf8').slice(-500)}`);
    return nginx;
  }

  /** The access log's lines so far (written when a request completes). */
  access(): { uri: string; status: number; upstream: string; requestId: string }[] {
    try {
      return readFileSync(path.join(this.dir, 'access.log'), 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as { uri: string; status: number; upstream: string; requestId: string });
    } catch {
      return [];
    }
  }

  /** Stops nginx (SIGTERM: at once, open connections closed) and waits for it to go. */
  async stop(): Promise<void> {
    let pid: number;
    try {
      pid = Number(readFileSync(path.join(this.dir, 'nginx.pid'), 'utf8').trim());
      process.kill(pid, 'SIGTERM');
    } catch {
      return; // not running
    }
    for (let i = 0; i < 100; i++) {
      try {
        process.kill(pid, 0);
      } catch {
        return;
      }
      await sleep(50);
    }
  }
}

export interface Cluster {
  pg: PgCluster;
  webs: SurveyorProcess[];
  workers: SurveyorProcess[];
  nginx: Nginx;
  /** Stops everything and removes its folders. */
  close(): Promise<void>;
}

/**
 * Starts PostgreSQL, `webs` web processes without jobs and `workers` workers (the first web
 * process first: it migrates the database), then nginx in front of the web processes.
 */
export async function startCluster(opts: { webs: number; workers: number; env?: Record<string, string>; workerEnv?: Record<string, string> }): Promise<Cluster> {
  const pg = await PgCluster.create();
  const common = {
    DATABASE_URL: pg.url,
    SERVICE_SECRET_KEY: randomBytes(32).toString('hex'),
    SERVICE_DB_POOL_MAX: '10',
    SERVICE_JOBS_IN_WEB: 'false',
    SERVICE_LOG_LEVEL: 'info',
    ...opts.env,
  };
  const webs: SurveyorProcess[] = [];
  const workers: SurveyorProcess[] = [];
  let nginx: Nginx | undefined;
  const close = async () => {
    await nginx?.stop();
    for (const p of [...webs, ...workers]) p.kill('SIGTERM');
    await Promise.race([Promise.all([...webs, ...workers].map((p) => p.exited)), sleep(15_000)]);
    for (const p of [...webs, ...workers]) p.kill('SIGKILL');
    await pg.destroy();
    if (nginx) rmSync(nginx.dir, { recursive: true, force: true });
  };
  try {
    for (let i = 0; i < opts.webs; i++) {
      const port = await freePort();
      webs.push(new SurveyorProcess(`web-${String.fromCharCode(97 + i)}`, 'serve', port, { ...common, SERVICE_HOST: '127.0.0.1', SERVICE_PORT: String(port), SERVICE_TRUST_PROXY: '1' }));
      if (i === 0) await webs[0]!.ready();
    }
    for (let i = 0; i < opts.workers; i++) workers.push(new SurveyorProcess(`worker-${i + 1}`, 'worker', null, { ...common, ...opts.workerEnv }));
    await Promise.all([...webs, ...workers].map((p) => p.ready()));
    nginx = await Nginx.start(webs);
    return { pg, webs, workers, nginx, close };
  } catch (err) {
    await close();
    throw err;
  }
}
