import { type DocumentedResponse, type RouteDef, documentedResponses, generateOpenApi } from '@surveyor/contract';
import { Ajv, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import type { FastifyInstance } from 'fastify';
import { contractRoutes } from '../src/http/app.js';

// Issue 18: every response any test receives (app.inject, or real HTTP where a test listens) is
// held to the route's documented statuses and problem codes, and a 2xx JSON body to its documented
// schema under a strict validator with OpenAPI 3.0 `nullable` semantics. A violation is recorded
// here and fails the running test (test/setup.ts), naming method, path and status.

type Json = Record<string, unknown>;

/** Where violations wait for the test's afterEach (test/setup.ts). */
export function contractViolations(): string[] {
  const g = globalThis as { __surveyorContractViolations?: string[] };
  return (g.__surveyorContractViolations ??= []);
}

const BASE = 'https://surveyor.test/schemas/';

/** `#/components/schemas/X` → an absolute id ajv knows. */
function rewriteRefs(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(rewriteRefs);
  if (node === null || typeof node !== 'object') return node;
  return Object.fromEntries(
    Object.entries(node).map(([k, v]) => [k, k === '$ref' && typeof v === 'string' ? v.replace('#/components/schemas/', BASE) : rewriteRefs(v)]),
  );
}

interface Checked {
  def: RouteDef;
  documented: Map<number, DocumentedResponse>;
  validators: Map<string, ValidateFunction>;
}

let checked: Map<string, Checked> | null = null;
let problem: ValidateFunction;

/** The strict validator and every route's documented responses, built once per test file. */
function load(): Map<string, Checked> {
  if (checked) return checked;
  const doc = generateOpenApi(contractRoutes, { version: 'test', includeInternal: true }) as Json;
  const ajv = new Ajv({ strict: true, allErrors: true, strictTypes: false });
  addFormats.default(ajv);
  for (const [name, schema] of Object.entries((doc.components as Json).schemas as Json)) ajv.addSchema(rewriteRefs(schema) as Json, `${BASE}${name}`);
  problem = ajv.getSchema(`${BASE}Problem`)!;
  checked = new Map();
  const paths = doc.paths as Record<string, Record<string, Json>>;
  for (const def of contractRoutes) {
    const op = paths[def.url.replace(/:([A-Za-z0-9_]+)/g, '{$1}')]?.[def.method.toLowerCase()];
    const validators = new Map<string, ValidateFunction>();
    for (const [status, response] of Object.entries((op?.responses ?? {}) as Record<string, Json>)) {
      const schema = (response.content as Record<string, { schema: Json }> | undefined)?.['application/json']?.schema;
      if (schema) validators.set(status, ajv.compile(rewriteRefs(schema) as Json));
    }
    checked.set(def.operationId, { def, documented: documentedResponses(def), validators });
  }
  return checked;
}

function bodyText(payload: unknown): string | null {
  if (typeof payload === 'string') return payload;
  if (Buffer.isBuffer(payload)) return payload.toString('utf8');
  return null; // a stream (SSE, compressed): the status is still checked
}

/** Checks every response of the app against the contract (see the top of this file). */
export function installContractCheck(app: FastifyInstance): void {
  const routesByOperation = load();
  app.addHook('onSend', async (request, reply, payload) => {
    const operationId = (request.routeOptions.config as { operationId?: string } | undefined)?.operationId;
    const route = operationId ? routesByOperation.get(operationId) : undefined;
    if (!route) return payload; // no route matched: the not-found handler's 404 / 405
    // An HTTP/1.1 request without Host is refused before any route is considered (RFC 9112 3.2).
    if (request.raw.httpVersion === '1.1' && !request.headers.host) return payload;
    const status = reply.statusCode;
    const where = `${request.method} ${route.def.url} answered ${status}`;
    const fail = (why: string) => void contractViolations().push(`${where}: ${why}`);
    const documented = route.documented.get(status);
    if (!documented) {
      fail(`status not documented (documented: ${[...route.documented.keys()].join(', ')})`);
      return payload;
    }
    if (request.method === 'HEAD') return payload;
    if (reply.getHeader('content-encoding')) return payload; // already compressed (the status is still checked)
    const text = bodyText(payload);
    if (text === null || text === '') return payload;
    const type = String(reply.getHeader('content-type') ?? '');
    if (type.startsWith('application/problem+json')) {
      const body = JSON.parse(text) as { code?: string };
      if (!problem(body)) fail(`problem body does not match Problem: ${JSON.stringify(problem.errors)}`);
      if (!documented.codes.includes(body.code as never)) fail(`problem code ${body.code} not documented for ${status} (documented: ${documented.codes.join(', ') || 'none'})`);
      return payload;
    }
    const validate = route.validators.get(String(status));
    if (status < 300 && validate && type.startsWith('application/json') && !validate(JSON.parse(text))) {
      fail(`body does not match the documented schema: ${JSON.stringify(validate.errors?.slice(0, 5))}`);
    }
    return payload;
  });
}
