import type { AiChatRequest, AiCitation, AiDoneEvent, AiToolEvent } from '@surveyor/contract';
import type { ChatCompletionMessageFunctionToolCall, ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import type { Config } from '../config.js';
import { AppError } from '../errors.js';
import { type ToolContext, runTool, toolDefinitions } from './tools.js';

// One question to the assistant: the conversation, the organisation's tools, and the provider's
// streamed answer, relayed piece by piece. The provider is any OpenAI-compatible
// chat-completions API, through the `openai` client with `baseURL`. A tool round is the model
// asking for tools (several at once run in parallel), the tools' results sent back, and the
// model asked again; after SERVICE_AI_MAX_TOOL_ROUNDS the model must answer without tools.

export type Provider = NonNullable<Config['ai']['provider']>;

export interface ChatSink {
  /** Called once, before the first event: the provider answered, the stream may begin. */
  start(): void;
  delta(text: string): void;
  tool(event: AiToolEvent): void;
}

export interface TurnReport {
  outcome: 'ok' | 'rate_limited' | 'upstream_error' | 'upstream_timeout' | 'aborted';
  rounds: number;
  tools: string[];
  usage: AiDoneEvent['usage'];
}

export const NOT_CONFIGURED =
  'The assistant has no provider: set SERVICE_AI_BASE_URL (an OpenAI-compatible chat-completions API), SERVICE_AI_API_KEY (its key, if it needs one) and SERVICE_AI_MODEL (a model with tool calls), then restart.';

const MAX_CITATIONS = 30;

function systemPrompt(organisationName: string, now: Date, context: AiChatRequest['context']): string {
  return [
    `You are the inventory assistant of Surveyor, a network inventory, for the organisation "${organisationName}". Today is ${now.toISOString().slice(0, 10)}.`,
    'Answer only from what the tools return: hosts, services, findings, certificates, daemons, jobs, scan sessions and snapshots of this organisation. If the tools do not say, answer that you do not know; never invent hosts, ids, versions or numbers.',
    'Call tools to look things up; narrow filters rather than reading everything. A tool result may say it was cut: say so when it matters.',
    'Name the records you used by their names or addresses; the console links them for the user. Be brief and concrete; use short lists.',
    ...(context ? [`The user is looking at ${context.type} ${context.id}${context.label ? ` (${context.label})` : ''}; questions about "this" refer to it.`] : []),
  ].join('\n');
}

/** The provider's SDK, loaded with the first question rather than at start-up (a web process's heap is marked at every full collection, issue 30). */
type Sdk = typeof import('openai');

/** The provider's failure as the request's problem; the key never appears in what is said. */
function providerProblem(e: unknown, provider: Provider, { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError }: Sdk): AppError | 'aborted' {
  // The key itself, and anything shaped like a (partly masked) provider key: "sk-abc***xyz".
  const scrub = (s: string) => (provider.apiKey ? s.split(provider.apiKey).join('[redacted]') : s).replace(/\b(sk|key|api)[-_][A-Za-z0-9*_.-]{4,}/gi, '[redacted]');
  if (e instanceof APIUserAbortError) return 'aborted';
  if (e === IDLE) return new AppError('upstream_timeout', 'The assistant\'s provider stopped sending in the middle of its answer (SERVICE_AI_TIMEOUT_SECONDS); try again.');
  if (e instanceof APIConnectionTimeoutError) return new AppError('upstream_timeout', 'The assistant\'s provider did not answer in time (SERVICE_AI_TIMEOUT_SECONDS); try again, or ask something narrower.');
  if (e instanceof APIConnectionError) return new AppError('upstream_error', `The assistant's provider could not be reached: ${scrub(e.message)}`);
  if (e instanceof APIError && e.status === 429) {
    const retry = e.headers?.get('retry-after');
    return new AppError('rate_limited', `The assistant's provider is rate limiting requests${retry ? `; retry in ${retry} s` : ''}.`, retry ? { headers: { 'Retry-After': retry } } : {});
  }
  if (e instanceof APIError) return new AppError('upstream_error', `The assistant's provider answered ${e.status ?? 'an error'}: ${scrub(e.message)}`);
  throw e;
}

/** The reason a round is cut when the provider goes silent mid-stream (the client's own timeout ends at the headers). */
const IDLE = new Error('provider idle');

interface PendingCall {
  id: string;
  name: string;
  arguments: string;
}

/**
 * Answers the conversation's last question. Resolves with the done event; the sink gets the
 * stream. Throws AppError (rate_limited, upstream_error, upstream_timeout) for a provider failure,
 * before or after the sink started; resolves with outcome aborted when `signal` aborts.
 */
export async function answer(
  deps: { provider: Provider; timeoutMs: number; maxToolRounds: number; tools: ToolContext; organisationName: string },
  request: AiChatRequest,
  sink: ChatSink,
  signal: AbortSignal,
  report: TurnReport,
): Promise<AiDoneEvent> {
  const { provider } = deps;
  const sdk = await import('openai');
  const client = new sdk.default({ baseURL: provider.baseUrl, apiKey: provider.apiKey ?? 'none', timeout: deps.timeoutMs, maxRetries: 0 });
  const messages: ChatCompletionMessageParam[] = [
    { role: 'system', content: systemPrompt(deps.organisationName, new Date(), request.context) },
    ...request.messages.map((m) => ({ role: m.role, content: m.content }) as ChatCompletionMessageParam),
  ];
  const tools = toolDefinitions();
  const citations = new Map<string, AiCitation>();
  let answerText = '';
  let started = false;

  for (;;) {
    report.rounds += 1;
    const mustAnswer = report.rounds > deps.maxToolRounds;
    const calls = new Map<number, PendingCall>();
    answerText = '';
    // One controller per round: the request's signal (the browser left) or silence for longer than
    // the timeout between two chunks ends it.
    const round = new AbortController();
    const onAbort = () => round.abort(signal.reason);
    signal.addEventListener('abort', onAbort);
    let idle: NodeJS.Timeout | undefined;
    let silent = false;
    const arm = () => {
      clearTimeout(idle);
      idle = setTimeout(() => {
        silent = true;
        round.abort();
      }, deps.timeoutMs);
    };
    try {
      const stream = await client.chat.completions.create(
        { model: provider.model, messages, tools, tool_choice: mustAnswer ? 'none' : 'auto', stream: true, stream_options: { include_usage: true } },
        { signal: round.signal },
      );
      arm();
      if (!started) {
        started = true;
        sink.start();
      }
      for await (const chunk of stream) {
        arm();
        if (chunk.usage) {
          report.usage.promptTokens += chunk.usage.prompt_tokens;
          report.usage.completionTokens += chunk.usage.completion_tokens;
          report.usage.totalTokens += chunk.usage.total_tokens;
        }
        const delta = chunk.choices[0]?.delta;
        if (!delta) continue;
        if (delta.content) {
          answerText += delta.content;
          sink.delta(delta.content);
        }
        // A tool call arrives in pieces: its id and name first, its arguments over later chunks, by index.
        for (const c of delta.tool_calls ?? []) {
          const call = calls.get(c.index) ?? { id: '', name: '', arguments: '' };
          if (c.id) call.id = c.id;
          if (c.function?.name) call.name += c.function.name;
          if (c.function?.arguments) call.arguments += c.function.arguments;
          calls.set(c.index, call);
        }
      }
      // The client ends an aborted stream quietly: a cut round is no answer, and its half-received tool calls never run.
      if (silent) throw IDLE;
    } catch (e) {
      clearTimeout(idle);
      signal.removeEventListener('abort', onAbort);
      if (signal.aborted) {
        report.outcome = 'aborted';
        break;
      }
      const problem = providerProblem(silent ? IDLE : e, provider, sdk);
      if (problem === 'aborted') {
        report.outcome = 'aborted';
        break;
      }
      report.outcome = problem.code as TurnReport['outcome'];
      throw problem;
    }
    clearTimeout(idle);
    signal.removeEventListener('abort', onAbort);
    if (signal.aborted) {
      report.outcome = 'aborted';
      break;
    }
    if (calls.size === 0 || mustAnswer) break;

    const pending = [...calls.entries()].sort(([a], [b]) => a - b).map(([, c], i) => ({ ...c, id: c.id || `call_${report.rounds}_${i}` }));
    messages.push({
      role: 'assistant',
      content: answerText || null,
      tool_calls: pending.map((c): ChatCompletionMessageFunctionToolCall => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments } })),
    });
    const results = await Promise.all(pending.map((c) => runTool(deps.tools, c.name, c.arguments)));
    pending.forEach((c, i) => {
      const r = results[i]!;
      report.tools.push(c.name);
      sink.tool({ id: c.id, name: c.name, arguments: r.arguments, ok: r.ok, rows: r.rows, truncated: r.truncated, summary: r.summary });
      for (const cite of r.citations) if (!citations.has(`${cite.type}:${cite.id}`)) citations.set(`${cite.type}:${cite.id}`, cite);
      messages.push({ role: 'tool', tool_call_id: c.id, content: JSON.stringify(r.content) });
    });
  }

  // The records the answer names come first (by id or label), then the rest the tools returned.
  const said = answerText.toLowerCase();
  const mentioned = (c: AiCitation) => said.includes(c.id.toLowerCase()) || (c.label.length > 2 && said.includes(c.label.toLowerCase()));
  const all = [...citations.values()];
  const ordered = [...all.filter(mentioned), ...all.filter((c) => !mentioned(c))].slice(0, MAX_CITATIONS);
  return { citations: ordered, usage: { ...report.usage }, rounds: report.rounds, model: provider.model };
}
