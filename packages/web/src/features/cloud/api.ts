import { type RouteBody, routes } from '@surveyor/contract';
import { useQuery } from '@tanstack/react-query';
import { call } from '../../lib/api';

// Settings → Cloud accounts: AWS accounts and Kubernetes clusters whose inventory the server reads
// (internal admin-session routes; credentials go in, never come back).

export const cloudKeys = { accounts: ['cloud', 'accounts'] as const };

export const useCloudAccounts = () => useQuery({ queryKey: cloudKeys.accounts, queryFn: ({ signal }) => call(routes.listCloudAccounts, {}, { signal }) });
export const createCloudAccount = (body: RouteBody<typeof routes.createCloudAccount>) => call(routes.createCloudAccount, { body });
export const updateCloudAccount = (id: string, body: RouteBody<typeof routes.updateCloudAccount>) => call(routes.updateCloudAccount, { params: { id }, body });
export const setCloudAccountEnabled = (id: string, enabled: boolean) => call(routes.updateCloudAccount, { params: { id }, body: { enabled } });
export const deleteCloudAccount = (id: string) => call(routes.deleteCloudAccount, { params: { id } });
export const testCloudAccount = (id: string) => call(routes.testCloudAccount, { params: { id } });
export const syncCloudAccount = (id: string) => call(routes.syncCloudAccount, { params: { id } });
