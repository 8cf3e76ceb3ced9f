import { z } from 'zod';
import { Timestamp } from '../common.js';
import { scanSessionStates } from '../daemon.js';
import { type RouteDef, route } from '../route-def.js';

const Count = z.number().int().nonnegative();
const Seconds = z.number().nonnegative();

/** The console's overview figures that no list already answers (daemons: `GET /api/v1/daemons`, quietest first). */
export const Overview = z.object({
  hosts: z
    .object({ present: Count.describe('Hosts not gone: what the console\'s Hosts screen lists by default (`GET /api/v1/hosts?gone=exclude`).'), gone: Count })
    .describe('Hosts of the organisation, present and gone.'),
  sessions: z.object(Object.fromEntries(scanSessionStates.map((s) => [s, Count])) as Record<(typeof scanSessionStates)[number], typeof Count>).describe('Scan sessions per state, every state listed.'),
  lastSnapshotAt: Timestamp.nullable().describe('When the latest snapshot was captured; null when none was.'),
  lastSnapshotAgeSeconds: Seconds.nullable(),
  advisoryFeed: z.object({ confirmedAt: Timestamp, ageSeconds: Seconds }).nullable().describe('When the advisory mirror last changed or was confirmed current; null while it holds no advisory.'),
  certificatesExpiring: z.object({ expired: Count, '1d': Count, '7d': Count, '14d': Count, '30d': Count }).describe('Current certificates (state `current`: presented on their endpoint now) whose notAfter falls within the window (cumulative, not yet expired); expired: already past. Replaced ones and those whose service is gone are not counted.'),
});
export type Overview = z.infer<typeof Overview>;

/** The console's overview (internal). */
export const overviewRoutes = {
  getOverview: route({
    method: 'GET',
    url: '/api/v1/overview',
    operationId: 'getOverview',
    summary: 'The figures of the console\'s overview for the session\'s organisation',
    description:
      'Hosts present and gone, scan sessions per state (every state, 0 where none), the latest snapshot and its age, the advisory mirror\'s age (null while it holds no advisory), and certificates ' +
      'expiring per window (cumulative, not yet expired; `expired`: already past). The same definitions as the metrics; a fixed number of queries.',
    tags: ['console'],
    internal: true,
    auth: { kind: 'session' },
    response: { 200: Overview },
  }),
} as const satisfies Record<string, RouteDef>;
