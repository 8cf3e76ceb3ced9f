// A local fake of AWS as the SDK speaks to it: the EC2 Query API (form-encoded POST, XML answers in
// the 2016-11-15 namespace, nextToken paging) and STS AssumeRole / GetCallerIdentity (Query API,
// 2011-06-15). Every request's SigV4 signature is verified against the keys the state knows, the
// region is read from the signature's credential scope, and failures answer with EC2's and STS's
// real error bodies and status codes. Tests inject faults (throttling, 500s, refusals, hangs).

import { createHash, createHmac, randomBytes, randomUUID } from 'node:crypto';
import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

const EC2_NS = 'http://ec2.amazonaws.com/doc/2016-11-15/';
const STS_NS = 'https://sts.amazonaws.com/doc/2011-06-15/';

export interface FakeInterface {
  id: string;
  privateIps: string[];
  /** The Elastic / auto-assigned public IPv4 associated with the primary private address. */
  publicIp?: string;
  ipv6: string[];
}

export interface FakeInstance {
  id: string;
  region: string;
  state: string;
  type: string;
  imageId: string;
  vpcId: string;
  subnetId: string;
  availabilityZone: string;
  platformDetails: string;
  /** `windows` on Windows instances, absent otherwise (as EC2 answers). */
  platform?: string;
  launchTime: string;
  groups: string[];
  tags: Record<string, string>;
  interfaces: FakeInterface[];
}

/** A network interface of no instance (a load balancer's, a NAT gateway's): DescribeNetworkInterfaces lists it. */
export interface FakeNetworkInterface {
  id: string;
  region: string;
  vpcId: string;
  subnetId: string;
  availabilityZone: string;
  description: string;
  interfaceType: string;
  requesterId?: string;
  status: string;
  privateIps: string[];
  publicIp?: string;
  groups: string[];
  tags: Record<string, string>;
}

export interface FakeVpc {
  id: string;
  region: string;
  cidrs: string[];
  ipv6Cidrs: string[];
  tags: Record<string, string>;
}

export interface FakeSubnet {
  id: string;
  region: string;
  vpcId: string;
  availabilityZone: string;
  cidr: string;
  ipv6Cidrs: string[];
  tags: Record<string, string>;
}

export interface FakePermission {
  /** `tcp`, `udp`, `icmp` or `-1` (every protocol). */
  protocol: string;
  fromPort?: number;
  toPort?: number;
  cidrs: string[];
  ipv6Cidrs: string[];
  /** Other groups the rule admits (group-to-group rules). */
  groups: string[];
}

export interface FakeSecurityGroup {
  id: string;
  region: string;
  vpcId: string;
  name: string;
  inbound: FakePermission[];
}

/** A failure the fake answers EC2 calls with, `times` times (default: every call), for one region or all. */
export interface FakeFault {
  status: number;
  code: string;
  message: string;
  region?: string;
  times?: number;
  /** Never answer at all (a hung connection), instead of an error. */
  hang?: boolean;
  /** Append what the request was signed with (its access key id and session token) to the message, as a careless proxy might. */
  echoCredentials?: boolean;
}

export interface FakeRole {
  arn: string;
  externalId?: string;
  /** EC2 refuses the long-term keys: only the role's temporary credentials are allowed in. */
  required?: boolean;
}

export interface FakeAwsState {
  account: string;
  /** Long-term access key id → secret access key. */
  keys: Record<string, string>;
  role?: FakeRole;
  regions: { name: string; enabled: boolean }[];
  instances: FakeInstance[];
  /** Interfaces of no instance (each instance's own are listed with it, and by DescribeNetworkInterfaces too, attached). */
  networkInterfaces: FakeNetworkInterface[];
  vpcs: FakeVpc[];
  subnets: FakeSubnet[];
  securityGroups: FakeSecurityGroup[];
  /** The most items one page holds, even when MaxResults asks for more (EC2 may answer fewer). */
  pageLimit: number;
  faults: FakeFault[];
}

/** One request the fake received, after its signature was checked. */
export interface FakeRequest {
  service: string;
  region: string;
  action: string;
  accessKeyId: string;
  params: Record<string, string>;
}

export interface FakeAws {
  url: string;
  state: FakeAwsState;
  requests: FakeRequest[];
  /** The temporary credentials AssumeRole handed out. */
  issued: { accessKeyId: string; secretAccessKey: string; sessionToken: string }[];
  close(): Promise<void>;
}

/** EC2's throttling answer. */
export const THROTTLED = { status: 503, code: 'RequestLimitExceeded', message: 'Request limit exceeded.' } as const;
/** EC2's internal failure. */
export const INTERNAL = { status: 500, code: 'InternalError', message: 'An internal error has occurred' } as const;
/** EC2's refusal of an action the caller's policy does not allow. */
export const UNAUTHORIZED = { status: 403, code: 'UnauthorizedOperation', message: 'You are not authorized to perform this operation.' } as const;

class Refusal extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

interface Session {
  secret: string;
  token: string | undefined;
  temporary: boolean;
}

interface Context {
  state: FakeAwsState;
  sessions: Map<string, Session>;
  requests: FakeRequest[];
  issued: FakeAws['issued'];
}

/** Starts the fake on 127.0.0.1 and an ephemeral port. */
export async function startFakeAws(state: FakeAwsState): Promise<FakeAws> {
  const ctx: Context = { state, sessions: new Map(), requests: [], issued: [] };
  for (const [id, secret] of Object.entries(state.keys)) ctx.sessions.set(id, { secret, token: undefined, temporary: false });
  const server = createServer((req, res) => void handle(ctx, req, res));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, state, requests: ctx.requests, issued: ctx.issued, close: () => closeServer(server) };
}

function closeServer(server: Server): Promise<void> {
  server.closeAllConnections();
  return new Promise((resolve) => server.close(() => resolve()));
}

async function handle(ctx: Context, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const body = await readBody(req);
  const params = Object.fromEntries(new URLSearchParams(body));
  const scope = /Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request/.exec(req.headers.authorization ?? '');
  const service = scope?.[4] ?? (params.Version === '2011-06-15' ? 'sts' : 'ec2');
  try {
    const [, accessKeyId = '', , region = ''] = scope ?? [];
    const session = verifySignature(ctx, req, body, service);
    const request = { service, region, action: params.Action ?? '', accessKeyId, params };
    ctx.requests.push(request);
    const xml = service === 'sts' ? sts(ctx, request) : ec2(ctx, request, session);
    if (xml === null) return; // hung
    res.writeHead(200, { 'content-type': 'text/xml;charset=UTF-8' }).end(xml);
  } catch (err) {
    const refusal = err instanceof Refusal ? err : new Refusal(500, 'InternalError', `fake: ${String(err)}`);
    res.writeHead(refusal.status, { 'content-type': 'text/xml;charset=UTF-8' }).end(service === 'sts' ? stsError(refusal) : ec2Error(refusal));
  }
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

// ---- SigV4 ----------------------------------------------------------------------------------

const hmac = (key: Buffer | string, data: string): Buffer => createHmac('sha256', key).update(data).digest();
const sha256 = (data: string): string => createHash('sha256').update(data).digest('hex');

/** Checks the request's SigV4 signature (header form) against the session of its access key id. */
function verifySignature(ctx: Context, req: IncomingMessage, body: string, service: string): Session {
  const auth = /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, ?SignedHeaders=([^,]+), ?Signature=([0-9a-f]{64})$/.exec(req.headers.authorization ?? '');
  const unknown = service === 'sts' ? new Refusal(403, 'InvalidClientTokenId', 'The security token included in the request is invalid.') : new Refusal(401, 'AuthFailure', 'AWS was not able to validate the provided access credentials');
  if (!auth) throw service === 'sts' ? new Refusal(403, 'MissingAuthenticationToken', 'Request is missing Authentication Token') : unknown;
  const [, keyId, date, region, svc, signedHeaders, signature] = auth as unknown as string[];
  const session = ctx.sessions.get(keyId!);
  if (!session || session.token !== req.headers['x-amz-security-token']) throw unknown;
  const headers = signedHeaders!.split(';');
  const canonical = [
    req.method,
    new URL(req.url ?? '/', 'http://x').pathname,
    '',
    ...headers.map((h) => `${h}:${String(req.headers[h] ?? '').trim().replace(/\s+/g, ' ')}`),
    '',
    signedHeaders,
    sha256(body),
  ].join('\n');
  const scope = `${date}/${region}/${svc}/aws4_request`;
  const toSign = ['AWS4-HMAC-SHA256', String(req.headers['x-amz-date']), scope, sha256(canonical)].join('\n');
  const key = [date!, region!, svc!, 'aws4_request'].reduce<Buffer | string>((k, part) => hmac(k, part), `AWS4${session.secret}`);
  if (hmac(key, toSign).toString('hex') !== signature) {
    throw new Refusal(403, 'SignatureDoesNotMatch', 'The request signature we calculated does not match the signature you provided.');
  }
  return session;
}

// ---- STS ------------------------------------------------------------------------------------

function sts(ctx: Context, request: FakeRequest): string {
  const { state } = ctx;
  const p = request.params;
  const user = `arn:aws:iam::${state.account}:user/surveyor`;
  if (p.Action === 'GetCallerIdentity') {
    return `<GetCallerIdentityResponse xmlns="${STS_NS}"><GetCallerIdentityResult><Arn>${user}</Arn><UserId>AIDAFAKE</UserId><Account>${state.account}</Account></GetCallerIdentityResult>${stsMetadata()}</GetCallerIdentityResponse>`;
  }
  if (p.Action !== 'AssumeRole') throw new Refusal(400, 'InvalidAction', `Could not find operation ${p.Action} for version 2011-06-15`);
  const role = state.role;
  if (!role || role.arn !== p.RoleArn || (role.externalId !== undefined && role.externalId !== p.ExternalId)) {
    throw new Refusal(403, 'AccessDenied', `User: ${user} is not authorized to perform: sts:AssumeRole on resource: ${p.RoleArn}`);
  }
  const id = `ASIA${randomBytes(8).toString('hex').toUpperCase()}`;
  const session = { secret: randomBytes(20).toString('base64'), token: randomBytes(48).toString('base64'), temporary: true };
  ctx.sessions.set(id, session);
  ctx.issued.push({ accessKeyId: id, secretAccessKey: session.secret, sessionToken: session.token });
  const roleName = role.arn.split('/').pop();
  const expiration = new Date(Date.now() + 3600_000).toISOString();
  return (
    `<AssumeRoleResponse xmlns="${STS_NS}"><AssumeRoleResult>` +
    `<AssumedRoleUser><AssumedRoleId>AROAFAKE:${esc(p.RoleSessionName ?? '')}</AssumedRoleId><Arn>arn:aws:sts::${state.account}:assumed-role/${roleName}/${esc(p.RoleSessionName ?? '')}</Arn></AssumedRoleUser>` +
    `<Credentials><AccessKeyId>${id}</AccessKeyId><SecretAccessKey>${esc(session.secret)}</SecretAccessKey><SessionToken>${esc(session.token)}</SessionToken><Expiration>${expiration}</Expiration></Credentials>` +
    `</AssumeRoleResult>${stsMetadata()}</AssumeRoleResponse>`
  );
}

const stsMetadata = (): string => `<ResponseMetadata><RequestId>${randomUUID()}</RequestId></ResponseMetadata>`;

function stsError(err: Refusal): string {
  return `<ErrorResponse xmlns="${STS_NS}"><Error><Type>Sender</Type><Code>${err.code}</Code><Message>${esc(err.message)}</Message></Error><RequestId>${randomUUID()}</RequestId></ErrorResponse>`;
}

// ---- EC2 ------------------------------------------------------------------------------------

function ec2(ctx: Context, request: FakeRequest, session: Session): string | null {
  const { state } = ctx;
  const fault = takeFault(state, request.region);
  if (fault?.hang) return null; // the client gives up; the connection is dropped at close()
  if (fault) throw new Refusal(fault.status, fault.code, fault.echoCredentials ? `${fault.message} (${request.accessKeyId}, ${session.token ?? 'no token'})` : fault.message);
  if (state.role?.required && !session.temporary) throw new Refusal(UNAUTHORIZED.status, UNAUTHORIZED.code, UNAUTHORIZED.message);
  if (!state.regions.some((r) => r.name === request.region && r.enabled)) {
    throw new Refusal(401, 'AuthFailure', 'AWS was not able to validate the provided access credentials');
  }
  const { action, params, region } = request;
  if (action === 'DescribeRegions') return describeRegions(state, params);
  const inRegion = <T extends { region: string }>(items: T[]) => items.filter((i) => i.region === region);
  switch (action) {
    case 'DescribeInstances':
      return page('DescribeInstancesResponse', 'reservationSet', inRegion(state.instances), params, state.pageLimit, (i) => reservationXml(state, i));
    case 'DescribeVpcs':
      return page('DescribeVpcsResponse', 'vpcSet', inRegion(state.vpcs), params, state.pageLimit, vpcXml);
    case 'DescribeSubnets':
      return page('DescribeSubnetsResponse', 'subnetSet', inRegion(state.subnets), params, state.pageLimit, subnetXml);
    case 'DescribeNetworkInterfaces':
      return page('DescribeNetworkInterfacesResponse', 'networkInterfaceSet', [...inRegion(state.instances).flatMap((i) => i.interfaces.map((n) => ({ i, n }))), ...inRegion(state.networkInterfaces)], params, state.pageLimit, (x) =>
        'n' in x ? interfaceXml(state, x.i, x.n, true) : detachedInterfaceXml(state, x),
      );
    case 'DescribeSecurityGroups':
      return page('DescribeSecurityGroupsResponse', 'securityGroupInfo', inRegion(state.securityGroups), params, state.pageLimit, (g) => groupXml(state, g));
    default:
      throw new Refusal(400, 'InvalidAction', `The action ${action} is not valid for this web service.`);
  }
}

function takeFault(state: FakeAwsState, region: string): FakeFault | undefined {
  const fault = state.faults.find((f) => (f.region === undefined || f.region === region) && (f.times === undefined || f.times > 0));
  if (fault?.times !== undefined) fault.times--;
  return fault;
}

function describeRegions(state: FakeAwsState, params: Record<string, string>): string {
  const all = params.AllRegions === 'true';
  const regions = state.regions.filter((r) => all || r.enabled);
  const items = regions.map((r) => item(el('regionName', r.name) + el('regionEndpoint', `ec2.${r.name}.amazonaws.com`) + el('optInStatus', r.enabled ? 'opt-in-not-required' : 'not-opted-in')));
  return envelope('DescribeRegionsResponse', el('regionInfo', items.join('')));
}

/** One page of a Describe* answer: MaxResults (5 to 1000, as EC2 checks) and NextToken (an opaque offset). */
function page<T>(response: string, set: string, items: T[], params: Record<string, string>, limit: number, render: (item: T) => string): string {
  const max = params.MaxResults === undefined ? 1000 : Number(params.MaxResults);
  if (!Number.isInteger(max) || max < 5 || max > 1000) {
    throw new Refusal(400, 'InvalidParameterValue', `Value ( ${params.MaxResults} ) for parameter maxResults is invalid. Expecting a value between 5 and 1000.`);
  }
  const start = params.NextToken ? Number(Buffer.from(params.NextToken, 'base64url').toString()) : 0;
  if (!Number.isInteger(start) || start < 0) throw new Refusal(400, 'InvalidNextToken', 'The token provided is invalid.');
  const end = Math.min(items.length, start + Math.min(max, limit));
  const next = end < items.length ? el('nextToken', Buffer.from(String(end)).toString('base64url')) : '';
  return envelope(response, el(set, items.slice(start, end).map(render).join('')) + next);
}

function reservationXml(state: FakeAwsState, i: FakeInstance): string {
  const primary = i.interfaces[0];
  const instance =
    el('instanceId', i.id) +
    el('imageId', i.imageId) +
    el('instanceState', el('code', i.state === 'running' ? '16' : '80') + el('name', i.state)) +
    el('privateDnsName', '') +
    el('dnsName', '') +
    el('amiLaunchIndex', '0') +
    el('instanceType', i.type) +
    el('launchTime', i.launchTime) +
    el('placement', el('availabilityZone', i.availabilityZone) + el('tenancy', 'default')) +
    (i.platform ? el('platform', i.platform) : '') +
    el('subnetId', i.subnetId) +
    el('vpcId', i.vpcId) +
    (primary ? el('privateIpAddress', primary.privateIps[0] ?? '') : '') +
    (primary?.publicIp ? el('ipAddress', primary.publicIp) : '') +
    el('groupSet', i.groups.map((g) => item(el('groupId', g) + el('groupName', g))).join('')) +
    el('networkInterfaceSet', i.interfaces.map((n) => interfaceXml(state, i, n)).join('')) +
    tagSet(i.tags) +
    el('platformDetails', i.platformDetails);
  return item(el('reservationId', `r-${i.id.slice(2)}`) + el('ownerId', state.account) + el('groupSet', '') + el('instancesSet', item(instance)));
}

const association = (ip: string) => el('association', el('publicIp', ip) + el('publicDnsName', '') + el('ipOwnerId', 'amazon'));
const privateSet = (ips: string[], publicIp: string | undefined) =>
  el('privateIpAddressesSet', ips.map((ip, k) => item(el('privateIpAddress', ip) + el('primary', String(k === 0)) + (k === 0 && publicIp ? association(publicIp) : ''))).join(''));

/** An instance's interface: inside the instance (DescribeInstances), or on its own with its attachment (`listed`: DescribeNetworkInterfaces). */
function interfaceXml(state: FakeAwsState, i: FakeInstance, n: FakeInterface, listed = false): string {
  return item(
    el('networkInterfaceId', n.id) +
      el('subnetId', i.subnetId) +
      el('vpcId', i.vpcId) +
      (listed ? el('availabilityZone', i.availabilityZone) + el('interfaceType', 'interface') + el('requesterManaged', 'false') : '') +
      el('ownerId', state.account) +
      el('status', 'in-use') +
      el('privateIpAddress', n.privateIps[0] ?? '') +
      (n.publicIp ? association(n.publicIp) : '') +
      (listed ? el('attachment', el('attachmentId', `eni-attach-${n.id.slice(4)}`) + el('instanceId', i.id) + el('deviceIndex', '0') + el('status', 'attached')) : '') +
      privateSet(n.privateIps, n.publicIp) +
      el('ipv6AddressesSet', n.ipv6.map((a) => item(el('ipv6Address', a))).join('')),
  );
}

/** An interface of no instance, as DescribeNetworkInterfaces lists it (no attachment, or one to an AWS service). */
function detachedInterfaceXml(state: FakeAwsState, n: FakeNetworkInterface): string {
  return item(
    el('networkInterfaceId', n.id) +
      el('subnetId', n.subnetId) +
      el('vpcId', n.vpcId) +
      el('availabilityZone', n.availabilityZone) +
      el('description', n.description) +
      el('ownerId', state.account) +
      (n.requesterId ? el('requesterId', n.requesterId) : '') +
      el('requesterManaged', String(!!n.requesterId)) +
      el('status', n.status) +
      el('interfaceType', n.interfaceType) +
      el('privateIpAddress', n.privateIps[0] ?? '') +
      (n.publicIp ? association(n.publicIp) : '') +
      el('groupSet', n.groups.map((g) => item(el('groupId', g) + el('groupName', g))).join('')) +
      tagSet(n.tags) +
      privateSet(n.privateIps, n.publicIp) +
      el('ipv6AddressesSet', ''),
  );
}

function vpcXml(v: FakeVpc): string {
  return item(
    el('vpcId', v.id) +
      el('state', 'available') +
      el('cidrBlock', v.cidrs[0] ?? '') +
      el('cidrBlockAssociationSet', v.cidrs.map((c, k) => item(el('associationId', `vpc-cidr-assoc-${k}`) + el('cidrBlock', c) + el('cidrBlockState', el('state', 'associated')))).join('')) +
      el('ipv6CidrBlockAssociationSet', v.ipv6Cidrs.map((c, k) => item(el('associationId', `vpc-cidr-assoc-6${k}`) + el('ipv6CidrBlock', c) + el('ipv6CidrBlockState', el('state', 'associated')))).join('')) +
      el('dhcpOptionsId', 'dopt-1') +
      tagSet(v.tags) +
      el('instanceTenancy', 'default') +
      el('isDefault', 'false'),
  );
}

function subnetXml(s: FakeSubnet): string {
  return item(
    el('subnetId', s.id) +
      el('state', 'available') +
      el('vpcId', s.vpcId) +
      el('cidrBlock', s.cidr) +
      el('ipv6CidrBlockAssociationSet', s.ipv6Cidrs.map((c, k) => item(el('ipv6CidrBlock', c) + el('associationId', `subnet-cidr-assoc-${k}`) + el('ipv6CidrBlockState', el('state', 'associated')))).join('')) +
      el('availableIpAddressCount', '250') +
      el('availabilityZone', s.availabilityZone) +
      el('defaultForAz', 'false') +
      el('mapPublicIpOnLaunch', 'false') +
      tagSet(s.tags),
  );
}

function groupXml(state: FakeAwsState, g: FakeSecurityGroup): string {
  const permission = (p: FakePermission) =>
    item(
      el('ipProtocol', p.protocol) +
        (p.fromPort === undefined ? '' : el('fromPort', String(p.fromPort))) +
        (p.toPort === undefined ? '' : el('toPort', String(p.toPort))) +
        el('groups', p.groups.map((id) => item(el('userId', state.account) + el('groupId', id))).join('')) +
        el('ipRanges', p.cidrs.map((c) => item(el('cidrIp', c))).join('')) +
        el('ipv6Ranges', p.ipv6Cidrs.map((c) => item(el('cidrIpv6', c))).join('')) +
        el('prefixListIds', ''),
    );
  return item(
    el('ownerId', state.account) +
      el('groupId', g.id) +
      el('groupName', g.name) +
      el('groupDescription', g.name) +
      el('vpcId', g.vpcId) +
      el('ipPermissions', g.inbound.map(permission).join('')) +
      el('ipPermissionsEgress', permission({ protocol: '-1', cidrs: ['0.0.0.0/0'], ipv6Cidrs: [], groups: [] })),
  );
}

function ec2Error(err: Refusal): string {
  return `<?xml version="1.0" encoding="UTF-8"?>\n<Response><Errors><Error><Code>${err.code}</Code><Message>${esc(err.message)}</Message></Error></Errors><RequestID>${randomUUID()}</RequestID></Response>`;
}

const envelope = (name: string, content: string): string => `<?xml version="1.0" encoding="UTF-8"?>\n<${name} xmlns="${EC2_NS}">${el('requestId', randomUUID())}${content}</${name}>`;
const tagSet = (tags: Record<string, string>): string => el('tagSet', Object.entries(tags).map(([k, v]) => item(el('key', k) + el('value', v))).join(''));
const item = (content: string): string => `<item>${content}</item>`;
const el = (name: string, content: string): string => (content === '' ? `<${name}/>` : `<${name}>${content.startsWith('<') ? content : esc(content)}</${name}>`);
const esc = (s: string): string => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

// ---- a generated account ---------------------------------------------------------------------

/** The long-term key of a generated state. */
export const FAKE_KEY = { accessKeyId: 'AKIAFAKEFAKEFAKE0001', secretAccessKey: 'fakeSecret/0123456789abcdefghijklmnopqrstuv' };

/**
 * An account with `instances` instances spread over `regions` (one VPC, one subnet and two
 * security groups a region): private addresses counted up from 10.0.0.10, every third instance
 * with a public IPv4 counted up from 203.0.113.10, every fifth with an IPv6 in 2001:db8::/32.
 */
export function generateAwsState(opts: { instances: number; regions?: string[]; disabledRegions?: string[] }): FakeAwsState {
  const regions = opts.regions ?? ['eu-west-1'];
  const state: FakeAwsState = {
    account: '123456789012',
    keys: { [FAKE_KEY.accessKeyId]: FAKE_KEY.secretAccessKey },
    regions: [...regions.map((name) => ({ name, enabled: true })), ...(opts.disabledRegions ?? []).map((name) => ({ name, enabled: false }))],
    instances: [],
    networkInterfaces: [],
    vpcs: [],
    subnets: [],
    securityGroups: [],
    pageLimit: 1000,
    faults: [],
  };
  regions.forEach((region, r) => {
    const vpcId = `vpc-${hex(r, 8)}`;
    state.vpcs.push({ id: vpcId, region, cidrs: ['10.0.0.0/8'], ipv6Cidrs: [`2001:db8:${(r + 1).toString(16)}::/56`], tags: { Name: `main-${region}` } });
    state.subnets.push({ id: `subnet-${hex(r, 8)}`, region, vpcId, availabilityZone: `${region}a`, cidr: '10.0.0.0/9', ipv6Cidrs: [`2001:db8:${(r + 1).toString(16)}::/64`], tags: { Name: `app-${region}` } });
    state.securityGroups.push(
      { id: `sg-web${hex(r, 4)}`, region, vpcId, name: 'web', inbound: [{ protocol: 'tcp', fromPort: 443, toPort: 443, cidrs: ['0.0.0.0/0'], ipv6Cidrs: ['::/0'], groups: [] }] },
      { id: `sg-adm${hex(r, 4)}`, region, vpcId, name: 'admin', inbound: [{ protocol: 'tcp', fromPort: 22, toPort: 22, cidrs: ['192.0.2.0/24'], ipv6Cidrs: [], groups: [] }] },
    );
  });
  for (let n = 0; n < opts.instances; n++) state.instances.push(generatedInstance(n, regions));
  return state;
}

function generatedInstance(n: number, regions: string[]): FakeInstance {
  const r = n % regions.length;
  const region = regions[r]!;
  const ip = 10 * 2 ** 24 + 10 + n;
  const pub = 203 * 2 ** 24 + 113 * 2 ** 8 + 10 + Math.floor(n / 3);
  const dotted = (v: number) => [24, 16, 8, 0].map((s) => Math.floor(v / 2 ** s) % 256).join('.');
  return {
    id: `i-${hex(n, 17)}`,
    region,
    state: n % 7 === 6 ? 'stopped' : 'running',
    type: 't3.micro',
    imageId: 'ami-0abcdef1234567890',
    vpcId: `vpc-${hex(r, 8)}`,
    subnetId: `subnet-${hex(r, 8)}`,
    availabilityZone: `${region}a`,
    platformDetails: 'Linux/UNIX',
    launchTime: '2026-01-02T03:04:05.000Z',
    groups: [`sg-web${hex(r, 4)}`, `sg-adm${hex(r, 4)}`],
    tags: { Name: `host-${n}`, env: n % 2 ? 'prod' : 'test' },
    interfaces: [{ id: `eni-${hex(n, 17)}`, privateIps: [dotted(ip)], ...(n % 3 === 0 ? { publicIp: dotted(pub) } : {}), ipv6: n % 5 === 0 ? [`2001:db8:${(r + 1).toString(16)}::${n.toString(16)}`] : [] }],
  };
}

const hex = (n: number, width: number): string => n.toString(16).padStart(width, '0');
