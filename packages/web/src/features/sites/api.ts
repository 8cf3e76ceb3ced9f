import { type RouteBody, routes } from '@surveyor/contract';
import { call } from '../../lib/api';

export const createSite = (body: RouteBody<typeof routes.createSite>) => call(routes.createSite, { body });
export const renameSite = (id: string, body: RouteBody<typeof routes.renameSite>) => call(routes.renameSite, { params: { id }, body });
