import { z } from 'zod';
import { Text, Uuid } from '../common.js';
import { Host, Network, Site } from '../inventory.js';
import { type RouteDef, route } from '../route-def.js';

/** At most this many ids of each kind per lookup (a page of the console's tables). */
export const LOOKUP_MAX_IDS = 100;

const IdList = Text.max(40 * LOOKUP_MAX_IDS)
  .transform((s) => s.split(','))
  .pipe(z.array(Uuid).min(1).max(LOOKUP_MAX_IDS))
  .optional()
  .describe(`Comma-separated ids, at most ${LOOKUP_MAX_IDS}.`);

export const LookupResult = z.object({
  hosts: z.array(Host),
  sites: z.array(Site),
  networks: z.array(Network),
});

/** Hosts, sites and networks by id: the console names the ids its tables show (internal). */
export const lookupRoutes = {
  lookupByIds: route({
    method: 'GET',
    url: '/api/v1/lookup',
    operationId: 'lookupByIds',
    summary: 'Hosts, sites and networks of the session\'s organisation by id, as their collections list them',
    description:
      `Each of \`hosts\`, \`sites\`, \`networks\` takes up to ${LOOKUP_MAX_IDS} comma-separated ids. ` +
      'An id the organisation does not have (another organisation\'s included) is left out of the answer, never refused; each list comes in the order of its collection.',
    tags: ['console'],
    internal: true,
    auth: { kind: 'session' },
    querystring: z.strictObject({ hosts: IdList, sites: IdList, networks: IdList }),
    response: { 200: LookupResult },
  }),
} as const satisfies Record<string, RouteDef>;
