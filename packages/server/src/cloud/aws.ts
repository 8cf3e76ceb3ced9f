// The AWS collector: EC2 instances, VPCs, subnets and security groups of an account's regions,
// through @aws-sdk/client-ec2 (and STS AssumeRole when a role is configured), normalised into a
// CloudInventory. Throttling and 5xx are retried by the SDK's standard retry strategy; what still
// fails becomes a ProviderError naming the region and AWS's error code, never a credential.

import {
  DescribeRegionsCommand,
  EC2Client,
  type Instance,
  type InstanceNetworkInterface,
  type IpPermission,
  type NetworkInterface,
  type SecurityGroup,
  type Subnet,
  type Tag,
  type Vpc,
  paginateDescribeInstances,
  paginateDescribeNetworkInterfaces,
  paginateDescribeSecurityGroups,
  paginateDescribeSubnets,
  paginateDescribeVpcs,
} from '@aws-sdk/client-ec2';
import { AssumeRoleCommand, GetCallerIdentityCommand, STSClient } from '@aws-sdk/client-sts';
import { canonicalIp } from '@surveyor/contract';
import { ProviderError } from '../jobs/runner.js';
import { type CloudInventory, type CloudMachine, type CloudNetwork, type InboundRule, MAX_LABEL_VALUE, boundedLabels } from './inventory.js';

/** What an AWS account's sync is configured with (no secrets). */
export interface AwsSettings {
  /** Regions to list; empty or absent: every region DescribeRegions says is enabled. */
  regions?: string[];
  /** A role to assume (STS AssumeRole) before listing. */
  roleArn?: string;
  /** The external id the role's trust policy requires. */
  externalId?: string;
  /** An override URL for EC2 and STS (a private endpoint; the tests' fake). */
  endpoint?: string;
}

/** An access key (long-term, or temporary with its session token). */
export interface AwsCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
}

/** How one collection runs: cancellation, an endpoint override, the per-request timeout. */
export interface AwsCallOptions {
  signal?: AbortSignal;
  endpoint?: string;
  /** Milliseconds one HTTP request may take before it counts as failed (and is retried). */
  timeoutMs?: number;
  /** The most instances kept (default AWS_MAX_INSTANCES); past it the rest are left out with a warning. */
  maxInstances?: number;
}

/** What `testAws` saw: the account the credentials act in and the regions enabled there. */
export interface AwsTestResult {
  account: string | null;
  regions: string[];
}

/** The most instances one collection keeps by default: the memory of a collection is bounded by it. */
export const AWS_MAX_INSTANCES = 50_000;
const PAGE_SIZE = 1000;
const MAX_ATTEMPTS = 4;
const REGION_CONCURRENCY = 4;
const CONNECT_TIMEOUT_MS = 10_000;
const REQUEST_TIMEOUT_MS = 60_000;
const HOME_REGION = 'us-east-1';
const SESSION_NAME = 'surveyor-sync';
const MAX_MESSAGE = 500;

/** Credentials and connection settings shared by every client of one collection. */
interface Session {
  credentials: AwsCredentials;
  endpoint: string | undefined;
  timeoutMs: number;
  signal: AbortSignal | undefined;
  /** Every credential string in play, to keep out of error messages. */
  secrets: string[];
}

/** Everything the account's regions list now (the configured ones, else every enabled one). */
export async function collectAws(settings: AwsSettings, credentials: AwsCredentials, opts: AwsCallOptions = {}): Promise<CloudInventory> {
  const stop = new AbortController();
  const session = await openSession(settings, credentials, { ...opts, signal: opts.signal ? AbortSignal.any([opts.signal, stop.signal]) : stop.signal });
  const regions = settings.regions?.length ? settings.regions : await enabledRegions(session, HOME_REGION);
  const inventory: CloudInventory = { machines: [], networks: [], warnings: [] };
  const refusals: ProviderError[] = [];
  const budget: Budget = { instances: opts.maxInstances ?? AWS_MAX_INSTANCES, exceeded: false };
  try {
    await eachLimited(regions, REGION_CONCURRENCY, session.signal!, async (region) => {
      try {
        const found = await collectRegion(session, region, budget);
        inventory.machines.push(...found.machines);
        inventory.networks.push(...found.networks);
      } catch (err) {
        const failure = toProviderError(err, region, session);
        if (!(failure instanceof ProviderError) || !isRefusal(failure)) throw failure;
        refusals.push(failure);
        inventory.warnings.push(`${failure.message} (region skipped)`);
        (inventory.partial ??= {}).locations = [...(inventory.partial.locations ?? []), region];
      }
    });
  } catch (err) {
    stop.abort();
    throw err;
  }
  if (regions.length > 0 && refusals.length === regions.length) throw refusals[0]!;
  if (budget.exceeded) {
    inventory.warnings.push(`more than ${opts.maxInstances ?? AWS_MAX_INSTANCES} instances: the rest are left out`);
    inventory.partial = { ...inventory.partial, all: true };
  }
  return inventory;
}

/** A cheap proof the credentials work: the caller's account (STS) and the enabled regions (EC2 DescribeRegions). */
export async function testAws(settings: AwsSettings, credentials: AwsCredentials, opts: AwsCallOptions = {}): Promise<AwsTestResult> {
  const session = await openSession(settings, credentials, opts);
  const region = settings.regions?.[0] ?? HOME_REGION;
  const sts = new STSClient(clientConfig(session, region));
  try {
    const identity = await sts.send(new GetCallerIdentityCommand({}), { abortSignal: session.signal });
    return { account: identity.Account ?? null, regions: await enabledRegions(session, region) };
  } catch (err) {
    throw toProviderError(err, `sts ${region}`, session);
  } finally {
    sts.destroy();
  }
}

/** The session's credentials: the given ones, or the role's temporary ones when a role is configured. */
async function openSession(settings: AwsSettings, credentials: AwsCredentials, opts: AwsCallOptions): Promise<Session> {
  const session: Session = {
    credentials,
    endpoint: opts.endpoint ?? settings.endpoint,
    timeoutMs: opts.timeoutMs ?? REQUEST_TIMEOUT_MS,
    signal: opts.signal,
    secrets: secretsOf(credentials),
  };
  if (!settings.roleArn) return session;
  const region = settings.regions?.[0] ?? HOME_REGION;
  const sts = new STSClient(clientConfig(session, region));
  try {
    const input = { RoleArn: settings.roleArn, RoleSessionName: SESSION_NAME, ExternalId: settings.externalId || undefined };
    const { Credentials: c } = await sts.send(new AssumeRoleCommand(input), { abortSignal: session.signal });
    if (!c?.AccessKeyId || !c.SecretAccessKey) throw new ProviderError(`sts ${region}: AssumeRole answered without credentials`);
    const temporary = { accessKeyId: c.AccessKeyId, secretAccessKey: c.SecretAccessKey, ...(c.SessionToken ? { sessionToken: c.SessionToken } : {}) };
    return { ...session, credentials: temporary, secrets: [...session.secrets, ...secretsOf(temporary)] };
  } catch (err) {
    throw toProviderError(err, `sts ${region}: AssumeRole`, session);
  } finally {
    sts.destroy();
  }
}

/**
 * An SDK client's configuration: the session's credentials and endpoint, standard retries, timeouts.
 * The credentials are a copy: the SDK marks the object it is handed (a `$source` key), which must not
 * reach the caller's (an account's credentials are checked by a strict schema when next read).
 */
function clientConfig(session: Session, region: string) {
  return {
    region,
    credentials: { ...session.credentials },
    ...(session.endpoint ? { endpoint: session.endpoint } : {}),
    maxAttempts: MAX_ATTEMPTS,
    retryMode: 'standard',
    requestHandler: { connectionTimeout: CONNECT_TIMEOUT_MS, requestTimeout: session.timeoutMs, throwOnRequestTimeout: true },
  };
}

/** The regions DescribeRegions lists (without AllRegions: the enabled ones), asked in `region`. */
async function enabledRegions(session: Session, region: string): Promise<string[]> {
  const ec2 = new EC2Client(clientConfig(session, region));
  try {
    const out = await ec2.send(new DescribeRegionsCommand({}), { abortSignal: session.signal });
    return (out.Regions ?? []).flatMap((r) => (r.RegionName ? [r.RegionName] : []));
  } catch (err) {
    throw toProviderError(err, region, session);
  } finally {
    ec2.destroy();
  }
}

/** Runs `fn` over `items`, at most `limit` at a time, starting no more once `signal` is aborted. */
async function eachLimited<T>(items: T[], limit: number, signal: AbortSignal, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length && !signal.aborted) await fn(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

/** The instances a collection may still keep, shared by its regions. */
interface Budget {
  instances: number;
  exceeded: boolean;
}

interface RegionInventory {
  machines: CloudMachine[];
  networks: CloudNetwork[];
}

/** One region: its security groups' inbound rules first (instances refer to them), then networks and instances. */
async function collectRegion(session: Session, region: string, budget: Budget): Promise<RegionInventory> {
  const ec2 = new EC2Client(clientConfig(session, region));
  const found: RegionInventory = { machines: [], networks: [] };
  const call = { abortSignal: session.signal };
  try {
    const rules = new Map<string, InboundRule[]>();
    for await (const page of paginateDescribeSecurityGroups({ client: ec2, pageSize: PAGE_SIZE }, {}, call)) {
      for (const group of page.SecurityGroups ?? []) if (group.GroupId) rules.set(group.GroupId, inboundRules(group));
    }
    for await (const page of paginateDescribeVpcs({ client: ec2, pageSize: PAGE_SIZE }, {}, call)) {
      for (const vpc of page.Vpcs ?? []) if (vpc.VpcId) found.networks.push(vpcNetwork(vpc, region));
    }
    for await (const page of paginateDescribeSubnets({ client: ec2, pageSize: PAGE_SIZE }, {}, call)) {
      for (const subnet of page.Subnets ?? []) if (subnet.SubnetId) found.networks.push(subnetNetwork(subnet, region));
    }
    await collectInstances(ec2, region, rules, budget, found.machines, call);
    // Interfaces of no instance: load balancers, NAT gateways, Lambdas, databases (an instance's own are read with it).
    for await (const page of paginateDescribeNetworkInterfaces({ client: ec2, pageSize: PAGE_SIZE }, {}, call)) {
      for (const eni of page.NetworkInterfaces ?? []) if (eni.NetworkInterfaceId && !eni.Attachment?.InstanceId) found.machines.push(interfaceMachine(eni, region, rules));
    }
    return found;
  } finally {
    ec2.destroy();
  }
}

/** The region's instances, page by page, until the collection's budget of instances is spent. */
async function collectInstances(
  ec2: EC2Client,
  region: string,
  rules: Map<string, InboundRule[]>,
  budget: Budget,
  machines: CloudMachine[],
  call: { abortSignal: AbortSignal | undefined },
): Promise<void> {
  for await (const page of paginateDescribeInstances({ client: ec2, pageSize: PAGE_SIZE }, {}, call)) {
    for (const instance of (page.Reservations ?? []).flatMap((r) => r.Instances ?? [])) {
      if (!instance.InstanceId) continue;
      if (budget.instances <= 0) {
        budget.exceeded = true;
        return; // no further pages are asked for
      }
      budget.instances--;
      machines.push(instanceMachine(instance, region, rules));
    }
  }
}

/** An EC2 instance as a CloudMachine. IPv6 addresses count as public: AWS's are globally routable. */
function instanceMachine(i: Instance, region: string, rules: Map<string, InboundRule[]>): CloudMachine {
  const privateAddresses = new Set<string>();
  const publicAddresses = new Set<string>();
  addIp(privateAddresses, i.PrivateIpAddress);
  addIp(publicAddresses, i.PublicIpAddress);
  addIp(publicAddresses, i.Ipv6Address);
  for (const eni of i.NetworkInterfaces ?? []) addInterfaceAddresses(eni, privateAddresses, publicAddresses);
  const groups = (i.SecurityGroups ?? []).flatMap((g) => (g.GroupId ? [g.GroupId] : []));
  return {
    providerId: i.InstanceId!,
    kind: 'instance',
    name: nameTag(i.Tags),
    state: i.State?.Name ?? 'unknown',
    location: region,
    privateAddresses: [...privateAddresses],
    publicAddresses: [...publicAddresses],
    os: i.PlatformDetails ?? i.Platform ?? null,
    labels: labels(i.Tags),
    details: {
      instanceType: i.InstanceType ?? null,
      vpcId: i.VpcId ?? null,
      subnetId: i.SubnetId ?? null,
      securityGroups: groups,
      imageId: i.ImageId ?? null,
      launchTime: i.LaunchTime?.toISOString() ?? null,
      availabilityZone: i.Placement?.AvailabilityZone ?? null,
    },
    inbound: groups.flatMap((g) => rules.get(g) ?? []),
    ports: [],
  };
}

/** A network interface of no instance (a load balancer's, a NAT gateway's, …) as a CloudMachine: its addresses, its groups' rules. */
function interfaceMachine(eni: NetworkInterface, region: string, rules: Map<string, InboundRule[]>): CloudMachine {
  const privateAddresses = new Set<string>();
  const publicAddresses = new Set<string>();
  addInterfaceAddresses(eni, privateAddresses, publicAddresses);
  const groups = (eni.Groups ?? []).flatMap((g) => (g.GroupId ? [g.GroupId] : []));
  return {
    providerId: eni.NetworkInterfaceId!,
    kind: 'interface',
    name: nameTag(eni.TagSet) ?? (eni.Description ? eni.Description.slice(0, MAX_LABEL_VALUE) : null),
    state: eni.Status ?? 'unknown',
    location: region,
    privateAddresses: [...privateAddresses],
    publicAddresses: [...publicAddresses],
    os: null,
    labels: labels(eni.TagSet),
    details: {
      interfaceType: eni.InterfaceType ?? null,
      description: eni.Description ?? null,
      requesterId: eni.RequesterId ?? null,
      requesterManaged: eni.RequesterManaged ?? null,
      vpcId: eni.VpcId ?? null,
      subnetId: eni.SubnetId ?? null,
      securityGroups: groups,
      availabilityZone: eni.AvailabilityZone ?? null,
    },
    inbound: groups.flatMap((g) => rules.get(g) ?? []),
    ports: [],
  };
}

const PROTOCOLS: Record<string, InboundRule['protocol']> = { '-1': 'all', tcp: 'tcp', '6': 'tcp', udp: 'udp', '17': 'udp', icmp: 'icmp', '1': 'icmp', icmpv6: 'icmp', '58': 'icmp' };

/**
 * A security group's inbound rules that admit address ranges. Rules naming only other groups or
 * prefix lists are left out, as are protocols other than TCP, UDP, ICMP and "all" (ESP, GRE, …).
 */
function inboundRules(group: SecurityGroup): InboundRule[] {
  return (group.IpPermissions ?? []).flatMap((p) => {
    const protocol = PROTOCOLS[p.IpProtocol ?? ''];
    const cidrs = [...(p.IpRanges ?? []).map((r) => r.CidrIp), ...(p.Ipv6Ranges ?? []).map((r) => r.CidrIpv6)].flatMap((c) => {
      const canonical = canonicalCidr(c);
      return canonical ? [canonical] : [];
    });
    if (!protocol || cidrs.length === 0) return [];
    return [{ groupId: group.GroupId!, protocol, ...ports(p, protocol), cidrs }];
  });
}

/** A rule's port range; null with `all` and where AWS says -1 (every ICMP type or code). */
function ports(p: IpPermission, protocol: InboundRule['protocol']): Pick<InboundRule, 'fromPort' | 'toPort'> {
  const port = (n: number | undefined) => (protocol === 'all' || n === undefined || n < 0 ? null : n);
  return { fromPort: port(p.FromPort), toPort: port(p.ToPort) };
}

/** A VPC with its associated IPv4 and IPv6 CIDR blocks. */
function vpcNetwork(vpc: Vpc, region: string): CloudNetwork {
  const associated = (state: string | undefined) => state === undefined || state === 'associated';
  const v4 = (vpc.CidrBlockAssociationSet ?? []).filter((a) => associated(a.CidrBlockState?.State)).map((a) => a.CidrBlock);
  const v6 = (vpc.Ipv6CidrBlockAssociationSet ?? []).filter((a) => associated(a.Ipv6CidrBlockState?.State)).map((a) => a.Ipv6CidrBlock);
  return { providerId: vpc.VpcId!, kind: 'vpc', name: nameTag(vpc.Tags), cidrs: cidrList([vpc.CidrBlock, ...v4, ...v6]), location: region };
}

/** A subnet with its IPv4 and associated IPv6 CIDR blocks, under its VPC. */
function subnetNetwork(subnet: Subnet, region: string): CloudNetwork {
  const v6 = (subnet.Ipv6CidrBlockAssociationSet ?? []).filter((a) => (a.Ipv6CidrBlockState?.State ?? 'associated') === 'associated').map((a) => a.Ipv6CidrBlock);
  return {
    providerId: subnet.SubnetId!,
    kind: 'subnet',
    name: nameTag(subnet.Tags),
    cidrs: cidrList([subnet.CidrBlock, ...v6]),
    location: region,
    parentId: subnet.VpcId ?? null,
  };
}

/** An interface's addresses (an instance's, or one of its own): private ones, and the public IPv4 associated and the IPv6 (AWS's are globally routable). */
function addInterfaceAddresses(
  eni: Pick<NetworkInterface, 'PrivateIpAddress' | 'Association' | 'PrivateIpAddresses' | 'Ipv6Addresses'> | Pick<InstanceNetworkInterface, 'PrivateIpAddress' | 'Association' | 'PrivateIpAddresses' | 'Ipv6Addresses'>,
  privateAddresses: Set<string>,
  publicAddresses: Set<string>,
): void {
  addIp(privateAddresses, eni.PrivateIpAddress);
  addIp(publicAddresses, eni.Association?.PublicIp);
  for (const p of eni.PrivateIpAddresses ?? []) {
    addIp(privateAddresses, p.PrivateIpAddress);
    addIp(publicAddresses, p.Association?.PublicIp);
  }
  for (const a of eni.Ipv6Addresses ?? []) addIp(publicAddresses, a.Ipv6Address);
}

function addIp(into: Set<string>, ip: string | undefined): void {
  const canonical = ip ? canonicalIp(ip) : null;
  if (canonical) into.add(canonical);
}

/** `address/prefix` with the address in canonical form; null when malformed. */
function canonicalCidr(cidr: string | undefined): string | null {
  const [address, prefix, ...rest] = (cidr ?? '').split('/');
  const canonical = address ? canonicalIp(address) : null;
  return canonical && prefix && /^\d{1,3}$/.test(prefix) && rest.length === 0 ? `${canonical}/${Number(prefix)}` : null;
}

function cidrList(cidrs: (string | undefined)[]): string[] {
  return [...new Set(cidrs.flatMap((c) => canonicalCidr(c) ?? []))];
}

function nameTag(tags: Tag[] | undefined): string | null {
  const value = tags?.find((t) => t.Key === 'Name')?.Value;
  return value ? value.slice(0, MAX_LABEL_VALUE) : null;
}

/** Tags as labels, bounded as every provider's are. */
function labels(tags: Tag[] | undefined): Record<string, string> {
  return boundedLabels(Object.fromEntries((tags ?? []).flatMap((t) => (t.Key ? [[t.Key, t.Value ?? '']] : []))));
}

// ---- errors ---------------------------------------------------------------------------------

function secretsOf(c: AwsCredentials): string[] {
  return [c.accessKeyId, c.secretAccessKey, c.sessionToken].filter((s): s is string => !!s);
}

/** A refusal (4xx other than 408 and 429): the region is skipped rather than the sync failed. */
function isRefusal(err: ProviderError): boolean {
  return err.status !== undefined && err.status >= 400 && err.status < 500 && err.status !== 408 && err.status !== 429;
}

/**
 * The SDK's final error as a ProviderError: AWS's code and HTTP status when AWS answered (after the
 * SDK's retries), no status when it did not (a timeout, a connection failure: transient). An
 * abort of ours is passed through as it is. Credentials are cut out of the message.
 */
function toProviderError(err: unknown, where: string, session: Session): unknown {
  if (err instanceof ProviderError || session.signal?.aborted) return err;
  const e = err as { name?: unknown; message?: unknown; $fault?: unknown; $metadata?: { httpStatusCode?: number } };
  const name = typeof e?.name === 'string' ? e.name : 'Error';
  const message = typeof e?.message === 'string' ? e.message : String(err);
  const status = e?.$fault ? e.$metadata?.httpStatusCode : undefined;
  const text = status === undefined ? `${where}: ${name}: ${message}` : `${where}: ${name} (${status}): ${message}`;
  return new ProviderError(scrub(text, session.secrets).slice(0, MAX_MESSAGE), status);
}

function scrub(text: string, secrets: string[]): string {
  return secrets.reduce((t, s) => t.split(s).join('[redacted]'), text);
}
