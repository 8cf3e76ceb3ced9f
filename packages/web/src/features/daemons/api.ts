import { type RouteBody, routes } from '@surveyor/contract';
import { call } from '../../lib/api';

export const setDaemonSite = (daemonId: string, siteId: string | null) => call(routes.setDaemonSite, { params: { id: daemonId }, body: { siteId } });
export const enrolDaemon = (body: RouteBody<typeof routes.enrolDaemon>) => call(routes.enrolDaemon, { body });
