import { type RouteBody, routes } from '@surveyor/contract';
import { useQuery } from '@tanstack/react-query';
import { call } from '../../lib/api';

// Settings → SCIM: the base URL and tokens an identity provider provisions members with, the mapping
// from its groups to roles, and what it has pushed (internal admin-session routes; the mapping is
// the owner's to change).

export const scimKeys = { settings: ['scim', 'settings'] as const };

export const useScimSettings = () => useQuery({ queryKey: scimKeys.settings, queryFn: ({ signal }) => call(routes.getScimSettings, {}, { signal }) });
export const createScimToken = (body: RouteBody<typeof routes.createScimToken>) => call(routes.createScimToken, { body });
/** A SCIM token is a key of kind scim: revoked like any other. */
export const revokeScimToken = (id: string) => call(routes.revokeApiKey, { params: { id } });
export const putScimMappings = (body: RouteBody<typeof routes.putScimMappings>) => call(routes.putScimMappings, { body });
