// The topology canvas in real Chromium (issue 24: "render 5,000 visible elements smoothly").
// The real server in this process (`startServer` of packages/server/dist on a fresh data folder:
// PGlite, the built console of packages/web/dist), one site of the first-run organisation holding
// 4,960 hosts over twenty /24 blocks of one inventory network (10.90.0.0/19; the view cuts it into
// /24 groups of 248), seeded by SQL, the views built by `buildViews`; then Debian's Chromium
// (CHROMIUM_PATH, else /usr/bin/chromium; headless, no GPU) through playwright-core, signed in as
// a viewer of the organisation, on /topology?view=…&open=all (every group open: 4,960 host boxes,
// 20 group frames and the network, 4,981 nodes, all drawn when fitted; the console draws at most
// 5,000 nodes).
// Measured:
// - time to first draw: from navigation start (the page's performance.timeOrigin) until every host
//   box is in the canvas and two animation frames have passed; median of 3 loads;
// - frame time while panning and zooming: a requestAnimationFrame recorder in the page while ~2 s
//   of input arrive through page.mouse (1 s of background drags back and forth, 1 s of wheel
//   notches in and out at the pointer), at the fit (all 5,000 visible) and zoomed in to ~100 %;
//   p50/p95/max of the intervals between frames, and frames per second;
// - the baseline, in the same run and browser: a bare page (no framework) holding an inline SVG
//   of the same number of <rect>+<text> pairs, laid out the same way (twenty blocks of 250), whose
//   pointer and wheel handlers change one transform attribute once per animation frame; the same
//   first-draw wait and the same input loop. The console's figures are given as ratios to it: what
//   Chromium itself needs to draw that many SVG elements on this machine.
// The section "Topology canvas in Chromium (issue 24)" is written into docs/benchmarks.md.
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { sql } from 'kysely';
import { chromium } from 'playwright-core';
import { createUser } from '../packages/server/dist/admin/admin.service.js';
import { setPassword } from '../packages/server/dist/auth/auth.repo.js';
import { hashPassword } from '../packages/server/dist/auth/passwords.js';
import { loadConfig } from '../packages/server/dist/config.js';
import { createLogger } from '../packages/server/dist/logger.js';
import { startServer } from '../packages/server/dist/main.js';
import { buildViews } from '../packages/server/dist/topology/views.service.js';

// The console draws at most 5,000 nodes (beyond, groups stay closed): 4,960 hosts + 20 groups + the
// network is the largest view of twenty /24 blocks that opens whole.
const N = Number(process.env.BENCH_CANVAS_HOSTS || 4960);
const VIEWER = 'viewer@bench.test';
const BLOCKS = 20;
const PER_BLOCK = Math.ceil(N / BLOCKS);
const LOADS = 3;
const REPEATS = 3; // each measure of ~2 s of input runs this many times, its frame intervals pooled
const PHASE_MS = 1000; // drags, then as long of wheel notches: ~2 s of input a measure
const VIEWPORT = { width: 1440, height: 900 };
const SMOOTH_MS = 34; // p95 frame interval at or under two 60 Hz frames (33.4 ms): ≥ 30 frames a second almost always
const CHROMIUM = process.env.CHROMIUM_PATH || '/usr/bin/chromium';
const PASSWORD = 'a long enough bench password 42';
if (!existsSync(CHROMIUM)) throw new Error(`no Chromium at ${CHROMIUM} (set CHROMIUM_PATH)`);

const loadAtStart = os.loadavg()[0];
const dataDir = mkdtempSync(path.join(os.tmpdir(), 'surveyor-bench-canvas-'));
let told = '';
const config = loadConfig({ SERVICE_DATA_DIR: dataDir, SERVICE_PORT: '0', SERVICE_LOG_LEVEL: 'silent', SERVICE_SECRET_KEY: randomBytes(32).toString('hex') });
const server = await startServer(config, createLogger('silent'), (text) => void (told += text));
const browser = await chromium.launch({
  executablePath: CHROMIUM,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-quic'],
});
const cleanup = async () => {
  await browser.close().catch(() => {});
  await server.close().catch(() => {});
  rmSync(dataDir, { recursive: true, force: true });
};

try {
  // --- The site ---------------------------------------------------------------------------------
  const db = server.database.db;
  const email = /email:\s+(\S+)/.exec(told)?.[1];
  if (!email) throw new Error(`no first-run owner in ${JSON.stringify(told)}`); // the organisation was made
  const org = (await db.selectFrom('organisations').select('id').executeTakeFirstOrThrow()).id;
  // A viewer signs in: an admin's drag on a box moves the box (and saves it), anyone else's pans
  // wherever it starts, so the drags below pan over the boxes as a user's would.
  const viewer = await createUser(db, { type: 'cli' }, { org, email: VIEWER, role: 'viewer', password: PASSWORD });
  await setPassword(db, viewer.userId, await hashPassword(PASSWORD), false);
  const t0 = performance.now();
  const site = (await sql`insert into sites (organisation_id, code, name) values (${org}, 'big', 'Big site') returning id`.execute(db)).rows[0].id;
  await sql`insert into networks (organisation_id, site_id, name, cidr) values (${org}, ${site}, 'campus', '10.90.0.0/19'::cidr)`.execute(db);
  const idx = Array.from({ length: N }, (_, i) => i);
  await sql`
    insert into hosts (organisation_id, site_id, fingerprint, hostname)
    select ${org}, ${site}, 'fp-' || i, 'h-' || lpad(i::text, 4, '0') || '.example.net' from unnest(${idx}::int[]) as x(i) order by i`.execute(db);
  const ids = (await sql`select id from hosts where organisation_id = ${org} and site_id = ${site} order by seq`.execute(db)).rows.map((r) => r.id);
  const ips = idx.map((i) => `10.90.${Math.floor(i / PER_BLOCK)}.${(i % PER_BLOCK) + 2}`);
  await sql`insert into host_addresses (organisation_id, host_id, address) select ${org}, h, a from unnest(${ids}::uuid[], ${ips}::inet[]) as x(h, a)`.execute(db);
  const views = await buildViews(db, org, new Date());
  const view = views.find((v) => v.siteId === site && v.kind === 'network');
  if (!view || view.status !== 'ready') throw new Error(`no ready network view of the site: ${JSON.stringify(views)}`);
  const seeded = performance.now() - t0;
  console.log(`${N} hosts seeded and views built in ${(seeded / 1000).toFixed(1)} s: network view ${view.nodeCount} nodes, ${view.groupCount} groups`);

  // --- The console --------------------------------------------------------------------------------
  const context = await browser.newContext({ baseURL: server.url, viewport: VIEWPORT });
  const page = await context.newPage();
  page.setDefaultTimeout(120_000);
  await page.goto('/');
  await page.getByLabel('Email').fill(VIEWER);
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
  const url = `/topology?view=${view.id}&open=all`;

  /** Navigates to `target` and returns ms from navigation start until `ready()` holds and two frames passed. */
  const firstDraw = async (p, target, ready, arg) => {
    await p.goto(target, { waitUntil: 'commit' });
    await p.waitForFunction(ready, arg, { polling: 'raf', timeout: 120_000 }).catch(async (e) => {
      await p.screenshot({ path: path.join(os.tmpdir(), 'surveyor-topology-canvas-failed.png') }).catch(() => {});
      throw e;
    });
    return p.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(() => resolve(performance.now())))));
  };
  // Host boxes drawn: elements of their own, and far out those drawn as one path per look (data-count boxes each).
  const hostsDrawn = (n) =>
    document.querySelectorAll('svg.topo-canvas [data-node-id^="host:"]').length +
      [...document.querySelectorAll('svg.topo-canvas path.topo-batch.topo-host')].reduce((sum, b) => sum + Number(b.getAttribute('data-count')), 0) >=
    n;
  const consoleLoads = [];
  for (let i = 0; i < LOADS; i++) consoleLoads.push(await firstDraw(page, url, hostsDrawn, N));
  const counts = await page.evaluate(() => ({
    hosts:
      document.querySelectorAll('svg.topo-canvas [data-node-id^="host:"]').length +
      [...document.querySelectorAll('svg.topo-canvas path.topo-batch.topo-host')].reduce((sum, b) => sum + Number(b.getAttribute('data-count')), 0),
    batches: document.querySelectorAll('svg.topo-canvas path.topo-batch').length,
    open: document.querySelectorAll('svg.topo-canvas [aria-expanded="true"]').length,
    elements: document.querySelectorAll('svg.topo-canvas *').length,
    texts: document.querySelectorAll('svg.topo-canvas [data-node-id^="host:"] text').length,
  }));
  console.log(`console: first draw ${consoleLoads.map((x) => x.toFixed(0)).join(', ')} ms; ${counts.hosts} hosts (${counts.batches} batch paths), ${counts.open} groups open, ${counts.elements} SVG elements, ${counts.texts} host labels`);
  // Let the fit settle (the camera is applied once per animation frame; React redraws 150 ms later).
  await page.waitForTimeout(500);

  // --- The measure --------------------------------------------------------------------------------

  /** rAF intervals (ms) while PHASE_MS of drags and PHASE_MS of wheel notches (in, out, …) arrive at `at`. */
  const measureOnce = async (p, at) => {
    await p.evaluate(() => {
      window.__frames = [];
      window.__recording = true;
      const loop = (ts) => {
        window.__frames.push(ts);
        if (window.__recording) requestAnimationFrame(loop);
      };
      requestAnimationFrame(loop);
    });
    let moves = 0;
    let notches = 0;
    await p.mouse.move(at.x, at.y);
    await p.mouse.down();
    const start = Date.now();
    // Back and forth along an ellipse of 120 × 80 px about the starting point: the drawing follows.
    while (Date.now() - start < PHASE_MS) {
      const a = (moves++ / 12) * Math.PI;
      await p.mouse.move(at.x + 120 * Math.sin(a), at.y + 80 * Math.sin(2 * a) / 2);
    }
    await p.mouse.move(at.x, at.y);
    await p.mouse.up();
    const wheelStart = Date.now();
    // Notches in and out in turn: the zoom stays about where it was, every notch redraws.
    while (Date.now() - wheelStart < PHASE_MS) await p.mouse.wheel(0, notches++ % 2 === 0 ? -100 : 100);
    const took = Date.now() - start;
    const frames = await p.evaluate(() => {
      window.__recording = false;
      return window.__frames;
    });
    return { moves, notches, took, gaps: frames.slice(1).map((f, i) => f - frames[i]) };
  };
  /** `measureOnce` REPEATS times (the zoom comes back where it was), the frame intervals pooled. */
  const measure = async (p, at) => {
    const runs = [];
    for (let i = 0; i < REPEATS; i++) {
      runs.push(await measureOnce(p, at));
      await p.waitForTimeout(200);
    }
    const gaps = runs.flatMap((r) => r.gaps).sort((a, b) => a - b);
    const q = (x) => gaps[Math.min(gaps.length - 1, Math.floor(gaps.length * x))];
    const sum = (k) => runs.reduce((t, r) => t + r[k], 0);
    return { moves: sum('moves'), notches: sum('notches'), took: sum('took'), frames: gaps.length, p50: q(0.5), p95: q(0.95), max: gaps.at(-1), fps: (gaps.length * 1000) / gaps.reduce((t, g) => t + g, 0) };
  };

  /** Wheel notches at `at` until the zoom is about 100 % (zoom at the pointer: the point stays put). */
  const zoomTo100 = async (p, at, zoomOf) => {
    await p.mouse.move(at.x, at.y);
    for (let i = 0; i < 200 && (await zoomOf()) < 0.97; i++) {
      const k = await zoomOf();
      await p.mouse.wheel(0, k < 0.6 ? -100 : -20);
      await p.waitForTimeout(30);
    }
    await p.waitForTimeout(500);
    return zoomOf();
  };

  // The pointer at the middle of the canvas (over the boxes: a viewer's drag pans from anywhere).
  const box = await page.locator('svg.topo-canvas').boundingBox();
  const canvasAt = { x: Math.round(box.x + box.width / 2), y: Math.round(box.y + box.height / 2) };
  const consoleZoom = async () => Number(await page.locator('svg.topo-canvas').getAttribute('data-zoom'));
  const fitZoom = await consoleZoom();
  await page.screenshot({ path: path.join(os.tmpdir(), 'surveyor-topology-canvas-fit.png') }).catch(() => {}); // the fitted drawing, to look at after a change
  const consoleFit = await measure(page, canvasAt);
  await page.waitForTimeout(300);
  const consoleK = await zoomTo100(page, canvasAt, consoleZoom);
  const hostsAt100 = await page.locator('svg.topo-canvas [data-node-id^="host:"]').count();
  const consoleNear = await measure(page, canvasAt);
  const stillHosts = await page.locator('svg.topo-canvas [data-node-id^="host:"]').count();
  await page.screenshot({ path: path.join(os.tmpdir(), 'surveyor-topology-canvas.png') }).catch(() => {}); // to look at after a change
  console.log(`console at fit (zoom ${fitZoom.toFixed(3)}):`, consoleFit);
  console.log(`console at ${Math.round(consoleK * 100)} % (${hostsAt100} hosts drawn, ${stillHosts} after):`, consoleNear);

  // --- The baseline: a bare SVG of as many <rect>+<text>, one transform ----------------------------
  // Twenty blocks of boxes 23 abreast (180 × 44, as the console's), one under the other, as the console lays out the
  // open groups of one network; the page fits the drawing on load, as the console does.
  const BOX = { w: 180, h: 44, gapX: 16, gapY: 16 };
  const COLS = 23;
  const blockW = COLS * (BOX.w + BOX.gapX) + 40;
  const blockH = Math.ceil(PER_BLOCK / COLS) * (BOX.h + BOX.gapY) + 60;
  const parts = [];
  for (let i = 0; i < N; i++) {
    const b = Math.floor(i / PER_BLOCK);
    const j = i % PER_BLOCK;
    const x = 20 + (j % COLS) * (BOX.w + BOX.gapX);
    const y = b * blockH + 40 + Math.floor(j / COLS) * (BOX.h + BOX.gapY);
    parts.push(`<rect x="${x}" y="${y}" width="${BOX.w}" height="${BOX.h}" rx="4" fill="#fff" stroke="#5a6b7d"/><text x="${x + 8}" y="${y + 26}" font-size="12">${`h-${String(i).padStart(4, '0')}.example.net`}</text>`);
  }
  const W = blockW;
  const H = BLOCKS * blockH;
  const html = `<!doctype html><html><head><meta charset="utf-8"><style>html,body{margin:0;height:100%;overflow:hidden;font-family:sans-serif}svg{display:block;width:100vw;height:100vh;touch-action:none}.nolabels text{display:none}</style></head><body>
<svg id="bare"><g id="world">${parts.join('')}</g></svg>
<script>
const svg = document.getElementById('bare'), world = document.getElementById('world'), LOD = location.search === '?lod';
const r = svg.getBoundingClientRect();
const k0 = Math.min((r.width - 40) / ${W}, (r.height - 40) / ${H});
let cam = { k: k0, x: (r.width - ${W} * k0) / 2, y: (r.height - ${H} * k0) / 2 }, frame = 0, drag = null;
const apply = () => { if (frame) return; frame = requestAnimationFrame(() => { frame = 0; world.setAttribute('transform', 'translate(' + cam.x + ',' + cam.y + ') scale(' + cam.k + ')'); svg.dataset.zoom = cam.k; svg.classList.toggle('nolabels', LOD && cam.k * 12 < 9); }); };
apply();
svg.addEventListener('pointerdown', (e) => { drag = { x: e.clientX - cam.x, y: e.clientY - cam.y }; svg.setPointerCapture(e.pointerId); });
svg.addEventListener('pointermove', (e) => { if (!drag) return; cam = { ...cam, x: e.clientX - drag.x, y: e.clientY - drag.y }; apply(); });
svg.addEventListener('pointerup', () => { drag = null; });
svg.addEventListener('wheel', (e) => { e.preventDefault(); const f = Math.exp(-e.deltaY * 0.002); const k = cam.k * f; cam = { k, x: e.clientX - (e.clientX - cam.x) * f, y: e.clientY - (e.clientY - cam.y) * f }; apply(); }, { passive: false });
</script></body></html>`;
  const bare = await context.newPage();
  bare.setDefaultTimeout(120_000);
  // Served at an address of its own (not setContent) so that navigation start is the page's own.
  const BARE = 'http://bare.invalid/';
  await bare.route(`${BARE}**`, (route) => route.fulfill({ status: 200, contentType: 'text/html', body: html }));
  const bareReady = (n) => document.querySelectorAll('#world rect').length >= n && !!document.getElementById('world').getAttribute('transform');
  const bareLoads = [];
  for (let i = 0; i < LOADS; i++) bareLoads.push(await firstDraw(bare, BARE, bareReady, N));
  await bare.waitForTimeout(300);
  const bareElements = await bare.evaluate(() => document.querySelectorAll('#bare *').length);
  console.log(`baseline: first draw ${bareLoads.map((x) => x.toFixed(0)).join(', ')} ms; ${bareElements} SVG elements`);
  // The pointer where the console's was, relative to the middle (any point of a bare SVG pans it).
  const bareAt = { x: canvasAt.x, y: canvasAt.y };
  const bareZoom = async () => Number(await bare.locator('#bare').getAttribute('data-zoom'));
  const bareFitZoom = await bareZoom();
  const bareFit = await measure(bare, bareAt);
  await bare.waitForTimeout(300);
  const bareK = await zoomTo100(bare, bareAt, bareZoom);
  const bareNear = await measure(bare, bareAt);
  console.log(`baseline at fit (zoom ${bareFitZoom.toFixed(3)}):`, bareFit);
  console.log(`baseline at ${Math.round(bareK * 100)} %:`, bareNear);
  // The same bare page leaving labels out under 9 px on screen, as the console does (at the fit).
  await firstDraw(bare, `${BARE}?lod`, bareReady, N);
  await bare.waitForTimeout(300);
  const bareLod = await measure(bare, bareAt);
  console.log('baseline without labels at fit:', bareLod);

  // --- The section --------------------------------------------------------------------------------
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const f0 = (x) => x.toFixed(0);
  const f1 = (x) => x.toFixed(1);
  const ratio = (a, b) => `**${(a / b).toFixed(1)}**`;
  const cFirst = median(consoleLoads);
  const bFirst = median(bareLoads);
  const reading = (m) => (m.p95 <= SMOOTH_MS ? 'smooth' : m.p95 <= 2 * SMOOTH_MS ? 'usable but not smooth' : 'not smooth');
  const version = browser.version();
  const row = (what, c, b) => `| ${what} | ${f1(c.p50)} / ${f1(c.p95)} / ${f0(c.max)} | ${f0(c.fps)} | ${f1(b.p50)} / ${f1(b.p95)} / ${f0(b.max)} | ${f0(b.fps)} | ${ratio(c.p50, b.p50)} / ${ratio(c.p95, b.p95)} | ${reading(c)} |`;
  const fmt = (x) => x.toLocaleString('en');
  const out = [
    '## Topology canvas in Chromium (issue 24)',
    '',
    `Chromium ${version} (Debian's, headless, \`--disable-gpu\`: software raster), viewport ${VIEWPORT.width} × ${VIEWPORT.height}, driven by playwright-core; ` +
      `${os.cpus().length} cores (${os.cpus()[0]?.model.trim()}), ${Math.round(os.totalmem() / 2 ** 30)} GiB, Node ${process.version} (${new Date().toISOString().slice(0, 10)}; load average ${loadAtStart.toFixed(1)} at the start, ${os.loadavg()[0].toFixed(1)} at the end: ` +
      'the server, the bench and Chromium share these cores, and other work on the machine, such as a test run, shows in the figures). Run: `npm run bench:topology-canvas` (or `node bench/topology-canvas.mjs` after a build). ' +
      `The real server in the bench's process (PGlite, the built console), one site of ${fmt(N)} hosts over twenty /24 blocks of one inventory network (10.90.0.0/19), seeded by SQL; ` +
      `its network view (${fmt(view.nodeCount)} nodes, ${view.groupCount} groups: ${fmt(view.nodeCount + view.groupCount)} boxes and frames, the most a view of twenty blocks can open whole, the console drawing at most 5,000 nodes and leaving groups closed beyond) opened at \`/topology?view=…&open=all\`, every group open: ${fmt(counts.hosts)} host boxes drawn when fitted (${fmt(counts.elements)} SVG elements: host labels are left out at that zoom, under 9 px, and the boxes, bare rectangles there, are drawn as one path per kind and look, filled without a stroke once they are under 8 px tall). ` +
      `**First draw**: from navigation start (the page's \`performance.timeOrigin\`: the console's scripts, the session, the view's graph, React's drawing) until every host box is in the canvas and two animation frames have passed; median of ${LOADS} loads. ` +
      `**Frames**: the intervals between \`requestAnimationFrame\` callbacks while input arrives through \`page.mouse\`, as fast as the browser takes it: ${PHASE_MS / 1000} s of background drags back and forth (the drawing follows the pointer), then ${PHASE_MS / 1000} s of wheel notches in and out in turn at the pointer; ` +
      `${REPEATS} times over, the intervals pooled; at the fit (all ${fmt(N)} hosts visible) and zoomed in to about 100 % (the console draws only what is on or near the screen, with labels). A frame interval of 16.7 ms is 60 frames a second; "smooth" here is a 95th percentile of at most two such frames (≤ ${SMOOTH_MS} ms: 30 frames a second). ` +
      `**Baseline**, in the same run and browser: a bare page of no framework holding an inline SVG of the same ${fmt(N)} <rect>+<text> pairs (${fmt(bareElements)} SVG elements, twenty blocks one under the other like the open groups; labels drawn at every zoom, as asked; a second row at the fit leaves them out under 9 px on screen as the console does), fitted on load, whose pointer and wheel handlers set one transform attribute once per animation frame; the same first-draw wait and the same input loop. ` +
      'The ratios (console ÷ baseline) say how much the console costs over what Chromium itself needs to draw and move that many SVG elements on this machine.',
    '',
    `| first draw, ${fmt(N)} hosts open | console ms (loads) | baseline ms (loads) | **console ÷ baseline** |`,
    '|---|---|---|---|',
    `| navigation start → all host boxes drawn + 2 frames | ${f0(cFirst)} (${consoleLoads.map(f0).join(', ')}) | ${f0(bFirst)} (${bareLoads.map(f0).join(', ')}) | ${ratio(cFirst, bFirst)} |`,
    '',
    '| panning and zooming | console frame ms p50 / p95 / max | console fps | baseline frame ms p50 / p95 / max | baseline fps | **console ÷ baseline** (p50 / p95) | reading (console) |',
    '|---|---|---|---|---|---|---|',
    row(`fitted, all ${fmt(N)} visible (zoom ${Math.round(fitZoom * 100)} %; baseline ${Math.round(bareFitZoom * 100)} %)`, consoleFit, bareFit),
    row(`fitted, against the bare SVG leaving labels out under 9 px as the console does`, consoleFit, bareLod),
    row(`zoomed in to ${Math.round(consoleK * 100)} % (console: ${fmt(hostsAt100)} hosts drawn; baseline ${Math.round(bareK * 100)} %, all drawn)`, consoleNear, bareNear),
    '',
    `Input delivered per measure (${REPEATS} × ~2 s): console ${consoleFit.moves} pointer moves + ${consoleFit.notches} notches at the fit, ${consoleNear.moves} + ${consoleNear.notches} at 100 %; baseline ${bareFit.moves} + ${bareFit.notches} and ${bareNear.moves} + ${bareNear.notches} ` +
      '(each `page.mouse` call waits for the page to take the event, so a page busy drawing also receives fewer of them: the input rate is part of the figure).',
    '',
    `Reading: with all ${fmt(N)} hosts visible the console pans and zooms at p95 ${f1(consoleFit.p95)} ms a frame (${f0(consoleFit.fps)} frames a second): ${reading(consoleFit)}` +
      `${consoleFit.p95 > SMOOTH_MS ? ` by the ${SMOOTH_MS} ms bar` : ''}; the bare SVG of as many elements does ${f1(bareFit.p95)} ms with its labels (${reading(bareFit)}) and ${f1(bareLod.p95)} ms without (${reading(bareLod)}), so the console's cost is ${(consoleFit.p95 / bareFit.p95).toFixed(1)} × and ${(consoleFit.p95 / bareLod.p95).toFixed(1)} × Chromium's own at the 95th percentile. ` +
      `Zoomed in to 100 % it does p95 ${f1(consoleNear.p95)} ms (${reading(consoleNear)}; the bare SVG ${f1(bareNear.p95)} ms). First draw of the open view takes ${(cFirst / 1000).toFixed(1)} s against ${(bFirst / 1000).toFixed(1)} s for the static page. ` +
      'Software rasterisation in a headless browser on a small machine: a desktop browser with a GPU draws faster, so these are upper bounds of frame time, to be compared run to run through the ratios.',
  ];
  console.log(out.join('\n'));
  const doc = fileURLToPath(new URL('../docs/benchmarks.md', import.meta.url));
  const text = readFileSync(doc, 'utf8');
  const heading = '\n## Topology canvas in Chromium (issue 24)';
  const start = text.indexOf(heading);
  const next = start < 0 ? -1 : text.indexOf('\n## ', start + 1);
  const updated = start < 0 ? `${text.trimEnd()}\n\n${out.join('\n')}\n` : `${text.slice(0, start).trimEnd()}\n\n${out.join('\n')}\n${next < 0 ? '' : text.slice(next)}`;
  writeFileSync(doc, updated);
} finally {
  await cleanup();
}
