// The Kubernetes collector (issue 25): lists a cluster's nodes, services, pods and ingresses through
// @kubernetes/client-node and normalises them into a CloudInventory. Every list is paged (`limit`
// and `continue`) and each page is reduced to CloudMachines before the next is asked for, so a
// cluster of 20,000 pods holds one page of the API's objects at a time, never the whole list.
//
// Increments. The sync needs the full current set on every collection (what is no longer listed is
// marked absent), so an increment cannot be a diff. What the list `resourceVersion` of the last
// collection (`cursor`) buys is cheaper lists: the first page asks for `resourceVersion=<cursor>`
// with `resourceVersionMatch=NotOlderThan`, which lets the API server answer from its watch cache
// (any state at least as new as the cursor) instead of a quorum read of etcd. When the server no
// longer has that version (410 Gone / Expired, also what an expired `continue` token gives) or has
// never seen it (a 504 ResourceVersionTooLarge: the cursor came from another cluster, or etcd was
// restored), the list starts again once, plainly, from the first page. The new cursor is each
// list's own resourceVersion. A watch would give true deltas but needs a process that stays
// connected between collections; a collection here is one job run.
import yaml from 'js-yaml';
import {
  ApiException,
  CoreV1Api,
  KubeConfig,
  NetworkingV1Api,
  Observable,
  type ObservableMiddleware,
  type RequestContext,
  type ResponseContext,
  type V1Ingress,
  type V1IngressBackend,
  type V1ListMeta,
  type V1Node,
  type V1ObjectMeta,
  type V1Pod,
  type V1Service,
} from '@kubernetes/client-node';
import { isIP } from 'node:net';
import { ProviderError } from '../jobs/runner.js';
import { type CloudInventory, type CloudMachine, type CloudPort, boundedLabels } from './inventory.js';

/** Which cluster to read: a context of the kubeconfig, or the service account Surveyor runs under. */
export interface KubernetesSettings {
  /** A context of the kubeconfig; its current context when absent. */
  context?: string;
  /** Use the pod's own service account (`loadFromCluster`) instead of a kubeconfig. */
  inCluster?: boolean;
  /** Objects a list page asks for (`limit`), 1 to 5,000; 500 when absent. */
  pageSize?: number;
}

/** The secret part: a kubeconfig's YAML content (tokens, client keys). Unused with `inCluster`. */
export interface KubernetesCredentials {
  kubeconfig?: string;
}

/** How one collection runs. */
export interface KubernetesCollectOptions {
  /** Stops the collection (the job is stopping). */
  signal?: AbortSignal;
  /** The last collection's `cursor`: the list resourceVersion of each resource kind. */
  cursor?: Record<string, string>;
  /** How long one request may take; 30 s when absent. */
  requestTimeoutMs?: number;
}

const DEFAULT_PAGE_SIZE = 500;
const MAX_PAGE_SIZE = 5_000;
const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;
const MAX_MESSAGE = 300;

/** The resource kinds a collection lists, as the API names them (and as the cursor keys them). */
type Resource = 'nodes' | 'pods' | 'services' | 'ingresses';

/** What one list page gives, whatever the kind. */
interface Page<T> {
  metadata?: V1ListMeta;
  items: T[];
}

/** The paging parameters of one list request. */
interface PageParams {
  limit: number;
  _continue?: string;
  resourceVersion?: string;
  resourceVersionMatch?: string;
}

/** A cluster to talk to: the API clients, what a request must not say, and how long it may take. */
interface Cluster {
  core: CoreV1Api;
  networking: NetworkingV1Api;
  secrets: string[];
  signal: AbortSignal | undefined;
  timeoutMs: number;
}

/**
 * Collects one cluster's inventory: its nodes, services, pods and ingresses as CloudMachines, with
 * the lists' resourceVersions as the next collection's `cursor`. A refusal of nodes, pods or
 * services fails the collection; a refusal of ingresses (an optional API, often not granted) is a
 * warning.
 */
export async function collectKubernetes(settings: KubernetesSettings, credentials: KubernetesCredentials, opts: KubernetesCollectOptions = {}): Promise<CloudInventory> {
  const cluster = connect(settings, credentials, opts);
  // Never 0 (no limit: the whole list in one answer) nor pages so large that one page is the memory problem.
  const pageSize = Math.min(MAX_PAGE_SIZE, Math.max(1, Math.floor(settings.pageSize ?? DEFAULT_PAGE_SIZE)));
  const cursor: Record<string, string> = {};
  const warnings: string[] = [];
  const list = <T>(resource: Resource, fetchPage: (p: PageParams) => Promise<Page<T>>, normalise: (item: T) => CloudMachine) =>
    listAll(cluster, resource, pageSize, opts.cursor?.[resource], fetchPage, normalise).then(({ machines, resourceVersion }) => {
      if (resourceVersion) cursor[resource] = resourceVersion;
      return machines;
    });

  const nodes = await list('nodes', (p) => cluster.core.listNode(p, requestOptions(cluster)), nodeMachine);
  const services = await list('services', (p) => cluster.core.listServiceForAllNamespaces(p, requestOptions(cluster)), serviceMachine);
  const pods = await list('pods', (p) => cluster.core.listPodForAllNamespaces(p, requestOptions(cluster)), podMachine);
  let ingresses: CloudMachine[] = [];
  let partial: CloudInventory['partial'];
  try {
    ingresses = await list('ingresses', (p) => cluster.networking.listIngressForAllNamespaces(p, requestOptions(cluster)), ingressMachine);
  } catch (err) {
    if (!(err instanceof ProviderError) || (err.status !== 403 && err.status !== 404)) throw err;
    warnings.push(`${err.message} (ingresses left out)`);
    partial = { kinds: ['ingress'] };
  }
  exposeThroughIngresses(services, ingresses);
  return { machines: [...nodes, ...services, ...pods, ...ingresses], networks: [], warnings, cursor, ...(partial ? { partial } : {}) };
}

/**
 * Proves access with one cheap call: the first node of the node list (the permission a collection
 * needs first). Gives the cluster's node count when the server says it (`remainingItemCount`).
 */
export async function testKubernetes(settings: KubernetesSettings, credentials: KubernetesCredentials, opts: Omit<KubernetesCollectOptions, 'cursor'> = {}): Promise<{ nodeCount: number | null }> {
  const cluster = connect(settings, credentials, opts);
  const page = await call(cluster, 'nodes', () => cluster.core.listNode({ limit: 1 }, requestOptions(cluster)));
  const meta = page.metadata;
  if (meta?.remainingItemCount !== undefined) return { nodeCount: page.items.length + meta.remainingItemCount };
  return { nodeCount: meta?._continue ? null : page.items.length };
}

/** The API clients for the settings' cluster, or a ProviderError (not transient) saying what is wrong with the configuration. */
function connect(settings: KubernetesSettings, credentials: KubernetesCredentials, opts: Omit<KubernetesCollectOptions, 'cursor'>): Cluster {
  const kc = new KubeConfig();
  if (settings.inCluster) {
    // Outside a pod the client would aim at https://undefined:undefined and fail as if the network did (a transient error, retried).
    if (!process.env.KUBERNETES_SERVICE_HOST) throw new ProviderError('kubernetes: this service is not running in a Kubernetes cluster (KUBERNETES_SERVICE_HOST is not set), so an in-cluster account cannot be read here', 400);
    kc.loadFromCluster();
  } else {
    if (!credentials.kubeconfig) throw new ProviderError('kubernetes: no kubeconfig given', 400);
    loadKubeconfig(kc, credentials.kubeconfig, settings.context);
  }
  const user = kc.getCurrentUser();
  if (!settings.inCluster && (user?.exec || user?.authProvider)) {
    // An exec plugin runs a program of the kubeconfig's choosing on this server: refused.
    throw new ProviderError(`kubernetes: the kubeconfig's user ${JSON.stringify(user.name)} authenticates through ${user.exec ? 'an exec plugin' : 'an auth provider'}, which Surveyor does not run; give it a token or a client certificate`, 400);
  }
  const secrets = [user?.token, user?.password, user?.keyData, credentials.kubeconfig].filter((s): s is string => typeof s === 'string' && s.length >= 8);
  return { core: kc.makeApiClient(CoreV1Api), networking: kc.makeApiClient(NetworkingV1Api), secrets, signal: opts.signal, timeoutMs: opts.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS };
}

/**
 * What a kubeconfig given to a multi-tenant server may hold: credentials and certificates inline,
 * never a path (`token-file`, `client-key`, `certificate-authority`: the client would read this
 * server's files, a service account token among them, and send them to the kubeconfig's server),
 * nor a proxy, an exec plugin or an auth provider (a program run here).
 */
const ALLOWED = {
  cluster: new Set(['server', 'certificate-authority-data', 'insecure-skip-tls-verify', 'tls-server-name', 'extensions']),
  user: new Set(['token', 'client-certificate-data', 'client-key-data', 'username', 'password', 'as', 'as-groups', 'as-user-extra', 'extensions']),
} as const;

/** The first field of a cluster or user the kubeconfig may not hold, as `users[reader].token-file`; null when none. */
export function forbiddenKubeconfigField(doc: unknown): string | null {
  const entries = (list: unknown, key: 'cluster' | 'user') =>
    (Array.isArray(list) ? list : []).map((e: unknown) => ({ name: String((e as Record<string, unknown>)?.name ?? '?'), body: (e as Record<string, unknown>)?.[key] }));
  const d = (doc ?? {}) as Record<string, unknown>;
  for (const [list, key] of [['clusters', 'cluster'], ['users', 'user']] as const) {
    for (const { name, body } of entries(d[list], key)) {
      if (body === null || body === undefined) continue;
      if (typeof body !== 'object') return `${list}[${name}]`;
      for (const field of Object.keys(body)) if (!ALLOWED[key].has(field)) return `${list}[${name}].${field}`;
    }
  }
  return null;
}

/** Reads the kubeconfig into `kc` and selects `context`; errors say what is wrong without quoting the content. */
function loadKubeconfig(kc: KubeConfig, kubeconfig: string, context: string | undefined): void {
  let doc: unknown;
  try {
    doc = yaml.load(kubeconfig);
  } catch (err) {
    // js-yaml's errors quote the offending lines, which may hold a token: only the line number is kept.
    const line = (err as { mark?: { line?: number } }).mark?.line;
    throw new ProviderError(`kubernetes: the kubeconfig cannot be read${line === undefined ? '' : ` (line ${line + 1})`}`, 400);
  }
  const forbidden = forbiddenKubeconfigField(doc);
  if (forbidden) {
    throw new ProviderError(`kubernetes: the kubeconfig's ${forbidden} is not accepted: give credentials and certificates inline (token, client-certificate-data, client-key-data, certificate-authority-data); files of this server, proxies, exec plugins and auth providers are refused`, 400);
  }
  try {
    kc.loadFromString(kubeconfig);
  } catch (err) {
    const line = (err as { mark?: { line?: number } }).mark?.line;
    throw new ProviderError(`kubernetes: the kubeconfig cannot be read${line === undefined ? '' : ` (line ${line + 1})`}`, 400);
  }
  if (context !== undefined) {
    if (!kc.getContextObject(context)) throw new ProviderError(`kubernetes: the kubeconfig has no context ${JSON.stringify(context)}`, 400);
    kc.setCurrentContext(context);
  }
  if (!kc.getCurrentCluster()) throw new ProviderError('kubernetes: the kubeconfig names no cluster for its context', 400);
}

/** The per-request options: a signal ending the request when the collection stops or the request takes too long. */
function requestOptions(cluster: Cluster): { middleware: ObservableMiddleware[]; middlewareMergeStrategy: 'append' } {
  const signal = cluster.signal ? AbortSignal.any([cluster.signal, AbortSignal.timeout(cluster.timeoutMs)]) : AbortSignal.timeout(cluster.timeoutMs);
  // The object API takes the client's own Observable middleware (its PromiseMiddleware is only for the promise API).
  const abortable: ObservableMiddleware = {
    pre: (context: RequestContext) => {
      context.setSignal(signal);
      return new Observable(Promise.resolve(context));
    },
    post: (context: ResponseContext) => new Observable(Promise.resolve(context)),
  };
  return { middleware: [abortable], middlewareMergeStrategy: 'append' };
}

/**
 * Lists every object of one resource kind, page by page, reducing each page to machines. With a
 * cursor the first page may be served from the watch cache; a 410 (or a resourceVersion too large)
 * starts the list again once, plainly (see the top of this file).
 */
async function listAll<T>(
  cluster: Cluster,
  resource: Resource,
  limit: number,
  since: string | undefined,
  fetchPage: (p: PageParams) => Promise<Page<T>>,
  normalise: (item: T) => CloudMachine,
): Promise<{ machines: CloudMachine[]; resourceVersion: string | undefined }> {
  try {
    return await listPages(cluster, resource, limit, since, fetchPage, normalise);
  } catch (err) {
    if (!(err instanceof Relist)) throw err;
    return listPages(cluster, resource, limit, undefined, fetchPage, normalise, false);
  }
}

/** Thrown inside listPages when the list must start again from its first page. */
class Relist extends Error {}

/** One pass over the pages of a list; `relistable` says whether a 410 may start it again (once). */
async function listPages<T>(
  cluster: Cluster,
  resource: Resource,
  limit: number,
  since: string | undefined,
  fetchPage: (p: PageParams) => Promise<Page<T>>,
  normalise: (item: T) => CloudMachine,
  relistable = true,
): Promise<{ machines: CloudMachine[]; resourceVersion: string | undefined }> {
  const machines: CloudMachine[] = [];
  let resourceVersion: string | undefined;
  let next: string | undefined;
  do {
    // The API server refuses resourceVersion together with continue: a continued page carries its snapshot in the token.
    const params: PageParams = next ? { limit, _continue: next } : since ? { limit, resourceVersion: since, resourceVersionMatch: 'NotOlderThan' } : { limit };
    const page = await call(cluster, resource, () => fetchPage(params), relistable);
    resourceVersion ??= page.metadata?.resourceVersion;
    for (const item of page.items) machines.push(normalise(item));
    next = page.metadata?._continue || undefined;
  } while (next);
  return { machines, resourceVersion };
}

/** Makes one request, turning what fails into a ProviderError (or a Relist when the list may start again). */
async function call<T>(cluster: Cluster, resource: Resource, request: () => Promise<T>, relistable = false): Promise<T> {
  try {
    return await request();
  } catch (err) {
    if (cluster.signal?.aborted) throw cluster.signal.reason;
    if (relistable && mustRelist(err)) throw new Relist();
    throw providerError(cluster, resource, err);
  }
}

/** Whether the server no longer has (410) or never had (504 ResourceVersionTooLarge) the version asked for. */
function mustRelist(err: unknown): boolean {
  if (!(err instanceof ApiException)) return false;
  if (err.code === 410) return true;
  return err.code === 504 && statusOf(err)?.details?.causes?.some((c) => c.reason === 'ResourceVersionTooLarge') === true;
}

/** The Kubernetes `Status` object a failed request answered with, if it is one. */
interface Status {
  kind?: string;
  message?: string;
  reason?: string;
  code?: number;
  details?: { causes?: { reason?: string }[] };
}

/** The Status of an ApiException's body (the client hands it over as text, or as nothing on a 401). */
function statusOf(err: ApiException<unknown>): Status | undefined {
  const body = err.body;
  if (typeof body === 'object' && body !== null) return body as Status;
  if (typeof body !== 'string') return undefined;
  try {
    const parsed: unknown = JSON.parse(body);
    return typeof parsed === 'object' && parsed !== null && (parsed as Status).kind === 'Status' ? (parsed as Status) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A failure as a ProviderError naming the resource: `pods: Forbidden (403): <the server's message>`
 * with the HTTP status; a timeout or a connection failure without a status (transient). The
 * message never holds a credential (each of the kubeconfig's secrets is blanked out, should a proxy
 * echo one).
 */
function providerError(cluster: Cluster, resource: Resource, err: unknown): ProviderError {
  if (err instanceof ApiException) {
    const status = statusOf(err);
    const reason = status?.reason || (err.code === 401 ? 'Unauthorized' : 'Error');
    const detail = status?.message ? `: ${cut(status.message)}` : '';
    return new ProviderError(redact(`${resource}: ${reason} (${err.code})${detail}`, cluster.secrets), err.code);
  }
  const e = err as { name?: unknown; code?: unknown; type?: unknown };
  if (e?.name === 'AbortError' || e?.type === 'aborted') return new ProviderError(`${resource}: no answer from the API server within ${cluster.timeoutMs / 1000} s`);
  const code = typeof e?.code === 'string' ? e.code : 'an error';
  return new ProviderError(`${resource}: cannot reach the API server (${code})`);
}

/** The message with each secret replaced. */
function redact(message: string, secrets: string[]): string {
  return secrets.reduce((m, s) => m.split(s).join('[redacted]'), message);
}

/** At most MAX_MESSAGE characters of a server's message. */
function cut(message: string): string {
  return message.length > MAX_MESSAGE ? `${message.slice(0, MAX_MESSAGE)}…` : message;
}

/** A node: its InternalIPs private, its ExternalIPs public, Ready or NotReady by its Ready condition. */
function nodeMachine(node: V1Node): CloudMachine {
  const addresses = node.status?.addresses ?? [];
  const info = node.status?.nodeInfo;
  const ready = node.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True';
  return {
    ...identity(node.metadata, 'node'),
    name: node.metadata?.name ?? null,
    location: null,
    state: ready ? 'Ready' : 'NotReady',
    privateAddresses: canonicalAll(addresses.filter((a) => a.type === 'InternalIP').map((a) => a.address)),
    publicAddresses: canonicalAll(addresses.filter((a) => a.type === 'ExternalIP').map((a) => a.address)),
    os: info?.osImage ?? null,
    details: {
      kubeletVersion: info?.kubeletVersion ?? null,
      containerRuntime: info?.containerRuntimeVersion ?? null,
      kernelVersion: info?.kernelVersion ?? null,
      architecture: info?.architecture ?? null,
      providerID: node.spec?.providerID ?? null,
      unschedulable: node.spec?.unschedulable ?? false,
      podCIDRs: node.spec?.podCIDRs ?? [],
    },
  };
}

/** A service: its cluster IPs private, its load balancer's IPs public, its ports with how the internet reaches them. */
function serviceMachine(service: V1Service): CloudMachine {
  const type = service.spec?.type ?? 'ClusterIP';
  const lb = service.status?.loadBalancer?.ingress ?? [];
  return {
    ...identity(service.metadata, 'service'),
    state: type,
    // A headless service's clusterIP is the word `None`: canonicalAll drops it.
    privateAddresses: canonicalAll(service.spec?.clusterIPs ?? (service.spec?.clusterIP ? [service.spec.clusterIP] : [])),
    publicAddresses: canonicalAll(lb.map((i) => i.ip)),
    os: null,
    details: {
      serviceType: type,
      externalIPs: service.spec?.externalIPs ?? [],
      loadBalancerHostnames: lb.flatMap((i) => (i.hostname ? [i.hostname] : [])),
      externalName: service.spec?.externalName ?? null,
    },
    ports: servicePorts(service, type),
  };
}

/** A service's TCP and UDP ports (SCTP has no CloudPort protocol), exposed by a LoadBalancer or a NodePort. */
function servicePorts(service: V1Service, type: string): CloudPort[] {
  return (service.spec?.ports ?? []).flatMap((p): CloudPort[] => {
    const protocol = (p.protocol ?? 'TCP').toLowerCase();
    if (protocol !== 'tcp' && protocol !== 'udp') return [];
    const exposedBy = type === 'LoadBalancer' ? 'LoadBalancer' : type === 'NodePort' && p.nodePort ? `NodePort ${p.nodePort}` : undefined;
    return [{ protocol, port: p.port, name: p.name, exposed: exposedBy !== undefined, via: exposedBy }];
  });
}

/** A pod: its pod IPs, its phase, its node and the workload that owns it. */
function podMachine(pod: V1Pod): CloudMachine {
  const hostNetwork = pod.spec?.hostNetwork === true;
  const phase = pod.status?.phase ?? 'Unknown';
  // A hostNetwork pod's IPs are its node's: given as its own, the sync would merge every such pod
  // (kube-proxy, CNI agents, node exporters) into the node's host. It is kept, without addresses.
  // A finished pod's IPs are already handed to other pods: it keeps none either.
  const ownsAddresses = !hostNetwork && phase !== 'Succeeded' && phase !== 'Failed';
  const ips = pod.status?.podIPs?.map((p) => p.ip) ?? (pod.status?.podIP ? [pod.status.podIP] : []);
  return {
    ...identity(pod.metadata, 'pod'),
    state: phase,
    privateAddresses: ownsAddresses ? canonicalAll(ips) : [],
    publicAddresses: [],
    os: null,
    details: {
      nodeName: pod.spec?.nodeName ?? null,
      workload: workloadOf(pod.metadata),
      hostNetwork,
      serviceAccount: pod.spec?.serviceAccountName ?? null,
      images: (pod.spec?.containers ?? []).flatMap((c) => (c.image ? [c.image] : [])),
    },
  };
}

/**
 * The workload owning a pod, as `Kind/name`: its controller owner, a ReplicaSet named after its
 * Deployment (the `pod-template-hash` suffix cut) given as that Deployment. Null for a bare pod.
 */
function workloadOf(metadata: V1ObjectMeta | undefined): string | null {
  const owners = metadata?.ownerReferences ?? [];
  const owner = owners.find((o) => o.controller) ?? owners[0];
  if (!owner) return null;
  const hash = metadata?.labels?.['pod-template-hash'];
  if (owner.kind === 'ReplicaSet' && hash && owner.name.endsWith(`-${hash}`)) return `Deployment/${owner.name.slice(0, -hash.length - 1)}`;
  return `${owner.kind}/${owner.name}`;
}

/**
 * An ingress: its load balancer's IPs public, and the HTTP(S) ports an ingress controller serves
 * (80, and 443 with TLS: the Ingress API exposes nothing else).
 */
function ingressMachine(ingress: V1Ingress): CloudMachine {
  const lb = ingress.status?.loadBalancer?.ingress ?? [];
  const via = `ingress ${ingress.metadata?.namespace ?? ''}/${ingress.metadata?.name ?? ''}`;
  const tls = (ingress.spec?.tls ?? []).length > 0;
  return {
    ...identity(ingress.metadata, 'ingress'),
    state: lb.length > 0 ? 'Ready' : 'Pending',
    privateAddresses: [],
    publicAddresses: canonicalAll(lb.map((i) => i.ip)),
    os: null,
    details: {
      ingressClass: ingress.spec?.ingressClassName ?? null,
      hosts: [...new Set((ingress.spec?.rules ?? []).flatMap((r) => (r.host ? [r.host] : [])))],
      backends: [...new Set(ingressBackends(ingress).flatMap((b) => (b.service ? [`${b.service.name}:${b.service.port?.number ?? b.service.port?.name ?? ''}`] : [])))],
      loadBalancerHostnames: lb.flatMap((i) => (i.hostname ? [i.hostname] : [])),
      tls,
    },
    ports: [{ protocol: 'tcp', port: 80, exposed: true, via }, ...(tls ? [{ protocol: 'tcp' as const, port: 443, exposed: true, via }] : [])],
  };
}

/** Every backend of an ingress: its default backend and each rule's paths. */
function ingressBackends(ingress: V1Ingress): V1IngressBackend[] {
  const rules = (ingress.spec?.rules ?? []).flatMap((r) => (r.http?.paths ?? []).map((p) => p.backend));
  return ingress.spec?.defaultBackend ? [ingress.spec.defaultBackend, ...rules] : rules;
}

/**
 * Marks the service ports ingresses route to as exposed (a port already exposed keeps its first
 * reason). An ingress's backends are read back from its machine (`service:port`, the port a number
 * or a port's name: a service port name always holds a letter).
 */
function exposeThroughIngresses(services: CloudMachine[], ingresses: CloudMachine[]): void {
  const byName = new Map(services.map((s) => [s.name, s]));
  for (const ingress of ingresses) {
    const backends = ingress.details.backends;
    for (const backend of Array.isArray(backends) ? backends : []) {
      const [service, port] = [backend.slice(0, backend.lastIndexOf(':')), backend.slice(backend.lastIndexOf(':') + 1)];
      const target = byName.get(`${ingress.location}/${service}`)?.ports.find((p) => (/^\d+$/.test(port) ? p.port === Number(port) : p.name === port));
      if (target && !target.exposed) Object.assign(target, { exposed: true, via: `ingress ${ingress.name}` });
    }
  }
}

/** The fields every namespaced object maps the same way: uid, `namespace/name`, namespace, bounded labels. */
function identity(metadata: V1ObjectMeta | undefined, kind: CloudMachine['kind']): Pick<CloudMachine, 'providerId' | 'kind' | 'name' | 'location' | 'labels' | 'inbound' | 'ports'> {
  const namespace = metadata?.namespace ?? null;
  const name = metadata?.name ?? null;
  return {
    providerId: metadata?.uid ?? `${kind}/${namespace ?? ''}/${name ?? ''}`,
    kind,
    name: name === null ? null : namespace ? `${namespace}/${name}` : name,
    location: namespace,
    labels: boundedLabels(metadata?.labels),
    inbound: [],
    ports: [],
  };
}


/** The valid addresses among `addresses`, canonical (IPv6 lower-case, compressed), without repeats. */
function canonicalAll(addresses: (string | undefined)[]): string[] {
  const out = new Set<string>();
  for (const a of addresses) {
    const family = a ? isIP(a) : 0;
    if (family === 4) out.add(a!);
    else if (family === 6) out.add(new URL(`http://[${a}]/`).hostname.slice(1, -1));
  }
  return [...out];
}
