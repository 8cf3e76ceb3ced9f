import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { haveTools } from '../../../test/system-tools.js';
import type { CloudMachine } from '../src/cloud/inventory.js';
import { collectKubernetes, testKubernetes } from '../src/cloud/kubernetes.js';
import { ProviderError, isTransient } from '../src/jobs/runner.js';
import { fakeIngress, fakeNode, fakePod, fakeService, fakeState, generateCluster, startFakeKubernetes } from './fakes/kubernetes.js';

// The Kubernetes collector (issue 25) with the real @kubernetes/client-node against a local fake
// of the API server (test/fakes/kubernetes.ts): HTTPS, bearer tokens, paging and Status failures.

/** The collection's failure, which must be a ProviderError. */
async function failure(p: Promise<unknown>): Promise<ProviderError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ProviderError);
  return err as ProviderError;
}

describe.skipIf(!haveTools('the Kubernetes collector against a fake API server', ['openssl']))('the Kubernetes collector', () => {
  let fake: Awaited<ReturnType<typeof startFakeKubernetes>>;
  let kubeconfig: string;
  const TOKEN = 'sa-token-4f0c2b9e7d1a6e35b8c0';

  beforeAll(async () => {
    fake = await startFakeKubernetes(fakeState({ token: TOKEN }));
    kubeconfig = fake.kubeconfig(TOKEN);
  });
  afterAll(() => fake.close());
  beforeEach(() => {
    Object.assign(fake.state, fakeState({ token: TOKEN }));
    fake.requests.length = 0;
  });

  /** A small cluster with every mapping the collector makes. */
  function smallCluster() {
    fake.state.nodes = [fakeNode('node-a', { internalIP: '10.0.0.1', externalIP: '203.0.113.10', labels: { zone: 'a' } }), fakeNode('node-b', { internalIP: '10.0.0.2', ready: false })];
    fake.state.services = [
      fakeService('shop', 'web', { clusterIP: '10.96.0.10', ports: [{ name: 'http', port: 80 }, { name: 'admin', port: 9000 }] }),
      fakeService('shop', 'front', { clusterIP: '10.96.0.11', type: 'LoadBalancer', lbIP: '198.51.100.7', ports: [{ name: 'https', port: 443, nodePort: 31443 }] }),
      fakeService('shop', 'debug', { clusterIP: '10.96.0.12', type: 'NodePort', ports: [{ port: 8080, nodePort: 30080 }, { port: 53, protocol: 'UDP', nodePort: 30053 }] }),
    ];
    fake.state.pods = [
      fakePod('shop', 'web-7c5ddbdf54-x2k4q', { ip: '10.244.0.5', nodeName: 'node-a', deployment: 'web' }),
      fakePod('shop', 'db-0', { ip: 'FD00:0:0:0:0:0:0:5', nodeName: 'node-b', owner: { kind: 'StatefulSet', name: 'db' } }),
      fakePod('kube-system', 'kube-proxy-abcde', { ip: '10.0.0.1', nodeName: 'node-a', owner: { kind: 'DaemonSet', name: 'kube-proxy' }, hostNetwork: true }),
      fakePod('shop', 'migrate-xyz', { ip: '10.244.0.9', nodeName: 'node-b', owner: { kind: 'Job', name: 'migrate' }, phase: 'Succeeded' }),
    ];
    fake.state.ingresses = [
      fakeIngress('shop', 'web', { host: 'shop.example', backends: [{ service: 'web', port: 'http' }], lbIP: '198.51.100.8', tls: true }),
      // By port number, to a port a NodePort already exposes: it keeps its first reason.
      fakeIngress('shop', 'debug', { host: 'debug.example', backends: [{ service: 'debug', port: 8080 }] }),
      // Another namespace's `web`: shop/web's admin port stays unexposed.
      fakeIngress('blog', 'web', { host: 'blog.example', backends: [{ service: 'web', port: 9000 }] }),
    ];
  }

  const byName = (machines: CloudMachine[], name: string) => {
    const m = machines.find((x) => x.name === name);
    expect(m, name).toBeDefined();
    return m!;
  };

  it('maps nodes, services, pods and ingresses: addresses, state, workload, and how each port is exposed', async () => {
    smallCluster();
    const inv = await collectKubernetes({}, { kubeconfig });
    expect(inv.warnings).toEqual([]);
    expect(inv.networks).toEqual([]);
    expect(inv.machines.map((m) => `${m.kind} ${m.name}`).sort()).toEqual(
      ['ingress blog/web', 'ingress shop/debug', 'ingress shop/web', 'node node-a', 'node node-b', 'pod kube-system/kube-proxy-abcde', 'pod shop/db-0', 'pod shop/migrate-xyz', 'pod shop/web-7c5ddbdf54-x2k4q', 'service shop/debug', 'service shop/front', 'service shop/web'],
    );

    const nodeA = byName(inv.machines, 'node-a');
    expect(nodeA).toMatchObject({ kind: 'node', location: null, state: 'Ready', privateAddresses: ['10.0.0.1'], publicAddresses: ['203.0.113.10'], os: 'Ubuntu 24.04.1 LTS', ports: [], inbound: [] });
    expect(nodeA.providerId).toBe(fake.state.nodes[0]!.metadata.uid);
    expect(nodeA.labels).toMatchObject({ zone: 'a', 'kubernetes.io/hostname': 'node-a' });
    expect(nodeA.details).toMatchObject({ kubeletVersion: 'v1.31.2', containerRuntime: 'containerd://1.7.22', providerID: 'kind://docker/fake/node-a' });
    expect(byName(inv.machines, 'node-b').state).toBe('NotReady');

    const web = byName(inv.machines, 'shop/web');
    expect(web).toMatchObject({ kind: 'service', location: 'shop', state: 'ClusterIP', privateAddresses: ['10.96.0.10'], publicAddresses: [] });
    expect(web.ports).toEqual([
      { protocol: 'tcp', port: 80, name: 'http', exposed: true, via: 'ingress shop/web' },
      { protocol: 'tcp', port: 9000, name: 'admin', exposed: false, via: undefined },
    ]);
    expect(byName(inv.machines, 'shop/front')).toMatchObject({ state: 'LoadBalancer', publicAddresses: ['198.51.100.7'], ports: [{ protocol: 'tcp', port: 443, exposed: true, via: 'LoadBalancer' }] });
    expect(byName(inv.machines, 'shop/debug').ports).toEqual([
      { protocol: 'tcp', port: 8080, name: undefined, exposed: true, via: 'NodePort 30080' },
      { protocol: 'udp', port: 53, name: undefined, exposed: true, via: 'NodePort 30053' },
    ]);

    const webPod = byName(inv.machines, 'shop/web-7c5ddbdf54-x2k4q');
    expect(webPod).toMatchObject({ kind: 'pod', location: 'shop', state: 'Running', privateAddresses: ['10.244.0.5'], details: { workload: 'Deployment/web', nodeName: 'node-a', hostNetwork: false } });
    expect(byName(inv.machines, 'shop/db-0')).toMatchObject({ privateAddresses: ['fd00::5'], details: { workload: 'StatefulSet/db' } });
    expect(byName(inv.machines, 'shop/migrate-xyz')).toMatchObject({ state: 'Succeeded', privateAddresses: [], details: { workload: 'Job/migrate' } });

    // The ingress shares its name with the service (names are unique per kind): found by kind.
    expect(inv.machines.find((m) => m.kind === 'ingress' && m.name === 'shop/debug')).toMatchObject({ state: 'Pending', publicAddresses: [], details: { backends: ['debug:8080'], tls: false } });
    expect(inv.machines.find((m) => m.kind === 'ingress')).toMatchObject({
      name: 'shop/web',
      state: 'Ready',
      publicAddresses: ['198.51.100.8'],
      details: { hosts: ['shop.example'], backends: ['web:http'], ingressClass: 'nginx', tls: true },
      ports: [
        { protocol: 'tcp', port: 80, exposed: true, via: 'ingress shop/web' },
        { protocol: 'tcp', port: 443, exposed: true, via: 'ingress shop/web' },
      ],
    });
    expect(Object.keys(inv.cursor ?? {}).sort()).toEqual(['ingresses', 'nodes', 'pods', 'services']);
  });

  it("keeps a hostNetwork pod without its node's address, so the sync cannot merge it into the node", async () => {
    smallCluster();
    const inv = await collectKubernetes({}, { kubeconfig });
    const proxy = byName(inv.machines, 'kube-system/kube-proxy-abcde');
    expect(proxy).toMatchObject({ state: 'Running', privateAddresses: [], publicAddresses: [], details: { hostNetwork: true, nodeName: 'node-a', workload: 'DaemonSet/kube-proxy' } });
    const holders = inv.machines.filter((m) => m.privateAddresses.includes('10.0.0.1'));
    expect(holders.map((m) => m.name)).toEqual(['node-a']);
  });

  it('pages every list with limit and continue, and keeps nothing of a page but its machines', async () => {
    Object.assign(fake.state, generateCluster({ nodes: 7, pods: 23, services: 11 }));
    const inv = await collectKubernetes({ pageSize: 5 }, { kubeconfig });
    expect(inv.machines.filter((m) => m.kind === 'pod')).toHaveLength(23);
    expect(inv.machines.filter((m) => m.kind === 'node')).toHaveLength(7);
    expect(inv.machines.filter((m) => m.kind === 'service')).toHaveLength(11);
    expect(new Set(inv.machines.map((m) => m.providerId)).size).toBe(41);
    const pods = fake.requests.filter((r) => r.path === '/api/v1/pods');
    expect(pods).toHaveLength(5);
    expect(pods.every((r) => r.query.limit === '5')).toBe(true);
    expect(pods[0]!.query.continue).toBeUndefined();
    expect(pods.slice(1).every((r) => typeof r.query.continue === 'string')).toBe(true);
    expect(fake.requests.every((r) => r.authorized)).toBe(true);
  });

  it("asks from the cursor's resourceVersion (NotOlderThan) on the first page only, and returns the new cursor", async () => {
    Object.assign(fake.state, generateCluster({ nodes: 3, pods: 12, services: 2 }));
    const first = await collectKubernetes({ pageSize: 5 }, { kubeconfig });
    expect(first.cursor).toEqual({ nodes: '1000', pods: '1000', services: '1000', ingresses: '1000' });
    fake.state.resourceVersion = 1200;
    fake.requests.length = 0;
    const second = await collectKubernetes({ pageSize: 5 }, { kubeconfig }, { cursor: first.cursor });
    expect(second.machines).toHaveLength(17);
    expect(second.cursor).toEqual({ nodes: '1200', pods: '1200', services: '1200', ingresses: '1200' });
    const pods = fake.requests.filter((r) => r.path === '/api/v1/pods');
    expect(pods[0]!.query).toMatchObject({ resourceVersion: '1000', resourceVersionMatch: 'NotOlderThan', limit: '5' });
    expect(pods.slice(1).every((r) => r.query.resourceVersion === undefined && r.query.continue)).toBe(true);
  });

  it("falls back to a plain full list when the cursor's resourceVersion is gone (410 Expired), and still returns everything", async () => {
    Object.assign(fake.state, generateCluster({ nodes: 2, pods: 9, services: 3 }));
    fake.state.resourceVersion = 5000;
    fake.state.oldestResourceVersion = 4000;
    const inv = await collectKubernetes({ pageSize: 4 }, { kubeconfig }, { cursor: { nodes: '1000', pods: '1000', services: '1000', ingresses: '1000' } });
    expect(inv.machines).toHaveLength(14);
    expect(inv.cursor).toMatchObject({ pods: '5000' });
    const pods = fake.requests.filter((r) => r.path === '/api/v1/pods');
    expect(pods[0]!.query.resourceVersion).toBe('1000');
    expect(pods[1]!.query).toEqual({ limit: '4' });
  });

  it('falls back to a full list when the cursor is newer than the cluster (504 ResourceVersionTooLarge: another cluster, a restored etcd)', async () => {
    Object.assign(fake.state, generateCluster({ nodes: 2, pods: 3, services: 1 }));
    const inv = await collectKubernetes({}, { kubeconfig }, { cursor: { nodes: '99999', pods: '99999', services: '99999', ingresses: '99999' } });
    expect(inv.machines).toHaveLength(6);
    expect(inv.cursor).toMatchObject({ nodes: '1000' });
  });

  it('starts a list again when its continue token expires in the middle (410), and fails when it expires again', async () => {
    Object.assign(fake.state, generateCluster({ nodes: 1, pods: 6, services: 1 }));
    fake.state.expireContinue = true;
    const err = await failure(collectKubernetes({ pageSize: 4 }, { kubeconfig }));
    expect(err.status).toBe(410);
    expect(err.message).toMatch(/^pods: Expired \(410\): The provided continue parameter is too old/);
    expect(fake.requests.filter((r) => r.path === '/api/v1/pods' && !r.query.continue)).toHaveLength(2);
  });

  it('fails on a 403 of pods with a ProviderError 403, not transient, naming the resource and never the token', async () => {
    smallCluster();
    fake.state.fail.pods = 403;
    const err = await failure(collectKubernetes({}, { kubeconfig }));
    expect(err.status).toBe(403);
    expect(isTransient(err)).toBe(false);
    expect(err.message).toBe('pods: Forbidden (403): pods is forbidden: User "system:serviceaccount:surveyor:collector" cannot list resource "pods" in API group "" at the cluster scope');
    expect(err.message).not.toContain(TOKEN);
  });

  it('goes on without ingresses when they are forbidden (403), with a warning', async () => {
    smallCluster();
    fake.state.fail.ingresses = 403;
    const inv = await collectKubernetes({}, { kubeconfig });
    expect(inv.warnings).toHaveLength(1);
    expect(inv.warnings[0]).toMatch(/^ingresses: Forbidden \(403\): ingresses is forbidden: .* \(ingresses left out\)$/);
    expect(inv.machines.filter((m) => m.kind === 'ingress')).toEqual([]);
    expect(byName(inv.machines, 'shop/web').ports[0]).toMatchObject({ exposed: false });
    expect(inv.cursor?.ingresses).toBeUndefined();
  });

  it('goes on without ingresses when the cluster does not serve networking.k8s.io/v1 (404), with a warning', async () => {
    smallCluster();
    fake.state.fail.ingresses = 404;
    const inv = await collectKubernetes({ pageSize: 0 }, { kubeconfig });
    expect(inv.warnings).toEqual(['ingresses: NotFound (404): the server could not find the requested resource (ingresses left out)']);
    expect(fake.requests.filter((r) => r.path === '/api/v1/pods').map((r) => r.query.limit)).toEqual(['1', '1', '1', '1']);
  });

  it.each([
    ['nodes', 503],
    ['services', 500],
  ] as const)('fails transiently when %s answer %i', async (resource, code) => {
    smallCluster();
    fake.state.fail[resource] = code;
    const err = await failure(collectKubernetes({}, { kubeconfig }));
    expect(err.status).toBe(code);
    expect(isTransient(err)).toBe(true);
    expect(err.message.startsWith(`${resource}: `)).toBe(true);
  });

  it('a wrong token is a 401 (not transient); a server that does not answer or is gone fails transiently; no message holds a credential', async () => {
    smallCluster();
    const errors: ProviderError[] = [];
    const wrong = await failure(collectKubernetes({}, { kubeconfig: fake.kubeconfig('not-the-token-1234') }));
    expect(wrong.status).toBe(401);
    expect(wrong.message).toBe('nodes: Unauthorized (401)'); // the client keeps no body of a 401
    expect(isTransient(wrong)).toBe(false);
    errors.push(wrong);

    fake.state.fail.nodes = 'hang';
    const slow = await failure(collectKubernetes({}, { kubeconfig }, { requestTimeoutMs: 300 }));
    expect(slow.status).toBeUndefined();
    expect(isTransient(slow)).toBe(true);
    expect(slow.message).toBe('nodes: no answer from the API server within 0.3 s');
    errors.push(slow);

    const gone = await startFakeKubernetes(fakeState({ token: TOKEN }));
    const goneConfig = gone.kubeconfig(TOKEN);
    await gone.close();
    const refused = await failure(collectKubernetes({}, { kubeconfig: goneConfig }));
    expect(refused.status).toBeUndefined();
    expect(refused.message).toBe('nodes: cannot reach the API server (ECONNREFUSED)');
    errors.push(refused);

    for (const code of [403, 500, 503] as const) {
      fake.state.fail = { pods: code };
      errors.push(await failure(collectKubernetes({}, { kubeconfig })));
    }
    for (const e of errors) {
      expect(e.message).not.toContain(TOKEN);
      expect(e.message).not.toContain('certificate-authority-data');
    }
  });

  it('stops when the caller aborts', async () => {
    smallCluster();
    fake.state.fail.nodes = 'hang';
    const controller = new AbortController();
    const run = collectKubernetes({}, { kubeconfig }, { signal: controller.signal });
    setTimeout(() => controller.abort(new Error('job stopping')), 100);
    await expect(run).rejects.toThrow('job stopping');
  });

  it('refuses a kubeconfig that cannot be used, without quoting it', async () => {
    const bad = await failure(collectKubernetes({}, { kubeconfig: `apiVersion: v1\nusers:\n- name: x\n  user:\n    token: ${TOKEN}\n   bad: [` }));
    expect(bad.status).toBe(400);
    expect(bad.message).toMatch(/^kubernetes: the kubeconfig cannot be read/);
    expect(bad.message).not.toContain(TOKEN);
    expect((await failure(collectKubernetes({}, {}))).message).toBe('kubernetes: no kubeconfig given');
    expect((await failure(collectKubernetes({ context: 'prod' }, { kubeconfig }))).message).toBe('kubernetes: the kubeconfig has no context "prod"');
    const exec = kubeconfig.replace(`    token: ${TOKEN}`, '    exec:\n      apiVersion: client.authentication.k8s.io/v1beta1\n      command: /bin/sh\n      args: ["-c", "id"]');
    expect((await failure(collectKubernetes({}, { kubeconfig: exec }))).message).toMatch(/^kubernetes: the kubeconfig's users\[collector\]\.exec is not accepted/);
    expect(fake.requests).toEqual([]);
  });

  it('refuses a kubeconfig pointing at files of this server or a proxy: the client would read them and send them to the kubeconfig\'s server', async () => {
    const cases: [string, string][] = [
      [kubeconfig.replace(`    token: ${TOKEN}`, '    token-file: /var/run/secrets/kubernetes.io/serviceaccount/token'), 'users[collector].token-file'],
      [kubeconfig.replace(`    token: ${TOKEN}`, '    client-certificate: /etc/ssl/private/server.crt\n    client-key: /etc/ssl/private/server.key'), 'users[collector].client-certificate'],
      [kubeconfig.replace(/    certificate-authority-data: .*/, '    certificate-authority: /etc/kubernetes/pki/ca.crt'), 'clusters[fake-cluster].certificate-authority'],
      [kubeconfig.replace(/(    server: .*)/, '$1\n    proxy-url: http://10.0.0.1:3128'), 'clusters[fake-cluster].proxy-url'],
      [kubeconfig.replace(`    token: ${TOKEN}`, '    auth-provider:\n      name: oidc'), 'users[collector].auth-provider'],
    ];
    for (const [text, field] of cases) {
      const err = await failure(collectKubernetes({}, { kubeconfig: text }));
      expect(err.status).toBe(400);
      expect(err.message).toContain(`the kubeconfig's ${field} is not accepted`);
      expect(isTransient(err)).toBe(false);
    }
    expect(fake.requests).toEqual([]);
    // The same checks in the test of a connection (what the console's "Test connection" calls).
    expect((await failure(testKubernetes({}, { kubeconfig: cases[0]![0] }))).message).toContain('token-file is not accepted');
  });

  it('selects the context the settings name', async () => {
    smallCluster();
    const inv = await collectKubernetes({ context: 'staging' }, { kubeconfig: fake.kubeconfig(TOKEN, 'staging') });
    expect(inv.machines.length).toBeGreaterThan(0);
  });

  it('bounds labels to 50, each value cut at 256 characters', async () => {
    const labels = Object.fromEntries(Array.from({ length: 80 }, (_, i) => [`k${String(i).padStart(2, '0')}`, 'v'.repeat(300)]));
    fake.state.nodes = [fakeNode('big', { internalIP: '10.0.0.9', labels })];
    const inv = await collectKubernetes({}, { kubeconfig });
    const node = byName(inv.machines, 'big');
    expect(Object.keys(node.labels)).toHaveLength(50);
    expect(Object.values(node.labels).every((v) => v.length <= 256)).toBe(true);
  });

  it('tests access with one node list of limit 1, giving the node count', async () => {
    Object.assign(fake.state, generateCluster({ nodes: 4, pods: 0, services: 0 }));
    expect(await testKubernetes({}, { kubeconfig })).toEqual({ nodeCount: 4 });
    expect(fake.requests).toEqual([{ path: '/api/v1/nodes', query: { limit: '1' }, authorized: true }]);
    fake.state.fail.nodes = 403;
    const err = await failure(testKubernetes({}, { kubeconfig }));
    expect(err.status).toBe(403);
    expect(err.message).toMatch(/^nodes: Forbidden \(403\)/);
  });
});
