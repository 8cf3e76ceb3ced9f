import { type ProblemCode, problemCodes } from '@surveyor/contract';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { hasZodFastifySchemaValidationErrors, isResponseSerializationError } from 'fastify-type-provider-zod';
import { AppError } from '../errors.js';

export const PROBLEM_MEDIA_TYPE = 'application/problem+json';

/** Sends an RFC 9457 problem with the code's status. */
export function sendProblem(
  reply: FastifyReply,
  baseUrl: string,
  code: ProblemCode,
  detail: string,
  extra: Record<string, unknown> = {},
): FastifyReply {
  const { status, title } = problemCodes[code];
  const { headers, ...fields } = extra as { headers?: Record<string, string> };
  if (headers) reply.headers(headers);
  return reply
    .code(status)
    .type(PROBLEM_MEDIA_TYPE)
    .serializer(JSON.stringify)
    .send({ type: `${baseUrl}/problems#${code}`, title, status, code, detail, requestId: reply.request.id, ...fields });
}

const byStatus: Record<number, ProblemCode> = {
  400: 'validation_failed',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  405: 'method_not_allowed',
  409: 'conflict',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  429: 'rate_limited',
  503: 'service_unavailable',
};

/** Every error of every route ends here: a problem, never a stack or SQL. */
export function errorHandler(baseUrl: string) {
  return (error: Error & { statusCode?: number; code?: string }, request: FastifyRequest, reply: FastifyReply) => {
    if (error instanceof AppError) {
      if (error.code === 'internal_error') request.log.error({ err: error }, 'internal error');
      return sendProblem(reply, baseUrl, error.code, error.message, error.extra);
    }
    if (hasZodFastifySchemaValidationErrors(error)) {
      const where = (error as unknown as { validationContext?: string }).validationContext ?? 'body';
      const accepted = request.routeOptions.config?.queryParams;
      if (where === 'querystring' && request.routeOptions.config?.collection && accepted) {
        return sendCollectionQueryProblem(reply, baseUrl, error.validation, accepted);
      }
      // The log gets the shape of what failed (field names, array lengths), never a value.
      request.log.warn({ shape: shapeOf(request.body), failed: error.validation.map((v) => `${where}${String(v.instancePath ?? '')}`) }, 'request failed validation');
      const issues = error.validation.map((v) => ({
        path: [where === 'querystring' ? 'query' : where, ...String(v.instancePath ?? '').split('/').filter(Boolean)].join('.'),
        message: v.message ?? 'invalid',
      }));
      return sendProblem(reply, baseUrl, 'validation_failed', `The request ${where === 'querystring' ? 'query' : where} failed validation: ${issues.map((i) => `${i.path}: ${i.message}`).join('; ')}`, { issues });
    }
    if (isResponseSerializationError(error)) {
      request.log.error({ err: error }, 'response failed its schema');
      return sendProblem(reply, baseUrl, 'internal_error', 'An unexpected error occurred. Quote the requestId when reporting it.');
    }
    const status = error.statusCode ?? 500;
    if (status >= 400 && status < 500) {
      const code: ProblemCode = byStatus[status] ?? 'validation_failed';
      let detail = error.message;
      if (error.code === 'FST_ERR_CTP_INVALID_JSON_BODY' || error instanceof SyntaxError) detail = `The body is not valid JSON: ${error.message}`;
      if (error.code === 'FST_ERR_CTP_EMPTY_JSON_BODY') detail = 'The body is empty but declared as JSON.';
      if (error.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') detail = `Unsupported Content-Type ${JSON.stringify(request.headers['content-type'] ?? '')}; send application/json.`;
      if (error.code === 'FST_ERR_CTP_BODY_TOO_LARGE') detail = 'The body is larger than this server accepts.';
      return sendProblem(reply, baseUrl, code, detail);
    }
    request.log.error({ err: error }, 'unhandled error');
    if (status === 503 || isDatabaseUnavailable(error)) return sendProblem(reply, baseUrl, 'service_unavailable', 'A dependency is unavailable; try again shortly.');
    return sendProblem(reply, baseUrl, 'internal_error', 'An unexpected error occurred. Quote the requestId when reporting it.');
  };
}

/** Field names, kinds and array lengths of a body; no value ever appears. */
export function shapeOf(body: unknown, depth = 0): unknown {
  if (Array.isArray(body)) {
    const keys = new Set<string>();
    for (const item of body.slice(0, 100)) if (item && typeof item === 'object' && !Array.isArray(item)) for (const k of Object.keys(item)) keys.add(k);
    return keys.size ? { length: body.length, fields: [...keys].sort() } : { length: body.length };
  }
  if (body === null) return 'null';
  if (typeof body !== 'object') return typeof body;
  if (depth > 2) return 'object';
  return Object.fromEntries(Object.entries(body).map(([k, v]) => [k, shapeOf(v, depth + 1)]));
}

type ValidationIssue = { keyword: string; instancePath?: string; message?: string; params?: Record<string, unknown> };

/**
 * Collection query refusals (spec 4.1, decisions.md): an unknown parameter → unknown_parameter
 * naming the accepted ones; anything wrong with limit → limit_out_of_range; a bad cursor →
 * invalid_cursor; a bad filter value (search shorter than 2 included) → invalid_filter.
 */
function sendCollectionQueryProblem(reply: FastifyReply, baseUrl: string, validation: ValidationIssue[], accepted: string[]) {
  const field = (v: ValidationIssue) => String(v.instancePath ?? '').split('/').filter(Boolean)[0] ?? '';
  const issues = validation.map((v) => ({ path: ['query', field(v)].filter(Boolean).join('.'), message: v.message ?? 'invalid' }));
  const unknown = validation.filter((v) => v.keyword === 'unrecognized_keys').flatMap((v) => (v.params?.keys as string[] | undefined) ?? []);
  if (unknown.length) {
    return sendProblem(reply, baseUrl, 'unknown_parameter', `Unknown query parameter${unknown.length > 1 ? 's' : ''} ${unknown.join(', ')}; accepted: ${accepted.join(', ')}.`, {
      issues: unknown.map((k) => ({ path: `query.${k}`, message: 'unknown parameter' })),
      acceptedParameters: accepted,
    });
  }
  const bad = validation.find((v) => field(v) === 'limit');
  if (bad) return sendProblem(reply, baseUrl, 'limit_out_of_range', `limit must be an integer from 1 to 500: ${bad.message ?? 'invalid'}.`, { issues });
  if (validation.some((v) => field(v) === 'cursor')) return sendProblem(reply, baseUrl, 'invalid_cursor', 'The cursor is malformed.', { issues });
  return sendProblem(reply, baseUrl, 'invalid_filter', `Invalid filter value: ${issues.map((i) => `${i.path}: ${i.message}`).join('; ')}.`, { issues });
}

const UNAVAILABLE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', '57P01', '57P02', '57P03', '08000', '08001', '08003', '08006']);

/** A failure to reach the database (as opposed to a bad query): answered 503, not 500. */
function isDatabaseUnavailable(error: Error & { code?: string }): boolean {
  return (
    (error.code !== undefined && UNAVAILABLE_CODES.has(error.code)) ||
    /timeout exceeded when trying to connect|Connection terminated|PGlite is closed|Client has encountered a connection error/i.test(error.message)
  );
}
