// The AWS collector against a local fake of EC2's and STS's wire protocols (test/fakes/aws.ts):
// the real SDK signs, pages, retries and parses; the fake checks the signatures and answers as AWS does.

import { afterEach, describe, expect, it } from 'vitest';
import { type AwsCredentials, type AwsSettings, collectAws, testAws } from '../src/cloud/aws.js';
import { ProviderError, isTransient } from '../src/jobs/runner.js';
import { FAKE_KEY, type FakeAws, type FakeAwsState, INTERNAL, THROTTLED, UNAUTHORIZED, generateAwsState, startFakeAws } from './fakes/aws.js';

const ROLE = { arn: 'arn:aws:iam::123456789012:role/surveyor-read', externalId: 'ext-7f3a' };

let fake: FakeAws | undefined;
afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

async function start(state: FakeAwsState): Promise<FakeAws> {
  fake = await startFakeAws(state);
  return fake;
}

/** The error `collectAws` rejects with (failing the test when it resolves). */
async function failure(settings: AwsSettings, credentials: AwsCredentials = FAKE_KEY, timeoutMs?: number): Promise<ProviderError> {
  const err = await collectAws(settings, credentials, { endpoint: fake!.url, ...(timeoutMs ? { timeoutMs } : {}) }).then(
    () => new Error('collected'),
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ProviderError);
  return err as ProviderError;
}

const actions = (f: FakeAws, action: string) => f.requests.filter((r) => r.action === action);

describe('AWS collector: listing', () => {
  it('pages through more instances than a page holds', async () => {
    const f = await start(generateAwsState({ instances: 25 }));
    f.state.pageLimit = 10;
    const inventory = await collectAws({ regions: ['eu-west-1'] }, FAKE_KEY, { endpoint: f.url });
    expect(inventory.machines).toHaveLength(25);
    expect(new Set(inventory.machines.map((m) => m.providerId)).size).toBe(25);
    const pages = actions(f, 'DescribeInstances');
    expect(pages).toHaveLength(3);
    expect(pages[0]!.params.MaxResults).toBe('1000');
    expect(pages[0]!.params.NextToken).toBeUndefined();
    expect(pages[2]!.params.NextToken).toBeTruthy();
    expect(inventory.warnings).toEqual([]);
  });

  it('lists the network interfaces of no instance (a load balancer\'s) as machines of their own, an instance\'s once, with the instance', async () => {
    const state = generateAwsState({ instances: 3 });
    state.networkInterfaces.push({
      id: 'eni-0lb0000000000000a', region: 'eu-west-1', vpcId: state.vpcs[0]!.id, subnetId: state.subnets[0]!.id, availabilityZone: 'eu-west-1a',
      description: 'ELB app/shop-front/50dc6c495c0c9188', interfaceType: 'interface', requesterId: 'amazon-elb', status: 'in-use',
      privateIps: ['10.0.200.5'], publicIp: '198.51.100.20', groups: [state.securityGroups[0]!.id], tags: {},
    });
    const f = await start(state);
    const inventory = await collectAws({ regions: ['eu-west-1'] }, FAKE_KEY, { endpoint: f.url });
    expect(inventory.machines.map((m) => m.kind).sort()).toEqual(['instance', 'instance', 'instance', 'interface']);
    const lb = inventory.machines.find((m) => m.kind === 'interface')!;
    expect(lb).toMatchObject({
      providerId: 'eni-0lb0000000000000a', name: 'ELB app/shop-front/50dc6c495c0c9188', state: 'in-use', location: 'eu-west-1',
      privateAddresses: ['10.0.200.5'], publicAddresses: ['198.51.100.20'],
      details: { interfaceType: 'interface', requesterId: 'amazon-elb', requesterManaged: true, securityGroups: [state.securityGroups[0]!.id] },
    });
    expect(lb.inbound).toEqual([expect.objectContaining({ protocol: 'tcp', fromPort: 443, toPort: 443, cidrs: ['0.0.0.0/0', '::/0'] })]);
    expect(actions(f, 'DescribeNetworkInterfaces')).toHaveLength(1);
  });

  it('lists every enabled region when none is configured', async () => {
    const f = await start(generateAwsState({ instances: 6, regions: ['eu-west-1', 'us-east-1'], disabledRegions: ['ap-east-1'] }));
    const inventory = await collectAws({}, FAKE_KEY, { endpoint: f.url });
    expect(actions(f, 'DescribeRegions')).toHaveLength(1);
    expect(new Set(inventory.machines.map((m) => m.location))).toEqual(new Set(['eu-west-1', 'us-east-1']));
    expect(inventory.machines).toHaveLength(6);
    expect(f.requests.some((r) => r.region === 'ap-east-1')).toBe(false);
    expect(inventory.networks.filter((n) => n.kind === 'vpc')).toHaveLength(2);
  });

  it('maps addresses: every interface, public IPv4 of the instance and of ENI associations, IPv6 as public, canonical', async () => {
    const state = generateAwsState({ instances: 1 });
    state.instances[0]!.interfaces = [
      { id: 'eni-a', privateIps: ['10.0.0.10', '10.0.0.11'], publicIp: '198.51.100.7', ipv6: ['2001:DB8:1:0:0:0:0:A'] },
      { id: 'eni-b', privateIps: ['10.0.1.20'], publicIp: '198.51.100.8', ipv6: [] },
    ];
    const f = await start(state);
    const [machine] = (await collectAws({ regions: ['eu-west-1'] }, FAKE_KEY, { endpoint: f.url })).machines;
    expect(machine!.privateAddresses.sort()).toEqual(['10.0.0.10', '10.0.0.11', '10.0.1.20']);
    expect(machine!.publicAddresses.sort()).toEqual(['198.51.100.7', '198.51.100.8', '2001:db8:1::a']);
    expect(machine).toMatchObject({ kind: 'instance', name: 'host-0', state: 'running', location: 'eu-west-1', os: 'Linux/UNIX' });
    expect(machine!.details).toEqual({
      instanceType: 't3.micro',
      vpcId: 'vpc-00000000',
      subnetId: 'subnet-00000000',
      securityGroups: ['sg-web0000', 'sg-adm0000'],
      imageId: 'ami-0abcdef1234567890',
      launchTime: '2026-01-02T03:04:05.000Z',
      availabilityZone: 'eu-west-1a',
    });
  });

  it('maps VPCs and subnets with their IPv4 and IPv6 CIDRs', async () => {
    const state = generateAwsState({ instances: 0 });
    state.vpcs[0]!.cidrs.push('172.16.0.0/16');
    state.subnets[0]!.ipv6Cidrs = ['2001:DB8:1:0::/64'];
    const f = await start(state);
    const { networks } = await collectAws({ regions: ['eu-west-1'] }, FAKE_KEY, { endpoint: f.url });
    expect(networks).toEqual([
      { providerId: 'vpc-00000000', kind: 'vpc', name: 'main-eu-west-1', cidrs: ['10.0.0.0/8', '172.16.0.0/16', '2001:db8:1::/56'], location: 'eu-west-1' },
      { providerId: 'subnet-00000000', kind: 'subnet', name: 'app-eu-west-1', cidrs: ['10.0.0.0/9', '2001:db8:1::/64'], location: 'eu-west-1', parentId: 'vpc-00000000' },
    ]);
  });

  it("maps the inbound rules of an instance's security groups, leaving group-to-group rules out", async () => {
    const state = generateAwsState({ instances: 1 });
    state.securityGroups[0]!.inbound = [
      { protocol: 'tcp', fromPort: 443, toPort: 443, cidrs: ['0.0.0.0/0'], ipv6Cidrs: ['::/0'], groups: [] },
      { protocol: '-1', cidrs: ['10.0.0.0/8'], ipv6Cidrs: [], groups: [] },
      { protocol: 'udp', fromPort: 5000, toPort: 5100, cidrs: [], ipv6Cidrs: ['2001:DB8::/32'], groups: [] },
      { protocol: 'icmp', fromPort: -1, toPort: -1, cidrs: ['192.0.2.0/24'], ipv6Cidrs: [], groups: [] },
      { protocol: 'tcp', fromPort: 5432, toPort: 5432, cidrs: [], ipv6Cidrs: [], groups: ['sg-adm0000'] },
    ];
    const f = await start(state);
    const [machine] = (await collectAws({ regions: ['eu-west-1'] }, FAKE_KEY, { endpoint: f.url })).machines;
    expect(machine!.inbound).toEqual([
      { groupId: 'sg-web0000', protocol: 'tcp', fromPort: 443, toPort: 443, cidrs: ['0.0.0.0/0', '::/0'] },
      { groupId: 'sg-web0000', protocol: 'all', fromPort: null, toPort: null, cidrs: ['10.0.0.0/8'] },
      { groupId: 'sg-web0000', protocol: 'udp', fromPort: 5000, toPort: 5100, cidrs: ['2001:db8::/32'] },
      { groupId: 'sg-web0000', protocol: 'icmp', fromPort: null, toPort: null, cidrs: ['192.0.2.0/24'] },
      { groupId: 'sg-adm0000', protocol: 'tcp', fromPort: 22, toPort: 22, cidrs: ['192.0.2.0/24'] },
    ]);
  });

  it('keeps at most maxInstances instances and asks for no further page', async () => {
    const f = await start(generateAwsState({ instances: 40 }));
    f.state.pageLimit = 10;
    const inventory = await collectAws({ regions: ['eu-west-1'] }, FAKE_KEY, { endpoint: f.url, maxInstances: 15 });
    expect(inventory.machines).toHaveLength(15);
    expect(actions(f, 'DescribeInstances')).toHaveLength(2);
    expect(inventory.warnings).toEqual(['more than 15 instances: the rest are left out']);
  });

  it('bounds labels: at most 50 tags, values cut at 256 characters', async () => {
    const state = generateAwsState({ instances: 1 });
    state.instances[0]!.tags = Object.fromEntries(Array.from({ length: 60 }, (_, k) => [`k${String(k).padStart(2, '0')}`, 'v'.repeat(300)]));
    const f = await start(state);
    const [machine] = (await collectAws({ regions: ['eu-west-1'] }, FAKE_KEY, { endpoint: f.url })).machines;
    expect(Object.keys(machine!.labels)).toHaveLength(50);
    expect(machine!.labels.k00).toHaveLength(256);
    expect(machine!.name).toBeNull();
  });
});

describe('AWS collector: credentials', () => {
  it('assumes the role with its external id and lists with the temporary credentials', async () => {
    const state = generateAwsState({ instances: 3 });
    state.role = { ...ROLE, required: true };
    const f = await start(state);
    const inventory = await collectAws({ regions: ['eu-west-1'], roleArn: ROLE.arn, externalId: ROLE.externalId }, FAKE_KEY, { endpoint: f.url });
    expect(inventory.machines).toHaveLength(3);
    const [assume] = actions(f, 'AssumeRole');
    expect(assume).toMatchObject({ service: 'sts', accessKeyId: FAKE_KEY.accessKeyId });
    expect(assume!.params).toMatchObject({ RoleArn: ROLE.arn, ExternalId: ROLE.externalId, RoleSessionName: 'surveyor-sync' });
    const ec2 = f.requests.filter((r) => r.service === 'ec2');
    expect(ec2.length).toBeGreaterThan(0);
    expect(ec2.every((r) => r.accessKeyId.startsWith('ASIA'))).toBe(true);
  });

  it('refuses a wrong external id: 403, not transient', async () => {
    const state = generateAwsState({ instances: 1 });
    state.role = { ...ROLE, required: true };
    await start(state);
    const err = await failure({ regions: ['eu-west-1'], roleArn: ROLE.arn, externalId: 'wrong' });
    expect(err.status).toBe(403);
    expect(isTransient(err)).toBe(false);
    expect(err.message).toMatch(/AssumeRole.*AccessDenied \(403\)/);
    expect(actions(fake!, 'DescribeInstances')).toHaveLength(0);
  });

  it('is refused when the role is required and the long-term key is used', async () => {
    const state = generateAwsState({ instances: 1 });
    state.role = { ...ROLE, required: true };
    await start(state);
    const err = await failure({ regions: ['eu-west-1'] });
    expect(err.status).toBe(403);
    expect(err.message).toContain('UnauthorizedOperation');
  });

  it('is refused with an unknown key (401 AuthFailure) and with a wrong secret (403 SignatureDoesNotMatch)', async () => {
    await start(generateAwsState({ instances: 1 }));
    const unknown = await failure({ regions: ['eu-west-1'] }, { accessKeyId: 'AKIAUNKNOWN000000000', secretAccessKey: 'x'.repeat(40) });
    expect(unknown.status).toBe(401);
    expect(unknown.message).toContain('AuthFailure');
    const wrong = await failure({ regions: ['eu-west-1'] }, { ...FAKE_KEY, secretAccessKey: 'y'.repeat(40) });
    expect(wrong.status).toBe(403);
    expect(wrong.message).toContain('SignatureDoesNotMatch');
    expect(isTransient(unknown) || isTransient(wrong)).toBe(false);
  });

  it('tests the credentials: account and enabled regions', async () => {
    const f = await start(generateAwsState({ instances: 0, regions: ['us-east-1', 'eu-central-1'], disabledRegions: ['me-south-1'] }));
    expect(await testAws({}, FAKE_KEY, { endpoint: f.url })).toEqual({ account: '123456789012', regions: ['us-east-1', 'eu-central-1'] });
  });

  it('hands the SDK a copy of the credentials: the caller\'s object comes back as it was given', async () => {
    // The SDK marks the credentials object it is handed ($source); FAKE_KEY, shared by the test files
    // of a worker, once came back marked and a later account created with it failed its schema.
    const f = await start(generateAwsState({ instances: 1, regions: ['us-east-1', 'eu-west-1'] }));
    const given = { ...FAKE_KEY };
    await collectAws({ regions: ['eu-west-1'] }, given, { endpoint: f.url });
    await testAws({}, given, { endpoint: f.url });
    expect(Object.keys(given)).toEqual(['accessKeyId', 'secretAccessKey']);
    expect(given).toEqual(FAKE_KEY);
  });

  it('keeps every credential out of error messages', async () => {
    const state = generateAwsState({ instances: 1 });
    state.role = { ...ROLE };
    const f = await start(state);
    const withToken = { ...FAKE_KEY, sessionToken: 'FwoGZXIvYXdzEFAKEsessionTOKEN0123456789' };
    const messages: string[] = [];
    // The long-term key, its secret in the message (as only a broken proxy would put it there).
    state.faults = [{ ...UNAUTHORIZED, message: `denied: ${FAKE_KEY.secretAccessKey}`, echoCredentials: true, times: 1 }];
    messages.push((await failure({ regions: ['eu-west-1'] })).message);
    // The temporary credentials of the role, the key id and session token echoed back.
    state.faults = [{ ...UNAUTHORIZED, echoCredentials: true, times: 1 }];
    messages.push((await failure({ regions: ['eu-west-1'], roleArn: ROLE.arn, externalId: ROLE.externalId })).message);
    // A session token the fake does not know; a refused AssumeRole.
    messages.push((await failure({ regions: ['eu-west-1'] }, withToken)).message);
    messages.push((await failure({ regions: ['eu-west-1'], roleArn: ROLE.arn, externalId: 'wrong' }, withToken)).message);
    expect(messages[0]).toContain('[redacted]');
    expect(messages[1]).toContain('[redacted]');
    const secrets = [...Object.values(withToken), ...f.issued.flatMap((c) => Object.values(c))];
    expect(f.issued).toHaveLength(1);
    for (const message of messages) {
      expect(message).toMatch(/^(sts )?eu-west-1/);
      for (const secret of secrets) expect(message).not.toContain(secret);
    }
  });
});

describe('AWS collector: failures', () => {
  it('retries throttling (503 RequestLimitExceeded) and succeeds', async () => {
    const state = generateAwsState({ instances: 3 });
    state.faults = [{ ...THROTTLED, times: 2 }];
    const f = await start(state);
    const inventory = await collectAws({ regions: ['eu-west-1'] }, FAKE_KEY, { endpoint: f.url });
    expect(inventory.machines).toHaveLength(3);
    expect(actions(f, 'DescribeSecurityGroups')).toHaveLength(3);
  });

  it('gives up after the SDK retries a 500: transient ProviderError', async () => {
    const state = generateAwsState({ instances: 1 });
    state.faults = [{ ...INTERNAL }];
    const f = await start(state);
    const err = await failure({ regions: ['eu-west-1'] });
    expect(err.status).toBe(500);
    expect(isTransient(err)).toBe(true);
    expect(err.message).toMatch(/^eu-west-1: InternalError \(500\)/);
    expect(f.requests).toHaveLength(4);
  });

  it('a 403 is not transient and names the region and the code', async () => {
    const state = generateAwsState({ instances: 1 });
    state.faults = [{ ...UNAUTHORIZED }];
    const f = await start(state);
    const err = await failure({ regions: ['eu-west-1'] });
    expect(err.status).toBe(403);
    expect(isTransient(err)).toBe(false);
    expect(err.message).toBe('eu-west-1: UnauthorizedOperation (403): You are not authorized to perform this operation.');
    expect(f.requests).toHaveLength(1);
  });

  it('skips a region that refuses while another answers, with a warning', async () => {
    const state = generateAwsState({ instances: 4, regions: ['eu-west-1', 'us-east-1'] });
    state.faults = [{ ...UNAUTHORIZED, region: 'us-east-1' }];
    const f = await start(state);
    const inventory = await collectAws({ regions: ['eu-west-1', 'us-east-1'] }, FAKE_KEY, { endpoint: f.url });
    expect(inventory.machines.map((m) => m.location)).toEqual(['eu-west-1', 'eu-west-1']);
    expect(inventory.warnings).toEqual(['us-east-1: UnauthorizedOperation (403): You are not authorized to perform this operation. (region skipped)']);
  });

  it('fails when every region refuses', async () => {
    const state = generateAwsState({ instances: 4, regions: ['eu-west-1', 'us-east-1'] });
    state.faults = [{ ...UNAUTHORIZED }];
    await start(state);
    const err = await failure({ regions: ['eu-west-1', 'us-east-1'] });
    expect(err.status).toBe(403);
  });

  it('fails the collection (rather than skipping) when a region keeps answering 500', async () => {
    const state = generateAwsState({ instances: 4, regions: ['eu-west-1', 'us-east-1'] });
    state.faults = [{ ...INTERNAL, region: 'us-east-1' }];
    await start(state);
    const err = await failure({ regions: ['eu-west-1', 'us-east-1'] });
    expect(err.message).toMatch(/^us-east-1: InternalError/);
    expect(isTransient(err)).toBe(true);
  });

  it('a request that never answers times out: ProviderError without status (transient)', async () => {
    const state = generateAwsState({ instances: 1 });
    state.faults = [{ ...INTERNAL, hang: true }];
    await start(state);
    const err = await failure({ regions: ['eu-west-1'] }, FAKE_KEY, 150);
    expect(err.status).toBeUndefined();
    expect(isTransient(err)).toBe(true);
    expect(err.message).toMatch(/^eu-west-1: TimeoutError/);
  });
});
