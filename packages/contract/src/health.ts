import { z } from 'zod';
import { Timestamp } from './common.js';

/** `GET /api/health` (spec 4.7). */
export const HealthResponse = z.object({
  ok: z.boolean().describe('False when the database round trip failed.'),
  version: z.string().describe('The running release; `0.1.0-dev` outside a container build.'),
  ts: Timestamp,
});
export type HealthResponse = z.infer<typeof HealthResponse>;
