// Scale-out (issue 28): two web processes and two workers of the real build on one PostgreSQL,
// behind Debian's nginx with deploy/nginx/nginx.conf. The figures come from the suite's own
// scale-out test (packages/server/test/scale-out.test.ts), run here with SCALE_OUT_REPORT set:
// the test asserts what must hold (nothing lost, doubled or half-written), this writes how fast.
// Baseline in the same run: a bare NOTIFY reaching a LISTEN on another connection of the same
// server, the floor under any hand-over between processes.
// The section "Scale-out (issue 28)" is written into docs/benchmarks.md.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const dir = mkdtempSync(path.join(tmpdir(), 'surveyor-scale-out-'));
const file = path.join(dir, 'report.json');
const run = spawnSync('npx', ['vitest', 'run', 'packages/server/test/scale-out.test.ts'], { cwd: ROOT, env: { ...process.env, SCALE_OUT_REPORT: file }, stdio: 'inherit' });
if (run.status !== 0) {
  console.error('the scale-out test failed; no figures written');
  process.exit(1);
}
const r = JSON.parse(readFileSync(file, 'utf8'));
rmSync(dir, { recursive: true, force: true });
const pgVersion = spawnSync('psql', ['--version'], { encoding: 'utf8' }).stdout.trim();
const ratio = (a, b) => (a / b).toFixed(1);
const checks = [
  { what: 'hand-over p99 through nginx, queued on the other web process', value: `${r.handover.p99Ms} ms`, ok: r.handover.p99Ms <= 100, target: '≤ 100 ms' },
  { what: 'hand-overs lost or doubled over 200 scans', value: `${r.handover.lost + r.handover.doubled}`, ok: r.handover.lost + r.handover.doubled === 0, target: '0' },
  { what: 'every web process healthy again after PostgreSQL is back', value: `${Math.max(...Object.values(r.restart.recoveredMsAfterUp))} ms`, ok: Math.max(...Object.values(r.restart.recoveredMsAfterUp)) <= 5_000, target: '≤ 5 s' },
  { what: 'a worker ticking again after PostgreSQL is back', value: `${r.restart.workerFirstTickMsAfterUp} ms`, ok: r.restart.workerFirstTickMsAfterUp <= 5_000, target: '≤ 5 s' },
];
const jobs = Object.entries(r.jobs.perJob)
  .sort(([a], [b]) => a.localeCompare(b))
  .map(([job, j]) => `| ${job} | ${j.slots} | ${j.byVictim} | ${j.lost} |`);
const out = [
  '## Scale-out (issue 28)',
  '',
  `Two web processes (SERVICE_JOBS_IN_WEB=false) and two workers of the real build on one PostgreSQL (${pgVersion}), Debian's nginx in front with`,
  `deploy/nginx/nginx.conf, on ${cpus().length} cores. Run: \`npm run bench:scale-out\` (${new Date().toISOString().slice(0, 10)}); the assertions are the suite's (packages/server/test/scale-out.test.ts).`,
  '',
  '| figure | p50 | p99 | ratio p99 to the baseline | target |',
  '|---|---|---|---|---|',
  `| bare NOTIFY → LISTEN on the same server (baseline) | ${r.notifyBaseline.p50Ms} ms | ${r.notifyBaseline.p99Ms} ms | 1.0 | |`,
  `| scan queued on web B → daemon's long poll through nginx on web A answered (200 scans) | ${r.handover.p50Ms} ms | ${r.handover.p99Ms} ms | ${ratio(r.handover.p99Ms, r.notifyBaseline.p99Ms)} | p99 ≤ 100 ms |`,
  `| network created on web B → console's SSE stream through nginx on web A (20 changes) | ${r.sse.p50Ms} ms | ${r.sse.p99Ms} ms | ${ratio(r.sse.p99Ms, r.notifyBaseline.p99Ms)} | no buffering delay |`,
  '',
  `The hand-over includes the whole \`POST /api/v1/scans\` (its transaction and NOTIFY) and the poll's answer through the proxy. Lost: ${r.handover.lost}, doubled: ${r.handover.doubled}.`,
  '',
  `Job ticks over ${r.jobs.realSeconds} s at SERVICE_JOBS_TIME_SCALE=${r.jobs.scale} (${r.jobs.compressedMinutes} minutes of schedule), the worker inside a scan.stall tick (held there ${r.jobs.heldMs} ms by a row lock of the test's) killed with SIGKILL:`,
  '',
  '| job | slots run (each once) | by the killed worker | slots not run (the held tick and the ones it overlapped, or cut by the kill) |',
  '|---|---|---|---|',
  ...jobs,
  '',
  `PostgreSQL stopped (\`pg_ctl stop -m fast\`) for ${r.restart.downMs} ms under 4 writers through nginx: every web process answered 503 on /api/health while it was down;`,
  `healthy again ${Object.entries(r.restart.recoveredMsAfterUp).map(([k, v]) => `${k} ${v} ms`).join(', ')} after it was back; first job tick ${r.restart.workerFirstTickMsAfterUp} ms after.`,
  `${r.restart.requests} writes: ${r.restart.ok} created, ${r.restart.refused} refused (${r.restart.refusedStatuses.join(', ')}), none half-written (each network has its audit row; each 201 is stored).`,
  '',
  'What the issue asks:',
  '',
  ...checks.map((c) => `- ${c.what}: ${c.value} (target ${c.target}), ${c.ok ? 'met' : '**missed**'}.`),
];
console.log(out.join('\n'));
const doc = path.join(ROOT, 'docs/benchmarks.md');
const text = readFileSync(doc, 'utf8');
const start = text.indexOf('\n## Scale-out (issue 28)');
const next = start < 0 ? -1 : text.indexOf('\n## ', start + 1);
writeFileSync(doc, start < 0 ? `${text.trimEnd()}\n\n${out.join('\n')}\n` : `${text.slice(0, start).trimEnd()}\n\n${out.join('\n')}\n${next < 0 ? '' : text.slice(next)}`);
if (checks.some((c) => !c.ok)) process.exitCode = 1;
