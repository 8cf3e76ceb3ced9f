import { z } from 'zod';
import { type RouteDef, route } from '../route-def.js';

const AnyDocument = z.record(z.string(), z.unknown());

/** Documents about the API itself: this OpenAPI document and the problem codes (internal). */
export const metaRoutes = {
  getOpenApi: route({
    method: 'GET',
    url: '/openapi.json',
    operationId: 'getOpenApi',
    summary: 'This OpenAPI 3.0.3 document',
    description: 'Carries a weak `ETag`; `If-None-Match` with it answers 304 with no body.',
    tags: ['meta'],
    internal: true,
    auth: { kind: 'none' },
    response: { 200: AnyDocument, 304: null },
  }),
  listProblems: route({
    method: 'GET',
    url: '/problems',
    operationId: 'listProblems',
    summary: 'Every problem `code` with its status and meaning (HTML; JSON with `Accept: application/json`)',
    tags: ['meta'],
    internal: true,
    auth: { kind: 'none' },
    response: { 200: null },
    produces: 'text/html',
  }),
} as const satisfies Record<string, RouteDef>;
