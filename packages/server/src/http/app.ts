import { randomUUID } from 'node:crypto';
import { createGunzip } from 'node:zlib';
import fastifyCompress from '@fastify/compress';
import fastifyCookie from '@fastify/cookie';
import fastifyCors from '@fastify/cors';
import { type RouteDef, problemCodes, routes } from '@surveyor/contract';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyReply, type FastifyRequest, LogController } from 'fastify';
import { validatorCompiler } from 'fastify-type-provider-zod';
import { mayHoldNul, noteNulEscape, nulPath } from './nul.js';
import fastJson from 'fast-json-stringify';
import { z } from 'zod';
import FindMyWay from 'find-my-way';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import { registerBodyLimitHandling } from './body-limit.js';
import { registerMetaRoutes } from './meta.routes.js';
import { AppError } from '../errors.js';
import { errorHandler, sendProblem } from './problems.js';

/** Registers one domain's routes (and the hooks and decorations they need) on the app. */
export type RouteRegistrar = (app: FastifyInstance) => void | Promise<void>;

export interface AppDeps {
  config: Config;
  logger: Logger;
  /** The domains' route registrars, applied in order (the composition root's module list). */
  registrars: readonly RouteRegistrar[];
}

/** An incoming X-Request-Id is adopted only when short and plain; anything else gets a generated id. */
export const REQUEST_ID = /^[A-Za-z0-9._-]{1,128}$/;

/** What is worth compressing: JSON (problems included), text other than the SSE stream, JavaScript, SVG. */
const COMPRESSIBLE = /^(?:application\/(?:[\w.-]+\+)?json|application\/javascript|image\/svg\+xml|text\/(?!event-stream)[\w.+-]+)\s*(?:;|$)/;

/**
 * Responses are written by fast-json-stringify from the contract's response schema: only declared
 * properties are emitted (an internal column can never leak) and a missing required field fails
 * the request, at a fraction of the cost of re-validating every item with zod on the hot path.
 */
function responseSerializer({ schema }: { schema: unknown }) {
  return fastJson(z.toJSONSchema(schema as z.ZodType, { target: 'openapi-3.0', io: 'output', unrepresentable: 'any' }) as never);
}


/**
 * One log line a request, when it completes (its method, path, client, status and time), where
 * fastify writes two (incoming, completed): at the default level `info` the two lines cost the web
 * process about 230 µs of CPU a request, a third of a page of hosts (issue 30). The incoming line
 * is kept at `debug`, for a request that never completes.
 */
class RequestLog extends LogController {
  override incomingRequest(request: FastifyRequest): void {
    if (!this.isLogDisabled(request)) request.log.debug({ req: request }, 'incoming request');
  }

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    if (this.isLogDisabled(request)) return;
    if (error) reply.log.error({ req: request, res: reply, err: error, responseTime: reply.elapsedTime }, 'request errored');
    else reply.log.info({ req: request, res: reply, responseTime: reply.elapsedTime }, 'request completed');
  }
}

/** Every route of the contract; the app registers exactly these (a test holds it to that). */
export const contractRoutes: readonly RouteDef[] = Object.values(routes);

/**
 * Builds the web application (not listening). Order: framework settings → hooks (request id,
 * body parsing) → the domains' registrars in order (auth's hook and rate limits first) → the
 * OpenAPI document and problem list → error and not-found handlers. Imports no domain.
 */
export async function buildApp({ config, logger, registrars }: AppDeps): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: logger as FastifyBaseLogger,
    genReqId: (req) => {
      const incoming = req.headers['x-request-id'];
      return typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : randomUUID();
    },
    requestIdHeader: false,
    // Node's own answer to an HTTP/1.1 request without Host is a bare 400 with no body; the
    // onRequest hook below answers it as a problem instead.
    http: { requireHostHeader: false },
    logController: new RequestLog({ requestIdLogLabel: 'requestId' }),
    bodyLimit: config.bodyLimitBytes,
    trustProxy: config.trustProxy as boolean | string[], // a hop count works too; fastify's types omit it
    // While draining at shutdown, requests on open connections are still served normally.
    return503OnClosing: false,
    // Unparseable URLs (bad percent-encoding, over-long parameters) get a problem like any error.
    frameworkErrors: (error, request, reply) => {
      reply.header('X-Request-Id', request.id);
      return sendProblem(reply, config.baseUrl, 'validation_failed', `The request URL is malformed: ${error.message}`);
    },
    // A request Node cannot even parse (bad header line): answer a problem and log no bytes of it,
    // since the raw packet may hold a credential.
    clientErrorHandler: (err, socket) => {
      if (!socket.writable) return socket.destroy();
      const requestId = randomUUID();
      const body = JSON.stringify({
        type: `${config.baseUrl}/problems#validation_failed`,
        title: problemCodes.validation_failed.title,
        status: 400,
        code: 'validation_failed',
        detail: 'The HTTP request could not be parsed.',
        requestId,
      });
      logger.warn({ requestId, code: (err as NodeJS.ErrnoException).code }, 'unparseable HTTP request');
      socket.end(
        `HTTP/1.1 400 Bad Request\r\nContent-Type: application/problem+json\r\nX-Request-Id: ${requestId}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
      );
    },
  });
  // Bodies are JSON only: anything else is 415 unsupported_media_type, not a string to validate.
  app.removeContentTypeParser('text/plain');
  // Fastify's own JSON parser (prototype-poisoning checks included), noting whether the text can
  // hold a NUL at all (see the preValidation hook below).
  const defaultJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    noteNulEscape(request, body as string);
    defaultJson(request, body as string, done);
  });
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(responseSerializer);

  // Every response carries the request id, errors included. (Callback hooks, not async ones:
  // every request runs them, and a promise and its microtask each is work for nothing.)
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('X-Request-Id', request.id);
    // RFC 9112 3.2: an HTTP/1.1 request without Host is a 400 (HTTP/1.0 may omit it).
    if (request.raw.httpVersion === '1.1' && request.headers.host === undefined) {
      reply.header('Connection', 'close');
      done(new AppError('validation_failed', 'An HTTP/1.1 request must carry a Host header.'));
      return;
    }
    done();
  });

  // PostgreSQL text and jsonb cannot hold NUL (U+0000): a string with one is refused here, with
  // its path, instead of failing deep in a statement. The body is walked only when its JSON text
  // has the `\u0000` escape (the only way JSON carries a NUL), as every JSON parser notes.
  app.addHook('preValidation', (request, _reply, done) => {
    const where = nulPath(request.query, ['query']) ?? nulPath(request.params, ['params']) ?? (mayHoldNul(request) ? nulPath(request.body, ['body']) : null);
    if (where) done(new AppError('validation_failed', 'Text may not contain the NUL character (\\u0000).', { issues: [{ path: where, message: 'must not contain the NUL character (\\u0000)' }] }));
    else done();
  });

  // A second router of the same routes answers "which methods does this path have" for 405. A
  // catch-all route (the console's pages, `/*`) is left out: it would claim every path.
  const paths = FindMyWay();
  app.addHook('onRoute', (r) => {
    if (r.url.endsWith('/*') && !r.url.includes('/', 1)) return;
    for (const m of [r.method].flat()) if (m !== 'HEAD') paths.on(m as 'GET', r.url, () => {});
  });

  // Expect: 100-continue, and a readable 413 for a client still sending (body-limit.ts).
  registerBodyLimitHandling(app);

  // Daemons on slow links send gzip bodies; the route's body limit applies to the decompressed size.
  // A callback hook: every request passes it, and an async one costs a promise and a turn.
  app.addHook('preParsing', (request, _reply, payload, done) => {
    const encoding = request.headers['content-encoding'];
    if (!encoding || encoding === 'identity') return done(null, payload);
    if (encoding !== 'gzip') return done(new AppError('unsupported_media_type', `Content-Encoding ${encoding} is not supported; send gzip or nothing.`));
    delete request.headers['content-length'];
    done(null, payload.pipe(createGunzip()));
  });

  // Responses of 1 KB and more are compressed (br, else gzip) when the client accepts it: JSON and
  // problems, the topology SVG, and later the console's static files. Never the SSE stream (its
  // events must leave at once, not when a compressor's block fills), nor bodies under 1 KB, where
  // the headers cost more than the saving. Request bodies stay with the gzip hook above.
  await app.register(fastifyCompress, {
    encodings: ['br', 'gzip'],
    threshold: 1024,
    customTypes: COMPRESSIBLE,
    globalDecompression: false,
  });
  // CORS (off unless SERVICE_CORS_ORIGINS lists origins): an allowed origin's page may call the
  // API with credentials (README "Compression and CORS"). Any other origin gets no CORS header at
  // all, and its preflight is not answered as one (the 405 of OPTIONS). Before the domains' hooks,
  // so a preflight, which carries no credential, is answered before authentication.
  if (config.corsOrigins.length) {
    const allowed = new Set(config.corsOrigins);
    await app.register(fastifyCors, {
      origin: (origin, callback) => callback(null, origin !== undefined && allowed.has(origin) ? origin : false),
      credentials: true,
      methods: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'],
      allowedHeaders: ['Authorization', 'Content-Type', 'X-CSRF-Token', 'X-Request-Id', 'Last-Event-ID', 'If-None-Match'],
      exposedHeaders: ['X-Request-Id', 'RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset', 'RateLimit-Policy', 'Retry-After', 'Allow', 'ETag'],
      maxAge: 600,
      // An allowed origin's OPTIONS without Access-Control-Request-Method is answered as a
      // preflight too, rather than with fastify-cors's plain-text (not problem) 400.
      strictPreflight: false,
    });
  }
  await app.register(fastifyCookie);
  for (const register of registrars) await register(app);
  registerMetaRoutes(app, { version: config.version, baseUrl: config.baseUrl, routeDefs: contractRoutes });

  app.setErrorHandler(errorHandler(config.baseUrl));
  app.setNotFoundHandler(async (request, reply) => {
    const path = request.url.split('?')[0]!;
    const allowed = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'].filter((m) => paths.find(m as 'GET', path));
    if (allowed.length) {
      return sendProblem(reply, config.baseUrl, 'method_not_allowed', `${request.method} is not allowed on ${path}; it accepts ${allowed.join(', ')}.`, {
        headers: { Allow: allowed.join(', ') },
      });
    }
    return sendProblem(reply, config.baseUrl, 'not_found', `No route ${request.method} ${path}.`);
  });
  return app;
}
