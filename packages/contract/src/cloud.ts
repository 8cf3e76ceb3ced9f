import { z } from 'zod';
import { NOT_WELL_FORMED, Text, Timestamp, Uuid, isWellFormedText } from './common.js';

// Cloud accounts (issue 25; spec 1.1 cloud.sync and cloud.k8s, 4.6 POST /api/v1/admin/cloud/{id}/sync):
// an AWS account or a Kubernetes cluster whose inventory the service reads with read-only access.

export const CloudAccountKind = z.enum(['aws', 'kubernetes']).describe('`aws`: EC2 through its API (job cloud.sync, every 15 minutes); `kubernetes`: a cluster\'s API server (job cloud.k8s, every 5 minutes).');

const Name = Text.trim().min(1).max(200);
const EndpointUrl = z
  .url({ protocol: /^https?$/ })
  .max(2000)
  .refine(isWellFormedText, NOT_WELL_FORMED);

/** AWS settings: which regions, and the role to assume. */
export const AwsAccountSettings = z.strictObject({
  regions: z
    .array(Text.regex(/^[a-z]{2}(-gov|-iso[a-z]?)?-[a-z]+-\d$/, 'an AWS region such as eu-west-1'))
    .max(40)
    .default([])
    .describe('Regions to read; empty: every region enabled for the account (DescribeRegions).'),
  roleArn: Text.regex(/^arn:aws[a-z-]*:iam::\d{12}:role\/[\w+=,.@/-]{1,512}$/, 'an IAM role ARN such as arn:aws:iam::123456789012:role/surveyor-read')
    .optional()
    .describe('A role to assume with STS (AssumeRole) using the access key; the sync then reads with the role\'s temporary credentials.'),
  externalId: Text.min(2).max(1224).optional().describe('The external id the role\'s trust policy requires (sts:ExternalId).'),
  endpoint: EndpointUrl.optional().describe('An endpoint URL for EC2 and STS instead of AWS\'s public ones (a VPC endpoint, a compatible service).'),
});

/** Kubernetes settings. */
export const KubernetesAccountSettings = z.strictObject({
  context: Text.min(1).max(253).optional().describe('The kubeconfig context to use; absent: its current context.'),
  inCluster: z
    .boolean()
    .optional()
    .describe('Read the cluster this service runs in with its own service account, without a kubeconfig: only where the deployment allows it (SERVICE_CLOUD_IN_CLUSTER=allow), else 400.'),
});

/** AWS credentials: an access key of an IAM user (or one allowed to assume `roleArn`). Stored sealed; never returned. */
export const AwsCredentials = z.strictObject({
  accessKeyId: Text.regex(/^[A-Z0-9]{16,128}$/, 'an access key id such as AKIAIOSFODNN7EXAMPLE'),
  secretAccessKey: Text.min(16).max(256).regex(/^[\x21-\x7e]+$/, 'printable characters without spaces'),
  sessionToken: Text.min(16).max(8192).regex(/^[\x21-\x7e]+$/, 'printable characters without spaces').optional(),
});

/** Kubernetes credentials: a kubeconfig (YAML) whose user may get, list and watch the resources read. Stored sealed; never returned. */
export const KubernetesCredentials = z.strictObject({
  kubeconfig: Text.min(20).max(262_144).describe('The kubeconfig file\'s content (YAML), with its cluster, user and credentials (a token or client certificate).'),
});

const Common = {
  name: Name,
  siteId: Uuid.nullable().default(null).describe('The site the account\'s hosts belong to: a host a daemon of that site saw at the same address is the same host. Null: hosts without a site.'),
  enabled: z.boolean().default(true).describe('A disabled account is not synced by its job (a sync can still be asked for).'),
};

export const CreateCloudAccountRequest = z.discriminatedUnion('kind', [
  z.strictObject({ kind: z.literal('aws'), ...Common, settings: AwsAccountSettings.default({ regions: [] }), credentials: AwsCredentials }),
  // A kubeconfig, or `settings.inCluster` without one (checked by the server: a refinement here would
  // keep the console from deriving its edit form from this branch).
  z.strictObject({ kind: z.literal('kubernetes'), ...Common, settings: KubernetesAccountSettings.default({}), credentials: KubernetesCredentials.optional().describe('Required, unless `settings.inCluster` (then absent).') }),
]);

export const UpdateCloudAccountRequest = z
  .strictObject({
    name: Name.optional(),
    siteId: Uuid.nullable().optional(),
    enabled: z.boolean().optional(),
    // Kubernetes first: `{}` stays `{}` (AWS's default would add `regions`); the server checks the object against the account's kind.
    settings: z.union([KubernetesAccountSettings, AwsAccountSettings]).optional().describe('The whole settings object of the account\'s kind. Changing an AWS account\'s `endpoint` takes `credentials` given again.'),
    credentials: z.union([AwsCredentials, KubernetesCredentials]).optional().describe('New credentials of the account\'s kind; left out, the stored ones are kept.'),
  })
  .refine((b) => Object.keys(b).length > 0, 'nothing to change');

export const CloudSyncStatus = z.enum(['ok', 'failed']);

/** What a sync counted. */
export const CloudSyncCounts = z.object({
  resources: z.number().int().describe('Resources the provider listed (instances, nodes, pods, services, ingresses, VPCs, subnets).'),
  hosts: z.number().int().describe('Hosts they are in the inventory as (created or merged with hosts daemons saw).'),
  changed: z.number().int().describe('Resources new or changed since the previous sync.'),
  gone: z.number().int().describe('Resources no longer listed, marked gone (with their hosts, unless something else still sees them).'),
});

export const CloudAccount = z.object({
  id: Uuid,
  kind: CloudAccountKind,
  name: z.string(),
  siteId: Uuid.nullable(),
  enabled: z.boolean(),
  settings: z.record(z.string(), z.unknown()).describe('The settings of the account\'s kind.'),
  credentialHint: z.string().describe('What identifies the stored credentials without revealing them: an access key id\'s last four characters, a kubeconfig\'s server.'),
  providerAccount: z.string().nullable().describe('What the credentials reach, as the provider names it: the AWS account number, the cluster\'s server. Known after the first test or sync.'),
  lastSync: z
    .object({
      at: Timestamp,
      durationMs: z.number().int(),
      status: CloudSyncStatus,
      error: z.string().nullable().describe('Why it failed, as the provider said (never a credential).'),
      counts: CloudSyncCounts.partial(),
      warnings: z.array(z.string()).describe('What was skipped and why (a region that refused, a resource kind not readable).'),
    })
    .nullable(),
  createdAt: Timestamp,
  updatedAt: Timestamp,
});
export const CloudAccountList = z.object({ data: z.array(CloudAccount) });

/** A sync run now: its outcome, as the account's `lastSync` then says. */
export const CloudSyncResult = z.object({
  accountId: Uuid,
  status: CloudSyncStatus,
  durationMs: z.number().int(),
  counts: CloudSyncCounts,
  warnings: z.array(z.string()),
});

/** A connection test: whether the credentials reach the provider, and what they reach. */
export const CloudTestResult = z.object({
  ok: z.boolean(),
  detail: z.string().describe('What the provider answered: the account and regions reached, the cluster\'s version, or why it refused.'),
  providerAccount: z.string().nullable(),
});
