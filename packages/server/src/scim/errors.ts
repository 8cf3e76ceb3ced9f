import type { FastifyReply, FastifyRequest } from 'fastify';
import { hasZodFastifySchemaValidationErrors } from 'fastify-type-provider-zod';
import { AppError } from '../errors.js';
import { URN } from './schema.js';

export type ScimType = 'invalidFilter' | 'tooMany' | 'uniqueness' | 'mutability' | 'invalidSyntax' | 'invalidPath' | 'noTarget' | 'invalidValue' | 'invalidVers' | 'sensitive';

/** A refusal on the SCIM surface: answered with the RFC 7644 3.12 error body, never a problem document. */
export class ScimError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly scimType?: ScimType,
  ) {
    super(message);
  }
}

export const SCIM_MEDIA_TYPE = 'application/scim+json';

const statusOfCode: Partial<Record<AppError['code'], [number, ScimType?]>> = {
  validation_failed: [400, 'invalidValue'],
  unauthorized: [401],
  forbidden: [403],
  not_found: [404],
  duplicate: [409, 'uniqueness'],
  conflict: [409],
  payload_too_large: [413],
  unsupported_media_type: [415],
  rate_limited: [429],
  service_unavailable: [503],
};

/** Sends the SCIM error body (`status` is a string, RFC 7644 3.12). */
export function sendScimError(reply: FastifyReply, status: number, detail: string, scimType?: ScimType): FastifyReply {
  return reply
    .code(status)
    .type(SCIM_MEDIA_TYPE)
    .serializer(JSON.stringify)
    .send({ schemas: [URN.error], status: String(status), ...(scimType ? { scimType } : {}), detail });
}

/**
 * The SCIM surface's error handler: the auth hook's refusals (401, 403, 429 with its headers),
 * malformed JSON, body limits, validation and SCIM's own errors, in the RFC's shape. Anything
 * unexpected is logged and answered 500 without detail.
 */
export function scimErrorHandler(error: Error & { statusCode?: number; code?: string }, request: FastifyRequest, reply: FastifyReply) {
  if (error instanceof ScimError) return sendScimError(reply, error.status, error.message, error.scimType);
  if (error instanceof AppError) {
    const { headers } = error.extra as { headers?: Record<string, string> };
    if (headers) reply.headers(headers);
    const [status, scimType] = statusOfCode[error.code] ?? [500];
    if (status === 500) request.log.error({ err: error }, 'internal error');
    return sendScimError(reply, status, status === 500 ? 'An unexpected error occurred.' : error.message, scimType);
  }
  if (hasZodFastifySchemaValidationErrors(error)) {
    return sendScimError(reply, 400, `The request failed validation: ${error.validation.map((v) => `${String(v.instancePath ?? '') || 'query'} ${v.message ?? 'invalid'}`).join('; ')}`, 'invalidValue');
  }
  // Two providers' requests (or one provider's retries) creating the same userName or group at once:
  // the loser meets the unique index, which is the RFC's uniqueness conflict, not a failure.
  if (error.code === '23505') return sendScimError(reply, 409, 'A resource with the same userName, email or displayName was created at the same moment; read it and retry.', 'uniqueness');
  const status = error.statusCode ?? 500;
  if (status >= 400 && status < 500) {
    // Not the parser's message: it quotes a piece of the body, which may hold a pushed password.
    if (error.code === 'FST_ERR_CTP_INVALID_JSON_BODY' || error instanceof SyntaxError) return sendScimError(reply, 400, 'The body is not valid JSON.', 'invalidSyntax');
    if (error.code === 'FST_ERR_CTP_EMPTY_JSON_BODY') return sendScimError(reply, 400, 'The body is empty.', 'invalidSyntax');
    if (error.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') return sendScimError(reply, 415, 'Send the body as application/scim+json (or application/json).');
    if (error.code === 'FST_ERR_CTP_BODY_TOO_LARGE') return sendScimError(reply, 413, 'The body is larger than the SCIM surface accepts (1 MiB).');
    return sendScimError(reply, status, error.message);
  }
  request.log.error({ err: error }, 'unhandled error');
  return sendScimError(reply, 500, 'An unexpected error occurred. Quote the X-Request-Id header when reporting it.');
}
