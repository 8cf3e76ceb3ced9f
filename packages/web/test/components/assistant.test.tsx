// @vitest-environment happy-dom
import { AI_MAX_MESSAGES, type AiDoneEvent, type AiToolEvent } from '@surveyor/contract';
import { QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { act, cleanup, fireEvent, render, screen, waitFor } from '@testing-library/react';
import { MemoryRouter, useLocation } from 'react-router';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { AssistantPanel } from '../../src/features/assistant/AssistantPanel';
import { answerBlocks } from '../../src/features/assistant/components/AnswerText';
import { requestMessages } from '../../src/features/assistant/conversation';
import { setCsrfToken } from '../../src/lib/api';
import { readServerSentEvents } from '../../src/lib/sse';

// The assistant's panel in happy-dom, the server's answers stubbed: the event stream read however
// its chunks fall, the answer growing as deltas arrive, the tools it ran, the records it used as
// links, a refusal before the stream and an error inside it shown by their detail, Stop, the page's
// record offered as context, and the explanation when no provider is configured.

afterEach(() => {
  cleanup();
  vi.unstubAllGlobals();
  setCsrfToken(null);
});

const HOST = '00000000-0000-4000-8000-000000000011';
const NOT_CONFIGURED =
  'The assistant has no provider: set SERVICE_AI_BASE_URL (an OpenAI-compatible chat-completions API), SERVICE_AI_API_KEY (its key, if it needs one) and SERVICE_AI_MODEL (a model with tool calls), then restart.';

const json = (status: number, body: unknown, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(body), { status, headers: { 'content-type': status >= 400 ? 'application/problem+json' : 'application/json', ...headers } });
const problem = (status: number, code: string, detail: string) => ({ type: `http://localhost/problems#${code}`, title: code, status, code, detail, requestId: 'req-1' });
const sse = (event: string, data: unknown) => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;

const tool: AiToolEvent = { id: 'call_1_0', name: 'search_hosts', arguments: { search: 'edge-gw' }, ok: true, rows: 1, truncated: false, summary: 'hosts matching "edge-gw": 1' };
const done: AiDoneEvent = {
  citations: [{ type: 'host', id: HOST, label: 'edge-gw-01', href: `/hosts/${HOST}` }],
  usage: { promptTokens: 1200, completionTokens: 34, totalTokens: 1234 },
  rounds: 2,
  model: 'fake-model',
};

/** A response body the test writes chunk by chunk. */
function manualStream() {
  const encoder = new TextEncoder();
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  const body = new ReadableStream<Uint8Array>({ start: (c) => void (controller = c) });
  return {
    response: () => new Response(body, { status: 200, headers: { 'content-type': 'text/event-stream; charset=utf-8' } }),
    push: (text: string | Uint8Array) => controller.enqueue(typeof text === 'string' ? encoder.encode(text) : text),
    end: () => controller.close(),
  };
}

function bodyOf(chunks: (string | Uint8Array)[]): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  return new ReadableStream({
    start(c) {
      for (const chunk of chunks) c.enqueue(typeof chunk === 'string' ? encoder.encode(chunk) : chunk);
      c.close();
    },
  });
}

async function events(chunks: (string | Uint8Array)[]) {
  const out: { event: string; data: string }[] = [];
  for await (const e of readServerSentEvents(bodyOf(chunks))) out.push(e);
  return out;
}

function Where() {
  const l = useLocation();
  return <p data-testid="where">{l.pathname}</p>;
}

interface Served {
  sent: { body: Record<string, unknown>; csrf: string | null; signal: AbortSignal | undefined }[];
}

/** The server: GET /ai/status, GET /lookup (hosts), and POST /ai/chat answered by `chat`. */
type Status = { configured: boolean; model: string | null; detail: string };
function serve(chat: () => Response | Promise<Response>, { status = { configured: true, model: 'fake-model', detail: 'Answers come from fake-model.' } as Status, path = '/' } = {}): Served {
  const served: Served = { sent: [] };
  setCsrfToken('csrf-1');
  vi.stubGlobal(
    'fetch',
    vi.fn(async (url: string, init: RequestInit) => {
      if (url.endsWith('/ai/status')) return json(200, status);
      if (url.includes('/lookup?')) return json(200, { hosts: [{ id: HOST, hostname: 'edge-gw-01', fqdn: null, addresses: ['10.20.0.1'] }], sites: [], networks: [] });
      if (url.endsWith('/ai/chat') && init.method === 'POST') {
        served.sent.push({ body: JSON.parse(String(init.body)), csrf: new Headers(init.headers).get('x-csrf-token'), signal: init.signal ?? undefined });
        return chat();
      }
      return json(404, problem(404, 'not_found', `no ${url}`));
    }),
  );
  render(
    <QueryClientProvider client={new QueryClient({ defaultOptions: { queries: { retry: false } } })}>
      <MemoryRouter initialEntries={[path]}>
        <AssistantPanel open onClose={() => {}} />
        <Where />
      </MemoryRouter>
    </QueryClientProvider>,
  );
  return served;
}

async function ask(question: string) {
  const box = await screen.findByLabelText('Question');
  fireEvent.change(box, { target: { value: question } });
  fireEvent.click(screen.getByRole('button', { name: 'Ask' }));
}

describe('reading a server-sent event stream', () => {
  const stream = sse('delta', { text: 'edge-gw-01 runs ' }) + sse('tool', tool) + `event: delta\r\ndata: {"text":"OpenSSH — 8.9p1"}\r\n\r\n` + ': a comment\n\n' + sse('done', done);
  const expected = [
    { event: 'delta', data: JSON.stringify({ text: 'edge-gw-01 runs ' }) },
    { event: 'tool', data: JSON.stringify(tool) },
    { event: 'delta', data: '{"text":"OpenSSH — 8.9p1"}' },
    { event: 'done', data: JSON.stringify(done) },
  ];

  it('reads the same events wherever the body is cut: inside a field, inside the JSON, between CR and LF, inside a UTF-8 character', async () => {
    const bytes = new TextEncoder().encode(stream);
    for (let at = 1; at < bytes.length; at += 1) {
      expect(await events([bytes.slice(0, at), bytes.slice(at)]), `cut at byte ${at}`).toEqual(expected);
    }
    // And a byte at a time.
    expect(await events([...bytes].map((b) => Uint8Array.of(b)))).toEqual(expected);
  });

  it('joins data lines, names an unnamed event message, and drops an event the body cuts off', async () => {
    expect(await events(['data: one\ndata: two\n\nevent: delta\ndata:{"text":"x"}\n\n', 'event: delta\ndata: {"text":"cut'])).toEqual([
      { event: 'message', data: 'one\ntwo' },
      { event: 'delta', data: '{"text":"x"}' },
    ]);
  });
});

describe('the assistant panel', () => {
  it('appends the answer as deltas arrive, lists the tools it ran, and links the records it used', async () => {
    let s = manualStream();
    const served = serve(() => s.response());
    await ask('which hosts run OpenSSH?');
    await screen.findByText('Thinking…');
    expect(served.sent[0]!.body).toEqual({ messages: [{ role: 'user', content: 'which hosts run OpenSSH?' }] });
    expect(served.sent[0]!.csrf).toBe('csrf-1');
    // While it streams, Stop replaces Ask.
    expect(screen.getByRole('button', { name: 'Stop' })).toBeTruthy();

    act(() => s.push(sse('tool', tool)));
    await screen.findByText('Looking up (search_hosts)…');
    act(() => s.push(sse('delta', { text: 'edge-gw-01 runs ' }).slice(0, 20)));
    act(() => s.push(sse('delta', { text: 'edge-gw-01 runs ' }).slice(20)));
    await waitFor(() => expect(document.querySelector('.answer-text')?.textContent).toBe('edge-gw-01 runs '));
    act(() => s.push(sse('delta', { text: 'OpenSSH 8.9p1:\n- port 22' })));
    await waitFor(() => expect(document.querySelector('.answer-text')?.textContent).toBe('edge-gw-01 runs OpenSSH 8.9p1:port 22'));
    expect(document.querySelector('.answer-text li')?.textContent).toBe('port 22');
    act(() => {
      s.push(sse('done', done));
      s.end();
    });

    const link = await screen.findByRole('link', { name: 'edge-gw-01' });
    expect(link.getAttribute('href')).toBe(`/hosts/${HOST}`);
    const tools = screen.getByText('Tools used (1)').closest('details')!;
    expect(tools.textContent).toContain('search_hosts');
    expect(tools.textContent).toContain('search: "edge-gw"');
    expect(tools.textContent).toContain('1 row: hosts matching "edge-gw": 1');
    expect(screen.getByText('1,234 tokens').getAttribute('title')).toBe('1,200 in, 34 out; 2 calls to fake-model');
    expect(screen.getByRole('button', { name: 'Copy answer' })).toBeTruthy();
    expect(screen.getByRole('status').textContent).toBe('Answer complete.');

    // A link opens the record's page in the console.
    fireEvent.click(link);
    expect(screen.getByTestId('where').textContent).toBe(`/hosts/${HOST}`);

    // The next question sends the conversation so far.
    s = manualStream();
    await ask('and older than 9.3?');
    await waitFor(() => expect(served.sent).toHaveLength(2));
    expect(served.sent[1]!.body).toEqual({
      messages: [
        { role: 'user', content: 'which hosts run OpenSSH?' },
        { role: 'assistant', content: 'edge-gw-01 runs OpenSSH 8.9p1:\n- port 22' },
        { role: 'user', content: 'and older than 9.3?' },
      ],
    });
    act(() => s.end());
    await screen.findByText('The answer stopped before it finished: the connection to the server closed. Ask again.');

    // New conversation clears it.
    fireEvent.click(screen.getByRole('button', { name: 'New conversation' }));
    expect(screen.queryByText('which hosts run OpenSSH?')).toBeNull();
    expect(screen.getByText('Which hosts run OpenSSH older than 9.3?')).toBeTruthy();
  });

  it("shows a refusal before the stream by its detail (the provider's 429), and asks again on demand", async () => {
    let refuse = true;
    const served = serve(() =>
      refuse ? json(429, problem(429, 'rate_limited', "The assistant's provider is rate limiting requests; retry in 7 s."), { 'retry-after': '7' }) : new Response(bodyOf([sse('delta', { text: 'Fine now.' }), sse('done', { ...done, citations: [] })]), { headers: { 'content-type': 'text/event-stream' } }),
    );
    await ask('which hosts run OpenSSH?');
    expect((await screen.findByRole('alert')).textContent).toBe("The assistant's provider is rate limiting requests; retry in 7 s.");
    refuse = false;
    fireEvent.click(screen.getByRole('button', { name: 'Ask again' }));
    await screen.findByText('Fine now.');
    expect(screen.queryByRole('alert')).toBeNull();
    expect(served.sent.map((r) => r.body)).toEqual([
      { messages: [{ role: 'user', content: 'which hosts run OpenSSH?' }] },
      { messages: [{ role: 'user', content: 'which hosts run OpenSSH?' }] },
    ]);
  });

  it('keeps what was written when an error event ends the stream, and shows its detail', async () => {
    serve(() => new Response(bodyOf([sse('delta', { text: 'edge-gw-01 runs' }), sse('error', problem(504, 'upstream_timeout', "The assistant's provider did not answer in time."))]), { headers: { 'content-type': 'text/event-stream' } }));
    await ask('which hosts run OpenSSH?');
    expect((await screen.findByRole('alert')).textContent).toBe("The assistant's provider did not answer in time.");
    expect(document.querySelector('.answer-text')?.textContent).toBe('edge-gw-01 runs');
  });

  it('ends the paragraph the model wrote before asking for a tool, so the answer does not run on from it', async () => {
    serve(() => new Response(bodyOf([sse('delta', { text: 'Let me look that up.' }), sse('tool', tool), sse('delta', { text: 'edge-gw-01 runs OpenSSH.' }), sse('done', done)]), { headers: { 'content-type': 'text/event-stream' } }));
    await ask('which hosts run OpenSSH?');
    await screen.findByText('edge-gw-01 runs OpenSSH.');
    expect([...document.querySelectorAll('.answer-text p')].map((p) => p.textContent)).toEqual(['Let me look that up.', 'edge-gw-01 runs OpenSSH.']);
  });

  it('stops an answer: the request is aborted and the turn says so', async () => {
    const s = manualStream();
    const served = serve(() => s.response());
    await ask('which hosts run OpenSSH?');
    act(() => s.push(sse('delta', { text: 'edge-gw-01' })));
    await screen.findByText('edge-gw-01');
    fireEvent.click(screen.getByRole('button', { name: 'Stop' }));
    await screen.findByText('Stopped.');
    expect(served.sent[0]!.signal?.aborted).toBe(true);
    expect(screen.getByRole('button', { name: 'Ask' })).toBeTruthy();
  });

  it("offers the host on screen as the conversation's context", async () => {
    const s = manualStream();
    const served = serve(() => s.response(), { path: `/hosts/${HOST}` });
    fireEvent.click(await screen.findByRole('button', { name: 'Ask about edge-gw-01' }));
    expect((screen.getByLabelText('Question') as HTMLTextAreaElement).value).toBe('What do we know about edge-gw-01: its services, open findings and certificates?');
    expect(screen.getByText('edge-gw-01', { selector: 'strong' }).closest('p')?.textContent).toContain('About host edge-gw-01');
    // Attached: no longer offered.
    expect(screen.queryByRole('button', { name: 'Ask about edge-gw-01' })).toBeNull();
    fireEvent.click(screen.getByRole('button', { name: 'Ask' }));
    await waitFor(() => expect(served.sent).toHaveLength(1));
    expect(served.sent[0]!.body.context).toEqual({ type: 'host', id: HOST, label: 'edge-gw-01' });
  });

  it('explains, instead of a question box, what to configure when no provider is', async () => {
    serve(() => json(503, problem(503, 'service_unavailable', NOT_CONFIGURED)), { status: { configured: false, model: null, detail: NOT_CONFIGURED } });
    await screen.findByText('The assistant is not set up on this server.');
    expect([...document.querySelectorAll('.assistant code')].map((c) => c.textContent)).toEqual(['SERVICE_AI_BASE_URL', 'SERVICE_AI_API_KEY', 'SERVICE_AI_MODEL']);
    expect(document.querySelector('.assistant')?.textContent).toContain(NOT_CONFIGURED);
    expect(screen.queryByLabelText('Question')).toBeNull();
    // Focus is on the panel's heading (nothing to type in).
    expect(document.activeElement?.textContent).toBe('Assistant');
  });
});

describe('the conversation sent', () => {
  it('leaves out a question that got no answer, and the oldest messages past 40, starting with a question', () => {
    const turns = Array.from({ length: 25 }, (_, i) => ({ question: `q${i}`, answer: i === 3 ? '' : `a${i}` }));
    const { messages, left } = requestMessages(turns, 'now?');
    expect(messages).toHaveLength(AI_MAX_MESSAGES - 1);
    expect(messages[0]).toEqual({ role: 'user', content: 'q6' });
    expect(messages.at(-1)).toEqual({ role: 'user', content: 'now?' });
    expect(left).toBe(48 + 1 - messages.length);
    expect(messages.some((m) => m.content === 'q3')).toBe(false);
  });

  it('keeps the body under 128 KiB by leaving out the oldest long answers', () => {
    const turns = Array.from({ length: 20 }, (_, i) => ({ question: `q${i}`, answer: `${i}`.padEnd(8000, 'x') }));
    const { messages } = requestMessages(turns, 'now?');
    expect(new TextEncoder().encode(JSON.stringify({ messages })).length).toBeLessThanOrEqual(128 * 1024);
    expect(messages[0]!.role).toBe('user');
    expect(messages.length).toBeLessThan(40);
  });
});

describe("an answer's text", () => {
  it('reads lists, fenced code and paragraphs, never HTML', () => {
    expect(answerBlocks('Two hosts:\n- **edge-gw-01** `10.20.0.1`\n- web-01\n\n```\nssh -V\n```\n<b>not bold</b>')).toEqual([
      { kind: 'p', lines: ['Two hosts:'] },
      { kind: 'ul', items: ['**edge-gw-01** `10.20.0.1`', 'web-01'] },
      { kind: 'code', text: 'ssh -V' },
      { kind: 'p', lines: ['<b>not bold</b>'] },
    ]);
  });
});
