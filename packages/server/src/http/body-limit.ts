import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { AppError } from '../errors.js';

/** How long a refused client may go on sending a body nobody reads: nginx's lingering defaults. */
const LINGER_IDLE_MS = 5_000;
const LINGER_MAX_MS = 30_000;

const expectingContinue = new WeakSet<IncomingMessage>();
const lingering = new WeakSet<Socket>();

/**
 * Oversized bodies get a 413 the client can read (a refusal before the body is read, 401 or
 * 404, is the same case):
 *
 * - `Expect: 100-continue`: Node would answer `100 Continue` at once, before the route is even
 *   known. Here the continue is sent only once the request reaches body parsing (authenticated,
 *   routed) with a `Content-Length` within the route's limit; over it, the answer is the 413 and
 *   the client never sends the body. Node closes that connection (the body was never sent).
 * - A client already sending: Node would close the socket as soon as the 413 is written, and the
 *   bytes still arriving make the kernel answer with a reset, which can discard the 413 before the
 *   client reads it (EPIPE/ECONNRESET instead of an answer). Here the connection is closed
 *   gracefully: the response, then our FIN, while what the client still sends is read and
 *   discarded until its body ends, 5 s pass without a byte, or 30 s in all.
 */
export function registerBodyLimitHandling(app: FastifyInstance): void {
  const server = app.server as Server;
  server.on('checkContinue', (req, res) => {
    expectingContinue.add(req);
    server.emit('request', req, res);
  });

  // Registered before the gzip hook: the limit applies to the body as sent (a gzip body's limit,
  // after decompression, is checked as it is inflated).
  // Callback hooks, not async ones: every request passes them, and an async hook costs a promise and a turn.
  app.addHook('preParsing', (request, reply, payload, done) => {
    if (!expectingContinue.has(request.raw)) return done(null, payload);
    expectingContinue.delete(request.raw);
    const length = Number(request.headers['content-length']);
    const encoding = request.headers['content-encoding'];
    const limit = request.routeOptions.bodyLimit;
    if ((!encoding || encoding === 'identity') && limit !== undefined && length > limit) {
      return done(new AppError('payload_too_large', `The body (${length} bytes) is larger than this endpoint accepts (${limit} bytes).`));
    }
    reply.raw.writeContinue();
    done(null, payload);
  });

  app.addHook('onSend', (request, reply, payload, done) => {
    const req = request.raw;
    // Nothing unread, or a client waiting for a continue it did not get (it sends nothing more).
    if (!req.complete && !expectingContinue.has(req)) lingerAtClose(req, reply.raw);
    done(null, payload);
  });
}

/**
 * If Node closes this connection when `res` is written, it closes it gracefully (see above). Node
 * decides in its own `finish` listener, which runs before the one restoring the socket here.
 */
function lingerAtClose(req: IncomingMessage, res: ServerResponse): void {
  const socket = req.socket;
  if (lingering.has(socket)) return;
  lingering.add(socket);
  const destroy = () => socket.destroy();
  const nodeDestroySoon = socket.destroySoon;
  res.once('finish', () => {
    socket.destroySoon = nodeDestroySoon;
    lingering.delete(socket);
  });
  socket.destroySoon = function lingeringClose(this: Socket) {
    this.end(); // our FIN goes after the response
    req.unpipe();
    req.removeAllListeners('data');
    req.resume();
    if (req.complete) return destroy();
    req.once('end', destroy);
    this.setTimeout(LINGER_IDLE_MS, destroy);
    const max = setTimeout(destroy, LINGER_MAX_MS).unref();
    this.once('close', () => clearTimeout(max));
  };
}
