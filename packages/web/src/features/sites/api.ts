import { type RouteBody, routes } from '@surveyor/contract';
import { useCollection, useLookup, usePage } from '../../lib/queries';
import { call } from '../../lib/api';

export const createSite = (body: RouteBody<typeof routes.createSite>) => call(routes.createSite, { body });
export const renameSite = (id: string, body: RouteBody<typeof routes.renameSite>) => call(routes.renameSite, { params: { id }, body });
export const deleteSite = (id: string) => call(routes.deleteSite, { params: { id } });

/** One site by id (the lookup), with `pending` until it answered; undefined when the organisation has none. */
export function useSite(id: string) {
  const q = useLookup('sites', [id]);
  return { site: q.byId.get(id), pending: q.pending, error: q.error };
}

/** What a site's page lists: its networks (first 500), hosts (50 at a time), topology views. */
export function useSiteContents(siteId: string) {
  return {
    networks: usePage('networks', { siteId, limit: 500 }),
    hosts: useCollection('hosts', { siteId, limit: 50 }),
    views: usePage('topologies', { siteId, limit: 500 }),
  };
}
