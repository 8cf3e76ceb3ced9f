import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

// A small local fake of the OpenAI chat-completions wire protocol (POST {base}/chat/completions),
// for the real `openai` client: JSON or streamed (`data: {chunk}` lines, then `data: [DONE]`),
// tool calls whose arguments arrive in pieces across chunks, usage on the last chunk
// (stream_options.include_usage), and the provider's failures (429 with Retry-After, 500, a
// server that never answers). What the model "says" is a script the test gives: a function of
// the request (the conversation so far, tool results included), so a test can act as a model that
// asks for tools, reads their results and answers from them.

export interface ChatRequest {
  model: string;
  messages: { role: string; content?: string | null; tool_calls?: { id: string; function: { name: string; arguments: string } }[]; tool_call_id?: string }[];
  tools?: { type: 'function'; function: { name: string; description?: string; parameters?: unknown } }[];
  stream?: boolean;
  stream_options?: { include_usage?: boolean };
}

/** What the fake model does for one request. */
export type Turn =
  /** Answer with text, streamed in `pieces` (default: a few words a chunk). */
  | { text: string; pieces?: string[] }
  /** Ask for tools (several = parallel tool calls); each call's arguments are sent in `split` pieces. */
  | { tools: { name: string; arguments: Record<string, unknown>; id?: string }[]; split?: number }
  /** Fail as a provider does. */
  | { status: number; body?: unknown; headers?: Record<string, string> }
  /** Never answer (the client's timeout decides). */
  | { hang: true };

export interface FakeOpenAI {
  baseUrl: string;
  apiKey: string;
  /** Every request received, in order (bodies parsed). */
  requests: ChatRequest[];
  /** Authorization headers received. */
  authorizations: (string | undefined)[];
  close(): Promise<void>;
}

const words = (text: string) => text.match(/\S+\s*/g) ?? [text];

/** Starts the fake on 127.0.0.1 with a script: the turn for each request (the nth call gets `script(request, n)`). */
export async function startFakeOpenAI(script: (request: ChatRequest, n: number) => Turn, opts: { apiKey?: string; model?: string } = {}): Promise<FakeOpenAI> {
  const apiKey = opts.apiKey ?? 'sk-fake-0123456789abcdef';
  const requests: ChatRequest[] = [];
  const authorizations: (string | undefined)[] = [];
  const hanging = new Set<ServerResponse>();

  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let raw = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (raw += c));
    req.on('end', () => {
      if (req.method !== 'POST' || !req.url?.endsWith('/chat/completions')) {
        res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: `Unknown path ${req.url}`, type: 'invalid_request_error' } }));
        return;
      }
      authorizations.push(req.headers.authorization);
      if (req.headers.authorization !== `Bearer ${apiKey}`) {
        res.writeHead(401, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: 'Incorrect API key provided.', type: 'invalid_request_error', code: 'invalid_api_key' } }));
        return;
      }
      const body = JSON.parse(raw) as ChatRequest;
      requests.push(body);
      const turn = script(body, requests.length - 1);
      const id = `chatcmpl-${requests.length}`;
      const created = Math.floor(Date.now() / 1000);
      const model = body.model;
      const usage = { prompt_tokens: Math.ceil(raw.length / 4), completion_tokens: 7 * requests.length, total_tokens: Math.ceil(raw.length / 4) + 7 * requests.length };

      if ('hang' in turn) {
        hanging.add(res);
        res.on('close', () => hanging.delete(res));
        return;
      }
      if ('status' in turn) {
        res.writeHead(turn.status, { 'content-type': 'application/json', ...turn.headers });
        res.end(JSON.stringify(turn.body ?? { error: { message: `The fake provider failed with ${turn.status}.`, type: 'server_error' } }));
        return;
      }
      const toolCalls = 'tools' in turn ? turn.tools.map((t, i) => ({ id: t.id ?? `call_${requests.length}_${i}`, name: t.name, arguments: JSON.stringify(t.arguments) })) : [];
      const finish = 'tools' in turn ? 'tool_calls' : 'stop';

      if (!body.stream) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({
          id, object: 'chat.completion', created, model,
          choices: [{ index: 0, finish_reason: finish, message: { role: 'assistant', content: 'text' in turn ? turn.text : null, ...(toolCalls.length ? { tool_calls: toolCalls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments } })) } : {}) } }],
          usage,
        }));
        return;
      }

      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      const chunk = (delta: Record<string, unknown>, finishReason: string | null = null, extra: Record<string, unknown> = {}) =>
        res.write(`data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model, choices: [{ index: 0, delta, finish_reason: finishReason }], ...extra })}\n\n`);
      chunk({ role: 'assistant', content: '' });
      if ('text' in turn) {
        for (const piece of turn.pieces ?? words(turn.text)) chunk({ content: piece });
      } else {
        const split = Math.max(1, turn.split ?? 3);
        toolCalls.forEach((c, index) => {
          chunk({ tool_calls: [{ index, id: c.id, type: 'function', function: { name: c.name, arguments: '' } }] });
          const size = Math.ceil(c.arguments.length / split);
          for (let at = 0; at < c.arguments.length; at += size) chunk({ tool_calls: [{ index, function: { arguments: c.arguments.slice(at, at + size) } }] });
        });
      }
      chunk({}, finish);
      if (body.stream_options?.include_usage) res.write(`data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model, choices: [], usage })}\n\n`);
      res.end('data: [DONE]\n\n');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    apiKey,
    requests,
    authorizations,
    async close() {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
