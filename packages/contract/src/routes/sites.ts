import { z } from 'zod';
import { Uuid } from '../common.js';
import { DaemonSummary, EnrolDaemonRequest, EnrolDaemonResponse, SetDaemonSiteRequest } from '../daemon.js';
import { CreateSiteRequest, RenameSiteRequest, Site } from '../inventory.js';
import { type RouteDef, route } from '../route-def.js';

/** Sites and daemon enrolment from the console (internal; the list is the public `GET /api/v1/sites`). */
export const siteRoutes = {
  createSite: route({
    method: 'POST',
    url: '/api/v1/sites',
    operationId: 'createSite',
    summary: 'Add a site',
    description: 'A code already used in the organisation (case-insensitive) is 409 `duplicate`.',
    tags: ['console'],
    internal: true,
    auth: { kind: 'session', minRole: 'admin' },
    body: CreateSiteRequest,
    errors: ['duplicate'],
    response: { 201: Site },
  }),
  renameSite: route({
    method: 'PATCH',
    url: '/api/v1/sites/:id',
    operationId: 'renameSite',
    summary: 'Rename a site (its code stays)',
    tags: ['console'],
    internal: true,
    auth: { kind: 'session', minRole: 'admin' },
    params: z.object({ id: Uuid }),
    body: RenameSiteRequest,
    response: { 200: Site },
  }),
  deleteSite: route({
    method: 'DELETE',
    url: '/api/v1/sites/:id',
    operationId: 'deleteSite',
    summary: 'Delete an empty site',
    description:
      'Only a site that holds no host, network, daemon or snapshot: otherwise 409 `conflict`, whose detail says what it still holds (move or delete hosts, networks and daemons first; a site with snapshots stays, as snapshots keep their scope and are never deleted). ' +
      'Its topology views (derived from its hosts) go with it.',
    tags: ['console'],
    internal: true,
    auth: { kind: 'session', minRole: 'admin' },
    params: z.object({ id: Uuid }),
    errors: ['not_found', 'conflict'],
    response: { 204: null },
  }),
  setDaemonSite: route({
    method: 'PUT',
    url: '/api/v1/daemons/:id/site',
    operationId: 'setDaemonSite',
    summary: 'Assign a daemon to a site, or clear it (null)',
    description: 'A site assigned here wins over the daemon\'s own `siteCode`: a later registration does not move it. Clearing it clears that too.',
    tags: ['console'],
    internal: true,
    auth: { kind: 'session', minRole: 'admin' },
    params: z.object({ id: Uuid }),
    body: SetDaemonSiteRequest,
    response: { 200: DaemonSummary },
  }),
  enrolDaemon: route({
    method: 'POST',
    url: '/api/v1/daemons/enrol',
    operationId: 'enrolDaemon',
    summary: 'Mint a daemon key and the command line that starts a daemon with it',
    description: 'The token is shown this once and stored hashed. With `siteId` the command names the site with `--site`; an unknown site is 404.',
    tags: ['console'],
    internal: true,
    auth: { kind: 'session', minRole: 'admin' },
    body: EnrolDaemonRequest,
    errors: ['not_found'],
    response: { 201: EnrolDaemonResponse },
  }),
} as const satisfies Record<string, RouteDef>;
