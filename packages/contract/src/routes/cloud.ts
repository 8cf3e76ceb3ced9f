import { z } from 'zod';
import { CloudAccount, CloudAccountList, CloudSyncResult, CloudTestResult, CreateCloudAccountRequest, UpdateCloudAccountRequest } from '../cloud.js';
import { Uuid } from '../common.js';
import { type RouteDef, route } from '../route-def.js';

const admin = { kind: 'session', minRole: 'admin' } as const;
const params = z.object({ id: Uuid });

/** Settings → Cloud accounts (internal, admin session), and the spec's sync-now endpoint (4.6). */
export const cloudRoutes = {
  listCloudAccounts: route({
    method: 'GET',
    url: '/api/v1/admin/cloud',
    operationId: 'listCloudAccounts',
    summary: 'The organisation\'s cloud accounts (AWS, Kubernetes) with their last sync; credentials never shown',
    tags: ['cloud'],
    internal: true,
    auth: admin,
    response: { 200: CloudAccountList },
  }),
  createCloudAccount: route({
    method: 'POST',
    url: '/api/v1/admin/cloud',
    operationId: 'createCloudAccount',
    summary: 'Add an AWS account or a Kubernetes cluster to read the inventory of',
    description: 'Credentials are stored sealed under SERVICE_SECRET_KEY and never returned. A second account with the same name (case-insensitive): 409 `duplicate`. An unknown `siteId`: 400 `validation_failed`.',
    tags: ['cloud'],
    internal: true,
    auth: admin,
    body: CreateCloudAccountRequest,
    errors: ['duplicate'],
    response: { 201: CloudAccount },
  }),
  updateCloudAccount: route({
    method: 'PATCH',
    url: '/api/v1/admin/cloud/:id',
    operationId: 'updateCloudAccount',
    summary: 'Change an account: name, site, enabled, settings, or its credentials (left out: kept)',
    tags: ['cloud'],
    internal: true,
    auth: admin,
    params,
    body: UpdateCloudAccountRequest,
    errors: ['duplicate'],
    response: { 200: CloudAccount },
  }),
  deleteCloudAccount: route({
    method: 'DELETE',
    url: '/api/v1/admin/cloud/:id',
    operationId: 'deleteCloudAccount',
    summary: 'Remove an account and its record of the provider\'s resources; hosts only it listed are marked gone (a host a daemon saw, or another account lists, stays present)',
    tags: ['cloud'],
    internal: true,
    auth: admin,
    params,
    response: { 204: null },
  }),
  testCloudAccount: route({
    method: 'POST',
    url: '/api/v1/admin/cloud/:id/test',
    operationId: 'testCloudAccount',
    summary: 'Check that the stored credentials reach the provider (one cheap read); nothing is written to the inventory',
    tags: ['cloud'],
    internal: true,
    auth: admin,
    params,
    response: { 200: CloudTestResult },
  }),
  syncCloudAccount: route({
    method: 'POST',
    url: '/api/v1/admin/cloud/:id/sync',
    operationId: 'syncCloudAccount',
    summary: 'Sync one cloud account now, through its job (cloud.sync for AWS, cloud.k8s for Kubernetes)',
    description: 'Waits for the sync and answers its outcome. The provider refusing or failing: 502 `upstream_error` with what it answered (the account\'s `lastSync` says the same). Another run of the account\'s job in progress for this organisation: the request waits for it, up to 2 minutes, then 409 `conflict`.',
    tags: ['cloud'],
    internal: true,
    auth: admin,
    params,
    errors: ['conflict', 'upstream_error'],
    response: { 200: CloudSyncResult },
  }),
} as const satisfies Record<string, RouteDef>;
