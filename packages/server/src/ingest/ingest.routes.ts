import { routes } from '@surveyor/contract';
import type { FastifyInstance } from 'fastify';
import type { Kysely } from 'kysely';
import type { Config } from '../config.js';
import type { DB } from '../db/schema.js';
import { daemonPrincipal } from '../http/principals.js';
import { noteNulEscape } from '../http/nul.js';
import { addRoute } from '../http/route.js';
import { giveBody, readBody } from './flow-body.js';
import { checkFlowsFast, scanFlows } from './flow-check.js';
import { ingestFlows } from './flows.js';
import { ingestObservationBatch } from './observations.js';

/** The daemon protocol's ingest endpoints (spec 4.4): observation batches and flow deliveries. */
export function registerIngestRoutes(app: FastifyInstance, deps: { db: Kysely<DB>; config: Config }): void {
  const { db, config } = deps;

  // Observation and flow batches are the large bodies (megabytes): parsed with plain JSON.parse,
  // without the prototype-poisoning scan of every other route. Their schemas hold only objects of
  // known keys (no records), so validation drops a `__proto__` or `constructor` key anyway.
  void app.register(async (ingest) => {
    ingest.removeContentTypeParser('application/json');
    ingest.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
      if (body === '') return done(Object.assign(new Error('The body is empty but declared as JSON.'), { statusCode: 400, code: 'FST_ERR_CTP_EMPTY_JSON_BODY' }), undefined);
      noteNulEscape(request, body as string);
      try {
        done(null, JSON.parse(body as string));
      } catch (err) {
        done(Object.assign(err as Error, { statusCode: 400 }), undefined);
      }
    });
    addRoute(ingest, routes.daemonObservations, async (request) => ingestObservationBatch(db, daemonPrincipal(request), request.body), { bodyLimit: config.ingestBodyLimitBytes });
  });

  // Flow deliveries (issue 30): read from their bytes into COPY rows when in the plain form daemons
  // send (scanFlows: no record objects, the cost of JSON.parse and its garbage); any other body is
  // parsed as JSON as above and checked by checkFlowsFast, then the schema.
  void app.register(async (flows) => {
    flows.removeContentTypeParser('application/json');
    // The body is read into one pooled buffer of its length (flow-body.ts), not fastify's chunks
    // and their concatenation; a body the scan reads keeps it until its delivery is stored.
    flows.addContentTypeParser('application/json', (request, payload, done) => {
      readBody(request.headers, payload, config.ingestBodyLimitBytes, (err, body) => {
        if (err || !body) return done(err, undefined);
        const { buffer, length } = body;
        if (length === 0) {
          giveBody(buffer);
          return done(Object.assign(new Error('The body is empty but declared as JSON.'), { statusCode: 400, code: 'FST_ERR_CTP_EMPTY_JSON_BODY' }), undefined);
        }
        const scanned = scanFlows(buffer.subarray(0, length), buffer);
        if (scanned) {
          // Its strings hold no escape at all, so no NUL: nothing for the app's NUL walk.
          noteNulEscape(request, '');
          return done(null, scanned);
        }
        const text = buffer.toString('utf8', 0, length);
        giveBody(buffer);
        noteNulEscape(request, text);
        try {
          done(null, JSON.parse(text));
        } catch (err) {
          done(Object.assign(err as Error, { statusCode: 400 }), undefined);
        }
      });
    });
    addRoute(flows, routes.daemonFlows, async (request) => ingestFlows(db, daemonPrincipal(request), request.body), {
      bodyLimit: config.ingestBodyLimitBytes,
      fastBody: checkFlowsFast,
    });
  });
}
