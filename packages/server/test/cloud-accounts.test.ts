import type { HTTPMethods, LightMyRequestResponse } from 'fastify';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SeededOrg, type TestApp, bearer, buildTestApp, expectProblem, login, seedMemberWithKey, seedOrg } from './helpers.js';

// Cloud accounts (issue 25): Settings → Cloud accounts through the admin API as the console uses it.
// Credentials go in once and never come out (responses, audit rows, logs); every read and write is
// the session's organisation's; the surface is session-only, admin and up.

const CLOUD = '/api/v1/admin/cloud';
const SECRET = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY';
const KUBE_TOKEN = 'eyJhbGciOiJSUzI1NiJ9.kube-token-never-shown';
const KUBECONFIG = `apiVersion: v1
kind: Config
clusters:
- name: lab
  cluster:
    server: https://k8s.lab.example:6443
users:
- name: reader
  user:
    token: ${KUBE_TOKEN}
contexts:
- name: lab
  context: { cluster: lab, user: reader }
current-context: lab
`;

type Session = { cookie: string; csrfToken: string };
let t: TestApp;
let org: SeededOrg;
let admin: Session;
let viewer: Session;
let adminKey: string;
let other: Session;

const call = (s: Session | null, method: HTTPMethods, url: string, payload?: unknown): Promise<LightMyRequestResponse> =>
  t.app.inject({ method, url, headers: s ? { cookie: s.cookie, 'x-csrf-token': s.csrfToken } : {}, ...(payload !== undefined ? { payload: payload as Record<string, unknown> } : {}) });

const awsAccount = (name: string, extra: Record<string, unknown> = {}) => ({
  kind: 'aws', name, settings: { regions: ['eu-west-1'], roleArn: 'arn:aws:iam::123456789012:role/surveyor-read', externalId: 'ext-1234' },
  credentials: { accessKeyId: 'AKIAIOSFODNN7EXAMPLE', secretAccessKey: SECRET }, ...extra,
});

beforeAll(async () => {
  t = await buildTestApp();
  org = await seedOrg(t.database);
  const v = await seedMemberWithKey(t.database, org, 'viewer', ['inventory:read']);
  const a = await seedMemberWithKey(t.database, org, 'admin', ['inventory:read', 'inventory:write']);
  const o = await seedOrg(t.database);
  [admin, viewer, other] = await Promise.all([login(t.app, org.ownerEmail), login(t.app, v.email), login(t.app, o.ownerEmail)]);
  adminKey = a.token;
});
afterAll(() => t.close());

describe('cloud accounts', () => {
  it('adds an AWS account and a Kubernetes cluster, lists them without their credentials, and audits without them', async () => {
    const site = (await sql<{ id: string }>`insert into sites (organisation_id, code, name) values (${org.organisationId}, 'aws-eu', 'AWS eu-west-1') returning id`.execute(t.database.db)).rows[0]!.id;
    const aws = await call(admin, 'POST', CLOUD, awsAccount('Production', { siteId: site }));
    expect(aws.statusCode).toBe(201);
    expect(aws.json()).toMatchObject({
      kind: 'aws', name: 'Production', siteId: site, enabled: true, credentialHint: 'access key …MPLE', providerAccount: null, lastSync: null,
      settings: { regions: ['eu-west-1'], roleArn: 'arn:aws:iam::123456789012:role/surveyor-read', externalId: 'ext-1234' },
    });
    const k8s = await call(admin, 'POST', CLOUD, { kind: 'kubernetes', name: 'Lab cluster', credentials: { kubeconfig: KUBECONFIG } });
    expect(k8s.statusCode).toBe(201);
    expect(k8s.json()).toMatchObject({ kind: 'kubernetes', siteId: null, credentialHint: 'kubeconfig for k8s.lab.example:6443', settings: {} });

    const list = await call(admin, 'GET', CLOUD);
    expect(list.statusCode).toBe(200);
    expect(list.json().data.map((a: { name: string }) => a.name)).toEqual(['Lab cluster', 'Production']);
    // Nowhere: not in the answers, not in the audit rows, not in the log, not in the row in the clear.
    const audit = await sql<{ changes: unknown }>`select changes from audit_log where organisation_id = ${org.organisationId} and target_type = 'cloud_account'`.execute(t.database.db);
    const stored = await sql<{ credentials_sealed: string }>`select credentials_sealed from cloud_accounts where organisation_id = ${org.organisationId}`.execute(t.database.db);
    for (const text of [aws.body, k8s.body, list.body, JSON.stringify(audit.rows), JSON.stringify(stored.rows), t.logs.join('\n')]) {
      expect(text).not.toContain(SECRET);
      expect(text).not.toContain(KUBE_TOKEN);
      expect(text).not.toContain('AKIAIOSFODNN7EXAMPLE');
    }
    expect(audit.rows).toHaveLength(2);
  });

  it('changes name, site and settings, keeps the credentials left out, replaces those given, and refuses another kind\'s', async () => {
    const id = (await call(admin, 'POST', CLOUD, awsAccount('Staging'))).json().id as string;
    const renamed = await call(admin, 'PATCH', `${CLOUD}/${id}`, { name: 'Staging EU', enabled: false, settings: { regions: ['eu-central-1', 'eu-west-1'] } });
    expect(renamed.statusCode).toBe(200);
    expect(renamed.json()).toMatchObject({ name: 'Staging EU', enabled: false, settings: { regions: ['eu-central-1', 'eu-west-1'] }, credentialHint: 'access key …MPLE' });
    const keyed = await call(admin, 'PATCH', `${CLOUD}/${id}`, { credentials: { accessKeyId: 'AKIAZZZZZZZZZZZZ9876', secretAccessKey: `${SECRET}2` } });
    expect(keyed.json().credentialHint).toBe('access key …9876');
    const audit = await sql<{ changes: Record<string, unknown> }>`select changes from audit_log where organisation_id = ${org.organisationId} and target_id = ${id} and action = 'cloud_account.updated' order by occurred_at desc limit 1`.execute(t.database.db);
    expect(audit.rows[0]!.changes.credentials).toBe('replaced');
    expect(JSON.stringify(audit.rows)).not.toContain(SECRET);
    // A new endpoint takes the credentials given again: the stored ones are not sent elsewhere on an admin's word alone.
    const moved = await call(admin, 'PATCH', `${CLOUD}/${id}`, { settings: { regions: ['eu-west-1'], endpoint: 'https://ec2.attacker.example' } });
    expectProblem(moved, 400, 'validation_failed');
    expect(moved.json().issues[0].path).toBe('body.credentials');
    const movedWithKey = await call(admin, 'PATCH', `${CLOUD}/${id}`, { settings: { regions: ['eu-west-1'], endpoint: 'https://ec2.vpce.example' }, credentials: { accessKeyId: 'AKIAZZZZZZZZZZZZ9876', secretAccessKey: `${SECRET}2` } });
    expect(movedWithKey.json().settings).toEqual({ regions: ['eu-west-1'], endpoint: 'https://ec2.vpce.example' });
    // A Kubernetes account's settings emptied stay its kind's (`{}`), not another's.
    const cluster = (await call(admin, 'POST', CLOUD, { kind: 'kubernetes', name: 'Ctx', settings: { context: 'lab' }, credentials: { kubeconfig: KUBECONFIG } })).json().id as string;
    expect((await call(admin, 'PATCH', `${CLOUD}/${cluster}`, { settings: {} })).json().settings).toEqual({});
    const wrong = await call(admin, 'PATCH', `${CLOUD}/${id}`, { credentials: { kubeconfig: KUBECONFIG } });
    expectProblem(wrong, 400, 'validation_failed');
    expect(wrong.json().detail).toMatch(/credentials is not valid for a aws account/);
    expectProblem(await call(admin, 'PATCH', `${CLOUD}/${id}`, {}), 400, 'validation_failed');
  });

  it('refuses what is malformed, a taken name and an unknown site, with the field named', async () => {
    const bad = [
      { ...awsAccount('x'), credentials: { accessKeyId: 'not a key', secretAccessKey: SECRET } },
      { ...awsAccount('x'), settings: { regions: ['mars-1'] } },
      { ...awsAccount('x'), settings: { roleArn: 'arn:aws:iam::12:role/x' } },
      { kind: 'gcp', name: 'x', credentials: {} },
      { kind: 'kubernetes', name: 'x', credentials: { kubeconfig: KUBECONFIG, token: 'extra' } },
      { ...awsAccount(''), name: '   ' },
    ];
    for (const body of bad) expectProblem(await call(admin, 'POST', CLOUD, body), 400, 'validation_failed');
    await call(admin, 'POST', CLOUD, awsAccount('Taken'));
    expectProblem(await call(admin, 'POST', CLOUD, awsAccount('taken')), 409, 'duplicate');
    const unknownSite = await call(admin, 'POST', CLOUD, awsAccount('Nowhere', { siteId: '00000000-0000-4000-8000-000000000000' }));
    expectProblem(unknownSite, 400, 'validation_failed');
    expect(unknownSite.json().issues[0].path).toBe('body.siteId');
    const count = await sql<{ n: number }>`select count(*)::int as n from cloud_accounts where organisation_id = ${org.organisationId} and lower(name) in ('x', 'taken', 'nowhere')`.execute(t.database.db);
    expect(count.rows[0]!.n).toBe(1);
  });

  it('takes a Kubernetes account without a kubeconfig only in-cluster, and in-cluster only where the deployment allows it', async () => {
    const none = await call(admin, 'POST', CLOUD, { kind: 'kubernetes', name: 'No config' });
    expectProblem(none, 400, 'validation_failed');
    expect(none.json().issues).toEqual([{ path: 'body.credentials', message: 'a kubeconfig, or settings.inCluster where the deployment allows it' }]);
    const both = await call(admin, 'POST', CLOUD, { kind: 'kubernetes', name: 'Both', settings: { inCluster: true }, credentials: { kubeconfig: KUBECONFIG } });
    expect(both.json().issues).toEqual([{ path: 'body.credentials', message: 'an in-cluster account takes no kubeconfig' }]);
    const refused = await call(admin, 'POST', CLOUD, { kind: 'kubernetes', name: 'Here', settings: { inCluster: true } });
    expectProblem(refused, 400, 'validation_failed');
    expect(refused.json().issues[0].path).toBe('body.settings.inCluster');
    expect(refused.json().detail).toContain('SERVICE_CLOUD_IN_CLUSTER=allow');

    // A deployment that allows it: the account is made; outside a cluster its sync says so (not retried as a network failure).
    const single = await buildTestApp({ env: { SERVICE_CLOUD_IN_CLUSTER: 'allow' } });
    try {
      const o = await seedOrg(single.database);
      const s = await login(single.app, o.ownerEmail);
      const req = (method: HTTPMethods, url: string, payload?: unknown) =>
        single.app.inject({ method, url, headers: { cookie: s.cookie, 'x-csrf-token': s.csrfToken }, ...(payload !== undefined ? { payload: payload as Record<string, unknown> } : {}) });
      const made = await req('POST', CLOUD, { kind: 'kubernetes', name: 'This cluster', settings: { inCluster: true } });
      expect(made.statusCode).toBe(201);
      expect(made.json()).toMatchObject({ credentialHint: 'in-cluster service account', settings: { inCluster: true } });
      const sync = await req('POST', `${CLOUD}/${made.json().id}/sync`);
      expectProblem(sync, 502, 'upstream_error');
      expect(sync.json().detail).toMatch(/not running in a Kubernetes cluster \(KUBERNETES_SERVICE_HOST is not set\)/);
    } finally {
      await single.close();
    }
  });

  it('is the session organisation\'s only: another organisation\'s account is 404 to every verb', async () => {
    const id = (await call(admin, 'POST', CLOUD, awsAccount('Mine'))).json().id as string;
    expect((await call(other, 'GET', CLOUD)).json().data).toEqual([]);
    expectProblem(await call(other, 'PATCH', `${CLOUD}/${id}`, { name: 'Stolen' }), 404, 'not_found');
    expectProblem(await call(other, 'DELETE', `${CLOUD}/${id}`), 404, 'not_found');
    expectProblem(await call(other, 'POST', `${CLOUD}/${id}/test`), 404, 'not_found');
    expectProblem(await call(other, 'POST', `${CLOUD}/${id}/sync`), 404, 'not_found');
    expectProblem(await call(admin, 'POST', `${CLOUD}/00000000-0000-4000-8000-000000000000/sync`), 404, 'not_found');
    expect((await call(admin, 'GET', CLOUD)).json().data.some((a: { name: string }) => a.name === 'Mine')).toBe(true);
  });

  it('is for admins signed in: a viewer is 403, an API key is refused, no credential is 401', async () => {
    const id = (await call(admin, 'POST', CLOUD, awsAccount('Gated'))).json().id as string;
    expectProblem(await call(viewer, 'GET', CLOUD), 403, 'forbidden');
    expectProblem(await call(viewer, 'POST', `${CLOUD}/${id}/sync`), 403, 'forbidden');
    expectProblem(await t.app.inject({ method: 'GET', url: CLOUD, headers: bearer(adminKey) }), 401, 'unauthorized');
    expectProblem(await t.app.inject({ method: 'POST', url: `${CLOUD}/${id}/sync`, headers: bearer(adminKey) }), 401, 'unauthorized');
    expectProblem(await call(null, 'GET', CLOUD), 401, 'unauthorized');
    expectProblem(await t.app.inject({ method: 'POST', url: `${CLOUD}/${id}/sync`, headers: { cookie: admin.cookie } }), 403, 'csrf_failed');
  });

  it('deletes an account and its record of resources; its hosts stay', async () => {
    const id = (await call(admin, 'POST', CLOUD, awsAccount('Short-lived'))).json().id as string;
    const del = await call(admin, 'DELETE', `${CLOUD}/${id}`);
    expect(del.statusCode).toBe(204);
    expectProblem(await call(admin, 'DELETE', `${CLOUD}/${id}`), 404, 'not_found');
    const rows = await sql<{ action: string }>`select action from audit_log where organisation_id = ${org.organisationId} and target_id = ${id} order by occurred_at`.execute(t.database.db);
    expect(rows.rows.map((r) => r.action)).toEqual(['cloud_account.created', 'cloud_account.deleted']);
  });
});
