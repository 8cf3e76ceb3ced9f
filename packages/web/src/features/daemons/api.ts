import { type RouteBody, routes } from '@surveyor/contract';
import { useQuery } from '@tanstack/react-query';
import { call } from '../../lib/api';
import { daemonKeys } from '../../lib/keys';

export const setDaemonSite = (daemonId: string, siteId: string | null) => call(routes.setDaemonSite, { params: { id: daemonId }, body: { siteId } });
export const enrolDaemon = (body: RouteBody<typeof routes.enrolDaemon>) => call(routes.enrolDaemon, { body });
export const setDaemonEnabled = (daemonId: string, enabled: boolean) => call(routes.setDaemonEnabled, { params: { id: daemonId }, body: { enabled } });
export const removeDaemon = (daemonId: string) => call(routes.removeDaemon, { params: { id: daemonId } });

/** One daemon for its page (`GET /api/v1/daemons/{id}`, internal); a 404 once removed. */
export function useDaemon(id: string) {
  return useQuery({
    queryKey: daemonKeys.one(id),
    queryFn: ({ signal }) => call(routes.getDaemon, { params: { id } }, { signal }),
    retry: false,
  });
}
