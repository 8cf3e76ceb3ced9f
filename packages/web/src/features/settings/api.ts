import { type Role, type RouteBody, routes } from '@surveyor/contract';
import { useQuery } from '@tanstack/react-query';
import { call } from '../../lib/api';
import { apiKeyKeys, memberKeys } from '../../lib/keys';

// Settings: API keys, members, notification destinations and their deliveries (jobs read lib/queries' useJobs).

export const settingsKeys = {
  apiKeys: apiKeyKeys.all,
  members: memberKeys.all,
  destinations: ['destinations'] as const,
  deliveries: ['deliveries'] as const,
};

export const useApiKeys = () => useQuery({ queryKey: settingsKeys.apiKeys, queryFn: ({ signal }) => call(routes.listApiKeys, {}, { signal }) });
export const createApiKey = (body: RouteBody<typeof routes.createApiKey>) => call(routes.createApiKey, { body });
export const revokeApiKey = (id: string) => call(routes.revokeApiKey, { params: { id } });

export const useMembers = () => useQuery({ queryKey: settingsKeys.members, queryFn: ({ signal }) => call(routes.listMembers, {}, { signal }) });
export const addMember = (body: RouteBody<typeof routes.addMember>) => call(routes.addMember, { body });
export const setMemberRole = (v: { userId: string; role: Role }) => call(routes.updateMember, { params: { userId: v.userId }, body: { role: v.role } });
export const removeMember = (userId: string) => call(routes.removeMember, { params: { userId } });

export const useDestinations = (enabled: boolean) => useQuery({ queryKey: settingsKeys.destinations, queryFn: ({ signal }) => call(routes.listDestinations, {}, { signal }), enabled });
export const useDeliveries = (enabled: boolean) =>
  useQuery({ queryKey: settingsKeys.deliveries, queryFn: ({ signal }) => call(routes.listDeliveries, { query: { limit: 50 } }, { signal }), enabled });
export const createDestination = (body: RouteBody<typeof routes.createDestination>) => call(routes.createDestination, { body });
export const setDestinationEnabled = (id: string, enabled: boolean) => call(routes.updateDestination, { params: { id }, body: { enabled } });
export const updateDestination = (id: string, body: RouteBody<typeof routes.updateDestination>) => call(routes.updateDestination, { params: { id }, body });
export const deleteDestination = (id: string) => call(routes.deleteDestination, { params: { id } });
export const testDestination = (id: string) => call(routes.testDestination, { params: { id } });
