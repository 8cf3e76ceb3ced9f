import { generateOpenApi } from '@surveyor/contract';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { contractRoutes } from '../src/http/app.js';
import { daemonKey, register } from './daemon-client.js';
import { type FakeOpenAI, startFakeOpenAI } from './fakes/openai.js';
import { type TestApp, buildTestApp, login, seedMemberWithKey, seedOrg } from './helpers.js';

// Issue 18: contract fuzz. For every operation (issue 29: the internal ones too, with an owner's
// session and its CSRF token), requests generated from its documented
// schema, valid and mutated (wrong types, missing and extra fields, boundary numbers, odd Unicode,
// foreign ids, bad cursors, wrong content types), with a fixed seed. No 5xx; every answer is held to
// the documented statuses, codes and schemas by the suite-wide check (contract-check.ts).
// FUZZ_RUNS sets the cases per operation (npm run fuzz: thousands in all).

type Json = Record<string, any>;
const RUNS = Number(process.env.FUZZ_RUNS ?? 14);
// Every route the contract knows, internal ones (the console's: session cookie and CSRF token) included.
const doc = generateOpenApi(contractRoutes, { version: 'fuzz', includeInternal: true }) as Json;
/**
 * Not fuzzed: signing out would end the session every later case relies on; the change stream
 * never ends (its own tests, sse.test.ts and events.test.ts, cover its refusals and resumption).
 */
const NOT_FUZZED = new Set(['POST /api/v1/auth/logout', 'GET /api/sse']);
const deref = (s: Json): Json => (s?.$ref ? deref(doc.components.schemas[String(s.$ref).split('/').pop()!]) : s);

const ODD = ['\ud800', 'a\u0000b', '\u202eevil', '😀', 'x'.repeat(5000), '', ' ', '../../etc/passwd', '\' or 1=1 --', '%00', 'ﬀ', '\uFEFF'];
const NUMBERS = [-1, 0, 1, 0.5, -0, 2 ** 31, 2 ** 53, -(2 ** 63), 1e308, 65536, 4096];
const WRONG = [null, 12, 'x', [], {}, true];

/** An arbitrary value of a JSON schema (OpenAPI 3.0 dialect, as generated from the contract). */
function arb(schema: Json | undefined, depth = 0): fc.Arbitrary<unknown> {
  const s = deref(schema ?? {});
  if (s.allOf?.length === 1) return arb(s.allOf[0], depth);
  const base = ((): fc.Arbitrary<unknown> => {
    if (s.enum) return fc.constantFrom(...s.enum);
    if (s.anyOf || s.oneOf) return fc.oneof(...(s.anyOf ?? s.oneOf).map((x: Json) => arb(x, depth + 1)));
    switch (s.type) {
      case 'object': {
        if (depth > 4) return fc.constant({});
        const props = Object.entries((s.properties ?? {}) as Record<string, Json>);
        const required = new Set<string>(s.required ?? []);
        return fc.record(Object.fromEntries(props.map(([k, v]) => [k, arb(v, depth + 1)])), { requiredKeys: props.map(([k]) => k).filter((k) => required.has(k)) });
      }
      case 'array':
        return fc.array(arb(s.items, depth + 1), { maxLength: depth > 2 ? 1 : 3 });
      case 'integer':
        return fc.integer({ min: s.minimum ?? -1000, max: Math.min(s.maximum ?? 100_000, 100_000) });
      case 'number':
        return fc.double({ noNaN: true, noDefaultInfinity: true, min: -1e6, max: 1e6 });
      case 'boolean':
        return fc.boolean();
      case 'string':
        if (s.format === 'uuid') return fc.uuid();
        if (s.format === 'date-time') return fc.date({ min: new Date(Date.now() - 40 * 86_400_000), max: new Date(Date.now() + 86_400_000), noInvalidDate: true }).map((d) => d.toISOString());
        return fc.oneof(fc.string({ maxLength: 20 }), fc.constantFrom('10.0.0.0/24', '10.0.0.7', '2001:db8::/48', 'tcp', 'online', 'lab'));
      default:
        return fc.jsonValue({ maxDepth: 2 });
    }
  })();
  return s.nullable ? fc.option(base, { nil: null }) : base;
}

/** Replaces the value at one random place of `v` (an object or array, any depth) with `pick`. */
function mutateAt(v: unknown, path: number[], pick: (old: unknown) => unknown): unknown {
  if (v === null || typeof v !== 'object') return pick(v);
  const keys = Object.keys(v);
  if (keys.length === 0 || path.length === 0) return pick(v);
  const k = keys[path[0]! % keys.length]!;
  const copy: any = Array.isArray(v) ? [...v] : { ...v };
  copy[k] = path.length === 1 ? pick(copy[k]) : mutateAt(copy[k], path.slice(1), pick);
  return copy;
}

const MUTATIONS = ['valid', 'valid', 'drop', 'extra', 'wrongType', 'boundary', 'oddUnicode', 'foreignId', 'badCursor', 'contentType', 'malformed'] as const;

describe('contract fuzz: every operation, public and internal', () => {
  let t: TestApp;
  let auth: Record<string, Record<string, string>>;
  let model: FakeOpenAI;
  beforeAll(async () => {
    // The assistant's provider: a local fake of the chat-completions protocol, as a model that looks
    // the question up (a tool round with the question as its query) and then answers.
    model = await startFakeOpenAI((r) => (r.messages.some((m) => m.role === 'tool') ? { text: 'Found it.' } : { tools: [{ name: 'search_hosts', arguments: { query: String(r.messages.at(-1)?.content ?? '').slice(0, 100) } }] }));
    t = await buildTestApp({
      env: {
        SERVICE_RATE_LIMIT_KEY_PER_MINUTE: '1000000', SERVICE_RATE_LIMIT_DAEMON_PER_MINUTE: '1000000', SERVICE_RATE_LIMIT_ANON_PER_MINUTE: '1000000',
        SERVICE_AI_BASE_URL: model.baseUrl, SERVICE_AI_API_KEY: model.apiKey, SERVICE_AI_MODEL: 'fake-model', SERVICE_AI_TIMEOUT_SECONDS: '5',
      },
    });
    const org = await seedOrg(t.database);
    const key = await seedMemberWithKey(t.database, org, 'owner', ['inventory:read', 'inventory:write', 'scan:run', 'metrics:read']);
    const token = await daemonKey(t, org);
    const daemonId = await register(t.app, token);
    const session = await login(t.app, org.ownerEmail);
    auth = { apiKey: { authorization: `Bearer ${key.token}` }, daemonKey: { authorization: `Bearer ${token}`, 'x-daemon-id': daemonId }, session: { cookie: session.cookie, 'x-csrf-token': session.csrfToken }, none: {} };
  });
  afterAll(async () => {
    await t.close();
    await model.close();
  });

  const operations: [string, string, Json][] = [];
  for (const [path, item] of Object.entries(doc.paths as Record<string, Json>)) for (const [method, op] of Object.entries(item)) if (!NOT_FUZZED.has(`${method.toUpperCase()} ${path}`)) operations.push([method.toUpperCase(), path, op]);

  it.each(operations)('%s %s answers no 5xx and only what it documents', async (method, path, op) => {
    const scheme = Object.keys(op.security?.[0] ?? { none: 1 })[0]!;
    const query = Object.fromEntries(((op.parameters ?? []) as Json[]).filter((p) => p.in === 'query').map((p) => [p.name, p.schema]));
    const body = op.requestBody?.content?.['application/json']?.schema;
    const request = fc.record({
      mutation: fc.constantFrom(...MUTATIONS),
      body: body ? arb(body) : fc.constant(undefined),
      query: arb({ type: 'object', properties: query }),
      id: fc.uuid(),
      where: fc.array(fc.nat(), { minLength: 1, maxLength: 4 }),
      odd: fc.constantFrom(...ODD),
      number: fc.constantFrom(...NUMBERS),
      wrong: fc.constantFrom(...WRONG),
      cursor: fc.oneof(fc.string(), fc.base64String({ maxLength: 80 })),
    });
    await fc.assert(
      fc.asyncProperty(request, async (r) => {
        let payload: unknown = r.body;
        let q = r.query as Json;
        let id = r.id;
        const headers: Record<string, string> = { ...auth[scheme] };
        const at = (v: unknown, pick: (old: unknown) => unknown) => mutateAt(v, r.where, pick);
        switch (r.mutation) {
          case 'drop': payload = at(payload, () => undefined); break;
          case 'extra': payload = payload && typeof payload === 'object' ? { ...payload, unexpected: r.odd } : payload; q = { ...q, unexpected: '1' }; break;
          case 'wrongType': payload = at(payload, () => r.wrong); break;
          case 'boundary': payload = at(payload, (old) => (typeof old === 'number' ? r.number : old)); q = { ...q, limit: r.number }; break;
          case 'oddUnicode': payload = at(payload, (old) => (typeof old === 'string' ? r.odd : old)); break;
          case 'foreignId': id = r.odd.length < 40 && r.odd.length > 0 ? encodeURIComponent(r.odd.replace(/[\ud800-\udfff]/g, '')) || 'x' : 'not-a-uuid'; break;
          case 'badCursor': q = { ...q, cursor: r.cursor }; break;
          case 'contentType': headers['content-type'] = 'text/plain'; break;
        }
        // Never let a long poll wait.
        if (path.endsWith('/jobs/poll') && payload && typeof payload === 'object' && !Array.isArray(payload)) payload = { ...payload, waitSeconds: 0 };
        if (path.endsWith('/jobs/poll') && payload === undefined) payload = { waitSeconds: 0 };
        const url = path.replace(/\{[^}]+\}/g, id);
        const query = Object.fromEntries(Object.entries(q).filter(([, v]) => v !== undefined && typeof v !== 'object').map(([k, v]) => [k, String(v)]));
        const takesBody = method !== 'GET';
        const raw = r.mutation === 'malformed' ? '{"a":' : r.mutation === 'contentType' ? 'plain text' : payload === undefined ? undefined : JSON.stringify(payload);
        if (takesBody && raw !== undefined && !headers['content-type']) headers['content-type'] = 'application/json';
        const res = await t.app.inject({ method: method as 'GET', url, query, headers, ...(takesBody && raw !== undefined ? { payload: raw } : {}) });
        expect(res.statusCode, `${method} ${url} (${r.mutation}): ${res.body.slice(0, 300)}`).toBeLessThan(500);
        if (res.statusCode >= 400) expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      }),
      { seed: 18, numRuns: RUNS, endOnFailure: true },
    );
  });
});
