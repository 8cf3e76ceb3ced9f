import { AiDoneEvent, AiToolEvent } from '@surveyor/contract';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ChatRequest, type FakeOpenAI, type Turn, startFakeOpenAI } from './fakes/openai.js';
import { addHost, addService, addVulnerability } from './fixtures.js';
import { type SeededOrg, type TestApp, bearer, buildTestApp, login, seedMemberWithKey, seedOrg } from './helpers.js';

// The inventory assistant (issue 27): the real `openai` client against a local fake of the
// chat-completions wire protocol. Streamed answers, tool calls split across chunks, parallel
// tools, the tool-result round, provider failures before and after the stream began, bounds,
// and organisation isolation whatever the model asks for.

const CHAT = '/api/v1/ai/chat';
const ENV = { SERVICE_RATE_LIMIT_LOGIN_PER_MINUTE: '1000', SERVICE_RATE_LIMIT_KEY_PER_MINUTE: '100000' };

interface Sse {
  status: number;
  headers: Record<string, unknown>;
  events: { event: string; data: Record<string, unknown> }[];
  body: string;
}

/** Parses a text/event-stream body into its events. */
function parseSse(body: string): Sse['events'] {
  return body
    .split('\n\n')
    .filter((block) => block.trim() !== '')
    .map((block) => {
      const event = /^event: (.*)$/m.exec(block)?.[1] ?? 'message';
      const data = block.split('\n').filter((l) => l.startsWith('data: ')).map((l) => l.slice(6)).join('\n');
      return { event, data: JSON.parse(data) as Record<string, unknown> };
    });
}

let fake: FakeOpenAI;
let script: (request: ChatRequest, n: number) => Turn = () => ({ text: 'nothing scripted' });
let t: TestApp;
let org: SeededOrg;
let other: SeededOrg;
let session: Awaited<ReturnType<typeof login>>;
const ids: Record<string, string> = {};

beforeAll(async () => {
  fake = await startFakeOpenAI((r, n) => script(r, n));
  t = await buildTestApp({ env: { ...ENV, SERVICE_AI_BASE_URL: fake.baseUrl, SERVICE_AI_API_KEY: fake.apiKey, SERVICE_AI_MODEL: 'fake-model', SERVICE_AI_TIMEOUT_SECONDS: '2', SERVICE_AI_MAX_TOOL_ROUNDS: '3' } });
  org = await seedOrg(t.database);
  other = await seedOrg(t.database);
  const db = t.database.db;
  ids.gw = await addHost(db, org.organisationId, { hostname: 'edge-gw-01', addresses: ['10.20.0.1'] });
  ids.ssh = await addService(db, org.organisationId, ids.gw, { port: 22, product: 'OpenSSH', version: '8.9p1' });
  ids.web = await addHost(db, org.organisationId, { hostname: 'web-01', addresses: ['10.20.0.10'] });
  // Organisation B: a host the model will try to reach by id, name and address.
  ids.secret = await addHost(db, other.organisationId, { hostname: 'b-secret-db', addresses: ['172.31.9.9'] });
  const bSsh = await addService(db, other.organisationId, ids.secret, { port: 22, product: 'OpenSSH', version: '7.4' });
  await addVulnerability(db, other.organisationId, bSsh, ids.secret, { cveId: 'CVE-2023-38408', severity: 'critical' });
  session = await login(t.app, org.ownerEmail);
});
afterAll(async () => {
  await t?.close();
  await fake?.close();
});

async function ask(content: string, extra: Record<string, unknown> = {}, s = session): Promise<Sse> {
  const res = await t.app.inject({ method: 'POST', url: CHAT, headers: { cookie: s.cookie, 'x-csrf-token': s.csrfToken }, payload: { messages: [{ role: 'user', content }], ...extra } });
  const streamed = String(res.headers['content-type']).startsWith('text/event-stream');
  return { status: res.statusCode, headers: res.headers, events: streamed ? parseSse(res.body) : [], body: res.body };
}

const toolMessages = (r: ChatRequest) => r.messages.filter((m) => m.role === 'tool').map((m) => m.content ?? '');
const answerText = (s: Sse) => s.events.filter((e) => e.event === 'delta').map((e) => e.data.text).join('');

describe('the assistant', () => {
  it('streams an answer built on a tool round: arguments split across chunks, the result sent back, citations and usage at the end', async () => {
    const before = fake.requests.length;
    script = (r) =>
      r.messages.some((m) => m.role === 'tool')
        ? { text: `edge-gw-01 (10.20.0.1) runs OpenSSH 8.9p1 on port 22, older than 9.3.`, pieces: ['edge-gw-01 ', '(10.20.0.1) runs ', 'OpenSSH 8.9p1 on port 22, ', 'older than 9.3.'] }
        : { tools: [{ name: 'search_services', arguments: { product: 'openssh', limit: 10 } }], split: 5 };
    const res = await ask('Which hosts run OpenSSH older than 9.3?');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/event-stream/);
    expect(res.headers['x-accel-buffering']).toBe('no');
    expect(res.events.map((e) => e.event)).toEqual(['tool', 'delta', 'delta', 'delta', 'delta', 'done']);
    const tool = AiToolEvent.parse(res.events[0]!.data);
    expect(tool).toMatchObject({ name: 'search_services', arguments: { product: 'openssh', limit: 10 }, ok: true, rows: 1, truncated: false });
    expect(answerText(res)).toBe('edge-gw-01 (10.20.0.1) runs OpenSSH 8.9p1 on port 22, older than 9.3.');
    const done = AiDoneEvent.parse(res.events.at(-1)!.data);
    expect(done.citations).toEqual([{ type: 'service', id: ids.ssh, label: 'port 22/tcp OpenSSH 8.9p1', href: `/hosts/${ids.gw}` }]);
    expect(done.rounds).toBe(2);
    expect(done.model).toBe('fake-model');
    expect(done.usage.totalTokens).toBe(done.usage.promptTokens + done.usage.completionTokens);
    expect(done.usage.completionTokens).toBeGreaterThan(0);

    // What the provider received: the key, the model, the tools, then the tool's result as a tool message.
    const [first, second] = fake.requests.slice(before);
    expect(fake.authorizations.at(-1)).toBe(`Bearer ${fake.apiKey}`);
    expect(first!.model).toBe('fake-model');
    expect(first!.stream).toBe(true);
    expect(first!.tools!.map((x) => x.function.name)).toEqual(['search_hosts', 'host_detail', 'host_topology', 'search_services', 'search_vulnerabilities', 'expiring_certificates', 'daemons_and_jobs', 'scan_sessions', 'list_snapshots', 'snapshot_diff']);
    expect(first!.messages[0]!.role).toBe('system');
    expect(first!.messages[0]!.content).toContain(org.name);
    const result = JSON.parse(toolMessages(second!)[0]!);
    expect(result.rows.map((r: { id: string }) => r.id)).toEqual([ids.ssh]);
    expect(second!.messages.find((m) => m.role === 'assistant')!.tool_calls![0]!.function).toEqual({ name: 'search_services', arguments: JSON.stringify({ product: 'openssh', limit: 10 }) });
  });

  it('runs parallel tool calls of one round, and reports a bad argument to the model instead of failing', async () => {
    const before = fake.requests.length;
    script = (r) =>
      r.messages.some((m) => m.role === 'tool')
        ? { text: 'Two hosts.' }
        : { tools: [{ name: 'search_hosts', arguments: { search: 'edge' } }, { name: 'host_detail', arguments: { hostId: ids.web } }, { name: 'search_hosts', arguments: { search: 'x' } }, { name: 'rm_rf', arguments: {} }] };
    const res = await ask('Tell me about edge and web-01');
    const tools = res.events.filter((e) => e.event === 'tool').map((e) => AiToolEvent.parse(e.data));
    expect(tools.map((x) => [x.name, x.ok, x.rows])).toEqual([['search_hosts', true, 1], ['host_detail', true, 1], ['search_hosts', false, 0], ['rm_rf', false, 0]]);
    expect(tools[2]!.summary).toMatch(/search needs at least 2 characters/);
    const second = fake.requests[before + 1]!;
    expect(second.messages.filter((m) => m.role === 'tool').map((m) => m.tool_call_id)).toEqual(second.messages.find((m) => m.role === 'assistant')!.tool_calls!.map((c) => c.id));
    const cited = AiDoneEvent.parse(res.events.at(-1)!.data).citations.map((c) => c.id);
    expect(cited).toEqual(expect.arrayContaining([ids.gw, ids.web]));
  });

  it('gives the model nothing of another organisation, whatever it asks for (id, name, address, CVE)', async () => {
    const before = fake.requests.length;
    script = (r, n) => {
      if (r.messages.filter((m) => m.role === 'tool').length >= 6) return { text: 'Nothing found.' };
      return n % 2 === 0
        ? { tools: [{ name: 'host_detail', arguments: { hostId: ids.secret } }, { name: 'search_hosts', arguments: { search: 'b-secret' } }, { name: 'search_hosts', arguments: { search: '172.31.9' } }] }
        : { tools: [{ name: 'search_vulnerabilities', arguments: { search: 'CVE-2023-38408' } }, { name: 'host_topology', arguments: { hostId: ids.secret } }, { name: 'search_services', arguments: { version: '7.4' } }] };
    };
    const res = await ask(`What runs on host ${ids.secret}, b-secret-db, 172.31.9.9?`);
    expect(res.status).toBe(200);
    const everything = JSON.stringify(fake.requests.slice(before)) + res.body;
    // The question and the model's own arguments hold these words; no tool result does (a refusal
    // may repeat the id the model sent, never B's record).
    const results = fake.requests.slice(before).flatMap(toolMessages).join('\n');
    for (const leak of ['b-secret-db', '172.31.9.9', 'CVE-2023-38408', '"version":"7.4"', `"id":"${ids.secret}"`, `"hostId":"${ids.secret}"`]) expect(results, leak).not.toContain(leak);
    expect(results).toContain('"rows":[]');
    expect(everything).not.toContain(other.organisationId);
    const tools = res.events.filter((e) => e.event === 'tool').map((e) => AiToolEvent.parse(e.data));
    expect(tools.every((x) => x.rows === 0)).toBe(true);
    expect(tools.find((x) => x.name === 'host_detail')!.summary).toMatch(/not found in this organisation/);
    expect(AiDoneEvent.parse(res.events.at(-1)!.data).citations).toEqual([]);
  });

  it('bounds a tool\'s result in bytes and tells the model it was cut', async () => {
    const db = t.database.db;
    for (let i = 0; i < 60; i++) await addHost(db, org.organisationId, { hostname: `bulk-${String(i).padStart(2, '0')}-${'x'.repeat(240)}`, addresses: [`10.99.0.${i + 1}`] });
    const before = fake.requests.length;
    script = (r) => (r.messages.some((m) => m.role === 'tool') ? { text: 'Many hosts.' } : { tools: [{ name: 'search_hosts', arguments: { search: 'bulk-', limit: 50 } }] });
    const res = await ask('List the bulk hosts');
    const tool = AiToolEvent.parse(res.events.find((e) => e.event === 'tool')!.data);
    expect(tool.truncated).toBe(true);
    expect(tool.rows).toBeGreaterThan(10);
    expect(tool.rows).toBeLessThan(50);
    const content = toolMessages(fake.requests[before + 1]!)[0]!;
    expect(content.length).toBeLessThan(20_000);
    expect(JSON.parse(content).note).toMatch(new RegExp(`^Showing ${tool.rows} of 50 rows .*narrow the filters`));
  });

  it('stops asking for tools after SERVICE_AI_MAX_TOOL_ROUNDS: the last call forbids tools', async () => {
    const before = fake.requests.length;
    script = (r) => ((r as { tool_choice?: string }).tool_choice === 'none' ? { text: 'Enough.' } : { tools: [{ name: 'daemons_and_jobs', arguments: {} }] });
    const res = await ask('Which daemons went quiet this week?');
    expect(AiDoneEvent.parse(res.events.at(-1)!.data).rounds).toBe(4);
    expect(fake.requests.slice(before).map((r) => (r as { tool_choice?: string }).tool_choice)).toEqual(['auto', 'auto', 'auto', 'none']);
    expect(answerText(res)).toBe('Enough.');
  });

  it('offers the page on screen as context', async () => {
    const before = fake.requests.length;
    script = () => ({ text: 'This host is the edge gateway.' });
    await ask('What is this?', { context: { type: 'host', id: ids.gw, label: 'edge-gw-01' } });
    expect(fake.requests[before]!.messages[0]!.content).toContain(`host ${ids.gw} (edge-gw-01)`);
  });

  it('maps the provider\'s failures before the stream: 429 with its Retry-After, 500 as 502, no answer as 504', async () => {
    script = () => ({ status: 429, headers: { 'retry-after': '17' }, body: { error: { message: 'Rate limit reached', type: 'requests' } } });
    const limited = await ask('hello');
    expect([limited.status, JSON.parse(limited.body).code, limited.headers['retry-after']]).toEqual([429, 'rate_limited', '17']);
    script = () => ({ status: 500 });
    const broken = await ask('hello');
    expect([broken.status, JSON.parse(broken.body).code]).toEqual([502, 'upstream_error']);
    expect(JSON.parse(broken.body).detail).toMatch(/answered 500/);
    script = () => ({ hang: true });
    const slow = await ask('hello');
    expect([slow.status, JSON.parse(slow.body).code]).toEqual([504, 'upstream_timeout']);
  });

  it('ends a stream that already began with an error event when a later round fails', async () => {
    script = (r) => (r.messages.some((m) => m.role === 'tool') ? { status: 503, body: { error: { message: 'overloaded' } } } : { tools: [{ name: 'search_hosts', arguments: { search: 'web' } }] });
    const res = await ask('web?');
    expect(res.status).toBe(200);
    expect(res.events.map((e) => e.event)).toEqual(['tool', 'error']);
    expect(res.events[1]!.data).toMatchObject({ status: 502, code: 'upstream_error' });
  });

  it('refuses an API key (session only), answers a viewer, and bounds the conversation (400, 413)', async () => {
    const viewer = await seedMemberWithKey(t.database, org, 'viewer', ['inventory:read']);
    const byKey = await t.app.inject({ method: 'POST', url: CHAT, headers: bearer(viewer.token), payload: { messages: [{ role: 'user', content: 'hi' }] } });
    expect([byKey.statusCode, byKey.json().code]).toEqual([401, 'unauthorized']);
    script = () => ({ text: 'Hello, viewer.' });
    const vs = await login(t.app, viewer.email);
    expect(answerText(await ask('hi', {}, vs))).toBe('Hello, viewer.');

    const post = (payload: unknown) => t.app.inject({ method: 'POST', url: CHAT, headers: { cookie: session.cookie, 'x-csrf-token': session.csrfToken }, payload: payload as object });
    const many = Array.from({ length: 41 }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: 'x' }));
    expect([(await post({ messages: many })).statusCode, (await post({ messages: many })).json().code]).toEqual([400, 'validation_failed']);
    expect((await post({ messages: [{ role: 'user', content: 'x'.repeat(8001) }] })).json().code).toBe('validation_failed');
    expect((await post({ messages: [{ role: 'user', content: 'q' }, { role: 'assistant', content: 'a' }] })).json().code).toBe('validation_failed');
    expect((await post({ messages: [] })).json().code).toBe('validation_failed');
    const huge = await post({ messages: Array.from({ length: 20 }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: 'y'.repeat(7900) })).concat([{ role: 'user', content: 'z' }]) });
    expect([huge.statusCode, huge.json().code]).toEqual([413, 'payload_too_large']);
    const noCsrf = await t.app.inject({ method: 'POST', url: CHAT, headers: { cookie: session.cookie }, payload: { messages: [{ role: 'user', content: 'hi' }] } });
    expect(noCsrf.json().code).toBe('csrf_failed');
  });

  it('logs each turn\'s size, tools, latency and tokens, never the conversation or the key; the metrics count turns by outcome', async () => {
    script = (r) => (r.messages.some((m) => m.role === 'tool') ? { text: 'The secret answer text' } : { tools: [{ name: 'search_hosts', arguments: { search: 'edge' } }] });
    await ask('a very private question');
    const logs = t.logs.join('\n');
    expect(logs).not.toContain('a very private question');
    expect(logs).not.toContain('The secret answer text');
    expect(logs).not.toContain('edge-gw-01');
    expect(logs).not.toContain(fake.apiKey);
    const turn = t.logs.map((l) => JSON.parse(l) as { msg?: string; assistant?: Record<string, unknown> }).filter((l) => l.msg === 'assistant turn').at(-1)!;
    expect(turn.assistant).toMatchObject({ messages: 1, tools: ['search_hosts'], rounds: 2, outcome: 'ok' });
    expect(turn.assistant!.latencyMs).toEqual(expect.any(Number));
    expect((turn.assistant!.usage as { total: number }).total).toBeGreaterThan(0);

    const metricsKey = await seedMemberWithKey(t.database, org, 'viewer', ['metrics:read']);
    const metrics = (await t.app.inject({ method: 'GET', url: '/api/v1/metrics', headers: bearer(metricsKey.token) })).body;
    expect(metrics).toContain('# TYPE service_ai_turns_total counter');
    expect(Number(/service_ai_turns_total\{outcome="ok"\} (\d+)/.exec(metrics)![1])).toBeGreaterThanOrEqual(6);
    expect(metrics).toMatch(/service_ai_turns_total\{outcome="rate_limited"\} 1/);
    expect(metrics).toMatch(/service_ai_turns_total\{outcome="upstream_timeout"\} 1/);
  });
});

describe('the assistant without a provider', () => {
  it('answers 503 naming the three variables; the status says so', async () => {
    const bare = await buildTestApp({ env: ENV });
    try {
      const o = await seedOrg(bare.database);
      const s = await login(bare.app, o.ownerEmail);
      const res = await bare.app.inject({ method: 'POST', url: CHAT, headers: { cookie: s.cookie, 'x-csrf-token': s.csrfToken }, payload: { messages: [{ role: 'user', content: 'hi' }] } });
      expect([res.statusCode, res.json().code]).toEqual([503, 'service_unavailable']);
      for (const v of ['SERVICE_AI_BASE_URL', 'SERVICE_AI_API_KEY', 'SERVICE_AI_MODEL']) expect(res.json().detail).toContain(v);
      const status = (await bare.app.inject({ method: 'GET', url: '/api/v1/ai/status', headers: { cookie: s.cookie } })).json();
      expect(status).toMatchObject({ configured: false, model: null });
    } finally {
      await bare.close();
    }
  });
});
