import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';

// A small local stand-in for a Kubernetes API server, for the collector's tests: the list
// endpoints of nodes, pods, services and ingresses over HTTPS (a self-signed certificate made by
// openssl, trusted through the kubeconfig's certificate-authority-data, as a real cluster's CA is),
// with the real JSON shapes (`NodeList`, `ListMeta` with `resourceVersion`, `continue` and
// `remainingItemCount`), the real bearer-token check (401), and failures as the real `Status`
// objects: 403 Forbidden, 410 Expired (a too-old resourceVersion or continue token), 504
// ResourceVersionTooLarge, 500 and 503, each injectable per resource.

/** The resource kinds the fake lists. */
export type FakeResource = 'nodes' | 'pods' | 'services' | 'ingresses';

/** A Kubernetes object as JSON: what the fake stores and lists. */
export type KubeObject = Record<string, unknown> & { metadata: Record<string, unknown> & { name: string; namespace?: string; uid: string; labels?: Record<string, string> } };

/** What the fake serves; tests change it between collections. */
export interface FakeKubernetesState {
  /** The token a request must bear. */
  token: string;
  nodes: KubeObject[];
  pods: KubeObject[];
  services: KubeObject[];
  ingresses: KubeObject[];
  /** The cluster's current resourceVersion (every list reports it). */
  resourceVersion: number;
  /** resourceVersions below this are compacted away: asked for, they give 410 Expired. */
  oldestResourceVersion: number;
  /** A failure to answer for a resource's lists: an HTTP status (403, 500, 503, …), or `hang` (never answers). */
  fail: Partial<Record<FakeResource, number | 'hang'>>;
  /** Continue tokens this fake handed out are expired (410), as after five minutes on a real server. */
  expireContinue: boolean;
}

/** One request as the fake saw it. */
export interface FakeRequest {
  path: string;
  query: Record<string, string>;
  authorized: boolean;
}

const PATHS: Record<string, { resource: FakeResource; kind: string; apiVersion: string; group: string }> = {
  '/api/v1/nodes': { resource: 'nodes', kind: 'NodeList', apiVersion: 'v1', group: '' },
  '/api/v1/pods': { resource: 'pods', kind: 'PodList', apiVersion: 'v1', group: '' },
  '/api/v1/services': { resource: 'services', kind: 'ServiceList', apiVersion: 'v1', group: '' },
  '/apis/networking.k8s.io/v1/ingresses': { resource: 'ingresses', kind: 'IngressList', apiVersion: 'networking.k8s.io/v1', group: 'networking.k8s.io' },
};

/** A fresh state: a token, no objects, resourceVersion 1000. */
export function fakeState(overrides: Partial<FakeKubernetesState> = {}): FakeKubernetesState {
  return { token: 'fake-token-8c1f5a2e9d7b4c60', nodes: [], pods: [], services: [], ingresses: [], resourceVersion: 1000, oldestResourceVersion: 0, fail: {}, expireContinue: false, ...overrides };
}

/** Starts the fake on 127.0.0.1 (a free port). */
export async function startFakeKubernetes(state: FakeKubernetesState = fakeState()) {
  const { cert, key } = selfSignedCertificate();
  const requests: FakeRequest[] = [];
  const server = https.createServer({ cert, key }, (req, res) => {
    const url = new URL(req.url ?? '/', 'https://127.0.0.1');
    const authorized = req.headers.authorization === `Bearer ${state.token}`;
    requests.push({ path: url.pathname, query: Object.fromEntries(url.searchParams), authorized });
    const answer = route(state, url, authorized);
    if (answer === 'hang') return;
    res.writeHead(answer.code, { 'content-type': 'application/json' });
    res.end(JSON.stringify(answer.body));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    state,
    requests,
    /** A kubeconfig for this server with a user bearing `token`, its context named `context`. */
    kubeconfig(token: string, context = 'fake'): string {
      return [
        'apiVersion: v1',
        'kind: Config',
        'clusters:',
        `- name: fake-cluster`,
        '  cluster:',
        `    server: ${url}`,
        `    certificate-authority-data: ${Buffer.from(cert).toString('base64')}`,
        'users:',
        '- name: collector',
        '  user:',
        `    token: ${token}`,
        'contexts:',
        `- name: ${context}`,
        '  context:',
        '    cluster: fake-cluster',
        '    user: collector',
        `current-context: ${context}`,
        '',
      ].join('\n');
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

type Answer = { code: number; body: unknown } | 'hang';

/** What the API server answers to one GET. */
function route(state: FakeKubernetesState, url: URL, authorized: boolean): Answer {
  if (!authorized) return status(401, 'Unauthorized', 'Unauthorized');
  const list = PATHS[url.pathname];
  if (!list) return status(404, 'NotFound', 'the server could not find the requested resource');
  const injected = state.fail[list.resource];
  if (injected === 'hang') return 'hang';
  if (injected !== undefined) return failure(injected, list.resource, list.group);
  return listPage(state, list.resource, list.kind, list.apiVersion, url.searchParams);
}

/** One page of a list, with the checks a real server makes of `limit`, `continue` and `resourceVersion`. */
function listPage(state: FakeKubernetesState, resource: FakeResource, kind: string, apiVersion: string, q: URLSearchParams): Answer {
  const rv = q.get('resourceVersion');
  const match = q.get('resourceVersionMatch');
  const token = q.get('continue');
  if (match && !rv) return status(400, 'BadRequest', 'resourceVersionMatch is forbidden unless resourceVersion is provided');
  if (rv && token) return status(400, 'BadRequest', 'specifying resource version is not allowed when using continue');
  if (rv && Number(rv) > state.resourceVersion) {
    return status(504, 'Timeout', `Too large resource version: ${rv}, current: ${state.resourceVersion}`, { causes: [{ reason: 'ResourceVersionTooLarge', message: 'Too large resource version' }], retryAfterSeconds: 1 });
  }
  if (rv && Number(rv) < state.oldestResourceVersion) return status(410, 'Expired', 'The resourceVersion for the provided list is too old.');
  let start = 0;
  if (token) {
    const decoded = decodeContinue(token);
    if (!decoded) return status(400, 'BadRequest', 'continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)');
    if (state.expireContinue) {
      return status(410, 'Expired', 'The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.');
    }
    start = decoded.start;
  }
  const items = state[resource];
  const limit = Number(q.get('limit') ?? 0);
  const end = limit > 0 ? Math.min(items.length, start + limit) : items.length;
  const metadata: Record<string, unknown> = { resourceVersion: String(state.resourceVersion) };
  if (end < items.length) {
    metadata.continue = Buffer.from(JSON.stringify({ v: 'meta.k8s.io/v1', rv: state.resourceVersion, start: end })).toString('base64');
    metadata.remainingItemCount = items.length - end;
  }
  return { code: 200, body: { kind, apiVersion, metadata, items: items.slice(start, end) } };
}

/** A continue token of this fake: base64 JSON like a real server's, holding the next offset. */
function decodeContinue(token: string): { start: number } | null {
  try {
    const parsed = JSON.parse(Buffer.from(token, 'base64').toString('utf8')) as { v?: string; start?: unknown };
    return parsed.v === 'meta.k8s.io/v1' && typeof parsed.start === 'number' ? { start: parsed.start } : null;
  } catch {
    return null;
  }
}

/** An injected failure, as the real server words it. */
function failure(code: number, resource: FakeResource, group: string): Answer {
  switch (code) {
    case 403:
      return status(403, 'Forbidden', `${resource} is forbidden: User "system:serviceaccount:surveyor:collector" cannot list resource "${resource}" in API group "${group}" at the cluster scope`, { kind: resource });
    case 404:
      return status(404, 'NotFound', 'the server could not find the requested resource');
    case 410:
      return status(410, 'Expired', 'The resourceVersion for the provided list is too old.');
    case 503:
      return status(503, 'ServiceUnavailable', 'the server is currently unable to handle the request');
    default:
      return status(code, 'InternalError', 'Internal error occurred: etcdserver: request timed out', { causes: [{ message: 'etcdserver: request timed out' }] });
  }
}

/** A `Status` object: how the API server answers a failure. */
function status(code: number, reason: string, message: string, details?: Record<string, unknown>): Answer {
  return { code, body: { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, ...(details ? { details } : {}), code } };
}

/** A throwaway key and self-signed certificate for 127.0.0.1 (openssl). */
function selfSignedCertificate(): { cert: string; key: string } {
  const dir = mkdtempSync(path.join(tmpdir(), 'surveyor-fake-kube-'));
  try {
    const keyFile = path.join(dir, 'key.pem');
    const certFile = path.join(dir, 'cert.pem');
    execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', keyFile, '-out', certFile, '-days', '1', '-subj', '/CN=fake-kube-apiserver', '-addext', 'subjectAltName=IP:127.0.0.1'], { stdio: 'ignore' });
    return { cert: readFileSync(certFile, 'utf8'), key: readFileSync(keyFile, 'utf8') };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

// Builders of objects in the API's JSON shape (the fields the collector reads, and a few it does not).

/** A node: Ready unless said otherwise, with an InternalIP (and an ExternalIP when given). */
export function fakeNode(name: string, opts: { internalIP: string; externalIP?: string; ready?: boolean; labels?: Record<string, string> }): KubeObject {
  return {
    kind: 'Node',
    apiVersion: 'v1',
    metadata: { name, uid: randomUUID(), resourceVersion: '1', creationTimestamp: '2026-01-01T00:00:00Z', labels: { 'kubernetes.io/hostname': name, 'kubernetes.io/os': 'linux', ...opts.labels } },
    spec: { podCIDR: '10.244.0.0/24', podCIDRs: ['10.244.0.0/24'], providerID: `kind://docker/fake/${name}` },
    status: {
      addresses: [{ type: 'InternalIP', address: opts.internalIP }, ...(opts.externalIP ? [{ type: 'ExternalIP', address: opts.externalIP }] : []), { type: 'Hostname', address: name }],
      conditions: [
        { type: 'MemoryPressure', status: 'False', reason: 'KubeletHasSufficientMemory', lastHeartbeatTime: '2026-01-01T00:00:00Z', lastTransitionTime: '2026-01-01T00:00:00Z' },
        { type: 'Ready', status: opts.ready === false ? 'False' : 'True', reason: opts.ready === false ? 'KubeletNotReady' : 'KubeletReady', lastHeartbeatTime: '2026-01-01T00:00:00Z', lastTransitionTime: '2026-01-01T00:00:00Z' },
      ],
      nodeInfo: {
        machineID: 'f00d', systemUUID: 'f00d', bootID: 'f00d', kernelVersion: '6.8.0-45-generic', osImage: 'Ubuntu 24.04.1 LTS', containerRuntimeVersion: 'containerd://1.7.22',
        kubeletVersion: 'v1.31.2', kubeProxyVersion: 'v1.31.2', operatingSystem: 'linux', architecture: 'amd64',
      },
    },
  };
}

/** A pod running on `nodeName`; owned by a Deployment's ReplicaSet when `deployment` is given. */
export function fakePod(namespace: string, name: string, opts: { ip: string; nodeName: string; deployment?: string; owner?: { kind: string; name: string }; hostNetwork?: boolean; phase?: string; ips?: string[] }): KubeObject {
  const hash = '7c5ddbdf54';
  const owner = opts.deployment ? { kind: 'ReplicaSet', name: `${opts.deployment}-${hash}` } : opts.owner;
  return {
    kind: 'Pod',
    apiVersion: 'v1',
    metadata: {
      name, namespace, uid: randomUUID(), resourceVersion: '1', creationTimestamp: '2026-01-01T00:00:00Z',
      labels: { app: opts.deployment ?? name, ...(opts.deployment ? { 'pod-template-hash': hash } : {}) },
      ...(owner ? { ownerReferences: [{ apiVersion: 'apps/v1', kind: owner.kind, name: owner.name, uid: randomUUID(), controller: true, blockOwnerDeletion: true }] } : {}),
    },
    spec: { nodeName: opts.nodeName, serviceAccountName: 'default', hostNetwork: opts.hostNetwork || undefined, containers: [{ name: 'main', image: 'registry.example/app:1.0', ports: [{ containerPort: 8080, protocol: 'TCP' }] }] },
    status: { phase: opts.phase ?? 'Running', hostIP: '10.0.0.1', podIP: opts.ip, podIPs: (opts.ips ?? [opts.ip]).map((ip) => ({ ip })), startTime: '2026-01-01T00:00:00Z' },
  };
}

/** A service of `type` with `ports`; a LoadBalancer one gets `lbIP` as its load balancer's ingress. */
export function fakeService(namespace: string, name: string, opts: { clusterIP: string; type?: 'ClusterIP' | 'NodePort' | 'LoadBalancer'; ports: { name?: string; port: number; protocol?: string; nodePort?: number }[]; lbIP?: string; lbHostname?: string }): KubeObject {
  const type = opts.type ?? 'ClusterIP';
  return {
    kind: 'Service',
    apiVersion: 'v1',
    metadata: { name, namespace, uid: randomUUID(), resourceVersion: '1', creationTimestamp: '2026-01-01T00:00:00Z', labels: { app: name } },
    spec: {
      type, clusterIP: opts.clusterIP, clusterIPs: [opts.clusterIP], selector: { app: name }, sessionAffinity: 'None', ipFamilies: ['IPv4'], ipFamilyPolicy: 'SingleStack',
      ports: opts.ports.map((p) => ({ name: p.name, protocol: p.protocol ?? 'TCP', port: p.port, targetPort: p.port, ...(p.nodePort ? { nodePort: p.nodePort } : {}) })),
    },
    status: { loadBalancer: opts.lbIP || opts.lbHostname ? { ingress: [{ ...(opts.lbIP ? { ip: opts.lbIP, ipMode: 'VIP' } : {}), ...(opts.lbHostname ? { hostname: opts.lbHostname } : {}) }] } : {} },
  };
}

/** An ingress routing `host` to each backend service port; `lbIP` as its load balancer's address. */
export function fakeIngress(namespace: string, name: string, opts: { host: string; backends: { service: string; port: number | string }[]; lbIP?: string; tls?: boolean }): KubeObject {
  return {
    kind: 'Ingress',
    apiVersion: 'networking.k8s.io/v1',
    metadata: { name, namespace, uid: randomUUID(), resourceVersion: '1', creationTimestamp: '2026-01-01T00:00:00Z' },
    spec: {
      ingressClassName: 'nginx',
      ...(opts.tls ? { tls: [{ hosts: [opts.host], secretName: `${name}-tls` }] } : {}),
      rules: [{ host: opts.host, http: { paths: opts.backends.map((b, i) => ({ path: i === 0 ? '/' : `/p${i}`, pathType: 'Prefix', backend: { service: { name: b.service, port: typeof b.port === 'number' ? { number: b.port } : { name: b.port } } } })) } }],
    },
    status: { loadBalancer: opts.lbIP ? { ingress: [{ ip: opts.lbIP }] } : {} },
  };
}

/** A generated cluster: `nodes` nodes, `services` ClusterIP services and `pods` Deployment pods spread over them. */
export function generateCluster(counts: { nodes: number; pods: number; services: number }): Pick<FakeKubernetesState, 'nodes' | 'pods' | 'services'> {
  const ip = (base: number, i: number) => `${base}.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`;
  const nodes = Array.from({ length: counts.nodes }, (_, i) => fakeNode(`node-${i}`, { internalIP: ip(172, i + 1) }));
  const services = Array.from({ length: counts.services }, (_, i) => fakeService(`ns-${i % 20}`, `svc-${i}`, { clusterIP: ip(100, i + 1), ports: [{ name: 'http', port: 80 }] }));
  const pods = Array.from({ length: counts.pods }, (_, i) => fakePod(`ns-${i % 20}`, `app-${i % 200}-${i}`, { ip: ip(10, i + 1), nodeName: `node-${i % Math.max(1, counts.nodes)}`, deployment: `app-${i % 200}` }));
  return { nodes, pods, services };
}
