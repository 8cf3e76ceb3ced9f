import { errorCodes } from 'fastify';
import { BufferPool } from './buffer-pool.js';

/**
 * A flow delivery's body read into one buffer of its `Content-Length`, taken from a small pool
 * (issue 30): fastify's own reader collects a body in the socket's 64 KB chunks and concatenates
 * them into a fresh buffer, two megabyte-sized allocations a delivery, and profiled under the
 * flow bench they were most of what the web process still spent in GC. The checks are fastify's
 * (`rawBody`): a declared length over the limit is refused before a byte is read, a body that
 * grows past the limit as it arrives is refused at once, and one that ends at another length
 * than declared is refused; the errors are fastify's own, answered as the same problems.
 */

const bodies = new BufferPool();
/** The first size of a buffer for a body of unknown length (chunked, or gzip being inflated). */
const UNKNOWN_LENGTH_START = 256 * 1024;

/** A buffer of at least `size` bytes: one of the pool's, or a new one. */
export const takeBody = (size: number): Buffer => bodies.take(size);

/** Gives a body's buffer back for another one: only once nothing reads it any more. */
export const giveBody = (buffer: Buffer): void => bodies.give(buffer);

/** How many buffers the pool holds now (for tests). */
export const pooledBodies = () => bodies.size;

type Payload = NodeJS.ReadableStream & { receivedEncodedLength?: number };
type Done = (err: Error | null, body?: { buffer: Buffer; length: number }) => void;

/**
 * Reads `payload` (the request's body, as the preParsing hooks left it) into a pooled buffer;
 * `done` gets the buffer and the body's length in it, to be given back with giveBody when no
 * longer read; an error (413 too large, 400 wrong length or a broken stream) leaves nothing to give back.
 */
export function readBody(headers: { 'content-length'?: string }, payload: Payload, limit: number, done: Done): void {
  const declared = headers['content-length'];
  const length = declared === undefined ? Number.NaN : Number(declared);
  if (length > limit) return done(new errorCodes.FST_ERR_CTP_BODY_TOO_LARGE());
  let buffer: Buffer | null = takeBody(Number.isNaN(length) ? UNKNOWN_LENGTH_START : Math.max(1, length));
  let received = 0;

  const stop = () => {
    payload.removeListener('data', onData);
    payload.removeListener('end', onEnd);
    payload.removeListener('error', onEnd);
  };
  const fail = (err: Error) => {
    stop();
    if (buffer) giveBody(buffer);
    buffer = null;
    done(err);
  };

  function onData(data: Buffer | string) {
    const chunk = typeof data === 'string' ? Buffer.from(data) : data;
    if (!buffer) return;
    // The body after decompression must not exceed the limit either (a "zip bomb").
    if (received + chunk.length > limit || (payload.receivedEncodedLength ?? 0) > limit) return fail(new errorCodes.FST_ERR_CTP_BODY_TOO_LARGE());
    if (received + chunk.length > buffer.length) {
      // Longer than declared (refused at the end) or of unknown length: a larger buffer, up to the limit.
      const grown = takeBody(Math.min(limit, Math.max(buffer.length * 2, received + chunk.length)));
      buffer.copy(grown, 0, 0, received);
      giveBody(buffer);
      buffer = grown;
    }
    chunk.copy(buffer, received);
    received += chunk.length;
  }

  function onEnd(err?: Error & { statusCode?: number }) {
    if (!buffer) return;
    if (err != null) {
      if (!(typeof err.statusCode === 'number' && err.statusCode >= 400)) err.statusCode = 400;
      return fail(err);
    }
    if (!Number.isNaN(length) && (payload.receivedEncodedLength || received) !== length) return fail(new errorCodes.FST_ERR_CTP_INVALID_CONTENT_LENGTH());
    stop();
    const body = { buffer, length: received };
    buffer = null;
    done(null, body);
  }

  payload.on('data', onData);
  payload.on('end', onEnd);
  payload.on('error', onEnd);
  payload.resume();
}
